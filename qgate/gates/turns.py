"""The graded-turn gate of a multi-turn scenario: its sessions' turns, reference against candidate.

    verdicts = turn_verdicts(graded_spec(profile.perf, "agent-4"), "agent-4", refs, cands)

Pure, like every gate: `qgate run` (report assembly) and `qgate verify` call it over the same
request records. Each graded turn is re-graded from its recorded text against its truth
(`sessions.grade_turn`), so an edited `probe_correct` changes nothing. Per side, a turn counts
as correct when every ask of it in the scenario (each block and round) was. The sides' turns
are paired and judged by the math gates' own `evaluate_suite`: turns lost against
`max_flips` plus the reference's own flips (turns the reference answered right in one ask and
wrong in another: its noise under this load, which the candidate is not blamed for), and the
one-sided exact McNemar test at `alpha`. `turn_accuracy` gives the report's accuracy by turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from qgate.core.plan import GatePower
from qgate.core.records import Role
from qgate.core.verdict import Verdict
from qgate.gates.probes import asks_suite
from qgate.gates.suite import evaluate_suite
from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.perf.sessions import grade_turn, graded_sessions, turn_kind
from qgate.profile import (
    AccuracyPolicy,
    FixedScenario,
    GradedTurns,
    MultiTurnScenario,
    PerfSpec,
    Profile,
    TraceScenario,
)
from qgate.quality.records import SuiteRun
from qgate.quality.sizing import gate_power

__all__ = [
    "graded_plan",
    "graded_spec",
    "graded_turns",
    "own_flips",
    "turn_accuracy",
    "turn_correct",
    "turn_suite",
    "turn_power",
    "turn_verdicts",
]


def graded_spec(spec: PerfSpec | None, name: str) -> GradedTurns | None:
    """The `graded` block of the multi-turn scenario behind run `name` (None: none)."""
    base = name.split("@", 1)[0]
    for s in spec.scenarios if spec else []:
        if s.name == base and isinstance(s, MultiTurnScenario):
            return s.graded
    return None


def turn_correct(r: RequestRecord) -> bool:
    """A graded turn's grade from its record: its text against its truth (errors: wrong)."""
    assert r.probe_truth is not None
    return r.error is None and r.text is not None and grade_turn(r.text, r.probe_truth)


def graded_turns(runs: Iterable[ScenarioRun]) -> list[RequestRecord]:
    """Every graded turn (a truth to grade against) of the runs; planting turns left out."""
    return [r for run in runs for r in run.requests if r.graded_turn and r.probe_truth]


def _asks(runs: Iterable[ScenarioRun]) -> dict[str, list[RequestRecord]]:
    by_item: dict[str, list[RequestRecord]] = {}
    for r in graded_turns(runs):
        assert r.graded_turn is not None
        by_item.setdefault(r.graded_turn, []).append(r)
    return by_item


def own_flips(runs: Iterable[ScenarioRun]) -> int:
    """Turns a side answered right in one ask and wrong in another (its noise under load)."""
    return sum(1 for asks in _asks(runs).values() if len({turn_correct(r) for r in asks}) == 2)


def turn_suite(name: str, role: Role, runs: Sequence[ScenarioRun]) -> SuiteRun | None:
    """One side's graded turns of a scenario as a suite run (None: it asked none)."""
    return asks_suite(f"perf.{name}.turns", role, _asks(runs), turn_correct)


def turn_verdicts(
    spec: GradedTurns | None,
    name: str,
    reference: Sequence[ScenarioRun],
    candidate: Sequence[ScenarioRun],
) -> list[Verdict]:
    """The graded-turn gate of scenario run `name` (every block and round of each side).

    No verdict when the scenario grades no turns or there is no reference to pair with; a
    side without graded turns while the other has some fails the gate.
    """
    if spec is None or not reference or not candidate:
        return []
    ref = turn_suite(name, "reference", reference)
    cand = turn_suite(name, "candidate", candidate)
    suite = f"perf.{name}.turns"
    if ref is None and cand is None:
        return []
    if ref is None or cand is None:
        missing = "reference" if ref is None else "candidate"
        return [
            Verdict(
                gate=f"{suite}.max_flips",
                suite=suite,
                observed=None,
                limit=float(spec.max_flips),
                passed=False,
                reason=f"{suite}: the {missing} asked no graded turn in this scenario",
            )
        ]
    own = own_flips(reference)
    policy = AccuracyPolicy(
        max_flips=spec.max_flips + own, significance=spec.significance, alpha=spec.alpha
    )
    verdicts = evaluate_suite(suite, policy, ref, cand)
    note = (
        f" ({ref.params['asks']} reference and {cand.params['asks']} candidate asks; "
        f"max_flips {spec.max_flips} + {own} the reference's own flips across its asks)"
    )
    return [v.model_copy(update={"reason": v.reason + note}) for v in verdicts]


def turn_accuracy(
    runs: Sequence[ScenarioRun],
) -> dict[int, tuple[int, int]]:
    """Turn index (0-based) -> (graded turns right, graded turns) of one side, every ask
    graded on its own."""
    out: dict[int, tuple[int, int]] = {}
    for r in graded_turns(runs):
        index = int((r.graded_turn or "").rsplit(".t", 1)[-1])
        right, total = out.get(index, (0, 0))
        out[index] = (right + turn_correct(r), total + 1)
    return dict(sorted(out.items()))


def graded_plan(s: FixedScenario | MultiTurnScenario | TraceScenario) -> tuple[int | None, str]:
    """Graded turns per side of a multi-turn scenario's sessions, and what they are."""
    if not isinstance(s, MultiTurnScenario) or s.graded is None:
        return None, ""
    indexes = [t for t in range(s.graded.turns) if turn_kind(t) != "plant"]
    sessions = graded_sessions(s)
    shown = ", ".join(str(t) for t in indexes)
    detail = (
        f"{sessions} sessions x {s.graded.turns} turns beside its conversations; turns "
        f"{shown} graded (a code two turns back, the running total)"
    )
    return sessions * len(indexes), detail


def turn_power(profile: Profile) -> list[GatePower]:
    """Per multi-turn scenario with graded sessions: what its turn gate's size detects."""
    out = []
    for s in profile.perf.scenarios if profile.perf else []:
        items, _ = graded_plan(s)
        if items and isinstance(s, MultiTurnScenario) and s.graded is not None:
            g = s.graded
            policy = AccuracyPolicy(
                max_flips=g.max_flips, significance=g.significance, alpha=g.alpha
            )
            out.append(gate_power(f"perf.{s.name}.turns", policy, items))
    return out
