"""`qgate evals build|check` exit codes and messages."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from qgate.cli.main import main


def test_build_then_check_passes_and_an_edit_exits_2(tmp_path: Path) -> None:
    runner = CliRunner()
    built = runner.invoke(main, ["evals", "build", "--root", str(tmp_path)])
    assert built.exit_code == 0, built.output
    assert (tmp_path / "MANIFEST.json").is_file()
    ok = runner.invoke(main, ["evals", "check", "--root", str(tmp_path)])
    assert ok.exit_code == 0, ok.output
    edited = tmp_path / "divergence" / "corpus.jsonl"
    edited.write_text(edited.read_text().replace("Write", "Wrote", 1))
    bad = runner.invoke(main, ["evals", "check", "--root", str(tmp_path)])
    assert bad.exit_code == 2
    assert str(edited) in bad.output


def test_check_without_manifest_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["evals", "check", "--root", str(tmp_path)])
    assert result.exit_code == 2
    assert "MANIFEST.json" in result.output
