"""The reuse passes held to the plan (issue 54 item 2, quality derivation 2 on).

Each pass's verdicts are re-derived from its records (gates/reuse.py), so an insider who
deleted the items a candidate lost in a pass (and the reference's same items), or a whole
pass, and derived every verdict again, got a report that verified. Here the records are held
to what the profile plans: with `quality.reuse`, each side that ran its quality stage holds
the cold pass and then `quality.reuse.passes` in order, each over the results the passes ask
again (`reuse_suites`), each pass after the cold one asking the items its suite's cut to
`quality.reuse.limit` holds (qgate/quality/asked_again.py: all of the side's first ask
without a limit, math's first N questions, recall's whole haystacks), every one once and each
an item of that first ask; where the suite says its item ids (item_plan.py), exactly the
cut's (another item of the first ask, copied in, is not one); from quality derivation 4 the
restored pass holds its two reset probes. Without `quality.reuse`, no pass. A side may hold
no pass only where its quality stage may have halted (`stop: verdict` and a settled FAIL:
the run is FAIL whatever it held).
"""

from __future__ import annotations

from typing import Any

from qgate.errors import VerificationFailed
from qgate.gates.reuse_exercised import STRICT
from qgate.profile import Profile
from qgate.profile.reuse_plan import reuse_suites
from qgate.profile.suites import configured, entry_of_result
from qgate.quality.asked_again import pass_items, pass_setting, split_setting
from qgate.quality.records import SuiteRun
from qgate.quality.reuse_records import AFTER_RESET, BEFORE_RESET, PassRun, PassSuite
from qgate.quality.settle import halted_at_verdict
from qgate.report.model import Report
from qgate.report.verify.item_plan import held_to, planned_ids

__all__ = ["PASSES_FROM", "check_passes_planned"]

PASSES_FROM = 2
"""The quality derivation that introduced the reuse passes' records."""


def _fail(message: str) -> VerificationFailed:
    return VerificationFailed(f"quality.passes: {message}")


def _chosen(profile: Profile) -> dict[str, Any]:
    """The results the passes ask again, each with its one-result setting, in profile order."""
    wanted = {suite for suite, _ in reuse_suites(profile.quality)}
    return {
        suite: part
        for entry, setting in configured(profile.quality)
        for suite, part in split_setting(entry.key, setting)
        if suite in wanted
    }


def check_passes_planned(report: Report, profile: Profile) -> str | None:
    """Raise VerificationFailed where the pass records are not what the profile plans; a line
    for `checked` (None: no pass planned, or the report predates holding them)."""
    q = report.quality
    if q.derivation < PASSES_FROM:
        return None
    reuse, chosen = profile.quality.reuse, _chosen(profile)
    if reuse is None or not chosen:
        if q.passes:
            raise _fail(f"{len(q.passes)} pass records stored, the profile plans none")
        return None
    names = ["cold", *reuse.passes]
    items = 0
    for role in ("reference", "candidate"):
        held = [p for p in q.passes if p.role == role]
        got = [p.name for p in held]
        ran = any(r.role == role for r in q.runs)
        if not held and (not ran or halted_at_verdict(profile.quality, q.verdicts)):
            continue  # no quality stage, or one that halted before its passes
        if got != names:
            raise _fail(
                f"the {role} holds passes {got}, the profile plans {names} (the cold pass, "
                f"then quality.reuse.passes): {len(got)} stored, {len(names)} planned"
            )
        firsts = {r.suite: r for r in q.runs if r.role == role}
        for p in held:
            items += _check_pass(p, chosen, firsts, reuse.limit, q.derivation)
    return f"reuse passes hold the plan: {len(names)} a side over {len(chosen)} result(s), " + (
        f"{items} items asked again"
    )


def _check_pass(
    p: PassRun,
    chosen: dict[str, Any],
    firsts: dict[str, SuiteRun],
    limit: int | None,
    derivation: int,
) -> int:
    """One side's pass: its results, and each one's items; returns how many items."""
    where = f"the {p.role}'s {p.name} pass"
    suites = [s.suite for s in p.suites]
    if sorted(suites) != sorted(chosen):
        raise _fail(
            f"{where} holds {suites}, the profile plans {list(chosen)} (quality.reuse.suites)"
        )
    if p.name == "restored" and derivation >= STRICT:
        probes = sorted(x.suite for x in p.probes)
        if probes != sorted((BEFORE_RESET, AFTER_RESET)):
            raise _fail(
                f"{where} holds reset probes {probes}, the plan {[BEFORE_RESET, AFTER_RESET]}"
            )
    if p.name == "cold":
        return 0  # its items are the quality stage's own run
    return sum(
        _check_items(where, s, chosen[s.suite], firsts.get(s.suite), limit) for s in p.suites
    )


def _check_items(
    where: str, s: PassSuite, setting: Any, first: SuiteRun | None, limit: int | None
) -> int:
    if first is None:
        raise _fail(f"{where} asked {s.suite} again, but its first ask is not stored")
    cold = first.planned if first.planned is not None else len(first.items)
    want = pass_items(setting, limit, cold)
    ids = [i.id for i in s.run.items] if s.run is not None else []
    known = {i.id for i in first.items}
    other = [i for i in ids if i not in known] if not first.partial else []
    if len(ids) != want or len(set(ids)) != len(ids) or other:
        odd = f"; e.g. {other[0]} not an item of its first ask" if other else ""
        rule = f"quality.reuse.limit {limit}" if limit is not None else "no quality.reuse.limit"
        raise _fail(
            f"{where} of {s.suite}: {len(ids)} items stored, {want} planned ({rule}, of the "
            f"{cold} its first ask planned, each once{odd})"
        )
    entry = entry_of_result(s.suite)
    cut = pass_setting(setting, limit)
    planned = None if entry is None or s.run is None else planned_ids(entry, cut, s.run)
    if planned is not None:  # the very items of the cut, not others of the first ask
        held_to(f"quality.passes: {where} of {s.suite}", ids, planned, "planned by the cut")
    return want
