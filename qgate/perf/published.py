"""Published figures beside the measured ones: pure display logic, never a gate.

A profile's `perf.published` rows (qgate.profile.perf.PublishedFigure) are
matched to the report's scenario runs (by `scenario`, else by the run's
concurrency, else every run) and set beside the candidate's and the
reference's measured value of the same metric, with measured / published.
Published figures come from other runs: hardware, software versions, model
revision, workload and client may differ, so the report states that caveat
with every table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import Field

from qgate.core.records import Record
from qgate.profile.perf import PublishedFigure, matches

CAVEAT = (
    "Published figures come from other runs: hardware, software versions, model revision, "
    "workload and client may differ. The ratio is context, not a gate."
)


class PublishedComparison(Record):
    """One published figure against one measured run."""

    source: str = Field(description="Where the figure was published.")
    date: str | None = Field(description="Its date (ISO), when the profile records one.")
    note: str = Field(description="The profile's note on the figure.")
    hardware: str = Field(description="Hardware it was measured on.")
    concurrency: int | None = Field(description="Concurrency it was measured at.")
    metric: str = Field(description="Metric, as in ScenarioMetrics ('ttft_ms.p90' for stats).")
    better: str = Field(description="'higher' or 'lower'.")
    published: float = Field(description="The published value.")
    scenario: str | None = Field(description="The measured run it is set beside (None: none).")
    candidate: float | None = Field(description="The candidate's measured value.")
    candidate_ratio: float | None = Field(description="candidate / published.")
    reference: float | None = Field(description="The reference's measured value.")
    reference_ratio: float | None = Field(description="reference / published.")


def measured(summary: Mapping[str, Any] | None, metric: str) -> float | None:
    """A metric from a ScenarioMetrics JSON: a top-level figure or 'distribution.statistic'."""
    if not summary:
        return None
    key, _, stat = metric.partition(".")
    value = summary.get(key)
    if stat:
        value = value.get(stat) if isinstance(value, Mapping) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def better(metric: str) -> str:
    """Latencies ('_ms') are better lower; throughputs and rates higher."""
    return "lower" if metric.partition(".")[0].endswith("_ms") else "higher"


def _concurrency(params: Mapping[str, Any]) -> int | None:
    value = params.get("concurrency", params.get("conversations"))
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ratio(value: float | None, published: float) -> float | None:
    return None if value is None else value / published


def compare_published(
    figures: Sequence[PublishedFigure],
    results: Iterable[Any],
    run_params: Mapping[str, Mapping[str, Any]],
) -> list[PublishedComparison]:
    """Every figure against every run it selects (one row with no run when none matches).

    `results` are the report's ScenarioResults (scenario, reference and
    candidate summaries as JSON); `run_params` maps a run name to its workload
    parameters (for the concurrency match).
    """
    results = list(results)
    out: list[PublishedComparison] = []
    for fig in figures:
        if fig.scenario is not None:
            chosen = [r for r in results if matches(fig.scenario, r.scenario)]
        elif fig.concurrency is not None:
            chosen = [
                r
                for r in results
                if _concurrency(run_params.get(r.scenario, {})) == fig.concurrency
            ]
        else:
            chosen = results
        base = {
            "source": fig.source,
            "date": fig.date.isoformat() if fig.date else None,
            "note": fig.note,
            "hardware": fig.hardware,
            "concurrency": fig.concurrency,
            "metric": fig.metric,
            "better": better(fig.metric),
            "published": fig.value,
        }
        if not chosen:
            out.append(
                PublishedComparison(
                    **base,
                    scenario=None,
                    candidate=None,
                    candidate_ratio=None,
                    reference=None,
                    reference_ratio=None,
                )
            )
        for r in chosen:
            cand, ref = measured(r.candidate, fig.metric), measured(r.reference, fig.metric)
            out.append(
                PublishedComparison(
                    **base,
                    scenario=r.scenario,
                    candidate=cand,
                    candidate_ratio=_ratio(cand, fig.value),
                    reference=ref,
                    reference_ratio=_ratio(ref, fig.value),
                )
            )
    return out
