"""`qgate models ...`: prepare the embedded default model."""

from __future__ import annotations

import click

from qgate.checkpoint import embedded


@click.group("models")
def models() -> None:
    """Embedded models that qgate prepares itself."""


@models.command("prepare")
@click.argument("name", metavar="NAME", type=click.Choice(["smollm2"]))
@click.option("--force", is_flag=True, help="Rebuild even if the checkpoint exists.")
def prepare_cmd(name: str, force: bool) -> None:
    """Convert embedded model NAME (smollm2) into a bf16 Hugging Face checkpoint in the cache
    (once)."""
    path = embedded.checkpoint_path(name)
    if (path / embedded.DIGESTS_FILE).is_file() and not force:
        click.echo(f"ready {path}")
        return
    click.echo(f"preparing {name} into {path} (about 30 s) ...", err=True)
    click.echo(f"ready {embedded.prepare(name, force=force)}")


@models.command("path")
@click.argument("name", metavar="NAME", type=click.Choice(["smollm2"]))
def path_cmd(name: str) -> None:
    """Print where embedded model NAME's checkpoint is (exit 2 if not prepared)."""
    click.echo(str(embedded.require_checkpoint(name)))
