"""The qgate group: help, version, validate, error -> exit code mapping, light imports."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from qgate import __version__
from qgate.cli.main import QgateGroup, main
from qgate.cli.util import run_command
from qgate.errors import InfrastructureError, ProfileError, RuntimeFailure

HEAVY = ["torch", "vllm", "transformers", "lm_eval", "matplotlib", "securesystemslib"]
PROFILE = Path(__file__).resolve().parents[1] / "profiles" / "valid.yaml"


@pytest.fixture
def group() -> Iterator[QgateGroup]:
    """`main` with throwaway commands that raise, removed again afterwards."""
    assert isinstance(main, QgateGroup)

    @click.command("boom-profile")
    def boom_profile() -> None:
        raise ProfileError("invalid profile p.yaml (1 problem)", ["p.yaml:3 name: bad"])

    @click.command("boom-infra")
    def boom_infra() -> None:
        raise RuntimeFailure("candidate", "server exited with 1", ["last log line"], 1)

    @click.command("boom-ctrl-c")
    def boom_ctrl_c() -> None:
        raise KeyboardInterrupt

    @click.command("boom-bug")
    def boom_bug() -> None:
        raise ZeroDivisionError("oops")

    added = [boom_profile, boom_infra, boom_ctrl_c, boom_bug]
    for command in added:
        main.add_command(command)
    try:
        yield main
    finally:
        for command in added:
            assert command.name is not None
            main.commands.pop(command.name, None)


def test_help_lists_validate_and_exit_codes() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "validate" in result.output
    assert "130 interrupted" in result.output


def test_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output


def test_validate_requires_a_file() -> None:
    result = CliRunner().invoke(main, ["validate"])
    assert result.exit_code == 2
    assert "Missing argument" in result.output


def test_expected_error_prints_message_and_details(group: QgateGroup) -> None:
    result = CliRunner().invoke(group, ["boom-profile"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: invalid profile p.yaml (1 problem)",
        "  p.yaml:3 name: bad",
    ]
    assert "Traceback" not in result.output


def test_infrastructure_error_exits_3(group: QgateGroup) -> None:
    result = CliRunner().invoke(group, ["boom-infra"])
    assert result.exit_code == 3
    assert "error: candidate runtime: server exited with 1" in result.stderr
    assert "last log line" in result.stderr


def test_ctrl_c_exits_130_with_one_line(group: QgateGroup) -> None:
    result = CliRunner().invoke(group, ["boom-ctrl-c"])
    assert result.exit_code == 130
    assert result.stderr.strip() == "error: interrupted"


def test_bug_exits_3_with_traceback(group: QgateGroup) -> None:
    result = CliRunner().invoke(group, ["boom-bug"])
    assert result.exit_code == 3
    assert "ZeroDivisionError" in result.stderr
    assert "internal error" in result.stderr


def test_debug_lets_the_traceback_through(group: QgateGroup) -> None:
    result = CliRunner().invoke(group, ["--debug", "boom-profile"])
    assert isinstance(result.exception, ProfileError)
    assert result.exit_code != 0
    env = CliRunner().invoke(group, ["boom-infra"], env={"QGATE_DEBUG": "1"})
    assert isinstance(env.exception, InfrastructureError)


def test_run_command_outside_a_group() -> None:
    @run_command
    def fails() -> None:
        raise ProfileError("bad")

    with pytest.raises(SystemExit) as info:
        fails()
    assert info.value.code == 2


def test_run_command_inside_a_plain_click_command() -> None:
    @click.command()
    @run_command
    def standalone() -> None:
        raise RuntimeFailure("reference", "did not start")

    result = CliRunner().invoke(standalone, [])
    assert result.exit_code == 3
    assert "error: reference runtime: did not start" in result.stderr


def test_lazy_command_is_imported_on_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lazy_cmd_mod.py").write_text(
        "import click\n@click.command()\ndef hello():\n    'Say hello.'\n    click.echo('hello')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    group = QgateGroup(name="g")
    group.add_lazy_command("hello", "lazy_cmd_mod:hello")
    assert "lazy_cmd_mod" not in sys.modules
    result = CliRunner().invoke(group, ["hello"])
    assert result.exit_code == 0
    assert result.output == "hello\n"
    assert "lazy_cmd_mod" in sys.modules


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["--version"], ["validate", str(PROFILE)]],
    ids=["help", "version", "validate"],
)
def test_light_commands_import_no_heavy_library(argv: list[str]) -> None:
    code = (
        "import sys, json\n"
        "from qgate.cli.main import main\n"
        "try:\n"
        f"    main.main({argv!r}, standalone_mode=True)\n"
        "except SystemExit as e:\n"
        "    code = e.code\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(json.dumps({'code': code, 'heavy': heavy}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last == {"code": 0, "heavy": []}, done.stderr


def test_help_uses_registered_short_help_without_importing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lazy_never_mod.py").write_text("raise RuntimeError('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    group = QgateGroup(name="g")
    group.add_lazy_command("quiet", "lazy_never_mod:cmd", "Does quiet things.")
    result = CliRunner().invoke(group, ["--help"])
    assert result.exit_code == 0
    assert "Does quiet things." in result.output
    assert "lazy_never_mod" not in sys.modules


def test_broken_lazy_module_does_not_break_help(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lazy_broken_mod.py").write_text("raise RuntimeError('broken on import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    group = QgateGroup(name="g")
    group.add_lazy_command("broken", "lazy_broken_mod:cmd")
    result = CliRunner().invoke(group, ["--help"])
    assert result.exit_code == 0
    assert "cannot load: broken on import" in result.output


def _one_line_error(result: Any, code: int = 2) -> str:
    """The single stderr line of a clean bad-input exit."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return str(lines[0])


