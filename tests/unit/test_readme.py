"""The README's promises: the two fresh-machine commands first, CI calling the test one, a
short door into the docs site whose links all lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_readme_starts_with_what_qgate_is_then_the_two_commands() -> None:
    head = README.splitlines()[:10]
    intro = " ".join(head[2:5])
    assert "qgate" in intro and "rollout" in intro and "CI" in intro
    assert any(line.startswith("make demo") for line in head)
    assert any(line.startswith("make test ") or line == "make test" for line in head)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "make test" in lines


def relative_links(markdown: str) -> list[str]:
    targets = re.findall(r"\]\(([^)\s]+)\)", markdown)
    return [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t)]


def test_readme_is_a_short_door_into_the_docs() -> None:
    assert len(README.splitlines()) <= 150
    links = relative_links(README)
    assert "docs/getting-started.md" in links and "docs/reference/cli.md" in links
    missing = [link for link in links if not (ROOT / link).exists()]
    assert missing == [], f"README links to files that do not exist: {missing}"


def test_the_link_check_sees_a_broken_link() -> None:
    assert relative_links("[a](docs/x.md#y) [b](https://e.org) [c](docs/)") == [
        "docs/x.md",
        "docs/",
    ]
