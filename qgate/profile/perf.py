"""Profile models for speed gates, published baselines and weightless previews.

Kept apart from qgate/profile/model.py (which holds the profile's skeleton) because
they are one concept: what the perf stage is judged against. Light on
purpose: `qgate validate` imports it, so no numpy here.

- `PerfGate`: a limit on one candidate/reference ratio, judged on the
  ratio's bootstrap 95% interval, never on the point alone.
- `PublishedFigure`: a figure someone published (a vendor table, an
  InferenceX row) that the report sets beside the measured one; display only.
- Dummy weights: vLLM's `load_format: dummy` turns the run into a speed-only
  preview (`is_preview`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from difflib import get_close_matches
from typing import Any, Literal, Self

from pydantic import Field, model_validator

from qgate.profile.base import KeyIssue, Strict, snake_args

Better = Literal["lower", "higher"]

# The metrics that `qgate.perf.compare.compare` reports as candidate/reference
# ratios, with their unit and better direction. compare.py builds its rows from
# this table, so a gate can only name a metric that is compared.
GateMetric = Literal[
    "ttft_ms.p50",
    "ttft_ms.p90",
    "ttft_ms.p99",
    "tpot_ms.p50",
    "tpot_ms.p99",
    "itl_ms.p50",
    "e2e_ms.p50",
    "e2e_ms.p99",
    "request_output_tok_s.p50",
    "request_decode_tok_s.p50",
    "output_throughput",
    "output_throughput_per_gpu",
    "request_throughput",
]

COMPARED: dict[str, tuple[str, Better]] = {
    "ttft_ms.p50": ("ms", "lower"),
    "ttft_ms.p90": ("ms", "lower"),
    "ttft_ms.p99": ("ms", "lower"),
    "tpot_ms.p50": ("ms", "lower"),
    "tpot_ms.p99": ("ms", "lower"),
    "itl_ms.p50": ("ms", "lower"),
    "e2e_ms.p50": ("ms", "lower"),
    "e2e_ms.p99": ("ms", "lower"),
    "request_output_tok_s.p50": ("tok/s", "higher"),
    "request_decode_tok_s.p50": ("tok/s", "higher"),
    "output_throughput": ("tok/s", "higher"),
    "output_throughput_per_gpu": ("tok/s", "higher"),
    "request_throughput": ("req/s", "higher"),
}

# Measured figures a published one can be set beside: a ScenarioMetrics key,
# or a distribution key and its statistic.
PublishedMetric = Literal[
    "output_throughput",
    "output_throughput_per_gpu",
    "total_token_throughput",
    "request_throughput",
    "ttft_ms.p50",
    "ttft_ms.p90",
    "ttft_ms.p99",
    "tpot_ms.p50",
    "tpot_ms.p99",
    "itl_ms.p50",
    "e2e_ms.p50",
    "e2e_ms.p90",
    "request_output_tok_s.p50",
    "request_decode_tok_s.p50",
]

KeyIssues = list[tuple[tuple[str | int, ...], str]]


class PerfGate(Strict):
    """A limit on one candidate/reference ratio, judged on its bootstrap 95% interval.

    The conservative rule: the candidate must show it meets the limit, so
    noise alone never passes a gate. `min_ratio` passes only when the
    interval's LOWER bound is >= the limit; `max_ratio` passes only when its
    UPPER bound is <= the limit. A ratio without an interval fails.
    """

    metric: GateMetric = Field(
        description="Compared metric (candidate / reference), e.g. 'output_throughput', "
        "'ttft_ms.p99'; see the perf comparison table for the list."
    )
    scenario: str | None = Field(
        default=None,
        description="Scenario name (every level of its sweep or input-length matrix), a part "
        "of it ('long@in8192': every level at that length) or one run ('chat@c16'); every "
        "scenario when omitted.",
    )
    min_ratio: float | None = Field(
        default=None,
        gt=0,
        description="Least speedup for higher-is-better metrics (1.2 = at least x1.2): passes "
        "only when the ratio's 95% interval LOWER bound is >= this.",
    )
    max_ratio: float | None = Field(
        default=None,
        gt=0,
        description="Largest regression for lower-is-better metrics (1.1 = at most x1.1): "
        "passes only when the ratio's 95% interval UPPER bound is <= this.",
    )

    @model_validator(mode="after")
    def _one_limit(self) -> Self:
        better = COMPARED[self.metric][1]
        issues: KeyIssues = []
        if self.min_ratio is None and self.max_ratio is None:
            issues.append(((), "give min_ratio (higher-is-better) or max_ratio (lower-is-better)"))
        if self.min_ratio is not None and better == "lower":
            issues.append(
                (
                    ("min_ratio",),
                    f"{self.metric} is better when lower; a floor on it would demand a slower "
                    "candidate: use max_ratio",
                )
            )
        if self.max_ratio is not None and better == "higher":
            issues.append(
                (
                    ("max_ratio",),
                    f"{self.metric} is better when higher; a ceiling on it would demand a "
                    "slower candidate: use min_ratio",
                )
            )
        if issues:
            raise KeyIssue(issues)
        return self


class PublishedFigure(Strict):
    """A published figure shown beside the measured one (display only, never a gate)."""

    source: str = Field(min_length=1, description="Where it was published (URL or citation).")
    date: dt.date | None = Field(
        default=None,
        description="Publication or measurement date (YYYY-MM-DD); leave it out rather than "
        "guess (the report then says it is not recorded).",
    )
    hardware: str = Field(min_length=1, description="Hardware it was measured on, e.g. '8xMI325X'.")
    concurrency: int | None = Field(
        default=None, ge=1, description="Concurrent requests it was measured at."
    )
    metric: PublishedMetric = Field(
        description="Measured figure to set it beside, e.g. 'output_throughput_per_gpu'."
    )
    value: float = Field(gt=0, description="The published value, in the metric's unit.")
    scenario: str | None = Field(
        default=None,
        description="Scenario (or run 'name@cN') to compare with; when omitted, every run "
        "whose concurrency equals `concurrency` (every run if that is omitted too).",
    )
    note: str = Field(default="", description="Free text: conditions, caveats.")


def run_names(scenario: Any) -> list[str]:
    """The run names a scenario produces: `name[@inN][@cN]` (an input-length matrix, a sweep).

    The perf runner names its runs the same way (expand.expand_inputs, runner.levels).
    """
    base = [scenario.name]
    inputs = getattr(scenario, "input_tokens", None)
    if isinstance(inputs, list):
        base = [f"{scenario.name}@in{n}" for n in inputs]
    levels = getattr(scenario, "concurrency", None)
    if isinstance(levels, list):
        return [f"{b}@c{c}" for b in base for c in levels]
    return base


def matches(selector: str | None, run: str) -> bool:
    """Whether a gate's or published figure's `scenario` selects a run name."""
    if selector is None:
        return True
    return run == selector or run.startswith(selector + "@")


def check_selectors(
    scenarios: Iterable[Any],
    gates: list[PerfGate],
    published: list[PublishedFigure],
    compare_to: str,
) -> KeyIssues:
    """Problems with `perf.gates` and `perf.published` that need the scenario list."""
    # a run name and each of its '@' prefixes: 'm', 'm@in512', 'm@in512@c4'
    names = {
        "@".join(parts[:k])
        for s in scenarios
        for n in run_names(s)
        for parts in [n.split("@")]
        for k in range(1, len(parts) + 1)
    }
    issues: KeyIssues = []
    selectors: list[tuple[str, list[str | None]]] = [
        ("gates", [g.scenario for g in gates]),
        ("published", [p.scenario for p in published]),
    ]
    for key, items in selectors:
        for i, selected in enumerate(items):
            if selected is not None and selected not in names:
                close = get_close_matches(selected, sorted(names), n=1, cutoff=0.6)
                hint = (
                    f"; did you mean {close[0]!r}?"
                    if close
                    else "; scenarios: " + ", ".join(sorted(names))
                )
                issues.append(((key, i, "scenario"), f"unknown scenario {selected!r}{hint}"))
    if gates and compare_to != "reference":
        issues.append(
            (("gates",), "perf gates compare with the reference: set compare_to: reference")
        )
    return issues


def load_format(args: Mapping[str, Any]) -> str | None:
    """vLLM's load_format in an engine-args mapping (snake or kebab case)."""
    value = args.get("load_format", args.get("load-format"))
    return None if value is None else str(value)


