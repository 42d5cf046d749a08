"""`qgate run PROFILE`: the whole pipeline, a short summary, and the exit code."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from qgate.cli.outputs import FailedGate, RunSummary, echo_json
from qgate.cli.util import PROGRESS_HELP, TEXT_OR_JSON
from qgate.core.outpaths import check_in_file, check_out_dir
from qgate.core.provenance import parse_metadata
from qgate.core.verdict import Verdict, not_exercised_lines
from qgate.errors import BadInput
from qgate.gates.pooled import GATE as ENVELOPE_GATE
from qgate.report.verdict import verdict_label
from qgate.run.pipeline import RunOptions, run

if TYPE_CHECKING:
    from qgate.cli.outputs import RunSummary
    from qgate.run.options import RunOutcome


def _sigterm_as_interrupt(signum: int, frame: FrameType | None) -> None:
    # CI runners stop jobs with SIGTERM; unwinding as Ctrl-C stops every server
    # and keeps what the run folder already holds.
    raise KeyboardInterrupt


@click.command("run")
@click.argument("profile", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_root",
    type=click.Path(path_type=Path),
    default=Path("qgate-runs"),
    show_default=True,
    help="Folder that receives the run's folder (one new folder per run: the signed report, "
    "its views, raw records and logs).",
)
@click.option(
    "--key",
    type=click.Path(path_type=Path),
    default=None,
    help="PEM private key to sign with (else the profile's signing section, "
    "$QGATE_SIGNING_KEY, or a local development key).",
)
@click.option(
    "--preregistration",
    type=click.Path(path_type=Path),
    default=None,
    help="The statement `qgate plan --sign` signed before the run: the run refuses to start "
    "unless it registers this profile and this plan, and its report binds to it. [default: "
    "the run signs its own before its first server starts]",
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Reference cache folder [default: the qgate cache folder].",
)
@click.option(
    "--refresh-reference", is_flag=True, help="Recompute the reference, ignore the cache."
)
@click.option(
    "--trust-cache-key",
    "trust_cache_keys",
    multiple=True,
    type=click.Path(path_type=Path),
    help="PEM public key whose signed reference cache entries are trusted besides "
    "this run's own signing key (repeatable).",
)
@click.option(
    "--strict-cache",
    is_flag=True,
    help="Refuse (exit 2) a reference cache entry that fails authentication "
    "instead of recomputing it.",
)
@click.option("--skip-perf", is_flag=True, help="Gate only; do not run the perf stage.")
@click.option(
    "--force-perf",
    is_flag=True,
    help="Run perf even when a gate failed; the report is marked UNGATED.",
)
@click.option(
    "--progress/--no-progress",
    default=True,
    show_default=True,
    help=PROGRESS_HELP,
)
@click.option(
    "--metadata",
    "metadata",
    multiple=True,
    metavar="KEY=VALUE",
    help="Recorded in the signed report and shown in every view (repeatable; "
    "vllm bench's convention). CI variables (commit, run id...) are recorded anyway.",
)
@click.option(
    "--format",
    "fmt",
    type=TEXT_OR_JSON,
    default="text",
    show_default=True,
    help="The final summary as lines for people, or as one JSON "
    "object on stdout (`qgate schema run`); progress stays on stderr.",
)
@click.option(
    "--attribute",
    is_flag=True,
    help="When the candidate fails its gates, find the smallest set of its changes "
    "that fails (sub-candidates against the same reference records; the profile's "
    "attribution: block sets the budget and groups).",
)
@click.option(
    "--cluster",
    metavar="ADDRESS",
    envvar="RAY_ADDRESS",
    default=None,
    help="Run each server life as a Ray actor on a node of this cluster (HOST:PORT, or "
    "'auto'), independent lives at once; the suites run here (docs/cluster.md). "
    "[default: $RAY_ADDRESS when set, else the profile's cluster.address]",
)
@click.option(
    "--executor",
    metavar="NAME",
    default=None,
    help="Make every server life with this executor: 'ray', or one an installed plug-in "
    "registers (entry-point group qgate.executors; docs/extending.md); it gets --cluster's "
    "address. [default: 'ray' with a cluster address, else this machine]",
)
def run_cmd(
    profile: Path,
    out_root: Path,
    key: Path | None,
    preregistration: Path | None,
    cache_dir: Path | None,
    refresh_reference: bool,
    trust_cache_keys: tuple[Path, ...],
    strict_cache: bool,
    skip_perf: bool,
    force_perf: bool,
    progress: bool,
    metadata: tuple[str, ...],
    fmt: str,
    attribute: bool,
    cluster: str | None,
    executor: str | None,
) -> None:
    """Gate the candidate of PROFILE against its reference, then measure it."""
    if skip_perf and force_perf:
        raise BadInput("--skip-perf and --force-perf contradict each other")
    pairs = parse_metadata(metadata)
    check_out_dir(out_root, "--out")
    if cache_dir is not None:
        check_out_dir(cache_dir, "--cache-dir")
    if key is not None:
        check_in_file(key, "--key")
    if preregistration is not None:
        check_in_file(preregistration, "--preregistration")
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        outcome = run(
            RunOptions(
                profile=profile,
                out_root=out_root,
                key=key,
                preregistration=preregistration,
                cache_dir=cache_dir,
                refresh_reference=refresh_reference,
                trust_cache_keys=trust_cache_keys,
                strict_cache=strict_cache,
                skip_perf=skip_perf,
                force_perf=force_perf,
                progress=progress and sys.stderr.isatty(),
                metadata=pairs,
                attribute=attribute,
                cluster=cluster or None,
                executor=executor,
            ),
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    if fmt == "json":
        echo_json(json_summary(outcome))
    else:
        text_summary(outcome)
    click.get_current_context().exit(int(outcome.exit_code))


def text_summary(outcome: RunOutcome) -> None:
    """The lines `qgate run` ends with."""
    failed = [v for v in outcome.verdicts if not v.passed]
    click.echo(
        f"{verdict_label(outcome.verdict)}: {len(outcome.verdicts) - len(failed)}/"
        f"{len(outcome.verdicts)} gates passed; perf {outcome.perf_status}"
        + ("; reference from cache" if outcome.reference_cached else "")
    )
    for line in outcome.candidates:
        click.echo(f"  candidate {line}")
    for line in not_exercised_lines(failed):
        click.echo(f"  NOT EXERCISED {line}")
    for v in failed:
        if v.inconclusive:
            click.echo(f"  INCONCLUSIVE {v.gate}: {v.reason}{_pool_note(v, outcome.perf_status)}")
        elif v.settled and v.exercised is not False:
            click.echo(f"  FAIL {v.gate}: {v.reason}")
    open_gates = [v.gate for v in failed if not v.settled]
    if open_gates:
        click.echo(
            f"  not settled ({len(open_gates)}, quality stopped once the FAIL was): "
            + ", ".join(open_gates)
        )
    for line in outcome.attribution:
        click.echo(f"  {line}")
    for line in outcome.capability_notes:
        click.echo(f"  machine: {line}")
    for line in outcome.warnings:
        click.echo(f"  WARNING: {line}")
    weak = [v.gate for v in outcome.verdicts if v.passed and v.underpowered]
    if weak:
        click.echo(
            f"  note: {len(weak)} passing gates are underpowered (the sample cannot detect "
            f"the drop they forbid): {', '.join(weak)}"
        )
    if outcome.cliff:
        click.echo(f"  cliff: {outcome.cliff}")
    if outcome.floor:
        click.echo(f"  noise floor: {outcome.floor}")
    for line in outcome.engine_warnings:
        click.echo(f"  engine warning: {line}")
    for line in outcome.headline:
        click.echo(f"  perf {line}")
    if outcome.time:
        click.echo("time:")
        for line in outcome.time:
            click.echo(f"  {line}")
    click.echo(f"report: {outcome.envelope}")
    click.echo(f"views:  {outcome.run_dir / 'report.md'}  {outcome.run_dir / 'report.html'}")
    if outcome.public_key is not None:
        click.echo(f"signed with the local development key; public key: {outcome.public_key}")


def _pool_note(v: Verdict, perf_status: str) -> str:
    """Why the pooled envelope gate holds no perf probe answer, where the perf stage did not run
    (--skip-perf, or gates that did not pass): its answers are the lives' alone."""
    if v.gate != ENVELOPE_GATE or perf_status in ("ran", "ungated"):
        return ""
    return f" (perf {perf_status}: the pool holds the lives' probe answers alone, no perf probe)"


def json_summary(outcome: RunOutcome) -> RunSummary:
    """The same facts as `text_summary`, as `qgate.run/1`."""
    return RunSummary(
        verdict=str(outcome.verdict),
        exit_code=int(outcome.exit_code),
        gates_passed=sum(v.passed for v in outcome.verdicts),
        gates_total=len(outcome.verdicts),
        failed=[
            FailedGate(
                gate=v.gate,
                reason=v.reason,
                settled=v.settled,
                exercised=v.exercised,
                inconclusive=v.inconclusive,
            )
            for v in outcome.verdicts
            if not v.passed
        ],
        underpowered=[v.gate for v in outcome.verdicts if v.passed and v.underpowered],
        perf_status=str(outcome.perf_status),
        reference_cached=outcome.reference_cached,
        candidates=list(outcome.candidates),
        perf=list(outcome.headline),
        machine=list(outcome.capability_notes),
        warnings=list(outcome.warnings),
        engine_warnings=list(outcome.engine_warnings),
        time=list(outcome.time),
        report=str(outcome.envelope),
        run_dir=str(outcome.run_dir),
        public_key=str(outcome.public_key) if outcome.public_key is not None else None,
    )
