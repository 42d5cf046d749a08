"""The report's performance section: per perf scenario, the ratios with their intervals (and
rounds), each side's rates, cache provenance and latency distributions, after the graded
probes and turns.

Read from the report as stored: the summaries and comparisons the judge made
(`ScenarioResult`), never derived again here.
"""

from __future__ import annotations

from typing import Any

from qgate.report.model import Report
from qgate.report.render.cache_view import cache_table
from qgate.report.render.parts import Section, Table, fmt
from qgate.report.render.probes_view import probe_lines, probe_table
from qgate.report.render.rounds_view import ROUND_HEADER, round_cells, speed_design
from qgate.report.render.turns_view import turn_lines, turn_table

__all__ = ["PCTS", "QUEUE_SHOWN_MS", "distribution_rows", "perf_section"]


def perf_section(report: Report) -> Section:
    """Status and design, the graded probes and turns, then per scenario its ratios, rates,
    cache provenance and latency distributions."""
    sec = Section("Performance")
    sec.lines.append(f"Status: {report.perf.status}.")
    design = speed_design(report)
    if design is not None:
        sec.lines.append(design)
    sec.lines += probe_lines(report)
    probes = probe_table(report)
    if probes is not None:
        sec.tables.append(probes)
    sec.lines += turn_lines(report)
    turns = turn_table(report)
    if turns is not None:
        sec.tables.append(turns)
    for result in report.perf.results:
        rows = []
        rounds = any((c.get("rounds") or 1) > 1 for c in result.comparisons)
        for c in result.comparisons:
            ci = (
                f"[{fmt(c.get('ci_low'))}, {fmt(c.get('ci_high'))}]"
                if c.get("ci_low") is not None
                else "–"
            )
            rows.append(
                [
                    str(c.get("metric", "?")),
                    str(c.get("unit", "")),
                    fmt(c.get("reference")),
                    fmt(c.get("candidate")),
                    fmt(c.get("ratio")),
                    ci,
                    *(round_cells(c) if rounds else []),
                ]
            )
        if not rows and result.candidate is not None:
            for key in ("output_throughput", "request_throughput"):
                if key in result.candidate:
                    rows.append([key, "", "–", fmt(result.candidate[key]), "–", "–"])
        sec.tables.append(
            Table(
                [
                    "Metric",
                    "Unit",
                    "Reference",
                    "Candidate",
                    "Ratio",
                    "95% CI",
                    *(ROUND_HEADER if rounds else []),
                ],
                rows,
                caption=f"Scenario {result.scenario}",
            )
        )
        rates = _rate_rows(result.reference, result.candidate)
        if rates:
            header = [
                "Runtime",
                "Out tok/s",
                "Out tok/s/GPU",
                "Req/s",
                "Req out tok/s p50",
                "Decode tok/s p50",
                "TTFT p90 ms",
            ]
            sec.tables.append(Table(header, rates))
        if (cache := cache_table(result)) is not None:
            sec.tables.append(cache)
        dist = distribution_rows(result.reference, result.candidate)
        if dist:
            sides = [f"{side} {q}" for side in ("Ref", "Cand") for q in ("p50", "p90", "p99")]
            sec.tables.append(Table(["Latency (ms)", *sides], dist))
    return sec


def _rate_rows(ref: dict[str, Any] | None, cand: dict[str, Any] | None) -> list[list[str]]:
    """Per runtime: throughputs (in total and per GPU), per-request rates, TTFT p90."""

    def stat(summary: dict[str, Any], key: str, q: str) -> Any:
        dist = summary.get(key)
        return dist.get(q) if isinstance(dist, dict) else None

    rows = []
    for role, summary in (("reference", ref), ("candidate", cand)):
        if not summary or "request_output_tok_s" not in summary:
            continue
        rows.append(
            [
                role,
                fmt(summary.get("output_throughput")),
                fmt(summary.get("output_throughput_per_gpu")),
                fmt(summary.get("request_throughput")),
                fmt(stat(summary, "request_output_tok_s", "p50")),
                fmt(stat(summary, "request_decode_tok_s", "p50")),
                fmt(stat(summary, "ttft_ms", "p90")),
            ]
        )
    return rows


QUEUE_SHOWN_MS = 0.05
PCTS = ("p50", "p90", "p99")


def distribution_rows(ref: dict[str, Any] | None, cand: dict[str, Any] | None) -> list[list[str]]:
    """Latency percentiles per metric, both sides; client queueing where not negligible."""
    rows = []
    for metric in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
        cells = [metric]
        for summary in (ref, cand):
            dist = (summary or {}).get(metric)
            for q in ("p50", "p90", "p99"):
                cells.append(fmt(dist.get(q)) if isinstance(dist, dict) else "–")
        if any(c != "–" for c in cells[1:]):
            rows.append(cells)
    # Client queueing (scheduled -> sent, connection set-up included) is outside TTFT;
    # shown when it is not negligible, since then the client limited the offered load.
    queues = [(s or {}).get("queue_ms") for s in (ref, cand)]
    if any(isinstance(q, dict) and (q.get("p99") or 0) >= QUEUE_SHOWN_MS for q in queues):
        rows.append(
            ["queue_ms (client)"]
            + [fmt(q.get(k)) if isinstance(q, dict) else "–" for q in queues for k in PCTS]
        )
    return rows
