"""The reference's own lives graded (issue 53 item 5, perf derivation 12): a reference life that
fails its probes against the items' known answers makes the run INCONCLUSIVE, names the life,
its round and its node, and keeps its round out of the ratios.

    graded = reference_lives(profile.lives, evidence.runs, lives, host=evidence.host)

Each reference life and kind (start, idle) is judged on the items it answered right itself
(against each item's known answer) and on the items the reference answered right in its
quality stage (`math.short`) that

- another reference life of the same kind answered right too, where the run has several: a
  probe is asked alone and the quality stage is a batch, and on a kind whose numerics vary
  with the batch the reference answers some item right in a batch and wrong alone, in every
  life (gates/life.py's `alone`); its sibling lives, asked alone too, are the fair floor;
- with no other life of its kind (one round, no attribution): every such item, against the
  batched answer only; so the one life is broken only when it answers none of at least two
  of them right (`MIN_BROKEN`), a gross fault no batch explains.

A life that loses more than `lives.max_flips` of its judged items (with siblings), or answers
none of them right, is *broken*: its verdict is INCONCLUSIVE (the reference is not what is
gated, so never FAIL), its round is kept out of the ratios, its answers are left out of the
floor the candidate's lives are judged on, and the candidate's lives of the same round and
kind are INCONCLUSIVE (gates/life.py): nothing there tells the candidate's harm from the
round's. A healthy life PASSes: evidence that the baseline held. A life that judged nothing
passes, flagged underpowered, when another reference life of its kind judged something, and
is INCONCLUSIVE (its round kept) when none did: nothing shows the reference answers right at
that kind. Pure: the one judge calls it for `qgate run` and `qgate verify`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qgate.core.verdict import Verdict
from qgate.perf.life_probes import LifeProbes, life_label, when_asked
from qgate.perf.probes import graded
from qgate.profile import LivesSpec
from qgate.quality.math_set import PROBED
from qgate.quality.records import SuiteRun

__all__ = ["ReferenceLives", "life_key", "reference_lives", "where_label"]

LifeKey = tuple[str, int, int, str]

MIN_BROKEN = 2
"""The fewest judged items a life must answer all wrong to be broken against the batched answer
alone: on a CPU kind whose numerics vary with the batch one item in 23 turns alone (4.3%,
docs/measurements.md), so one lost item of one judged is noise as often; two are 0.2%."""


def life_key(p: LifeProbes) -> LifeKey:
    """One probe set's identity: side, life, round, kind."""
    return (p.side, p.life, p.round, p.kind)


def where_label(p: LifeProbes, host: str | None) -> str:
    """`life_label`, naming `host` (the machine qgate ran on) as the node of a life started
    here: a cluster life records its own node, an endpoint's host is not qgate's to name."""
    if p.node or p.endpoint or not host:
        return life_label(p)
    return life_label(p.model_copy(update={"node": host}))


@dataclass(frozen=True)
class ReferenceLives:
    """The reference lives' verdicts and the broken ones among them."""

    verdicts: list[Verdict]
    broken: tuple[LifeProbes, ...]

    def keys(self) -> frozenset[LifeKey]:
        """The broken lives' keys (left out of the candidate's floor)."""
        return frozenset(life_key(p) for p in self.broken)

    def rounds(self) -> set[int]:
        """The perf rounds a broken reference life served."""
        return {p.round for p in self.broken}

    def tainting(self, p: LifeProbes) -> LifeProbes | None:
        """The broken reference life of `p`'s round and kind, if any."""
        return next((b for b in self.broken if (b.round, b.kind) == (p.round, p.kind)), None)


def _right(p: LifeProbes) -> set[str]:
    return {
        r.probe_id
        for r in p.requests
        if r.probe_id is not None and r.probe_truth is not None and graded(r)
    }


def reference_lives(
    spec: LivesSpec,
    quality_runs: Sequence[SuiteRun],
    lives: Sequence[LifeProbes],
    host: str | None = None,
) -> ReferenceLives:
    """One verdict per reference life and kind, and the broken lives (module docstring)."""
    known = {
        i.id
        for r in quality_runs
        if r.role == "reference" and r.suite == PROBED
        for i in r.items
        if i.correct
    }
    refs = [p for p in lives if p.role == "reference"]
    graded = [_graded(p, [q for q in refs if _sibling(q, p)], known) for p in refs]
    kinds_judged = {g.life.kind for g in graded if g.ids}
    verdicts = [
        _verdict(spec, g, where_label(g.life, host), g.life.kind in kinds_judged) for g in graded
    ]
    broken = tuple(g.life for g in graded if g.broken(spec))
    return ReferenceLives(verdicts, broken)


