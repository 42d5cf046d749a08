"""Every field of a single report is one of three kinds, and this module says which (issue 54
item 3): a *raw observation* (what the run saw: responses, counters, timestamps), a *derived*
field (re-derived by verify from the raw ones and the profile), or *run metadata* (signed, not
an observation a verdict rests on).

Each raw record kind declares where it lives, the derivation that introduced it (a report that
holds it cannot claim an older one: `floor`) and the verify function that checks it (its own
arithmetic, and where the plan asks for it, that it is all there); each derived field the
verify function that makes it again. `signed_only` lists the raw kinds a report holds: what
rests on its signature. tests/unit/report/test_record_kinds.py walks the report model and
fails for a field of no kind, or a kind without its derivation or checker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from qgate.gates.judgement import LIFE_SALTS
from qgate.gates.speculative import counter_problems
from qgate.perf.cache_sources import CACHE_FROM
from qgate.perf.counters import source_key
from qgate.quality.calibrate import check_stored
from qgate.quality.noise_floor import FLOOR_FROM
from qgate.report.model import Report
from qgate.report.verify.attribution import check_attribution
from qgate.report.verify.cache_check import check_cache, check_life_salts
from qgate.report.verify.cluster import check_cluster
from qgate.report.verify.cross_check import check_cross_planned, check_cross_records
from qgate.report.verify.floor_plan import check_floor_planned
from qgate.report.verify.item_plan import check_items_planned
from qgate.report.verify.lives import check_lives, planned_lives
from qgate.report.verify.machine import check_machine
from qgate.report.verify.pass_plan import PASSES_FROM, check_passes_planned
from qgate.report.verify.perf_design import check_perf_design
from qgate.report.verify.provenance import check_provenance
from qgate.report.verify.recompute import recompute_perf, recompute_quality
from qgate.report.verify.rederive import rederive_correctness, rederive_divergence
from qgate.report.verify.reuse import check_passes
from qgate.report.verify.spec_tokens import check_spec_generated

__all__ = ["DERIVED", "METADATA", "RAW", "RawKind", "floor", "raw_lines"]

Axis = Literal["quality", "perf"]
Checker = Callable[..., object]


@dataclass(frozen=True)
class RawKind:
    """One kind of raw observation a report signs."""

    name: str
    """Where it lives: `section.field` (or `section.field.part` for a record inside one)."""
    axis: Axis
    introduced: int
    """The derivation (on `axis`) that introduced it: a report holding it claims no less."""
    present: Callable[[Report], bool]
    checkers: tuple[Checker, ...]
    """The verify functions that check it (arithmetic, shape, plan)."""
    signed: str
    """What of it rests on the signature alone, for verify's list."""


def _graded_turns(r: Report) -> bool:
    return any(q.graded_turn is not None for run in r.perf.runs for q in run.requests)


def _probes(r: Report) -> bool:
    return any(q.probe_truth is not None for run in r.perf.runs for q in run.requests)


def _cache(r: Report) -> bool:
    key = source_key("local_compute")
    return any("cache_salt" in run.params or key in run.counters_after for run in r.perf.runs)


def _series(r: Report) -> bool:
    return any(
        s is not None and s.get("time_series") is not None
        for result in r.perf.results
        for s in (result.reference, result.candidate)
    )


