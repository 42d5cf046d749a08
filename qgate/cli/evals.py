"""`qgate evals build|check`: regenerate the eval data, or verify it against its manifest."""

from __future__ import annotations

from pathlib import Path

import click

from qgate.errors import BadInput
from qgate.quality.data import build_evals, check_evals, evals_root


@click.group()
def evals() -> None:
    """Check the generated eval data in evals/ against its MANIFEST.json."""


@evals.command(hidden=True)  # a developer's command: the data is committed
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Eval folder (default: the evals/ next to the qgate package, or $QGATE_EVALS_DIR).",
)
def build(root: Path | None) -> None:
    """Regenerate every generated eval file and MANIFEST.json."""
    for path in build_evals(root or evals_root()):
        click.echo(f"wrote {path}")


@evals.command()
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Eval folder (default: the evals/ next to the qgate package, or $QGATE_EVALS_DIR).",
)
@click.option(
    "--no-regenerate",
    is_flag=True,
    help="Only compare files with the manifest; skip regenerating them in memory.",
)
def check(root: Path | None, no_regenerate: bool) -> None:
    """Verify every generated file against MANIFEST.json; exit 2 naming each mismatch."""
    folder = root or evals_root()
    problems = check_evals(folder, regenerate=not no_regenerate)
    if problems:
        raise BadInput(f"{len(problems)} eval file(s) do not match the manifest", details=problems)
    click.echo(f"ok {folder}")