def test_run_out_that_is_a_file_fails_before_anything_starts(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    out.write_text("not a folder")
    # The profile does not even exist: --out is checked before the profile is read.
    result = CliRunner().invoke(main, ["run", str(tmp_path / "none.yaml"), "--out", str(out)])
    assert _one_line_error(result) == f"error: --out {out}: is a file, not a folder"


def test_run_out_below_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    out = tmp_path / "f" / "runs"
    result = CliRunner().invoke(main, ["run", str(PROFILE), "--out", str(out)])
    message = _one_line_error(result)
    assert message == f"error: --out {out}: cannot create it, {tmp_path / 'f'} is not a folder"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_run_out_where_nothing_can_be_created() -> None:
    # /proc refuses new files even to root, unlike a chmod-ed folder.
    result = CliRunner().invoke(main, ["run", str(PROFILE), "--out", "/proc/qgate-runs"])
    message = _one_line_error(result)
    assert message == "error: --out /proc/qgate-runs: cannot create it, /proc is not writable"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only (0500) folder")
def test_run_out_not_writable(tmp_path: Path) -> None:
    out = tmp_path / "ro"
    out.mkdir(mode=0o500)
    try:
        result = CliRunner().invoke(main, ["run", str(PROFILE), "--out", str(out)])
        assert _one_line_error(result) == f"error: --out {out}: folder is not writable"
    finally:
        out.chmod(0o700)


def test_run_cache_dir_and_key_are_checked_first(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.write_text("x")
    argv = ["run", str(PROFILE), "--out", str(tmp_path / "runs")]
    result = CliRunner().invoke(main, [*argv, "--cache-dir", str(cache)])
    assert _one_line_error(result) == f"error: --cache-dir {cache}: is a file, not a folder"
    key = tmp_path / "missing.pem"
    result = CliRunner().invoke(main, [*argv, "--key", str(key)])
    assert _one_line_error(result) == f"error: --key {key}: no such file"
    assert not (tmp_path / "runs").exists()


def test_file_outputs_that_are_folders(tmp_path: Path) -> None:
    missing = str(tmp_path / "none.json")
    cases = [
        (["show", missing, "--out", str(tmp_path)], f"--out {tmp_path}: is a folder, not a file"),
        (["compare", missing, "--html", str(tmp_path)], f"--html {tmp_path}: is a folder"),
        (
            ["perf", "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path)],
            f"--out {tmp_path}: is a folder, not a file",
        ),
    ]
    for argv, expected in cases:
        result = CliRunner().invoke(main, argv)
        assert expected in _one_line_error(result), argv


def test_keygen_out_below_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    result = CliRunner().invoke(main, ["keygen", "--out", str(tmp_path / "f" / "k")])
    assert "cannot create it" in _one_line_error(result)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_perf_api_key_env_that_is_a_key_is_not_echoed() -> None:
    pasted = "sk-proj-Q3xT9bLm2VwZ8rKc4NfY7hJd"
    result = CliRunner().invoke(
        main, ["perf", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", pasted]
    )
    message = _one_line_error(result)
    assert "looks like a key" in message
    assert pasted not in result.output


@pytest.mark.parametrize("command", ["show", "verify"])
def test_deeply_nested_report_json_is_one_line(tmp_path: Path, command: str) -> None:
    report = tmp_path / "deep.json"
    report.write_text("[" * 100_000 + "]" * 100_000)
    pub = tmp_path / "k.pub.pem"
    pub.write_text("not used")
    argv = [command, str(report)] + (["--pubkey", str(pub)] if command == "verify" else [])
    result = CliRunner().invoke(main, argv)
    expected = f"error: {report}: not a DSSE envelope (JSON nested too deeply)"
    assert _one_line_error(result) == expected


def test_deeply_nested_payload_for_show_is_bad_input(tmp_path: Path) -> None:
    payload = base64.b64encode(b"[" * 5000 + b"]" * 5000).decode()
    report = tmp_path / "deep.json"
    report.write_text(json.dumps({"payload": payload, "payloadType": "x", "signatures": []}))
    result = CliRunner().invoke(main, ["show", str(report)])
    assert _one_line_error(result).startswith(f"error: {report}: payload is not JSON (recursion")


def test_verify_checks_profile_and_model_before_reading_the_report(tmp_path: Path) -> None:
    missing = tmp_path / "none"
    argv = ["verify", str(tmp_path / "no-report.json"), "--pubkey", str(missing)]
    result = CliRunner().invoke(main, [*argv, "--profile", str(missing)])
    assert _one_line_error(result) == f"error: --profile {missing}: no such file"
    result = CliRunner().invoke(main, [*argv, "--model", str(missing)])
    assert _one_line_error(result) == f"error: --model {missing}: not a folder"


def test_perf_checks_the_profile_trace_but_not_the_model(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "name: t\nmodel: {path: /models/on-the-server}\ncandidate: {}\n"
        "quality: {math: {}}\n"
        "perf:\n  scenarios:\n    - {name: r, kind: trace, path: gone.jsonl}\n"
    )
    result = CliRunner().invoke(main, ["perf", str(profile), "--base-url", "http://127.0.0.1:9/v1"])
    message = _one_line_error(result)
    gone = tmp_path / "gone.jsonl"
    assert message == f"error: {profile} perf.scenarios[0].path: no such file: {gone}"
