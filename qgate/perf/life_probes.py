"""Every life graded (issue 44 item 2): the probes a server life answers at its start and
after an idle pause: their records and their gate (asking them: qgate/run/life_probes.py).

    verdicts = life_verdicts(profile.lives, reference_runs, lives)

A life's probes are the perf probes' items and requests (`probes.Probe`, the quality
suites' sampling), asked one after another so that the first request after the pause is
a probe, and graded by the perf probe gate's own `graded` (the recorded text against the
item's known answer; an answer with no number is wrong). The gate is pure: `qgate run`
and `qgate verify` call it over the same records. A candidate life *loses* an item the
reference answered correctly in its quality stage (`math.short`) and in every probe of the
same kind (start or idle) of its own lives (the reference's own misses are its noise, never
held against the candidate) and that the candidate did not already lose in its own quality
stage (the quality gates judge that); more than `max_flips` lost items fail the life.
Reference lives are graded and shown, and set that floor; they get no verdict of their own.

A side qgate does not start (an `endpoint`) is a server all the same, and can go bad after
an idle pause: its "life" is qgate's contact with it, probed at the first contact and after
the pause like a started one, and labelled an endpoint (`LifeProbes.endpoint`, which
`is_endpoint` derives from the profile; `qgate verify` checks it the same way).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import Field

from qgate.core.records import Record, Role
from qgate.core.verdict import Verdict
from qgate.perf.probes import graded
from qgate.perf.records import RequestRecord
from qgate.profile import LivesSpec, Profile
from qgate.profile.engine_checks import starts_process
from qgate.quality.math_set import PROBED
from qgate.quality.records import SuiteRun

__all__ = [
    "LifeProbes",
    "ProbeKind",
    "excluded_rounds",
    "is_endpoint",
    "life_label",
    "life_verdicts",
    "reference_right",
    "when_asked",
]

ProbeKind = Literal["start", "idle"]


class LifeProbes(Record):
    """One probe set one server life answered: at its start or after its idle pause."""

    side: str = Field(description="'reference', or the candidate's name ('candidate').")
    role: Role = Field(description="Which runtime the life served.")
    life: int = Field(ge=0, description="The life's place in the run's server starts (0-based).")
    round: int = Field(default=0, ge=0, description="Its perf round (0: the run's own lives).")
    purpose: str = Field(
        default="life", description="What the life was for: 'life', or 'trial:NAME' (attribution)."
    )
    node: str | None = Field(default=None, description="The cluster node it ran on, if known.")
    endpoint: bool = Field(
        default=False,
        description="The side is an endpoint qgate did not start (a server already running): "
        "its 'life' is qgate's contact with it, probed at the first contact ('start') and "
        "after the idle pause all the same.",
    )
    kind: ProbeKind = Field(description="'start': right after ready; 'idle': after the pause.")
    idle_s: float = Field(ge=0, description="Seconds the life sat idle before these probes.")
    requests: list[RequestRecord] = Field(description="The probes, in the order asked.")


def is_endpoint(profile: Profile, role: Role) -> bool:
    """Whether `role`'s side of `profile` is an endpoint: a server qgate finds running and
    does not start (its life probes are asked all the same, and labelled so)."""
    return not starts_process(profile.engine_of(role).kind)


def life_label(p: LifeProbes) -> str:
    """'candidate life 3 (round 2, trial:x, node n1)', or for a side qgate did not start
    'candidate endpoint (round 1; already running, not started by qgate)': which life, for
    people and gate reasons."""
    where = [f"round {p.round + 1}"]
    if p.purpose != "life":
        where.append(p.purpose)
    if p.node:
        where.append(f"node {p.node}")
    if p.endpoint:
        return f"{p.side} endpoint ({', '.join(where)}; already running, not started by qgate)"
    return f"{p.side} life {p.life + 1} ({', '.join(where)})"


def when_asked(p: LifeProbes) -> str:
    """'at its start' ('at first contact' for an endpoint), or 'after 50 s idle'."""
    if p.kind == "idle":
        return f"after {p.idle_s:.0f} s idle"
    return "at first contact" if p.endpoint else "at its start"


def reference_right(
    reference_runs: Iterable[SuiteRun], lives: Iterable[LifeProbes]
) -> dict[ProbeKind, set[str]]:
    """Per kind, the items the reference answered right in its quality stage (math.short)
    and in every probe of that kind its own lives asked."""
    right = {i.id for r in reference_runs if r.suite == PROBED for i in r.items if i.correct}
    out: dict[ProbeKind, set[str]] = {"start": set(right), "idle": set(right)}
    for p in lives:
        if p.role == "reference":
            for r in p.requests:
                if r.probe_id is not None and r.probe_truth is not None and not graded(r):
                    out[p.kind].discard(r.probe_id)
    return out


def life_verdicts(
    spec: LivesSpec, quality_runs: Sequence[SuiteRun], lives: Sequence[LifeProbes]
) -> list[Verdict]:
    """One verdict per candidate life and kind: the items it lost against `max_flips`.

    `quality_runs` are both sides' quality records: the reference's set the items it
    answers right; an item the candidate already lost in its own quality stage is left to
    the quality gates (as the perf probe gate does), so a life is judged on what it adds.
    """
    right = reference_right([r for r in quality_runs if r.role == "reference"], lives)
    lost_before = {
        i.id
        for r in quality_runs
        if r.role == "candidate" and r.suite == PROBED
        for i in r.items
        if not i.correct
    }
    out: list[Verdict] = []
    for p in lives:
        if p.role != "candidate":
            continue
        asked = [r for r in p.requests if r.probe_id is not None and r.probe_truth is not None]
        judged = [r for r in asked if r.probe_id in right[p.kind] - lost_before]
        lost = sorted({r.probe_id for r in judged if not graded(r) and r.probe_id is not None})
        reason = (
            f"{life_label(p)} {when_asked(p)}: lost {len(lost)} of {len(judged)} judged probe(s)"
            f" (limit {spec.max_flips}; {len(asked)} asked, the others wrong in the"
            " reference's own records or lost in the candidate's quality stage)"
        )
        if lost:
            reason += ": " + ", ".join(lost[:4]) + (" ..." if len(lost) > 4 else "")
        out.append(
            Verdict(
                gate=f"lives.{p.side}.{p.life + 1}.{p.kind}",
                suite="lives",
                observed=float(len(lost)),
                limit=float(spec.max_flips),
                passed=len(lost) <= spec.max_flips,
                underpowered=not judged,
                reason=reason,
                metric="lost_items",
                comparator="<=",
                n=len(judged),
            )
        )
    return out


def excluded_rounds(lives: Sequence[LifeProbes], verdicts: Iterable[Verdict]) -> set[int]:
    """The perf rounds a failed candidate life served: their runs are kept out of the ratios."""
    failed = {v.gate for v in verdicts if v.suite == "lives" and not v.passed}
    return {
        p.round
        for p in lives
        if p.role == "candidate" and f"lives.{p.side}.{p.life + 1}.{p.kind}" in failed
    }
