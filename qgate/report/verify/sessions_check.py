"""A multi-turn scenario's graded session turns re-derived from the profile (perf derivation 9).

Each run (side, round, block) of a scenario with `graded` holds every turn of every graded
session once (a failed turn is recorded, never dropped), and each graded turn's truth is the
one qgate/perf/sessions.py generates from the profile's seed: an edited truth, a dropped or
repeated turn, or turns the profile does not ask are rejected naming the field and both values.
"""

from __future__ import annotations

from qgate.errors import VerificationFailed
from qgate.perf.records import ScenarioRun
from qgate.perf.sessions import graded_sessions, session_turns
from qgate.profile import MultiTurnScenario, Scenario

__all__ = ["check_graded_turns", "planned_turns"]


def planned_turns(scenario: Scenario) -> int:
    """The graded turns one run (side, round, block) of `scenario` asks: sessions x turns."""
    if not isinstance(scenario, MultiTurnScenario) or scenario.graded is None:
        return 0
    return graded_sessions(scenario) * scenario.graded.turns


def check_graded_turns(run: ScenarioRun, scenario: Scenario, where: str) -> int:
    """The graded turns `run` holds, checked against `scenario`; returns how many."""
    held = [r for r in run.requests if r.graded_turn is not None]
    if not isinstance(scenario, MultiTurnScenario) or scenario.graded is None:
        if held:
            raise VerificationFailed(
                f"{where}: graded turns: {len(held)} stored, 0 re-derived (the scenario has no "
                "`graded` sessions)"
            )
        return 0
    g = scenario.graded
    want = {
        t.id: t.truth
        for k in range(graded_sessions(scenario))
        for t in session_turns(g.seed, k, g.turns)
    }
    ids = sorted(r.graded_turn or "" for r in held)
    if ids != sorted(want):
        extra = sorted(set(ids) - set(want)) or [i for i in ids if ids.count(i) > 1][:1]
        odd = f"; e.g. {extra[0]} not asked once" if extra else ""
        raise VerificationFailed(
            f"{where}: graded turns: {len(ids)} stored, {len(want)} re-derived "
            f"({graded_sessions(scenario)} sessions x {g.turns} turns, each once{odd})"
        )
    for r in held:
        truth = want[r.graded_turn or ""]
        if r.probe_truth != truth:
            raise VerificationFailed(
                f"{where}: graded turn {r.graded_turn}.probe_truth: {r.probe_truth!r} stored, "
                f"{truth!r} re-derived (seed {g.seed})"
            )
    return len(held)
