"""Sequential looks (`quality.stop: looks`, issue 53 item 3): a clearly fine candidate stops
early, a doubtful one gets the suite's whole budget.

Each exact-answer suite is asked in an order shuffled by `quality.seed`
(qgate/quality/look_order.py) and
judged at `looks` evenly spaced looks (`look_sizes`; the last at every item). Every gate is
judged at alpha / looks at every look, the last included (`judged_policy`): by the union
bound the chance that any look shows a PASS the truth does not hold (its upper bound below
the true loss) or harm that is not there stays within alpha, whichever look the run stops
at (Bonferroni's split; an alpha-spending function would spend less early, but this one needs
no assumption about when the looks fall). A suite ends at the first look where its
sequential gates (the non-inferiority max_drop and the McNemar test, `SEQUENTIAL`) show
PASS or harm on the items run and its other gates are settled by every outcome of the rest
(qgate/quality/settle.py), or where any gate fails. Pure functions: the board (run) and
`qgate verify` decide with the same ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from qgate.gates.noninferiority import REFINED_FROM, Outcome
from qgate.gates.suite import gates_of, outcome, settled_gates
from qgate.profile import AccuracyPolicy, QualitySpec
from qgate.profile.suites import entry_of_result, exact_results
from qgate.quality.look_order import look_order
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.stats import count_flips

__all__ = [
    "judged_policy",
    "look_decision",
    "look_problems",
    "look_sizes",
    "paired_count",
    "sequential_gates",
]


def judged_policy(spec: QualitySpec, policy: AccuracyPolicy) -> AccuracyPolicy:
    """The policy a suite is judged by: under `stop: looks` its alpha split over the looks."""
    if spec.stop != "looks":
        return policy
    return policy.model_copy(update={"alpha": policy.alpha / spec.looks})


def look_sizes(planned: int, looks: int) -> list[int]:
    """Items paired at each look: evenly spaced, the last at all `planned` (no repeats)."""
    return sorted({max(1, math.ceil(k * planned / looks)) for k in range(1, looks + 1)})


def sequential_gates(policy: AccuracyPolicy) -> frozenset[str]:
    """The gates judged on the items run at a look: a bound's max_drop and the McNemar test
    (their level holds at each look); any other gate must be settled by curtailment."""
    names = {g.name for g in gates_of(policy)}
    seq = {"significance"} | ({"max_drop"} if policy.rule == "bound" else set())
    return frozenset(names & seq)


def look_decision(
    policy: AccuracyPolicy,
    reference: Sequence[ItemRecord],
    candidate: Sequence[ItemRecord],
    planned: int,
    derivation: int = REFINED_FROM,
) -> dict[str, Outcome | None] | None:
    """Each gate's verdict at this look when the look decides the suite, else None: the
    sequential gates on the paired items run, the others settled over `planned`. A look
    decides when some gate fails, or when every gate passes or is settled (none open, none
    inconclusive). `policy` is the judged one (alpha split); `derivation` the quality
    derivation whose bound judges it."""
    cand = {i.id: i.correct for i in candidate}
    flips = count_flips((i.correct, cand[i.id]) for i in reference if i.id in cand)
    if flips.n == 0:
        return None
    seq = sequential_gates(policy)
    settled = settled_gates(policy, reference, candidate, planned, derivation)
    got: dict[str, Outcome | None] = {
        g.name: outcome(g, policy, flips, derivation) if g.name in seq else settled[g.name]
        for g in gates_of(policy)
    }
    if any(v == "fail" for v in got.values()):
        return got
    return got if all(v == "pass" for v in got.values()) else None


def paired_count(reference: Sequence[ItemRecord], candidate: Sequence[ItemRecord]) -> int:
    """Items both sides have answered."""
    return len({i.id for i in reference} & {i.id for i in candidate})


def look_problems(
    spec: QualitySpec, runs: Sequence[SuiteRun], derivation: int = REFINED_FROM
) -> list[str]:
    """Stops under `stop: looks` that the records do not allow (verify rejects the report):
    a suite may end early only at the post right after a look, where that look decided it
    (by quality `derivation`'s bound), and the candidate of a suite that shuffles (its
    SuiteEntry) asked the first of its items in the seeded order."""
    if spec.stop != "looks":
        return []
    block = spec.stop_block or spec.concurrency
    sides: dict[str, dict[str, SuiteRun]] = {}
    for run in runs:
        sides.setdefault(run.suite, {})[run.role] = run
    problems = []
    for suite, by_role in sides.items():
        ref, cand = by_role.get("reference"), by_role.get("candidate")
        policy = _policy(spec, suite)
        if ref is None or cand is None or policy is None:
            continue
        planned = ref.planned or cand.planned
        if planned is None or not (ref.partial or cand.partial):
            continue
        known = paired_count(ref.items, cand.items)
        after = [n for n in look_sizes(planned, spec.looks) if n <= known]
        if not after or known >= after[-1] + block:
            problems.append(
                f"{suite} stopped at {known} of {planned} paired items, not at a look "
                f"({look_sizes(planned, spec.looks)}, blocks of {block})"
            )
        elif look_decision(policy, ref.items, cand.items, planned, derivation) is None:
            problems.append(
                f"{suite} stopped at look {len(after)} ({known} of {planned} items), which "
                "does not decide it"
            )
        elif _shuffles(suite) and not ref.partial:
            asked = look_order([i.id for i in ref.items], spec.seed)[: len(cand.items)]
            if sorted(asked) != sorted(i.id for i in cand.items):
                problems.append(
                    f"{suite}: the candidate's {len(cand.items)} items are not the first of "
                    f"the order seed {spec.seed} gives"
                )
    return problems


def _shuffles(suite: str) -> bool:
    entry = entry_of_result(suite)
    return entry is not None and entry.shuffles


def _policy(spec: QualitySpec, suite: str) -> AccuracyPolicy | None:
    found = next((p for sid, p in exact_results(spec) if sid == suite), None)
    return None if found is None else judged_policy(spec, found)
