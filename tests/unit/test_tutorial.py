"""docs/tutorial.md shows what qgate prints: the outputs on the page are what these commands
print today (its PASS is a committed signed run, included from examples/ by the docs build)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from qgate.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
MINIMAL = ROOT / "precision_profiles" / "minimal.yaml"


def _run(args: list[str], cwd: Path) -> tuple[int, str]:
    runner = CliRunner()
    with runner.isolated_filesystem(temp_dir=cwd):
        result = runner.invoke(main, args)
    return result.exit_code, result.output


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def _lines(output: str) -> list[str]:
    return [line.rstrip() for line in output.splitlines() if line.strip()]


def test_init_writes_the_profile_the_page_includes(here: Path) -> None:
    result = CliRunner().invoke(main, ["init", "--cpu", "--out", "my.yaml"])
    assert result.exit_code == 0, result.output
    assert (here / "my.yaml").read_text() == MINIMAL.read_text()
    assert '--8<-- "precision_profiles/minimal.yaml"' in PAGE


def test_validate_prints_what_the_page_shows(here: Path) -> None:
    (here / "my.yaml").write_text(MINIMAL.read_text())
    ok = CliRunner().invoke(main, ["validate", "my.yaml"])
    assert ok.exit_code == 0 and "```text\nok my.yaml\n```" in PAGE
    typo = MINIMAL.read_text().replace("    max_drop: 0.2", "    max_dorp: 0.2")
    (here / "typo.yaml").write_text(typo.replace("max_mean_kld: 0.05", "max_mean_kld: -1"))
    bad = CliRunner().invoke(main, ["validate", "typo.yaml"])
    assert bad.exit_code == 2
    lines = _lines(bad.output)
    assert len(lines) == 3 and all(line in PAGE for line in lines), lines


def test_plan_states_the_sizes_the_page_quotes(here: Path) -> None:
    (here / "my.yaml").write_text(MINIMAL.read_text())
    plan = CliRunner().invoke(main, ["plan", "my.yaml"])
    assert plan.exit_code == 0, plan.output
    for quoted in ("math.short: 67 items per side", "67 items detect 19.8 pts"):
        assert quoted in plan.output and quoted in PAGE


def test_the_committed_pass_verifies_as_the_page_says() -> None:
    report = "examples/cpu/smollm2-cpu-rounds/report.intoto.jsonl"
    key = "examples/cpu/signing-key-2026-12-03.pub.pem"
    result = CliRunner().invoke(main, ["verify", str(ROOT / report), "--pubkey", str(ROOT / key)])
    assert result.exit_code == 0, result.output
    assert _lines(result.output)[-1] == f"VERIFIED {ROOT / report} (verdict PASS)"
    assert f"VERIFIED {report} (verdict PASS)" in PAGE
