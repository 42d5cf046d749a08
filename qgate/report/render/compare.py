"""`qgate compare`: several reports side by side, for weighing trade-offs across profiles."""

from __future__ import annotations

import base64
import html
import math

from qgate.gates.judgement import probes_failed
from qgate.report.derive import accuracy_deltas, mean_kld
from qgate.report.model import Report
from qgate.report.render.figure import load_pyplot, png_bytes
from qgate.report.render.html import html_table
from qgate.report.render.parts import Table, fmt

HEADLINE_METRIC = "output_throughput"
AGGREGATE = (
    "output tokens/s ratio (candidate / reference, > 1 = faster): geometric mean over the "
    "report's scenarios; its 95% interval combines each scenario's interval in log space "
    "(half-width / 1.96 as the standard error, scenarios taken as independent)"
)
_Z = 1.96


def _headline(report: Report) -> list[tuple[float, float | None, float | None]]:
    out: list[tuple[float, float | None, float | None]] = []
    for r in report.perf.results:
        if probes_failed(r.verdicts, r.scenario):  # ratios of wrong answers: withheld
            continue
        for c in r.comparisons:
            ratio = c.get("ratio")
            if c.get("metric") == HEADLINE_METRIC and isinstance(ratio, int | float) and ratio > 0:
                low, high = c.get("ci_low"), c.get("ci_high")
                if isinstance(low, int | float) and isinstance(high, int | float) and low > 0:
                    out.append((float(ratio), float(low), float(high)))
                else:
                    out.append((float(ratio), None, None))
    return out


def headline_ratio(report: Report) -> float | None:
    """Geometric mean over scenarios of the candidate/reference output tokens/s ratio."""
    return headline_interval(report)[0]


def headline_interval(report: Report) -> tuple[float | None, float | None, float | None, int]:
    """(geometric mean, 2.5th, 97.5th percentile, scenarios) of the output tokens/s ratio.

    The interval is None when any scenario has no interval of its own.
    """
    rows = _headline(report)
    if not rows:
        return None, None, None, 0
    n = len(rows)
    mean = sum(math.log(r) for r, _, _ in rows) / n
    if any(low is None or high is None for _, low, high in rows):
        return math.exp(mean), None, None, n
    se = (
        math.sqrt(
            sum(((math.log(h) - math.log(lo)) / (2 * _Z)) ** 2 for _, lo, h in rows if lo and h)
        )
        / n
    )
    return math.exp(mean), math.exp(mean - _Z * se), math.exp(mean + _Z * se), n


def ratio_cell(report: Report) -> str:
    """`x1.05 [0.98, 1.12]`, `x1.05` without an interval, `-` without perf."""
    point, low, high, _ = headline_interval(report)
    if point is None:
        return "-"
    if low is None or high is None:
        return f"x{point:.3g}"
    return f"x{point:.3g} [{low:.3g}, {high:.3g}]"


def compare_table(reports: list[tuple[str, Report]]) -> Table:
    """One row per report: profile, verdict, per-suite accuracy deltas (candidate − reference),
    mean KLD, the output tokens/s ratio aggregate (AGGREGATE says how) with its interval."""
    suites: list[str] = []
    for _, rep in reports:
        for s in accuracy_deltas(rep):
            if s not in suites:
                suites.append(s)
    header = [
        "Report",
        "Profile",
        "Verdict",
        *[f"Δacc {s}" for s in suites],
        "Mean KLD",
        "Output tok/s ratio (geomean, 95% CI)",
        "Perf",
    ]
    rows = []
    for label, rep in reports:
        deltas = accuracy_deltas(rep)
        rows.append(
            [
                label,
                str(rep.profile.get("name", "?")),
                rep.verdict,
                *[fmt(deltas.get(s)) for s in suites],
                fmt(mean_kld(rep)),
                ratio_cell(rep),
                rep.perf.status,
            ]
        )
    return Table(header, rows)


def compare_plot(reports: list[tuple[str, Report]]) -> bytes:
    """Scatter: mean accuracy delta against output tokens/s ratio, one point per report."""
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for _label, rep in reports:
        deltas = list(accuracy_deltas(rep).values())
        x = headline_ratio(rep)
        y = sum(deltas) / len(deltas) if deltas else 0.0
        color = {"PASS": "#1a7f37", "FAIL": "#cf222e"}.get(rep.verdict, "#9a6700")
        ax.scatter([x if x is not None else 0.0], [y], color=color, s=40)
        ax.annotate(
            f"{rep.profile.get('name', '?')} ({rep.verdict})",
            (x if x is not None else 0.0, y),
            fontsize=8,
            xytext=(4, 4),
            textcoords="offset points",
        )
    ax.axhline(0, color="#999", lw=0.8)
    ax.axvline(1, color="#999", lw=0.8)
    ax.set_xlabel("candidate / reference output tokens/s (0: no perf)")
    ax.set_ylabel("mean accuracy delta (candidate - reference)")
    ax.set_title("Quality against speed")
    return png_bytes(fig)


def compare_html(reports: list[tuple[str, Report]]) -> str:
    """A self-contained HTML page with the comparison table and the scatter plot."""
    png = base64.b64encode(compare_plot(reports)).decode("ascii")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape('qgate compare')}</title></head><body><h1>qgate compare</h1>"
        + html_table(compare_table(reports))
        + f'<img alt="quality against speed" src="data:image/png;base64,{png}"/></body></html>\n'
    )
