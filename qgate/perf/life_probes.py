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
Reference lives are graded and shown, and set that floor; from perf derivation 12 each gets a
verdict of its own against the items' known answers (qgate/gates/reference_lives.py): a broken
one makes the run INCONCLUSIVE and sets no floor.

A side qgate does not start (an `endpoint`) is a server all the same, and can go bad after
an idle pause: its "life" is qgate's contact with it, probed at the first contact and after
the pause like a started one, and labelled an endpoint (`LifeProbes.endpoint`, which
`is_endpoint` derives from the profile; `qgate verify` checks it the same way).

From perf derivation 15 each probe set is salted apart where its side's engine serves
`cache_salt` (`probe_salt`, qgate/perf/salts.py `life_scope`): the scope is recorded with it
(`LifeProbes.cache_salt`) and `qgate verify` re-derives it from the record's side, life,
round, purpose and kind.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from qgate.core.records import Record, Role
from qgate.perf.records import RequestRecord
from qgate.perf.salts import life_scope
from qgate.profile import Profile
from qgate.profile.engine_checks import served, starts_process

__all__ = [
    "LifeProbes",
    "ProbeKind",
    "is_endpoint",
    "life_label",
    "probe_salt",
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
    cache_salt: str | None = Field(
        default=None,
        description="The cache-salt scope of these probes (qgate/perf/salts.py `life_scope`; "
        "the k-th probe asked carries it with '-pk'), where the side's engine serves "
        "cache_salt (perf derivation 15 on); None: unsalted.",
    )


def is_endpoint(profile: Profile, role: Role) -> bool:
    """Whether `role`'s side of `profile` is an endpoint: a server qgate finds running and
    does not start (its life probes are asked all the same, and labelled so)."""
    return not starts_process(profile.engine_of(role).kind)


def probe_salt(
    profile: Profile, role: Role, side: str, life: int, round: int, purpose: str, kind: ProbeKind
) -> str | None:
    """The cache-salt scope of a life's probe set of `kind`, or None where `role`'s engine
    serves no `cache_salt` (what the perf salts follow too: qgate/run/perf.py)."""
    if "cache_salt" not in served(profile.engine_of(role)):
        return None
    return life_scope(side, life, round, purpose, kind)


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
