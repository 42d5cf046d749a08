"""`qgate validate PROFILES` (read them, run nothing; exit 2 if one is invalid), `qgate schema`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from qgate.cli.outputs import OUTPUTS, ValidatedFile, ValidateOutput, echo_json
from qgate.cli.util import TEXT_OR_JSON, echo_error
from qgate.errors import ExitCode, ProfileError
from qgate.profile.load import LoadedProfile
from qgate.profile.load_multi import LoadedMulti, load_any_profile_file
from qgate.profile.vacuous import unshowable_envelope

__all__ = ["schema", "validate"]


@click.command()
@click.argument("profiles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--skip-files",
    is_flag=True,
    help="Do not check that the model, data and other local files named exist "
    "(for profiles meant for another machine).",
)
@click.option(
    "--format",
    "fmt",
    type=TEXT_OR_JSON,
    default="text",
    show_default=True,
    help="Lines for people, or one JSON object (`qgate schema validate`).",
)
def validate(profiles: tuple[Path, ...], skip_files: bool, fmt: str) -> None:
    """Check the PROFILES files without running anything; exit 2 if any is invalid."""
    files: list[ValidatedFile] = []
    for path in profiles:
        try:
            loaded = load_any_profile_file(path, check_files=not skip_files)
        except ProfileError as exc:
            files.append(
                ValidatedFile(
                    path=str(path), ok=False, error=exc.message, details=list(exc.details)
                )
            )
            if fmt != "json":
                echo_error(exc)
        else:
            files.append(ValidatedFile(path=str(path), ok=True, error=None, details=[]))
            if fmt != "json":
                click.echo(f"ok {path}")
                for line in _notes(loaded):
                    click.echo(f"  note: {line}")
    code = int(ExitCode.BAD_INPUT) if any(not f.ok for f in files) else 0
    if fmt == "json":
        echo_json(ValidateOutput(files=files, exit_code=code))
    if code:
        raise click.exceptions.Exit(code)


def _notes(loaded: LoadedProfile | LoadedMulti) -> list[str]:
    """What a valid profile relies on defaults for that will not show: a pooled envelope gate
    sized by defaults alone that can never show its margin (written keys that size it are
    refused instead: qgate/profile/vacuous.py)."""
    if isinstance(loaded, LoadedMulti):
        named = [(c.name, c.profile) for c in loaded.multi.candidates]
    else:
        named = [("", loaded.profile)]
    out = []
    for name, profile in named:
        line = unshowable_envelope(profile)
        if line is not None:
            out.append(f"{name}: {line}" if name else line)
    return out


@click.command()
@click.argument(
    "name", metavar="NAME", type=click.Choice(["compare", "perf", "run", "validate", "verify"])
)
def schema(name: str) -> None:
    """Print the JSON Schema of the `--format json` output of command NAME (compare, perf, run,
    validate or verify)."""
    click.echo(json.dumps(OUTPUTS[name].model_json_schema(), indent=2))
