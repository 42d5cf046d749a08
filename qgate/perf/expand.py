"""What the perf stage makes of a scenario before it sends anything: one scenario per input
length (the measured requests of each: qgate/profile/probe_count.py `measured_count`).

A pure function of the profile, apart from the load generator (workloads.py, which imports
the HTTP client): the runner and the plan read it.
"""

from __future__ import annotations

from qgate.profile import FixedScenario, MultiTurnScenario, TraceScenario

__all__ = ["expand_inputs"]


def expand_inputs(
    s: FixedScenario | MultiTurnScenario | TraceScenario,
) -> list[FixedScenario | MultiTurnScenario | TraceScenario]:
    """An input-length matrix as one scenario per length (name@inN), else the scenario itself.

    Each length is a scenario of its own: its own warm-ups, measured requests,
    seed (from the name) and /metrics deltas, so a long prefill never warms up
    the short one.
    """
    if not isinstance(s, FixedScenario) or not isinstance(s.input_tokens, list):
        return [s]
    return [
        s.model_copy(update={"name": f"{s.name}@in{n}", "input_tokens": n}) for n in s.input_tokens
    ]
