"""The side-by-side table and the overall verdict of a multi report, derived from its entries.

Pure functions of the candidates' reports: `qgate run` stores what they
give, `qgate verify` recomputes them and rejects a report that differs.
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.gates.judgement import probes_failed
from qgate.report.derive import accuracy_deltas, flips, mean_kld, suite_pairs
from qgate.report.model import Report
from qgate.report.multi_model import (
    CandidateEntry,
    CandidateRow,
    CandidateVerdict,
    RatioCell,
    ScenarioRatios,
    verdict_of,
)

__all__ = ["TABLE_METRICS", "candidate_row", "multi_verdict", "table"]

TABLE_METRICS = (
    "output_throughput",
    "request_output_tok_s.p50",
    "request_decode_tok_s.p50",
    "ttft_ms.p90",
)
"""The speed ratios of the table: throughput, per-request output and decode rates, TTFT p90."""


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _speed(report: Report) -> list[ScenarioRatios]:
    out = []
    for result in report.perf.results:
        if probes_failed(result.verdicts, result.scenario):  # its ratios are withheld
            continue
        ratios = {}
        for c in result.comparisons:
            metric = c.get("metric")
            if metric in TABLE_METRICS:
                ratios[str(metric)] = RatioCell(
                    ratio=_num(c.get("ratio")),
                    ci_low=_num(c.get("ci_low")),
                    ci_high=_num(c.get("ci_high")),
                )
        hit = _num((result.candidate or {}).get("prefix_cache_hit_rate"))
        if ratios or hit is not None:
            ordered = {m: ratios[m] for m in TABLE_METRICS if m in ratios}
            out.append(
                ScenarioRatios(scenario=result.scenario, ratios=ordered, prefix_cache_hit_rate=hit)
            )
    return out


def candidate_row(entry: CandidateEntry) -> CandidateRow:
    """One row of the table from one candidate's report (or its error)."""
    row = CandidateRow(candidate=entry.name, required=entry.required, verdict=verdict_of(entry))
    rep = entry.report
    if rep is None:
        return row
    row.accuracy_deltas = accuracy_deltas(rep)
    for _, ref, cand in suite_pairs(rep.quality.runs):
        if ref is not None and cand is not None:
            lost, gained = flips(ref, cand)
            row.lost += len(lost)
            row.gained += len(gained)
    row.mean_kld = mean_kld(rep)
    div = rep.quality.divergence
    agree = [a for s in div.sequences for a in s.top1_agree] if div else []
    row.top1_agreement = sum(agree) / len(agree) if agree else None
    row.perf_status = rep.perf.status
    row.speed = _speed(rep)
    return row


def table(entries: Sequence[CandidateEntry]) -> list[CandidateRow]:
    return [candidate_row(e) for e in entries]


_PRECEDENCE: tuple[CandidateVerdict, ...] = ("ERROR", "UNGATED", "FAIL", "INCONCLUSIVE")


def multi_verdict(entries: Sequence[CandidateEntry]) -> tuple[CandidateVerdict, list[str]]:
    """The overall verdict (decided by the required candidates) and the optional ones that failed.

    ERROR (a required candidate's runtime failed) before UNGATED (perf forced
    past a failed gate) before FAIL before INCONCLUSIVE; PREVIEW when a required candidate is a
    speed preview; else PASS.
    """
    required = [verdict_of(e) for e in entries if e.required]
    optional = [
        f"{e.name}: {verdict_of(e)}"
        for e in entries
        if not e.required and verdict_of(e) not in ("PASS", "PREVIEW")
    ]
    for verdict in _PRECEDENCE:
        if verdict in required:
            return verdict, optional
    return ("PREVIEW" if "PREVIEW" in required else "PASS"), optional
