"""What a person reads in a report, as plain tables; Markdown and HTML serialize it.

Figures here are for display only (verify never reads them); the gates and
perf summaries come from the report as stored.
"""

from __future__ import annotations

from typing import Any

from qgate.core.verdict import not_exercised_lines
from qgate.gates.scales import warning_lines
from qgate.quality.records import SuiteRun
from qgate.quality.stats import wilson as stats_wilson
from qgate.report.attribution import summary_lines
from qgate.report.derive import (
    accuracy,
    flips,
    kld_both_ways,
    kld_values,
    percentile,
    suite_pairs,
    time_breakdown,
)
from qgate.report.localise import boundary_lines, worst_notes
from qgate.report.model import Report
from qgate.report.render.attribution_view import attribution_section
from qgate.report.render.cache_view import cache_table
from qgate.report.render.floor_view import floor_section
from qgate.report.render.ladder_view import cliff_line, ladder_section
from qgate.report.render.lives_view import lives_section
from qgate.report.render.localise_view import localise_section, worst_suffix
from qgate.report.render.parts import Section, Table, fmt, origin_lines
from qgate.report.render.probes_view import probe_lines, probe_table
from qgate.report.render.published import published_section
from qgate.report.render.reuse_view import changes_section, gate_result, reuse_section
from qgate.report.render.rounds_view import ROUND_HEADER, round_cells, speed_design
from qgate.report.render.series import series_section
from qgate.report.render.spec_view import speculative_section
from qgate.report.render.turns_view import turn_lines, turn_table
from qgate.report.verdict import verdict_label


def wilson(correct: int, n: int) -> tuple[float, float]:
    """95% Wilson interval, the very function the gates report (qgate.quality.stats)."""
    return stats_wilson(correct, n)


def _ids(ids: list[str], limit: int = 20) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" … (+{len(ids) - limit})" if len(ids) > limit else "") if ids else "–"


def _headline(report: Report) -> Section:
    profile_name = str(report.profile.get("name", "?"))
    sec = Section(f"qgate report: {profile_name}")
    sec.lines.append(f"**Verdict: {verdict_label(report.verdict)}**")
    failed, total = [v for v in report.all_verdicts() if not v.passed], len(report.all_verdicts())
    sec.lines.append(f"Gates: {total - len(failed)} of {total} passed; perf: {report.perf.status}.")
    notes = worst_notes(report)
    for line in not_exercised_lines(failed):
        sec.lines.append(f"NOT EXERCISED {line}")
    for v in failed:
        if v.exercised is False:
            continue
        if v.inconclusive or v.settled:
            label = "INCONCLUSIVE" if v.inconclusive else "FAILED"
            sec.lines.append(f"{label} {v.gate}: {v.reason}{worst_suffix(notes, v.gate)}")
    cliff = cliff_line(report)
    if cliff is not None:
        sec.lines.append(f"CLIFF: {cliff}")
    open_gates = [v.gate for v in failed if not v.settled]
    if open_gates:
        sec.lines.append(
            f"NOT SETTLED (quality stopped early, verdict already decided): {', '.join(open_gates)}"
        )
    for line in summary_lines(report.attribution)[:1]:
        sec.lines.append("ATTRIBUTION: " + line.removeprefix("attribution: "))
    if _dummy_weights(report.profile):
        sec.lines.append(
            "PREVIEW: dummy (random) weights, speed only: no accuracy was measured, "
            "and the speed is that of this shape, not of a trained model"
        )
    weak = [v.gate for v in report.all_verdicts() if v.passed and v.underpowered]
    if weak:
        sec.lines.append(
            f"UNDERPOWERED: {len(weak)} passing gate(s) cannot detect the drop they "
            f"forbid with this sample: {', '.join(weak)}"
        )
    for line in boundary_lines(report):
        sec.lines.append("CEILING/FLOOR: " + line)
    if report.emulated:
        sec.lines.append("EMULATED components: " + "; ".join(report.emulated))
    if report.target_mismatches:
        sec.lines.append("TARGET MISMATCH: " + "; ".join(report.target_mismatches))
    for note in report.capability_notes:
        sec.lines.append("MACHINE: " + note)
    for warning in report.warnings:
        sec.lines.append("WARNING: " + warning)
    for line in warning_lines(report.effective_configs):
        sec.lines.append(f"ENGINE WARNING {line}")
    sec.lines += origin_lines(report)
    return sec


def _dummy_weights(node: Any) -> bool:
    """Whether a profile (JSON form) runs any side on vLLM's dummy weights."""
    if isinstance(node, dict):
        return any(
            (k in ("load_format", "load-format") and v == "dummy") or _dummy_weights(v)
            for k, v in node.items()
        )
    return isinstance(node, list) and any(_dummy_weights(v) for v in node)