def _sibling(q: LifeProbes, p: LifeProbes) -> bool:
    return q.kind == p.kind and life_key(q) != life_key(p)


@dataclass(frozen=True)
class _Graded:
    """One reference life's judged items and its losses, against its siblings' answers and
    against the batched answer only."""

    life: LifeProbes
    ids: list[str]
    """The items it is judged on, in the order asked."""
    checked: int
    """How many of them another life of its kind asked too (its siblings' floor)."""
    lost_siblings: list[str]
    """Lost items another life of its kind answered right."""
    lost_batched: list[str]
    """Lost items no other life of its kind asked (against the quality stage only)."""

    @property
    def lost(self) -> list[str]:
        return [i for i in self.ids if i in self.lost_siblings or i in self.lost_batched]

    def limit(self, spec: LivesSpec) -> int:
        """The losses it may have: `max_flips` against its siblings, any against the batched
        answer short of all of them (a lone life: one right is enough), and one alone."""
        if self.checked:
            return spec.max_flips + len(self.lost_batched)
        return max(len(self.ids) - 1, MIN_BROKEN - 1)

    def broken(self, spec: LivesSpec) -> bool:
        none_right = len(self.ids) >= MIN_BROKEN and len(self.lost) == len(self.ids)
        return none_right or len(self.lost_siblings) > spec.max_flips


def _graded(p: LifeProbes, siblings: list[LifeProbes], known: set[str]) -> _Graded:
    asked_by_siblings = {
        r.probe_id for q in siblings for r in q.requests if r.probe_truth is not None
    }
    right_by_siblings = set().union(*(_right(q) for q in siblings))
    floor = (known & right_by_siblings) | (known - asked_by_siblings)
    right = _right(p)
    # an item it answered right against its known answer is judged too: never a fault's sign,
    # and the very floor the candidate's life is judged on (gates/life.py `reference_right`)
    ids = list(
        dict.fromkeys(
            r.probe_id
            for r in p.requests
            if r.probe_id is not None
            and r.probe_truth is not None
            and (r.probe_id in floor or r.probe_id in right)
        )
    )
    checked = [i for i in ids if i in asked_by_siblings]
    return _Graded(
        life=p,
        ids=ids,
        checked=len(checked),
        lost_siblings=[i for i in checked if i not in right],
        lost_batched=[i for i in ids if i not in asked_by_siblings and i not in right],
    )


def _verdict(spec: LivesSpec, g: _Graded, where: str, kind_judged: bool) -> Verdict:
    p, ids, lost, bad = g.life, g.ids, g.lost, g.broken(spec)
    seen = (
        f"{where} {when_asked(p)}: lost {len(lost)} of {len(ids)} judged probe(s) the "
        "reference answered right in its quality stage or here"
    )
    parts = []
    if g.checked:
        parts.append(
            f"{len(g.lost_siblings)} of the {g.checked} another life of this kind answered "
            f"right, limit {spec.max_flips}"
        )
    if len(ids) > g.checked:
        parts.append(
            f"{len(g.lost_batched)} of the {len(ids) - g.checked} no other life of this kind "
            "asked, against the batched answer only: broken only if none is right"
        )
    if parts:
        seen += f" ({'; '.join(parts)})"
    if lost:
        seen += ": " + ", ".join(lost[:4]) + (" ..." if len(lost) > 4 else "")
    nothing = not ids and not kind_judged
    if bad:
        reason = (
            f"INCONCLUSIVE: {seen}; a broken reference life: its round is kept out of the "
            "ratios and the candidate's lives of that round are not judged at this kind"
        )
    elif nothing:
        reason = (
            f"INCONCLUSIVE: {seen}: no reference life of this kind judged an item, nothing "
            "shows the reference answers right here"
        )
    elif not ids:
        reason = f"{seen}: nothing judged here; another reference life of this kind was"
    else:
        reason = f"{seen}: the baseline held"
    return Verdict(
        gate=f"lives.{p.side}.{p.life + 1}.{p.kind}",
        suite="lives",
        observed=float(len(lost)),
        limit=float(g.limit(spec)),
        passed=not bad and not nothing,
        underpowered=not ids,
        reason=reason,
        metric="lost_items",
        comparator="<=",
        n=len(ids),
        inconclusive=bad or nothing,
    )
