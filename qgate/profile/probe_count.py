"""How many probes a run asks, counted before anything starts (issue 53).

Where a perf scenario's probes go among its requests (`probe_points`, which the perf runner
follows), and how many graded answers the candidate can give the pooled envelope gate: each
perf level's probes in every block and round, and every life's start and idle probes. One
count for `qgate plan`'s envelope lines (qgate/run/envelope.py, as planned) and for
`qgate validate`'s refusal of a gate that can never show its margin (qgate/profile/vacuous.py,
at the most any run of the profile can ask).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from qgate.profile.model import Profile
from qgate.profile.perf import run_names
from qgate.profile.scenarios import FixedScenario, MultiTurnScenario, PerfSpec, TraceScenario

__all__ = [
    "Answers",
    "blocks_of",
    "drawn",
    "life_answers",
    "measured_count",
    "most_answers",
    "perf_asks",
    "probe_points",
    "probes_of",
    "rounds_of",
]


class Answers(NamedTuple):
    """Candidate probe answers for the pooled envelope gate, by where they are asked."""

    perf: int
    lives: int

    @property
    def total(self) -> int:
        return self.perf + self.lives


def measured_count(s: FixedScenario | MultiTurnScenario | TraceScenario) -> int | None:
    """Measured requests when known in advance (None for duration-bound runs)."""
    if isinstance(s, MultiTurnScenario):
        return None if s.duration_s else s.conversations * s.turns
    if isinstance(s, TraceScenario):
        return None
    return None if s.duration_s else s.requests


def probes_of(count: int | None, probes: int, share: float) -> int | None:
    """How many probes a scenario of `count` requests asks (`probe_points`, counted without
    placing them, which a huge count could not afford); None when the count is not known."""
    if probes == 0 or share <= 0:
        return 0
    if count is None:
        return None
    return max(probes, round(share * count))


def probe_points(
    count: int | None, probes: int, share: float, in_flight: int = 1
) -> list[int] | None:
    """After which workload completion each probe of a scenario is sent (1-based).

    A scenario of `count` requests asks max(probes, round(share * count)) probes, spread
    evenly over the first half of the completions that a closed loop of `in_flight`
    workers still refills (count - in_flight): so each probe is asked under the
    scenario's full load (on a CPU a level's requests tend to finish together, and the
    last wave drains to nothing) and is done before the load ends, never trailing it
    alone (a trailing probe was most of their cost: perf/bench_probe_overhead.py). None
    when the count is not known in advance (duration-bound): then one after every
    round(1 / share) completions. [] when there are no probes or share is 0.
    """
    n = probes_of(count, probes, share)
    if n == 0:
        return []
    if n is None or count is None:
        return None
    span = max(1, (count - in_flight) // 2)
    return [max(1, math.ceil((k + 1) * span / (n + 1))) for k in range(n)]


def rounds_of(profile: Profile) -> int:
    """Perf rounds (perf.rounds) where the candidate's speed compares to the reference's."""
    spec = profile.perf
    return spec.rounds if spec is not None and spec.compare_to == "reference" else 1


def blocks_of(profile: Profile, together: bool) -> int:
    """Perf blocks per side: perf.blocks, else 2 side by side and 1 in sequence."""
    spec = profile.perf
    if spec is None:
        return 1
    return spec.blocks if spec.blocks is not None else (2 if together else 1)


def drawn(asked: int, short: int | None) -> int:
    """The probe items `asked` of a math set whose short form holds `short` items (None: not
    known): a probe set holds at most the set's items (qgate/run/life_probes.py's
    `math_probes`), whatever the setting asks."""
    return asked if short is None else min(asked, short)


def perf_asks(perf: PerfSpec, items: int) -> tuple[int, bool]:
    """Probe requests of one block of every scenario level, per side, with `items` probe
    items drawn; and whether that is all of them (False: a duration-bound or trace scenario
    asks one after every round(1 / share) completions, as many as its time lets; counted
    here at `items`, the fewest it is meant to ask)."""
    asks, bounded = 0, True
    for s in perf.scenarios:
        n = probes_of(measured_count(s), items, perf.probe_share)
        bounded = bounded and n is not None
        asks += (n if n is not None else items) * len(run_names(s))
    return asks, bounded


def life_answers(profile: Profile, items: int) -> int:
    """Probe answers one life gives with `items` probe items drawn: its start probes, and its
    idle probes where lives.idle_s asks them."""
    return items * (2 if profile.lives.idle_s > 0 else 1)


def most_answers(profile: Profile, short: int | None) -> Answers | None:
    """The most probe answers any run of `profile` can give the pooled envelope gate, the
    math set's short form holding at most `short` items (None: not known here); None where
    no bound is known (a duration-bound or trace scenario asks as its time lets).

    At the most: every perf level's probes in every block (perf.blocks, else the 2 of a run
    side by side unless engine.placement is 'sequence') and round, and every candidate life's
    start and idle probes (its first life and one fresh life per later perf round; a side
    qgate does not start is probed at each of those contacts too). Attribution trials are
    runs of their own, judged apart. A caller that knows no probe can be drawn (no math
    suite with the short form) asks nothing of this."""
    perf = profile.perf
    rounds = rounds_of(profile)
    lives = life_answers(profile, drawn(profile.lives.probes, short)) * rounds
    if perf is None or perf.probes.items == 0:
        return Answers(0, lives)
    asks, bounded = perf_asks(perf, drawn(perf.probes.items, short))
    if not bounded:
        return None
    blocks = blocks_of(profile, together=profile.engine.placement != "sequence")
    return Answers(asks * blocks * rounds, lives)
