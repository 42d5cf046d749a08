"""One formatter: `ruff format` decides the layout of qgate/, tests/ and perf/ (STYLE.md 15).

The same check as `make lint`, run by `make test` so that CI refuses a tree the formatter
would change, and no formatter-skip marker creeps back unexplained.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TREES = ["qgate", "tests", "perf"]


def _ruff() -> list[str]:
    beside = Path(sys.executable).with_name("ruff")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed: `pip install -e '.[test]'` brings it")
    return [found]


def test_the_tree_is_ruff_formatted() -> None:
    done = subprocess.run(
        [*_ruff(), "format", "--check", *TREES], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_fmt_skip_markers() -> None:
    marked = [
        f"{path.relative_to(ROOT)}:{number}"
        for tree in TREES
        for path in sorted((ROOT / tree).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "fmt: " + "skip" in line or "fmt: " + "off" in line
    ]
    assert marked == []