def _gates(report: Report) -> Section:
    sec = Section("Gates")
    notes = worst_notes(report)
    rows = [
        [
            v.gate,
            fmt(v.observed),
            (f"{v.comparator} " if v.comparator else "") + fmt(v.limit),
            fmt(v.n),
            "–" if v.power is None else f"{v.power:.2f}",
            gate_result(v),
            v.reason + (" (underpowered)" if v.underpowered else "") + worst_suffix(notes, v.gate),
        ]
        for v in report.all_verdicts()
    ]
    sec.tables.append(Table(["Gate", "Observed", "Limit", "n", "Power", "Result", "Reason"], rows))
    sec.lines += [f"Power: {line}" for line in boundary_lines(report)]
    sec.lines.append(
        "Signs: a max_drop gate observes the drop, reference minus candidate accuracy "
        "(positive = the candidate is worse); the accuracy table's Delta is candidate minus "
        "reference (negative = the candidate is worse)."
    )
    return sec


def _stopped(run: SuiteRun | None) -> str:
    """', stopped at 8 of 64' for a run that ended early (quality.stop)."""
    if run is None or not run.partial:
        return ""
    return f", stopped at {len(run.items)} of {run.planned}"


def _quality(report: Report) -> Section:
    sec = Section("Accuracy and flips")
    acc_rows: list[list[str]] = []
    flip_rows: list[list[str]] = []
    for suite, ref, cand in suite_pairs(report.quality.runs):
        rc, rn = accuracy(ref)
        cc, cn = accuracy(cand)
        acc_rows.append(
            [
                suite,
                f"{fmt(rc / rn if rn else None)} ({rc}/{rn}){_stopped(ref)}",
                f"{fmt(cc / cn if cn else None)} ({cc}/{cn}){_stopped(cand)}",
                fmt((cc / cn - rc / rn) if rn and cn else None),
            ]
        )
        if ref is not None and cand is not None:
            lost, gained = flips(ref, cand)
            flip_rows.append([suite, str(len(lost)), _ids(lost), str(len(gained)), _ids(gained)])
    sec.tables.append(
        Table(["Suite", "Reference", "Candidate", "Delta (candidate − reference)"], acc_rows)
    )
    sec.tables.append(Table(["Suite", "Lost", "Lost ids", "Gained", "Gained ids"], flip_rows))
    changed = _changed_answers(report)
    if changed.rows:
        sec.tables.append(changed)
    return sec


_DRILL_PER_SUITE = 6
_SNIPPET = 60


def _snippet(text: str | None) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= _SNIPPET else flat[: _SNIPPET - 1] + "…"


def _changed_answers(report: Report) -> Table:
    """Lost and gained items side by side (expected, both answers), a few per suite."""
    rows: list[list[str]] = []
    more = 0
    for suite, ref, cand in suite_pairs(report.quality.runs):
        if ref is None or cand is None:
            continue
        lost, gained = flips(ref, cand)
        by_ref = {i.id: i for i in ref.items}
        by_cand = {i.id: i for i in cand.items}
        flipped = [("lost", i) for i in lost] + [("gained", i) for i in gained]
        more += max(0, len(flipped) - _DRILL_PER_SUITE)
        for kind, item_id in flipped[:_DRILL_PER_SUITE]:
            r, c = by_ref[item_id], by_cand[item_id]
            rows.append(
                [
                    suite,
                    item_id,
                    kind,
                    str(r.expected),
                    f"{r.answer} · {_snippet(r.output)}",
                    f"{c.answer} · {_snippet(c.output)}",
                ]
            )
    caption = "Changed answers (answer · output)"
    caption += f"; {more} more in the records" if more else ""
    return Table(
        ["Suite", "Item", "Flip", "Expected", "Reference", "Candidate"], rows, caption=caption
    )


def _divergence(report: Report) -> Section | None:
    div = report.quality.divergence
    if div is None:
        return None
    vals = kld_values(report)
    agree = [a for s in div.sequences for a in s.top1_agree]
    dps = [d for s in div.sequences for d in s.delta_p]
    sec = Section("Logit divergence (KL reference || candidate)")
    sec.lines.append(
        f"{len(div.sequences)} sequences, {len(vals)} positions, top-{div.top_k} logprobs."
    )
    both = kld_both_ways(report)
    for key, label in (
        ("forward", "KL(reference || candidate)"),
        ("reverse", "reverse KL(candidate || reference), not gated"),
    ):
        if key in both:
            mean, se, n = both[key]
            err = f" ± {fmt(se)} (standard error over {n} sequences)" if se is not None else ""
            sec.lines.append(f"Mean {label}: {fmt(mean)}{err}.")
    row = [
        fmt(sum(vals) / len(vals) if vals else None),
        fmt(percentile(vals, 50)),
        fmt(percentile(vals, 90)),
        fmt(percentile(vals, 99)),
        fmt(percentile(vals, 99.9)),
        fmt(vals[-1] if vals else None),
        fmt(sum(agree) / len(agree) if agree else None),
        fmt(sum(dps) / len(dps) if dps else None),
    ]
    header = ["Mean", "Median", "p90", "p99", "p99.9", "Max", "Top-1 agree", "Mean Δp"]
    sec.tables.append(Table(header, [row]))
    return sec


