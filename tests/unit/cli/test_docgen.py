"""The generated reference pages are current: regenerating them gives the committed text."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel

from qgate.cli import docgen
from qgate.cli.main import main
from qgate.profile import Profile
from qgate.profile.doc import SECTIONS
from qgate.profile.multi import CandidateSpec


def test_the_committed_pages_are_current() -> None:
    stale = docgen.stale_pages()
    assert stale == [], (
        f"stale generated pages {stale}: run `python -m qgate.cli.docgen` (or `make docs`) "
        "and commit them"
    )


def test_a_stale_or_missing_page_is_seen_and_rewritten(tmp_path: Path) -> None:
    assert docgen.stale_pages(tmp_path) == sorted(docgen.PAGES)
    assert docgen.write_pages(tmp_path) == sorted(docgen.PAGES)
    assert docgen.stale_pages(tmp_path) == []
    page = tmp_path / "docs/reference/cli.md"
    page.write_text(page.read_text().replace("--refresh-reference", "--refresh"))
    assert docgen.stale_pages(tmp_path) == ["docs/reference/cli.md"]


def test_the_cli_page_has_every_visible_command_and_no_hidden_one() -> None:
    page = docgen.render_cli()
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None
        assert (f"## qgate {name}\n" in page) != command.hidden, name
    assert "### qgate evals check\n" in page and "qgate evals build\n" not in page
    assert "| `--format` | `text` \\| `json` | `text` |" in page


def test_the_profile_page_has_every_section() -> None:
    page = docgen.render_profile()
    for path, model in SECTIONS:
        assert f"## `{path}`" in page
        for name in model.model_fields:
            assert f"| `{name}` |" in page


def _models_in(tp: Any) -> set[type[BaseModel]]:
    """The pydantic models a field's annotation can hold (through unions, lists, dicts)."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return {tp}
    return {m for arg in typing.get_args(tp) for m in _models_in(arg)}


def test_every_model_a_profile_can_hold_has_a_section() -> None:
    seen: set[type[BaseModel]] = set()
    todo: list[type[BaseModel]] = [Profile, CandidateSpec]
    while todo:
        model = todo.pop()
        if model not in seen:
            seen.add(model)
            for field in model.model_fields.values():
                todo += _models_in(field.annotation)
    documented = {model for _, model in SECTIONS}
    missing = sorted(m.__name__ for m in seen - documented)
    assert missing == [], f"profile models without a section in qgate/profile/doc.py: {missing}"
