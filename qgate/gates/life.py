"""The life gates (`lives:`): each candidate life's start and idle probes against the items
the reference answers right, and the perf rounds a failed life served (kept out of the
ratios). The probes themselves, asked of every life, are qgate/perf/life_probes.py; the
reference's own lives are graded by gates/reference_lives.py (perf derivation 12)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from qgate.core.verdict import Verdict
from qgate.gates.reference_lives import LifeKey, ReferenceLives, life_key, where_label
from qgate.perf.life_probes import LifeProbes, ProbeKind, life_label, when_asked
from qgate.perf.probes import graded
from qgate.perf.records import RequestRecord
from qgate.profile import LivesSpec
from qgate.quality.math_set import PROBED
from qgate.quality.records import SuiteRun

__all__ = ["LifeAsks", "excluded_rounds", "judged_asks", "life_verdicts", "reference_right"]

LifeAsks = tuple[LifeProbes, list[RequestRecord], list[RequestRecord]]
"""A candidate life's probe set, the graded probes it asked, and those of them it is judged on."""


def reference_right(
    reference_runs: Iterable[SuiteRun],
    lives: Iterable[LifeProbes],
    alone: bool = True,
    leave_out: Collection[LifeKey] = (),
) -> dict[ProbeKind, set[str]]:
    """Per kind, the items a candidate life is judged on.

    `alone` (perf derivation 10 on): where the reference's own lives asked probes of that
    kind, the items it answered right in every one of them: a probe is asked alone, and the
    reference's batched answer in its quality stage is another condition (on a CPU kind whose
    numerics vary with the batch, the one server answered an item right in a batch of 8 and
    wrong alone, every time: a false alarm on an A/A). Where the reference asked none of that
    kind, and before derivation 10: the items it answered right in its quality stage
    (math.short) and in every probe of that kind its own lives asked. The reference lives in
    `leave_out` (broken ones, perf derivation 12) set no floor: their answers are a fault's."""
    right = {i.id for r in reference_runs if r.suite == PROBED for i in r.items if i.correct}
    out: dict[ProbeKind, set[str]] = {"start": set(right), "idle": set(right)}
    own: dict[ProbeKind, tuple[set[str], set[str]]] = {
        "start": (set(), set()),
        "idle": (set(), set()),
    }
    for p in lives:
        if p.role == "reference" and life_key(p) not in leave_out:
            for r in p.requests:
                if r.probe_id is not None and r.probe_truth is not None:
                    own[p.kind][0 if graded(r) else 1].add(r.probe_id)
                    if not graded(r):
                        out[p.kind].discard(r.probe_id)
    if alone:
        for kind, (ok, wrong) in own.items():
            if ok or wrong:
                out[kind] = ok - wrong
    return out


def judged_asks(
    quality_runs: Sequence[SuiteRun],
    lives: Sequence[LifeProbes],
    alone: bool = True,
    leave_out: Collection[LifeKey] = (),
) -> list[LifeAsks]:
    """Each candidate life's asks and the judged ones among them: items the reference answers
    right (`reference_right`) that the candidate did not already lose in its own quality
    stage (a loss there is the quality gates'), so a life is judged on what it adds.

    `quality_runs` are both sides' quality records. The life gates and the pooled envelope
    gate (gates/pooled.py) read the same asks."""
    references = [r for r in quality_runs if r.role == "reference"]
    right = reference_right(references, lives, alone, leave_out)
    lost_before = {
        i.id
        for r in quality_runs
        if r.role == "candidate" and r.suite == PROBED
        for i in r.items
        if not i.correct
    }
    out: list[LifeAsks] = []
    for p in lives:
        if p.role != "candidate":
            continue
        asked = [r for r in p.requests if r.probe_id is not None and r.probe_truth is not None]
        judged = [r for r in asked if r.probe_id in right[p.kind] - lost_before]
        out.append((p, asked, judged))
    return out


def life_verdicts(
    spec: LivesSpec,
    quality_runs: Sequence[SuiteRun],
    lives: Sequence[LifeProbes],
    alone: bool = True,
    pooled: bool = True,
    reference: ReferenceLives | None = None,
    host: str | None = None,
) -> list[Verdict]:
    """One verdict per candidate life and kind: the items it lost against `max_flips`, a
    gross-fault alarm for that life (the pooled envelope gate bounds the rate).

    `pooled` (perf derivation 11 on): a life that judged no item is INCONCLUSIVE, never
    PASS: nothing showed it answers right. Before: it passed, flagged underpowered.
    `reference` (perf derivation 12 on): the reference lives graded; a broken one sets no
    floor, and a candidate life of its round and kind is INCONCLUSIVE whatever it lost (the
    round's conditions broke the reference too: nothing there tells the candidate's harm)."""
    out: list[Verdict] = []
    leave_out = reference.keys() if reference is not None else frozenset()
    for p, asked, judged in judged_asks(quality_runs, lives, alone, leave_out):
        lost = sorted({r.probe_id for r in judged if not graded(r) and r.probe_id is not None})
        others = (
            "not answered right by the reference's own probes of this kind"
            if alone
            else "wrong in the reference's own records"
        )
        reason = (
            f"{life_label(p)} {when_asked(p)}: lost {len(lost)} of {len(judged)} judged probe(s)"
            f" (limit {spec.max_flips}; {len(asked)} asked, the others {others} or lost in the"
            " candidate's quality stage)"
        )
        if lost:
            reason += ": " + ", ".join(lost[:4]) + (" ..." if len(lost) > 4 else "")
        nothing = pooled and not judged
        tainted = reference.tainting(p) if reference is not None else None
        if tainted is not None:
            reason = (
                f"INCONCLUSIVE: {reason}: the reference's life of this round, "
                f"{where_label(tainted, host)}, failed its own probes {when_asked(tainted)}"
            )
        elif nothing:
            reason = (
                f"INCONCLUSIVE: {reason}: no item judged, nothing shows this life answers right"
            )
        unsure = nothing or tainted is not None
        out.append(
            Verdict(
                gate=f"lives.{p.side}.{p.life + 1}.{p.kind}",
                suite="lives",
                observed=float(len(lost)),
                limit=float(spec.max_flips),
                passed=len(lost) <= spec.max_flips and not unsure,
                underpowered=not judged,
                reason=reason,
                metric="lost_items",
                comparator="<=",
                n=len(judged),
                inconclusive=unsure,
            )
        )
    return out


def excluded_rounds(
    lives: Sequence[LifeProbes],
    verdicts: Iterable[Verdict],
    reference: ReferenceLives | None = None,
) -> set[int]:
    """The perf rounds a failed candidate life or a broken reference life served: their runs
    are kept out of the ratios (an INCONCLUSIVE candidate life's stay in: nothing showed it
    broken)."""
    failed = {
        v.gate for v in verdicts if v.suite == "lives" and not v.passed and not v.inconclusive
    }
    broken = reference.rounds() if reference is not None else set()
    return broken | {
        p.round
        for p in lives
        if p.role == "candidate" and f"lives.{p.side}.{p.life + 1}.{p.kind}" in failed
    }
