"""The plot of where the damage sits: mean KL per part of the continuation, and recall
accuracy per needle depth for both runtimes (figures: qgate/report/localise.py)."""

from __future__ import annotations

from typing import Any

from qgate.report.localise import AccuracyGroup, PositionBucket, length_groups, position_buckets
from qgate.report.model import Report
from qgate.report.render.figure import load_pyplot, png_bytes

__all__ = ["localise_plot"]

_REF, _CAND = "#4c72b0", "#dd8452"
_MARKERS = "os^Dv"


def _positions_panel(ax: Any, buckets: list[PositionBucket], tokens: int) -> None:
    xs = range(len(buckets))
    ax.bar(xs, [b.mean_kld or 0.0 for b in buckets], color=_CAND, width=0.6)
    ax.set_xticks(xs, [b.span for b in buckets])
    ax.set_xlabel(f"scored positions (of {tokens} requested)")
    ax.set_ylabel("mean KL(reference || candidate)")
    ax.set_title("Divergence by position")


def _depth_panel(ax: Any, depths: list[AccuracyGroup]) -> None:
    suites = list(dict.fromkeys(g.suite for g in depths))
    for k, suite in enumerate(suites):
        rows = [g for g in depths if g.suite == suite]
        xs = [g.depth_pct for g in rows]
        marker = _MARKERS[k % len(_MARKERS)]
        for role, color, style in (("reference", _REF, "--"), ("candidate", _CAND, "-")):
            ys = [getattr(g, role) for g in rows]
            ax.plot(xs, ys, ls=style, marker=marker, color=color, label=f"{suite} {role}")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("needle depth (% of the haystack)")
    ax.set_ylabel("accuracy")
    ax.set_title("Recall by depth")
    ax.legend(fontsize=7)


def localise_plot(report: Report) -> bytes | None:
    """One figure: the position panel if divergence ran, the depth panel if recall ran."""
    div = report.quality.divergence
    buckets = position_buckets(div)
    depths = [g for g in length_groups(report) if g.depth_pct is not None and g.n]
    if not buckets and not depths:
        return None
    plt = load_pyplot()
    panels = int(bool(buckets)) + int(bool(depths))
    fig, axes = plt.subplots(1, panels, figsize=(4.6 * panels, 3.2), squeeze=False)
    row = list(axes[0])
    if buckets and div is not None:
        _positions_panel(row.pop(0), buckets, div.tokens)
    if depths:
        _depth_panel(row.pop(0), depths)
    return png_bytes(fig)  # the caption names it: a suptitle would sit on the panel titles
