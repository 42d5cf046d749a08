"""docs/annotated-report.md includes excerpts of a committed signed report by line range: each
excerpt must start with the line the page's `<!-- starts: ... -->` comment names, so a new
example (or a moved range) cannot leave the annotations describing other lines."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "annotated-report.md"
EXCERPT = re.compile(
    r"<!-- starts: (?P<starts>.+?) -->\n```markdown\n"
    r"--8<-- \"(?P<file>[^\":]+):(?P<a>\d+):(?P<b>\d+)\"\n```"
)


def excerpts() -> list[re.Match[str]]:
    return list(EXCERPT.finditer(PAGE.read_text()))


def test_every_excerpt_starts_where_the_page_says() -> None:
    found = excerpts()
    assert len(found) == 9
    for m in found:
        lines = (ROOT / m["file"]).read_text().splitlines()
        a, b = int(m["a"]), int(m["b"])
        assert 1 <= a <= b <= len(lines), m.group(0)
        assert lines[a - 1].startswith(m["starts"]), (m["starts"], lines[a - 1])


def test_every_excerpt_is_inside_one_section() -> None:
    """An excerpt ends before the next top-level section of the report, so the annotation under
    it speaks of everything it shows."""
    for m in excerpts():
        lines = (ROOT / m["file"]).read_text().splitlines()
        inside = lines[int(m["a"]) : int(m["b"])]
        assert not any(line.startswith("## ") for line in inside), m["starts"]


def test_no_other_include_on_the_page() -> None:
    assert PAGE.read_text().count("--8<--") == len(excerpts())
