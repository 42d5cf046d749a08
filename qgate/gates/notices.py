"""The report's warnings about its quality stage: pure functions of the profile and the records.

`qgate run` writes them into the report (run/report.py) and `qgate verify`
re-derives them (report/verify/machine.py), so a warning cannot be dropped or
added by re-signing.
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.gates.agent import failure_lines
from qgate.gates.degeneration import degeneration_lines
from qgate.gates.effect import no_effect_message
from qgate.gates.quality import configured_suites
from qgate.profile import QualitySpec
from qgate.quality.records import DivergenceRun, SuiteRun
from qgate.quality.sizing import items_needed, observed_discordance

__all__ = ["capped_detections", "quality_warnings"]


def capped_detections(spec: QualitySpec) -> list[str]:
    """A warning per suite whose stated detection `detect.max_items` cut short."""
    out = []
    for suite, policy in configured_suites(spec):
        if policy.detect is None:
            continue
        sizing = items_needed(policy.detect, policy.alpha, observed_discordance(policy))
        if sizing.capped:
            out.append(
                f"{suite}: detect {100 * policy.detect.drop:.1f} pts at power "
                f"{policy.detect.power:g} needs more than detect.max_items "
                f"{policy.detect.max_items}; it ran {sizing.used} items (power "
                f"{sizing.power_at_used:.2f} at the assumed flip rate)"
            )
    return out


def quality_warnings(
    spec: QualitySpec, runs: Sequence[SuiteRun], divergence: DivergenceRun | None
) -> list[str]:
    """The report's warnings: no measurable effect (with `on_no_effect: warn`), capped sizing."""
    no_effect = no_effect_message(runs, divergence)
    warnings = [no_effect] if no_effect and spec.on_no_effect == "warn" else []
    found = failure_lines(spec, runs) + degeneration_lines(spec, runs)
    return warnings + capped_detections(spec) + found
