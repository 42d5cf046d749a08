"""The `qgate` command line: a click group with one small function per subcommand.

Subcommands that live in other packages are registered lazily, one line each
at the bottom of this file:

    main.add_lazy_command("verify", "qgate.cli.report:verify", "Check a report.")

The module is imported only when the command runs (or when `qgate --help`
lists it and no short help was given here), so it must not import heavy
libraries (torch, vllm, transformers, lm_eval, matplotlib, securesystemslib)
at import time; giving the short help keeps `qgate --help` from importing it.
Every subcommand gets the error mapping of `qgate.cli.util` (exit codes,
`--debug`) from the group, and ends quietly when the reader of its output goes
away (`qgate plan P | head -1`, a pager quit early): no traceback, exit 141.
"""

from __future__ import annotations

import importlib
import os
import select
import signal
import sys
from collections.abc import Callable
from typing import Any

import click

from qgate import __version__
from qgate.cli.util import guarded
from qgate.core import progress

READER_GONE_EXIT = 128 + int(signal.SIGPIPE)
"""141, what a shell reports for a tool that SIGPIPE ended (`yes | head`): the output was
not all delivered, so not 0 (`qgate verify R | head -1` must not claim a verified report),
and distinct from every qgate code (1 gate failed, 2 bad input, 3 infrastructure)."""


def _reader_gone(fd: int) -> bool:
    """Whether `fd` is a pipe or socket whose reader has gone (poll reports an error on it)."""
    if not hasattr(select, "poll"):
        return False
    poller = select.poll()
    try:
        poller.register(fd, select.POLLOUT)
        events = poller.poll(0)
    except (OSError, ValueError):
        return False
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in events)


def _gone_streams() -> list[int]:
    """The standard output and error descriptors whose readers have gone."""
    gone = []
    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):  # not a file (e.g. a test's buffer)
            continue
        if _reader_gone(fd):
            gone.append(fd)
    return gone


def _silence(fds: list[int]) -> None:
    """Point `fds` at /dev/null, so that what is still buffered for them (flushed at exit)
    goes nowhere instead of raising BrokenPipeError again (the Python docs' recipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def reader_went_away() -> bool:
    """After a BrokenPipeError: True when stdout's or stderr's reader has gone (those streams
    are then pointed at /dev/null); False when the broken pipe was elsewhere (a server socket)."""
    gone = _gone_streams()
    if gone:
        _silence(gone)
    return bool(gone)


def quiet_when_reader_gone(call: Callable[[], Any]) -> Any:
    """`call()`; a broken pipe on stdout or stderr whose reader has gone ends the command
    quietly with READER_GONE_EXIT, through click."""
    try:
        return call()
    except BrokenPipeError:
        if not reader_went_away():
            raise
        raise click.exceptions.Exit(READER_GONE_EXIT) from None


class QgateGroup(click.Group):
    """A click group with lazily imported subcommands and qgate's error mapping."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands: dict[str, str] = {}
        self.lazy_help: dict[str, str] = {}

    def add_lazy_command(self, name: str, target: str, short_help: str | None = None) -> None:
        """Register `name` as the click command at `target` ("package.module:attribute").

        `short_help` is what `qgate --help` shows for it without importing the module.
        """
        self.lazy_commands[name] = target
        if short_help is not None:
            self.lazy_help[name] = short_help

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands and cmd_name not in self.commands:
            module_name, _, attribute = self.lazy_commands[cmd_name].partition(":")
            command = getattr(importlib.import_module(module_name), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self.lazy_commands[cmd_name]} is not a click command")
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max((len(n) for n in names), default=0)
        rows = []
        for name in names:
            if name not in self.commands and name in self.lazy_help:
                rows.append((name, self.lazy_help[name]))
                continue
            try:
                command = self.get_command(ctx, name)
            except Exception as exc:  # one broken plugin module must not break --help
                rows.append((name, f"(cannot load: {exc})"))
                continue
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        return guarded(lambda: quiet_when_reader_gone(lambda: super(QgateGroup, self).invoke(ctx)))

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """click's entry point; what is still buffered for stdout is flushed here, under the
        same rule, rather than by the interpreter at exit (where it would print a traceback)."""
        try:
            return super().main(*args, **kwargs)
        finally:
            try:
                sys.stdout.flush()
            except BrokenPipeError:
                if not reader_went_away():
                    raise
                raise SystemExit(READER_GONE_EXIT) from None


@click.group(cls=QgateGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="qgate")
@click.option(
    "--debug",
    is_flag=True,
    envvar="QGATE_DEBUG",
    help="Show tracebacks instead of one-line errors.",
)
@click.option("-q", "--quiet", is_flag=True, help="Only warnings and errors on stderr.")
@click.option("-v", "--verbose", count=True, help="More detail on stderr (debug lines).")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default=None,
    envvar="QGATE_LOG_LEVEL",
    help="Level of the progress lines on stderr [default: info; --quiet: warning].",
)
@click.pass_context
def main(ctx: click.Context, debug: bool, quiet: bool, verbose: int, log_level: str | None) -> None:
    """Gate a faster precision configuration of an LLM server on answer quality,
    then measure its speed, in one signed report.

    Progress goes to stderr as plain lines (one per stage, runtime start and
    suite, with items done), so CI logs show where a run is.

    Exit codes: 0 every gate passed, 1 a gate failed, 2 bad input,
    3 infrastructure failure, 130 interrupted.
    """
    ctx.meta["qgate.debug"] = debug
    if quiet and verbose:
        raise click.UsageError("--quiet and --verbose contradict each other")
    level = log_level or ("warning" if quiet else "debug" if verbose else "info")
    progress.configure(level)


# Subcommands (one line each; see the module docstring).
main.add_lazy_command(
    "validate", "qgate.cli.validate:validate", "Check profiles without running anything."
)
main.add_lazy_command(
    "schema", "qgate.cli.validate:schema", "Print the JSON Schema of a command's JSON output."
)
main.add_lazy_command("run", "qgate.cli.run:run_cmd", "Gate a candidate config, then measure it.")
main.add_lazy_command("plan", "qgate.cli.plan:plan_cmd", "Print the run plan; start nothing.")
main.add_lazy_command(
    "profile-reference", "qgate.profile.doc:profile_reference", "Print the profile reference."
)
main.add_lazy_command("models", "qgate.cli.models:models", "Prepare the embedded demo model.")
main.add_lazy_command("init", "qgate.cli.init:init_cmd", "Print a short profile to start from.")
main.add_lazy_command("keygen", "qgate.cli.report:keygen", "Create a signing key pair.")
main.add_lazy_command(
    "verify", "qgate.cli.report:verify", "Verify a signed report and recompute its verdicts."
)
main.add_lazy_command("proof", "qgate.cli.proof:proof_cmd", "Write the proof of one report item.")
main.add_lazy_command(
    "check-proof", "qgate.cli.proof:check_proof_cmd", "Check one item against a signed result."
)
main.add_lazy_command("show", "qgate.cli.show:show", "Render a report (md, html, json, junit).")
main.add_lazy_command(
    "compare", "qgate.cli.show:compare_cmd", "Compare several reports side by side."
)
main.add_lazy_command("perf", "qgate.cli.perf:perf", "Run perf scenarios against an endpoint.")
main.add_lazy_command("evals", "qgate.cli.evals:evals", "Check the eval data against its manifest.")
main.add_lazy_command(
    "calibrate",
    "qgate.cli.calibrate:calibrate_cmd",
    "Write calibration records (accuracy per ladder level) from a report.",
)


if __name__ == "__main__":
    main()
