"""How every qgate subcommand turns expected errors into messages and exit codes.

Expected failures are `QgateError`s: they print `error: <message>` and one
line per detail on stderr, without a traceback, and exit with the error's
exit code. Ctrl-C exits 130 with one line. `--debug` (or QGATE_DEBUG=1)
lets the traceback through instead. Anything else is a qgate bug: it prints
its traceback and exits 3, never 1, because 1 means "a gate failed" to CI.

The `main` group applies this to every subcommand; `run_command` is the same
mapping for code that runs outside the group (scripts, tests).
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

import click

from qgate.core.files import atomic_write
from qgate.errors import ExitCode, QgateError

# The CLI's one vocabulary (docs/reference/cli.md says it for users):
# `--format` of every command with a text and a JSON form (run, plan, perf, verify, validate,
# compare); `show` renders a report and has its own formats.
TEXT_OR_JSON = click.Choice(["text", "json"])
# `--progress/--no-progress` (run, perf): the live display on a terminal; CI logs (stderr not
# a terminal) get plain progress lines either way, and `-q` quiets those.
PROGRESS_HELP = "A live progress display on stderr when it is a terminal (never in a CI log)."
# `--out PATH` is where a command writes what it makes, instead of stdout or its default
# place: a file for init, keygen, show and perf; the folder that receives the run folder
# for run (a run makes a folder of files).

P = ParamSpec("P")
R = TypeVar("R")

DEBUG_ENV = "QGATE_DEBUG"


def emit(text: str, out: Path | None) -> None:
    """Write a command's output to stdout, or to the file `--out` names (said on stderr)."""
    if out is None:
        click.echo(text, nl=False)
        return
    atomic_write(out, text.encode())
    click.echo(f"wrote {out}", err=True)


def debug_enabled() -> bool:
    """True when --debug was given to the current command line, or QGATE_DEBUG is set."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.find_root().meta.get("qgate.debug"):
        return True
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def echo_error(exc: QgateError) -> None:
    """Print an expected error the way every qgate command does."""
    click.echo(f"error: {exc.message}", err=True)
    for line in exc.details:
        click.echo(f"  {line}", err=True)


def exit_code_for(exc: BaseException) -> int:
    """The process exit code qgate uses for an exception that ended a command."""
    if isinstance(exc, QgateError):
        return int(exc.exit_code)
    if isinstance(exc, KeyboardInterrupt):
        return int(ExitCode.INTERRUPTED)
    return int(ExitCode.INFRASTRUCTURE)


def handle(exc: BaseException, debug: bool) -> int:
    """Report `exc` on stderr and return the exit code; re-raise it in debug mode."""
    if debug:
        raise exc
    if isinstance(exc, QgateError):
        echo_error(exc)
    elif isinstance(exc, KeyboardInterrupt):
        click.echo("error: interrupted", err=True)
    else:
        traceback.print_exception(exc, file=sys.stderr)
        click.echo(f"error: internal error (a qgate bug): {exc!r}", err=True)
    return exit_code_for(exc)


def guarded(call: Callable[[], R]) -> R:
    """`call()` with qgate's error -> message and exit code mapping (the one place it is done).

    Inside a click context it exits through click (`ctx.exit`); outside one it
    raises SystemExit with the code.
    """
    try:
        return call()
    except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
        raise
    except (Exception, KeyboardInterrupt) as exc:
        code = handle(exc, debug_enabled())
        ctx = click.get_current_context(silent=True)
        if ctx is not None:
            ctx.exit(code)
        raise SystemExit(code) from None


def run_command(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorate a command function with `guarded` (for code outside the `main` group)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        return guarded(lambda: fn(*args, **kwargs))

    return wrapper
