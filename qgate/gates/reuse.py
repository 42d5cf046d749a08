"""Gates of the reuse passes (quality.reuse): pure functions of the profile and the records.

For every pass and every suite it asks again (`<suite>@<pass>`, e.g. 'math.long@warm'):

- `exercised`, from the counters scraped around the suite (quality derivation 4 on; a missing
  or broken snapshot proves nothing): warm reused at least `min_exercised_share` of the prompt
  tokens the same side's cold pass computed (a shared preamble is cached within the cold pass
  itself, so a raw share of hits proves no reuse across passes); restored: a probe shows the
  reset took (device-cache hits fall to about zero) and the pass served at least
  `min_exercised_share` from the host/external tier; load: the engine preempted at least
  `load.min_preemptions` requests while the items were in flight, the items' own served
  share read from their answers' usage, not the window that holds the filler. Reports of
  derivation 3 and before are judged by their rules (`_exercised_v3`);
- the suite's own paired gates (its policy: max_flips, max_drop, ...), the candidate's pass
  against the reference's same pass;
- `self_flips`: cold-correct answers the candidate lost in the pass, beyond those the
  reference lost in its own pass (its cold/warm noise floor), at most `max_extra_flips`.

How `exercised` reads the counters: qgate/gates/reuse_exercised.py. A pass that was not
exercised ends every one of its suite's gates NOT EXERCISED (not
passed, `exercised=False`): a pass that never ran the changed path proves nothing about it.
`qgate run` and `qgate verify` call the same `evaluate_reuse`.
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.core.records import Role
from qgate.core.verdict import Verdict
from qgate.gates.noninferiority import REFINED_FROM
from qgate.gates.reuse_exercised import PATH_OF, STRICT, shares_text
from qgate.gates.reuse_exercised import exercised as judge_exercised
from qgate.gates.suite import all_failed, evaluate_suite
from qgate.profile import AccuracyPolicy, QualitySpec, ReuseSpec
from qgate.profile.reuse import PassName
from qgate.profile.reuse_plan import reuse_suites
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.reuse_records import PassRun, PassSuite
from qgate.quality.stats import EPS

__all__ = [
    "DERIVATION",
    "PATH_OF",
    "STRICT",
    "SelfFlips",
    "evaluate_reuse",
    "self_flips",
    "shares_text",
]

DERIVATION = max(STRICT, REFINED_FROM)
"""The newest quality derivation the reuse verdicts follow (gates/judgement.py
QUALITY_DERIVATION): STRICT's counters, REFINED_FROM's bounds on a pass's loss."""


def _find(passes: Sequence[PassRun], name: str, role: Role, suite: str) -> PassSuite | None:
    for p in passes:
        if p.name == name and p.role == role:
            return next((s for s in p.suites if s.suite == suite), None)
    return None


class SelfFlips:
    """One side's cold answers against the same items in a pass."""

    def __init__(self, cold: SuiteRun, warm: SuiteRun) -> None:
        by_id = {i.id: i for i in warm.items}
        pairs: list[tuple[ItemRecord, ItemRecord]] = [
            (i, by_id[i.id]) for i in cold.items if i.id in by_id
        ]
        self.n = len(pairs)
        self.lost = sum(1 for c, w in pairs if c.correct and not w.correct)
        self.gained = sum(1 for c, w in pairs if not c.correct and w.correct)
        self.changed = sum(1 for c, w in pairs if c.output != w.output)
        self.prompt_differs = [c.id for c, w in pairs if c.prompt_sha256 != w.prompt_sha256]
        self.unpaired = len(warm.items) - self.n
        self.cold_partial = cold.partial  # quality.stop ended the cold run before its end


def self_flips(cold: SuiteRun | None, warm: SuiteRun | None) -> SelfFlips | None:
    """A side's cold-versus-pass table, or None without both runs."""
    return None if cold is None or warm is None else SelfFlips(cold, warm)


def _cold(runs: Sequence[SuiteRun], suite: str, role: Role) -> SuiteRun | None:
    return next((r for r in runs if r.suite == suite and r.role == role), None)


