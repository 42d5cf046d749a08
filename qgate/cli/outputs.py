"""The machine-readable outputs of `run`, `verify`, `validate`, `compare` and `perf`
(`--format json`).

Each is one JSON object on stdout whose `format` names it and its version
(`qgate.verify/1`, ...); `qgate schema NAME` prints its JSON Schema, which is
the documentation CI authors code against. Fields are only ever added within a
version; a rename or removal bumps it. Progress and notes stay on stderr, so
stdout parses as it is.
"""

from __future__ import annotations

import json
from typing import Literal

import click
from pydantic import Field

from qgate.core.records import Record
from qgate.perf.records import ScenarioRun
from qgate.perf.summaries import ScenarioMetrics

__all__ = [
    "OUTPUTS",
    "CompareOutput",
    "CompareRow",
    "FailedGate",
    "PerfOutput",
    "RunSummary",
    "ValidateOutput",
    "ValidatedFile",
    "VerifyOutput",
    "echo_json",
]


class VerifyOutput(Record):
    """`qgate verify --format json`."""

    format: Literal["qgate.verify/1"] = "qgate.verify/1"
    report: str = Field(description="The envelope file as given.")
    verified: bool = Field(
        description="Signature, subjects, schema and every recomputed verdict hold."
    )
    kind: Literal["single", "multi"] | None = Field(description="Report kind; None if unread.")
    verdict: str | None = Field(
        description="The report's verdict once verified (PASS, FAIL, UNGATED, PREVIEW), else None."
    )
    passed: bool = Field(description="Verified and the verdict is PASS.")
    require_pass: bool = Field(description="--require-pass was given: a verified non-PASS exits 1.")
    checked: list[str] = Field(description="What was checked, one line each.")
    notes: list[str] = Field(description="Checks that could not be made, and why.")
    signed_only: list[str] = Field(
        default_factory=list,
        description="What the report states that verify cannot re-derive (the fingerprint, "
        "what servers reported, timings, raw records): signed but not re-derived, it rests on "
        "the signer's word. Everything in `checked` was re-derived or checked.",
    )
    error: str | None = Field(description="Why it does not verify (None when it does).")
    exit_code: int = Field(description="The process exit code.")


class ValidatedFile(Record):
    """One profile file of `qgate validate`."""

    path: str = Field(description="The file as given.")
    ok: bool = Field(description="It loads as `run` loads it.")
    error: str | None = Field(description="The one-line reason when it does not.")
    details: list[str] = Field(description="One line per problem (file:line: key: reason).")


class ValidateOutput(Record):
    """`qgate validate --format json`."""

    format: Literal["qgate.validate/1"] = "qgate.validate/1"
    files: list[ValidatedFile] = Field(description="Every file, in the order given.")
    exit_code: int = Field(description="0 when every file is valid, 2 otherwise.")


class CompareRow(Record):
    """One report (or candidate of a multi report) in `qgate compare`."""

    label: str = Field(description="The report's label (file name, or the path when names clash).")
    profile: str = Field(description="Profile name.")
    verdict: str = Field(description="The report's verdict.")
    accuracy_delta: dict[str, float] = Field(
        description="Per suite: candidate accuracy minus reference accuracy (a fraction; "
        "negative = the candidate is worse)."
    )
    mean_kld: float | None = Field(description="Mean KL(reference || candidate) over top-k.")
    output_tokens_per_s_ratio: float | None = Field(
        description="The aggregate: geometric mean over scenarios of candidate/reference output "
        "tokens/s (> 1 = the candidate is faster)."
    )
    ratio_ci_low: float | None = Field(description="2.5th percentile of that geometric mean.")
    ratio_ci_high: float | None = Field(description="97.5th percentile of that geometric mean.")
    scenarios: int = Field(description="Scenarios in the aggregate.")
    perf_status: str = Field(description="ran, skipped: ..., or another perf status.")


class CompareOutput(Record):
    """`qgate compare --format json`."""

    format: Literal["qgate.compare/1"] = "qgate.compare/1"
    aggregate: str = Field(description="How the speed column is aggregated, for people.")
    verified: bool = Field(description="Every report was verified (--pubkey).")
    rows: list[CompareRow] = Field(description="One per report, in the order given.")


class FailedGate(Record):
    """A gate that did not hold."""

    gate: str = Field(description="Gate id, e.g. 'math.long.max_drop'.")
    reason: str = Field(description="One line for people.")
    settled: bool = Field(
        default=True,
        description="False: not decided, the quality stage stopped once another gate's FAIL "
        "was (quality.stop: verdict).",
    )
    inconclusive: bool = Field(
        default=False,
        description="True: INCONCLUSIVE, a non-inferiority gate (rule 'bound') whose evidence "
        "showed neither the loss within the margin nor harm.",
    )
    exercised: bool | None = Field(
        default=None,
        description="False: NOT EXERCISED, a reuse pass that served less than the stated share "
        "from the path it names (quality.reuse); None for gates of no such pass.",
    )


class RunSummary(Record):
    """`qgate run --format json`: what the text summary says, for a CI job."""

    format: Literal["qgate.run/1"] = "qgate.run/1"
    verdict: str = Field(description="PASS, FAIL, UNGATED or PREVIEW.")
    exit_code: int = Field(description="0 every gate passed, 1 a gate failed (docs/ci.md).")
    gates_passed: int = Field(description="Gates that held.")
    gates_total: int = Field(description="Gates judged.")
    failed: list[FailedGate] = Field(description="Every gate that did not hold.")
    underpowered: list[str] = Field(
        description="Passing gates whose sample cannot detect the drop they forbid."
    )
    perf_status: str = Field(
        description="ran, skipped: gates failed, skipped: gates inconclusive, ..."
    )
    reference_cached: bool = Field(description="The reference's quality came from the cache.")
    candidates: list[str] = Field(description="Several candidates: one line each.")
    perf: list[str] = Field(
        description="Headline perf ratios with their intervals, one line per scenario."
    )
    machine: list[str] = Field(description="Capability notes (serving dtype and why, ...).")
    warnings: list[str] = Field(description="Run warnings.")
    engine_warnings: list[str] = Field(description="What the engines warned about.")
    time: list[str] = Field(description="Where the run's time went, one line each.")
    report: str = Field(description="The signed report (DSSE envelope).")
    run_dir: str = Field(description="The run folder (raw records, logs, views).")
    public_key: str | None = Field(
        description="The local development key's public half, when that key signed."
    )


class PerfOutput(Record):
    """`qgate perf --format json`: the perf stage alone, UNGATED (no quality gate ran)."""

    format: Literal["qgate.perf/1"] = "qgate.perf/1"
    ungated: Literal[True] = Field(
        default=True, description="Always true: no quality gate was checked."
    )
    runs: list[ScenarioRun] = Field(
        description="Each scenario run (one per sweep level or input length) with every request "
        "record; t0_unix_ns is the wall-clock time of its zero."
    )
    metrics: list[ScenarioMetrics] = Field(
        description="The figures of each run, as the text table shows them."
    )
    notes: list[str] = Field(
        description="Thin percentiles, failed stream checks, and one 'FAIL gate: reason' line "
        "per failed scenario check (exit 1)."
    )


OUTPUTS: dict[str, type[Record]] = {
    "run": RunSummary,
    "verify": VerifyOutput,
    "validate": ValidateOutput,
    "compare": CompareOutput,
    "perf": PerfOutput,
}


def echo_json(out: Record) -> None:
    """One JSON object on stdout."""
    click.echo(json.dumps(out.model_dump(mode="json"), indent=2))
