"""The README's promises: the two fresh-machine commands, CI calling the test one, and a
profile reference that cannot drift from the schema."""

from __future__ import annotations

from pathlib import Path

from qgate.profile.doc import BEGIN, END, render

ROOT = Path(__file__).resolve().parents[2]


def test_readme_starts_with_what_qgate_is_then_the_two_commands() -> None:
    head = (ROOT / "README.md").read_text().splitlines()[:10]
    intro = " ".join(head[2:5])
    assert "qgate" in intro and "rollout" in intro and "CI" in intro
    assert any(line.startswith("make demo") for line in head)
    assert any(line.startswith("make test ") or line == "make test" for line in head)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "make test" in lines


def test_profile_reference_matches_the_schema() -> None:
    readme = (ROOT / "README.md").read_text()
    start, end = readme.index(BEGIN), readme.index(END) + len(END)
    assert readme[start:end] == render(), "README profile reference is stale: regenerate it"
