"""The glossary (docs/reference/glossary.md, generated from qgate/core/glossary.py) points at
code that exists, each word once."""

from __future__ import annotations

from pathlib import Path

from qgate.core.glossary import TERMS, render

ROOT = Path(__file__).resolve().parents[3]


def test_every_term_names_a_module_that_exists() -> None:
    assert [t.word for t in TERMS if not (ROOT / t.owner).is_file()] == []


def test_each_word_once_and_on_the_page() -> None:
    words = [t.word for t in TERMS]
    assert len(words) == len(set(words))
    page = render()
    assert all(f"- **{w}**: " in page for w in words)