def _perf(report: Report) -> Section:
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
        dist = _distribution_rows(result.reference, result.candidate)
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


def _distribution_rows(ref: dict[str, Any] | None, cand: dict[str, Any] | None) -> list[list[str]]:
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


def _environment(report: Report) -> Section:
    sec = Section("Environment")
    rows = []
    for cfg in report.effective_configs:
        rows.append(
            [
                cfg.role,
                cfg.kind,
                fmt(cfg.engine_version),
                fmt(cfg.dtype),
                fmt(cfg.quantization),
                fmt(cfg.kv_cache_dtype),
                fmt(cfg.attention_backend)
                + (f" (FA{cfg.flash_attn_version})" if cfg.flash_attn_version else ""),
                "; ".join(f"{k} ({m})" for m, k in cfg.linear_kernels.items()) or "–",
                ", ".join(cfg.uncalibrated_scales) or "–",
                "; ".join(f"EMULATED {e}" for e in cfg.emulated) or "–",
            ]
        )
    header = [
        "Role",
        "Kind",
        "Engine",
        "dtype",
        "Quant",
        "KV cache",
        "Attention",
        "Linear kernel",
        "Scales at 1.0",
        "Emulated",
    ]
    sec.tables.append(Table(header, rows))
    fp = (
        report.fingerprint.model_dump(mode="json", exclude={"checkpoint", "engine_envs"})
        if report.fingerprint
        else {}
    )
    cpu = fp.get("cpu", {})
    for key in ("arch", "forced_flags"):  # recorded since 2026-12; not shown when absent
        if cpu.get(key) is None:
            cpu.pop(key, None)
    fp_rows = [[k, v] for k, v in _flatten(fp)]
    if report.fingerprint is not None:
        fp_rows.append(["checkpoint files", str(len(report.fingerprint.checkpoint))])
        for env in report.fingerprint.engine_envs:  # a side's pinned release (engine.package)
            shown = ", ".join(f"{k} {env.packages[k]}" for k in ("torch",) if k in env.packages)
            fp_rows.append(
                [
                    f"engine environment {env.request}",
                    f"{len(env.packages)} packages{', ' + shown if shown else ''} "
                    f"(key {env.key[:12]})",
                ]
            )
    if fp_rows:
        sec.tables.append(Table(["Fingerprint", "Value"], fp_rows))
    timing_rows = [[k, fmt(v)] for k, v in report.stage_timings.items()]
    if timing_rows:
        sec.tables.append(Table(["Stage", "Seconds"], timing_rows))
    start_rows = [
        [
            s.side,
            s.purpose,
            s.kind,
            fmt(s.ready_s),
            ", ".join(f"{k} {fmt(v)}" for k, v in s.startup.items()) or "-",
            s.compile_cache or "-",
        ]
        for s in report.starts
    ]
    if start_rows:
        sec.tables.append(
            Table(
                ["Server start", "For", "Engine", "Ready (s)", "Engine phases", "Compile cache"],
                start_rows,
            )
        )
    went = [[what, fmt(seconds)] for what, seconds in time_breakdown(report)]
    if went:
        sec.tables.append(Table(["Where the time went", "Seconds"], went))
    sec.lines.append(f"{len(report.artifacts)} artifacts listed with sha256.")
    return sec


def _flatten(node: Any, prefix: str = "", limit: int = 60) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _flatten(v, f"{prefix}.{k}" if prefix else str(k), limit)
    elif isinstance(node, list) and node and all(isinstance(v, dict) for v in node):
        for i, v in enumerate(node):
            out += _flatten(v, f"{prefix}[{i}]", limit)
    else:
        text = ", ".join(map(fmt, node)) if isinstance(node, list) else fmt(node)
        out.append((prefix, text if len(text) <= 120 else text[:117] + "..."))
    return out[:limit]


def sections(report: Report) -> list[Section]:
    """The report as titled sections: verdict first, then gates, quality, divergence, where
    the damage sits, perf, environment."""
    out = [_headline(report), _gates(report), _quality(report)]
    for extra in (
        ladder_section(report),
        reuse_section(report),
        speculative_section(report),
        _divergence(report),
        floor_section(report),
        localise_section(report),
        attribution_section(report),
    ):
        if extra is not None:
            out.append(extra)
    out.append(_perf(report))
    lives = lives_section(report)
    if lives is not None:
        out.append(lives)
    series = series_section(report)
    if series is not None:
        out.append(series)
    published = published_section(report)
    if published is not None:
        out.append(published)
    changes = changes_section(report)
    if changes is not None:
        out.append(changes)
    out.append(_environment(report))
    return out
