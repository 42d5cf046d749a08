"""Every command ends quietly when the reader of its output goes away (`qgate plan P | head -1`).

The read end of a real pipe is closed before the command writes: its first write then
fails with EPIPE, as under `| head -1` or a pager quit early. The command must exit 141
(what a shell reports for `yes | head`) with nothing on stderr, not a traceback and
"internal error (a qgate bug)".
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from qgate.cli.main import READER_GONE_EXIT, QgateGroup, main

ROOT = Path(__file__).resolve().parents[3]
PROFILE = ROOT / "precision_profiles" / "minimal.yaml"
REPORT = next((ROOT / "examples" / "h200x2").glob("*/report.intoto.jsonl"))
PUBKEY = ROOT / "examples" / "h200x2" / "signing-key.pub.pem"


def _reader_gone(argv: list[str], stderr_too: bool = False) -> tuple[int, str]:
    """Run `python -m qgate.cli ARGV` with its stdout pipe's reader closed at once."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "qgate.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if stderr_too else subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # the reader goes away before the first write
    err = b"" if stderr_too or proc.stderr is None else proc.stderr.read()
    return proc.wait(timeout=120), err.decode()


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", str(PROFILE)],
        ["validate", str(PROFILE)],
        ["profile-reference"],
        ["init", "--gpu"],
        ["show", str(REPORT), "--format", "md"],
        ["verify", str(REPORT), "--pubkey", str(PUBKEY)],
    ],
    ids=["plan", "validate", "profile-reference", "init", "show", "verify"],
)
def test_a_command_whose_reader_went_away_ends_quietly(argv: list[str]) -> None:
    code, err = _reader_gone(argv)
    assert code == READER_GONE_EXIT == 141, err
    assert "Traceback" not in err and "error" not in err, err


def test_stdout_and_stderr_on_one_closed_pipe() -> None:
    """`qgate plan P 2>&1 | head -1`: the error path must not write to the dead pipe either."""
    code, _ = _reader_gone(["plan", str(PROFILE)], stderr_too=True)
    assert code == READER_GONE_EXIT


def test_bad_input_still_exits_2_when_stdout_is_a_live_pipe(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("name: x\n")
    done = subprocess.run(
        [sys.executable, "-m", "qgate.cli", "validate", str(bad)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_output_flushed_only_at_exit_ends_quietly_too(tmp_path: Path) -> None:
    """Text left in stdout's buffer is flushed by the entry point, under the same rule."""
    script = tmp_path / "buffered.py"
    script.write_text(
        "import sys, click\n"
        "from qgate.cli.main import main\n"
        "@main.command('buffered')\n"
        "def buffered():\n"
        "    sys.stdout.write('x' * 100)\n"  # no flush: the interpreter would flush it at exit
        "main()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, str(script), "buffered"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == READER_GONE_EXIT and err == ""


def test_a_broken_pipe_elsewhere_is_still_a_bug() -> None:
    """A BrokenPipeError from a socket (a server gone) is not the reader going away."""
    assert isinstance(main, QgateGroup)

    @click.command("boom-pipe")
    def boom_pipe() -> None:
        raise BrokenPipeError(32, "Broken pipe")

    main.add_command(boom_pipe)
    try:
        result = CliRunner().invoke(main, ["boom-pipe"])
    finally:
        main.commands.pop("boom-pipe", None)
    assert result.exit_code == 3
    assert "internal error (a qgate bug)" in result.output
