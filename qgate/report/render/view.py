"""What a person reads in a report, as plain tables; Markdown and HTML serialize it.

Figures here are for display only (verify never reads them); the gates and
perf summaries come from the report as stored. `sections` puts the report's sections in
order: the headline, gates, accuracy and divergence here, each other section in a view
module named for it (perf_view.py, environment_view.py, lives_view.py, ...).
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
)
from qgate.report.localise import boundary_lines, worst_notes
from qgate.report.model import Report
from qgate.report.render.attribution_view import attribution_section
from qgate.report.render.environment_view import environment_section
from qgate.report.render.floor_view import floor_section
from qgate.report.render.ladder_view import cliff_line, ladder_section
from qgate.report.render.lives_view import lives_section
from qgate.report.render.localise_view import localise_section, worst_suffix
from qgate.report.render.parts import Section, Table, fmt, origin_lines
from qgate.report.render.perf_view import perf_section
from qgate.report.render.published import published_section
from qgate.report.render.reuse_view import changes_section, gate_result, reuse_section
from qgate.report.render.series import series_section
from qgate.report.render.spec_view import speculative_section
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
    out.append(perf_section(report))
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
    out.append(environment_section(report))
    return out
