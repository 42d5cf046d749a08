"""The reference's noise floor held to the plan (issue 54 item 2, quality derivation 4 on).

The floor's records are re-derived answer by answer (single.py), and the allowance they set
follows from them; so an insider who deleted the second asks that changed their mind, and
derived every verdict again, narrowed the reference's own disagreement and the flips it
allows, and the report verified. Here the records are held to what the profile plans: with
`quality.noise_floor`, the reference asks every result of its math and recall suites again
(each as many items as its first ask planned, every item of that ask among them, and where
the suite says its item ids exactly those, item_plan.py: the second ask never stops early)
at the profile's second concurrency and confidence, and scores each of its divergence
continuations again where the profile asks that too. Without it, no floor. The floor may be
absent only where the quality stage may have halted (`stop: verdict` and a settled FAIL: the
run is FAIL whatever it held) or ran no suite at all.
"""

from __future__ import annotations

from qgate.errors import VerificationFailed
from qgate.profile import Profile
from qgate.quality.noise_floor import FLOOR_FROM, FloorRecords, floor_results
from qgate.quality.records import SuiteRun
from qgate.quality.settle import halted_at_verdict
from qgate.report.model import Report
from qgate.report.verify.item_plan import held_to, planned_ids, setting_of

__all__ = ["check_floor_planned"]


def _fail(message: str) -> VerificationFailed:
    return VerificationFailed(f"quality.noise_floor{message}")


def check_floor_planned(report: Report, profile: Profile) -> str | None:
    """Raise VerificationFailed where the floor's records are not what the profile plans; a
    line for `checked` (None: no floor planned, or the report predates holding it)."""
    q = report.quality
    if q.derivation < FLOOR_FROM:
        return None
    spec, floor = profile.quality.noise_floor, q.noise_floor
    if spec is None:
        if floor is not None:
            raise _fail(": records stored, the profile asks no noise floor")
        return None
    planned = floor_results(profile.quality)
    if floor is None:
        ran = any(r.role == "reference" for r in q.runs)
        if not ran or halted_at_verdict(profile.quality, q.verdicts):
            return None
        raise _fail(
            f": none stored; the profile asks the reference's {len(planned)} math and recall "
            "results again (quality.noise_floor)"
        )
    _check_settings(floor, profile)
    firsts = {r.suite: r for r in q.runs if r.role == "reference"}
    held: dict[str, SuiteRun] = {}
    for again in floor.runs:
        if again.role != "reference" or again.suite not in planned or again.suite in held:
            raise _fail(
                f".runs: {again.suite} ({again.role}) is not a result the profile asks the "
                f"reference again, or is stored twice (planned: {', '.join(planned)})"
            )
        held[again.suite] = again
    items = sum(_check_run(suite, held.get(suite), firsts.get(suite), profile) for suite in planned)
    sequences = _check_divergence(report, profile, floor)
    return f"noise floor holds the plan: {len(planned)} result(s), {items} items asked again" + (
        f", {sequences} divergence continuations scored again" if sequences else ""
    )


def _check_settings(floor: FloorRecords, profile: Profile) -> None:
    spec = profile.quality.noise_floor
    assert spec is not None
    first = profile.quality.concurrency
    for field, stored, wanted in (
        ("concurrency", floor.concurrency, first),
        ("second_concurrency", floor.second_concurrency, spec.second_concurrency(first)),
        ("confidence", floor.confidence, spec.confidence),
    ):
        if stored != wanted:
            raise _fail(f".{field}: {stored:g} stored, {wanted:g} re-derived from the profile")


def _check_run(suite: str, again: SuiteRun | None, first: SuiteRun | None, profile: Profile) -> int:
    """The second ask of `suite` holds every item its first ask planned (where the suite says
    its item ids, exactly those: item_plan.py); returns how many."""
    if again is None:
        raise _fail(f".runs: {suite}: no second ask stored; the profile asks it again")
    if first is None:
        raise _fail(f".runs: {suite}: asked again, but the reference's first ask is not stored")
    want = first.planned if first.planned is not None else len(first.items)
    ids = [i.id for i in again.items]
    seen = set(ids)
    missing = [i.id for i in first.items if i.id not in seen]
    if len(ids) != want or len(seen) != len(ids) or missing or again.partial:
        gone = f"; e.g. {missing[0]} missing" if missing else ""
        raise _fail(
            f".runs: {suite}: {len(ids)} items stored, {want} planned (every item of the "
            f"reference's first ask, asked again once{gone})"
        )
    found = setting_of(profile.quality, suite)
    planned = None if found is None else planned_ids(*found, again)
    if planned is not None:  # beyond a first ask that stopped early, the plan's items
        held_to(f"quality.noise_floor.runs: {suite}", ids, planned)
    return len(ids)


def _check_divergence(report: Report, profile: Profile, floor: FloorRecords) -> int:
    """Each of the reference's scored continuations is scored again (the same tokens) where
    the profile asks it; none where it does not. Returns how many."""
    spec = profile.quality.noise_floor
    assert spec is not None
    scored, again = report.quality.divergence, floor.divergence
    if not spec.divergence or profile.quality.divergence is None:
        if again is not None:
            raise _fail(
                ".divergence: stored, the profile asks none (noise_floor.divergence off, or "
                "no divergence suite)"
            )
        return 0
    if scored is None:
        return 0  # no continuations scored (the divergence suite never ran)
    tokens = {s.id: s.token_ids for s in scored.sequences}
    held = {s.id: s.token_ids for s in again.sequences} if again is not None else {}
    if held != tokens:
        odd = next((i for i in tokens if held.get(i) != tokens[i]), None)
        which = f"; e.g. {odd} missing or of other tokens" if odd else ""
        raise _fail(
            f".divergence: {len(held)} continuations stored, {len(tokens)} planned (each of the "
            f"reference's scored continuations, its tokens as scored{which})"
        )
    return len(held)