RAW: tuple[RawKind, ...] = (
    RawKind(
        "quality.runs",
        "quality",
        1,
        lambda r: bool(r.quality.runs),
        (rederive_correctness, check_items_planned),
        "quality.runs: the raw responses, request parameters and wall times "
        "(answers, correctness and every verdict are re-derived from them; each side's "
        "results and their item ids held to the plan, a run that stopped early to the first "
        "of them; an lm-eval task's size rests on lm-eval's count, params.documents, where "
        "its data file is not at hand)",
    ),
    RawKind(
        "quality.divergence",
        "quality",
        1,
        lambda r: r.quality.divergence is not None,
        (rederive_divergence, check_items_planned),
        "quality.divergence: the per-position top-k logprobs (every KL, agreement and "
        "delta-p value is re-derived from them; the sequences held to the corpus's first "
        "prompts the profile plans)",
    ),
    RawKind(
        "quality.divergence.cross_check",
        "quality",
        5,
        lambda r: r.quality.divergence is not None and bool(r.quality.divergence.cross_check),
        (check_cross_records, check_cross_planned),
        "quality.divergence.cross_check: the candidate's own greedy generations and "
        "their top-k logprobs (the cross-check gate is re-derived from them; held to "
        "one per scored sequence, its length, and logprobs <= 0)",
    ),
    RawKind(
        "quality.passes",
        "quality",
        PASSES_FROM,
        lambda r: bool(r.quality.passes),
        (check_passes, check_passes_planned),
        "quality.passes: the server counters scraped around each suite and probe, and each "
        "suite's per-request usage: checked for their own arithmetic (totals, never backwards, "
        "both sides alike, usage inside its window) and every share and exercise verdict "
        "re-derived from them; each side's passes, results and items held to the plan; that "
        "the server counted what these numbers say, and the reset and filler qgate says it "
        "sent (prepare), are not re-derived",
    ),
    RawKind(
        "quality.speculative",
        "quality",
        4,
        lambda r: bool(r.quality.speculative),
        (counter_problems, check_spec_generated),
        "quality.speculative: the speculative-decoding counters each server reported "
        "around its suites (the acceptance gate is re-derived from them, and held to their "
        "own arithmetic: accepted <= draft tokens, positions add up, none goes back, and "
        "accepted tokens plus drafts within what the math and recall items generated)",
    ),
    RawKind(
        "quality.calibration",
        "quality",
        2,
        lambda r: r.quality.calibration is not None,
        (check_stored,),
        "quality.calibration: the prior run's per-level records the math items were drawn "
        "from (the levels chosen and the items drawn are re-derived from them)",
    ),
    RawKind(
        "quality.noise_floor",
        "quality",
        FLOOR_FROM,
        lambda r: r.quality.noise_floor is not None,
        (rederive_correctness, rederive_divergence, check_floor_planned),
        "quality.noise_floor: the reference's second answers and scores (their correctness "
        "and divergence are re-derived, and the limits they derive with them; every result, "
        "item and continuation the profile asks again must be there)",
    ),
    RawKind(
        "perf.runs",
        "perf",
        1,
        lambda r: bool(r.perf.runs),
        (check_perf_design, recompute_perf),
        "perf.runs: per-request timestamps, token counts and server counters "
        "(every perf figure and ratio is re-derived from them; their blocks per round and "
        "requests per block are held to the profile, a side's probes to none or one per "
        "probe_share of its requests)",
    ),
    RawKind(
        "perf.runs.cache",
        "perf",
        CACHE_FROM,
        _cache,
        (check_cache, recompute_perf),
        "perf cache records: each run's cache-salt scope, prompt tokens by source around it, "
        "and each request's cached prompt tokens (the scope is re-derived from the side's "
        "engine, round and block; the sources held to add up and never go back; the "
        "provenance beside each scenario re-derived from them)",
    ),
    RawKind(
        "perf.runs.block",
        "perf",
        4,
        lambda r: any(run.block > 0 for run in r.perf.runs),
        (check_perf_design,),
        "perf.runs (blocks): which block each scenario run belongs to (held to perf.blocks)",
    ),
    RawKind(
        "perf.runs.round",
        "perf",
        6,
        lambda r: any(run.round > 0 for run in r.perf.runs),
        (check_perf_design,),
        "perf.runs (rounds): which perf round each run belongs to (held to perf.rounds)",
    ),
    RawKind(
        "perf.results.time_series",
        "perf",
        3,
        _series,
        (recompute_perf,),
        "perf time series: re-derived from the request timestamps",
    ),
    RawKind(
        "perf.runs.probes",
        "perf",
        8,
        _probes,
        (check_perf_design, recompute_perf),
        "perf probes: each probe's text and the item's known answer (every grade is "
        "re-derived; their count per scenario run is the plan's)",
    ),
    RawKind(
        "perf.runs.graded_turns",
        "perf",
        9,
        _graded_turns,
        (check_perf_design, recompute_perf),
        "graded session turns: each turn's text (its grade and the turn gate are re-derived; "
        "every session x turn of every run of each side the perf stage plans must be there)",
    ),
    RawKind(
        "lives.records",
        "perf",
        8,
        lambda r: r.lives is not None and bool(r.lives.records),
        (planned_lives, check_lives),
        "lives.records: each life's start and idle probe answers, their idle pause and "
        "where the life ran (the life verdicts and the rounds kept out are re-derived; each "
        "planned life's records must be there)",
    ),
    RawKind(
        "lives.records.cache_salt",
        "perf",
        LIFE_SALTS,
        lambda r: r.lives is not None and any(p.cache_salt is not None for p in r.lives.records),
        (check_life_salts,),
        "life probe cache salts: each life probe set's cache-salt scope (re-derived from its "
        "side's engine, life, round, purpose and moment; that the server was sent it is not)",
    ),
    RawKind(
        "fingerprint",
        "quality",
        1,
        lambda r: r.fingerprint is not None,
        (check_machine,),
        "fingerprint: the machine, its packages and checkpoint digests as the run found them "
        "(--model checks the digests against files you hold)",
    ),
    RawKind(
        "effective_configs",
        "quality",
        1,
        lambda r: bool(r.effective_configs),
        (check_machine,),
        "effective_configs: what each server reported beyond the settings asked of it "
        "(engine version, attention backend, kernels, engine warnings, start-up phases)",
    ),
    RawKind(
        "effective_configs.speculative_config",
        "quality",
        4,
        lambda r: any(c.speculative_config is not None for c in r.effective_configs),
        (recompute_quality,),
        "effective_configs.speculative_config: the speculative decoding each engine logged "
        "it runs (a contradicted speculative change is a failed gate re-derived from it; "
        "quality derivation 4 wrote it first)",
    ),
    RawKind(
        "reference_provenance",
        "quality",
        1,
        lambda r: r.reference_provenance is not None,
        (check_provenance,),
        "reference_provenance: that its cache key matches the run's inputs, and that the "
        "cache entry's records are the report's",
    ),
    RawKind(
        "plan",
        "perf",
        1,
        lambda r: r.plan is not None,
        (check_perf_design,),
        "plan: the server lives the run planned (with perf.blocks unset, its mode gives the "
        "blocks per side verify expects: 2 together, 1 in sequence)",
    ),
    RawKind(
        "attribution",
        "quality",
        1,
        lambda r: r.attribution is not None,
        (check_attribution,),
        "attribution: each trial's raw records (its verdicts are re-derived)",
    ),
    RawKind(
        "provenance",
        "perf",
        1,
        lambda r: r.provenance is not None and r.provenance.cluster is not None,
        (check_cluster,),
        "provenance.cluster: the Ray cluster, each life's node and resources, and where "
        "each side's perf blocks ran (the speed design is re-derived from the lives, and "
        "their rounds held to the perf records'; the nodes themselves are not)",
    ),
)
"""The raw record kinds, in the order verify lists them."""