def _self_flips(
    reuse: ReuseSpec,
    where: str,
    name: str,
    runs: Sequence[SuiteRun],
    ref: PassSuite,
    cand: PassSuite,
    suite: str,
) -> Verdict:
    limit = float(reuse.max_extra_flips)
    fr = self_flips(_cold(runs, suite, "reference"), ref.run)
    fc = self_flips(_cold(runs, suite, "candidate"), cand.run)
    problem = None
    if fr is None or fc is None:
        problem = "no cold run or no pass run to compare"
    else:
        differs = fc.prompt_differs or fr.prompt_differs
        if differs:
            problem = f"item {differs[0]} was asked with another prompt than in the cold pass"
        elif (fc.unpaired and not fc.cold_partial) or (fr.unpaired and not fr.cold_partial):
            problem = "the pass asked items the cold pass did not"
    if problem is not None or fr is None or fc is None:
        return Verdict(
            gate=f"{where}.self_flips",
            suite=where,
            observed=None,
            limit=limit,
            passed=False,
            reason=f"{where}: {problem}",
        )
    extra = fc.lost - fr.lost
    ok = extra <= limit + EPS
    return Verdict(
        gate=f"{where}.self_flips",
        suite=where,
        observed=float(extra),
        limit=limit,
        passed=ok,
        reason=f"{where}: cold -> {name}, candidate lost {fc.lost} and gained {fc.gained} of "
        f"{fc.n} ({fc.changed} outputs changed); reference lost {fr.lost} and gained "
        f"{fr.gained} of {fr.n} ({fr.changed} changed); {extra} lost beyond the reference's "
        + ("<=" if ok else ">")
        + f" {reuse.max_extra_flips} allowed",
        metric="extra_lost_items",
        comparator="<=",
        n=fc.n,
    )


def _not_exercised(v: Verdict, why: Verdict) -> Verdict:
    if v.gate == why.gate:
        return v.model_copy(update={"reason": "NOT EXERCISED: " + v.reason})
    return v.model_copy(
        update={
            "passed": False,
            "exercised": False,
            "reason": f"NOT EXERCISED ({why.gate}): " + v.reason,
        }
    )


def _suite_pass(
    reuse: ReuseSpec,
    name: PassName,
    suite: str,
    policy: AccuracyPolicy,
    runs: Sequence[SuiteRun],
    passes: Sequence[PassRun],
    derivation: int,
) -> list[Verdict]:
    where = f"{suite}@{name}"
    ref, cand = _find(passes, name, "reference", suite), _find(passes, name, "candidate", suite)
    if ref is None or cand is None or ref.run is None or cand.run is None:
        missing = " and ".join(
            role for role, x in (("reference", ref), ("candidate", cand)) if x is None or not x.run
        )
        failed = all_failed(where, policy, f"no {missing} {name} pass")
        failed.append(
            Verdict(
                gate=f"{where}.exercised",
                suite=where,
                observed=None,
                limit=None,
                passed=False,
                reason=f"{where}: no {missing} {name} pass",
                exercised=False,
            )
        )
        return failed
    cold = (_find(passes, "cold", "reference", suite), _find(passes, "cold", "candidate", suite))
    probes = next((p.probes for p in passes if p.name == name and p.role == "candidate"), [])
    exercised = judge_exercised(reuse, name, where, ref, cand, cold, derivation, probes)
    verdicts = [exercised, *evaluate_suite(where, policy, ref.run, cand.run, derivation=derivation)]
    verdicts.append(_self_flips(reuse, where, name, runs, ref, cand, suite))
    if not exercised.passed:
        verdicts = [_not_exercised(v, exercised) for v in verdicts]
    return verdicts


def evaluate_reuse(
    spec: QualitySpec,
    runs: Sequence[SuiteRun],
    passes: Sequence[PassRun],
    derivation: int = DERIVATION,
) -> list[Verdict]:
    """Every reuse verdict, pass by pass and suite by suite (none without quality.reuse), as
    the report's quality derivation derives them (a report made before STRICT by its rules)."""
    reuse = spec.reuse
    if reuse is None:
        return []
    out: list[Verdict] = []
    for name in reuse.passes:
        for suite, policy in reuse_suites(spec):
            out += _suite_pass(reuse, name, suite, policy, runs, passes, derivation)
    return out
