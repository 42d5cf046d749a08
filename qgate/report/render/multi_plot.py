"""The Pareto-style plot of a multi report: speed against quality, one point per candidate.

x: candidate / reference output tokens/s (first scenario); y: the worst
accuracy delta over the suites (0 when no suite). The frontier (no other
candidate is both faster and less damaging) is drawn as a line; matplotlib is
imported only here and only when the plot is made.
"""

from __future__ import annotations

from qgate.report.multi_model import CandidateRow, MultiReport
from qgate.report.render.figure import load_pyplot, png_bytes

__all__ = ["frontier", "pareto_plot", "points"]

_COLORS = {"PASS": "#1a7f37", "FAIL": "#cf222e", "ERROR": "#cf222e"}


def points(report: MultiReport) -> list[tuple[CandidateRow, float, float]]:
    """(row, speed ratio, worst accuracy delta) of every candidate with a speed ratio."""
    out = []
    for row in report.table:
        cell = row.speed[0].ratios.get("output_throughput") if row.speed else None
        if cell is None or cell.ratio is None:
            continue
        worst = min(row.accuracy_deltas.values(), default=0.0)
        out.append((row, cell.ratio, worst))
    return out


def frontier(pts: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point dominates (faster and no worse, or the reverse)."""
    keep = []
    for i, (x, y) in enumerate(pts):
        dominated = any(
            (x2 >= x and y2 >= y) and (x2 > x or y2 > y) for j, (x2, y2) in enumerate(pts) if j != i
        )
        if not dominated:
            keep.append(i)
    return sorted(keep, key=lambda i: pts[i][0])


def pareto_plot(report: MultiReport) -> bytes | None:
    """The plot as PNG bytes, or None when fewer than one candidate has a speed ratio."""
    pts = points(report)
    if not pts:
        return None
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    xy = [(x, y) for _, x, y in pts]
    front = frontier(xy)
    ax.plot(
        [xy[i][0] for i in front],
        [xy[i][1] for i in front],
        color="#888",
        lw=1,
        ls="--",
        label="frontier (ringed)",
        zorder=1,
    )
    ax.scatter(
        [xy[i][0] for i in front],
        [xy[i][1] for i in front],
        s=160,
        facecolors="none",
        edgecolors="#555",
        lw=1.2,
        zorder=3,
    )
    for row, x, y in pts:
        color = _COLORS.get(row.verdict, "#9a6700")
        ax.scatter([x], [y], color=color, s=45, marker="o" if row.required else "s", zorder=2)
        ax.annotate(
            f"{row.candidate} ({row.verdict})",
            (x, y),
            fontsize=8,
            xytext=(4, 4),
            textcoords="offset points",
        )
    ax.axhline(0, color="#bbb", lw=0.8)
    ax.axvline(1, color="#bbb", lw=0.8)
    ax.set_xlabel(f"output tok/s, candidate / reference ({pts[0][0].speed[0].scenario})")
    ax.set_ylabel("worst accuracy delta (candidate - reference)")
    ax.set_title("Candidates: speed against quality (circle required, square optional)")
    ax.legend(loc="best", fontsize=8)
    return png_bytes(fig)