def side_args(profile: Any, role: str) -> dict[str, Any]:
    """The engine args `role` runs with: its engine block's args, then the side's own (keys in
    snake_case; qgate/profile/side.py owns a side's settings, this serves the model's own
    validator, which runs before a `Profile` exists)."""
    spec = getattr(profile, role)
    launch = spec.engine if spec.engine is not None else profile.engine
    return snake_args(launch.args, spec.args)


def check_dummy(
    reference: Mapping[str, Any],
    candidate: Mapping[str, Any],
    has_quality: bool,
    where: Mapping[str, tuple[str, ...]] | None = None,
) -> tuple[bool, KeyIssues]:
    """(preview, problems): dummy weights must be on both sides and exclude quality suites.

    `reference` and `candidate` are each side's merged engine args (`side_args`);
    `where` maps a side to the key path of the block its args came from.
    """
    where = where or {}
    issues: KeyIssues = []
    ref = load_format(reference) == "dummy"
    cand = load_format(candidate) == "dummy"
    if ref != cand:
        side = "candidate" if cand else "reference"
        issues.append(
            (
                (*where.get(side, (side,)), "args", "load_format"),
                "dummy weights on one runtime only compare random weights with real ones; "
                "set load_format: dummy in engine.args for both",
            )
        )
    preview = ref or cand
    if preview and has_quality:
        issues.append(
            (
                ("quality",),
                "quality suites are refused with dummy weights (load_format: dummy): random "
                "weights answer nothing; remove the quality section (the run is a speed-only "
                "PREVIEW)",
            )
        )
    return preview, issues


def is_preview(profile: Any) -> bool:
    """Whether the profile runs on vLLM's dummy (random) weights: a speed-only preview."""
    return any(
        load_format(side_args(profile, role)) == "dummy" for role in ("reference", "candidate")
    )