DERIVED: dict[str, str] = {
    "quality.verdicts": "qgate.report.verify.recompute.recompute_quality",
    "quality.derivation": "qgate.report.verify.derivation.check_derivations",
    "perf.results": "qgate.report.verify.recompute.recompute_perf",
    "perf.gates": "qgate.report.verify.recompute.recompute_perf_gates",
    "perf.status": "qgate.report.verify.recompute.check_perf_status",
    "perf.derivation": "qgate.report.verify.derivation.check_derivations",
    "perf.bootstrap_resamples": "qgate.report.verify.recompute.recompute_perf",
    "perf.bootstrap_seed": "qgate.report.verify.recompute.recompute_perf",
    "verdict": "qgate.report.verify.recompute.check_status_and_verdict",
    "warnings": "qgate.report.verify.recompute.recompute_warnings",
    "target_mismatches": "qgate.report.verify.machine.check_machine",
    "emulated": "qgate.report.verify.machine.check_machine",
    "capability_notes": "qgate.report.verify.machine.check_machine",
    "lives.verdicts": "qgate.report.verify.lives.check_lives",
    "lives.excluded_rounds": "qgate.report.verify.lives.check_lives",
    "envelope": "qgate.report.verify.recompute.recompute_envelope",
    "preregistration": "qgate.report.verify.statements.check_bindings",
    "items_root": "qgate.report.verify.statements.check_bindings",
}
"""Every derived field and the verify function that makes it again (dotted: the derivation
checks import this module)."""

METADATA: dict[str, str] = {
    "schema_version": "the report format (read, not derived)",
    "qgate_version": "signed",
    "command_line": "signed (redacted)",
    "created_at": "signed",
    "profile": "the profile as run (validated; --profile matches it to a file you hold)",
    "profile_sha256": "the profile file's digest (--profile checks it)",
    "stage_timings": "signed",
    "starts": "signed (each server's start-up)",
    "artifacts": "signed (the run folder's files and their digests)",
    "signer": "the key that signed (the signature is checked against the key you give)",
}
"""Run metadata: signed, not an observation a verdict rests on."""

METADATA_LINE = (
    "stage_timings, starts, created_at, command_line, qgate_version, provenance, artifacts"
)


def floor(report: Report) -> tuple[int, int, list[str]]:
    """The least quality and perf derivations that could have made the report's raw records,
    and the kinds that set them."""
    out: dict[Axis, int] = {"quality": 1, "perf": 1}
    why: list[str] = []
    for kind in RAW:
        if kind.introduced > out[kind.axis] and kind.present(report):
            out[kind.axis] = kind.introduced
            why.append(f"{kind.name} ({kind.axis} {kind.introduced})")
    return out["quality"], out["perf"], why


def raw_lines(report: Report) -> list[str]:
    """What of `report` rests on its signature: every raw kind it holds."""
    return [k.signed for k in RAW if k.present(report)]
