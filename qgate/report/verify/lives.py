"""verify: every life's probe verdicts re-derived from its recorded probes (issue 44 item 2).

The same pure functions `qgate run` used (qgate/perf/life_probes.py): each probe re-graded
from its recorded text against the item's known answer, the reference's floor read from its
quality records and its own life probes, a verdict per candidate life and kind, and the perf
rounds a failed life served (kept out of the ratios, which `recompute_perf` re-derives
without them). A record's `endpoint` label (a side qgate did not start) must follow from the
profile's engine for that side. An edited answer, verdict or list of excluded rounds is
rejected naming the field and both values. From perf derivation 12 (the reference's lives
graded too) each probe set holds the probes the profile asks (no answer deleted from a life),
and each probe's known answer is the one the reference's quality records expect of its item
(an edited truth would make a broken life's wrong answers right).
"""

from __future__ import annotations

from qgate.core.verdict import Verdict
from qgate.errors import VerificationFailed
from qgate.gates.judgement import ALONE, REFERENCE_LIVES, Judgement
from qgate.perf.life_probes import LifeProbes, ProbeKind, is_endpoint
from qgate.perf.probes import extract_answer
from qgate.profile import Profile
from qgate.profile.vacuous import PROBED_FORM
from qgate.quality.math_set import PROBED
from qgate.report.model import Report
from qgate.report.verify.compare_values import dump, same_value
from qgate.report.verify.recompute import default_recompute, judged_of

__all__ = ["check_lives", "planned_lives"]


def planned_lives(report: Report, profile: Profile) -> None:
    """Every life the report's starts name holds the probe records the profile plans (issue 54:
    the evidence held to the plan, not inferred from the records): its start probes, and its
    idle probes where the profile pauses, unless `quality.stop: verdict` ended the run on a
    settled FAIL (its lives then stop without the pause). Deleting a failed life's records, or
    the whole `lives` section, no longer verifies. Held from perf derivation 10 (`ALONE`)."""
    spec, math = profile.lives, profile.quality.math
    if report.perf.derivation < ALONE:
        return  # made before the plan was held (older runs predate life probes or kept none)
    if spec.probes == 0 or math is None or PROBED_FORM not in math.prompts:
        return  # nothing to probe with: no life asks any (validate refuses a written one)
    if not report.quality.runs:
        return  # no quality stage (a speed preview): no items to probe with
    records = report.lives.records if report.lives is not None else []
    kinds: list[ProbeKind] = ["start"]
    if spec.idle_s > 0 and not (profile.quality.stop == "verdict" and report.verdict == "FAIL"):
        kinds.append("idle")
    for side in dict.fromkeys(s.side for s in report.starts if s.purpose == "life"):
        started = sum(1 for s in report.starts if s.purpose == "life" and s.side == side)
        for kind in kinds:
            held = {p.life for p in records if p.side == side and p.kind == kind}
            if len(held) != started:
                raise VerificationFailed(
                    f"lives: {side} has {kind} probe records for {len(held)} of its {started} "
                    f"lives; the profile asks {spec.probes} probe(s) of every life "
                    f"{'at its start' if kind == 'start' else 'after its idle pause'}"
                )
    _served_lives(report, records, spec.probes)


def _served_lives(report: Report, records: list[LifeProbes], probes: int) -> None:
    """Each side holds start probes of a life in every round its own records show it served
    (round 0 where it ran its quality stage; each perf round its perf runs hold): the starts
    are signed records too, and a failed life deleted with its start named none (issue 54).
    Called only where the profile probes every life (`planned_lives`), so a report with
    neither life probes nor life starts, every life of both sides deleted, is refused too."""
    for role in ("reference", "candidate"):
        served = {r.round for r in report.perf.runs if r.role == role}
        served |= {0} if any(r.role == role for r in report.quality.runs) else set()
        held = {p.round for p in records if p.role == role and p.kind == "start"}
        if missing := sorted(served - held):
            raise VerificationFailed(
                f"lives: the {role} has start probe records of no life in round(s) "
                f"{', '.join(str(r + 1) for r in missing)}, where its quality or perf records "
                f"show it served; the profile asks {probes} probe(s) of every life at its start"
            )


def check_lives(report: Report, profile: Profile, judged: Judgement | None = None) -> str | None:
    """The life probe verdicts and excluded rounds are the judge's (None: no lives)."""
    planned_lives(report, profile)
    lives = report.lives
    if lives is None:
        return None
    for p in lives.records:
        found = is_endpoint(profile, p.role)
        if p.endpoint != found:
            raise VerificationFailed(
                f"lives: {p.side} life {p.life + 1} {p.kind}: endpoint {p.endpoint} stored, "
                f"{found} from the profile (its {p.role} engine is "
                f"{profile.engine_of(p.role).kind!r})"
            )
        for r in p.requests:
            if r.probe_id is None or r.probe_truth is None:
                raise VerificationFailed(
                    f"lives: {p.side} life {p.life + 1} {p.kind}: a probe without its item "
                    "or answer"
                )
            if r.error is None and r.text is not None and extract_answer(r.text) != r.probe_answer:
                raise VerificationFailed(
                    f"lives: {p.side} life {p.life + 1} {p.kind} probe {r.probe_id}: "
                    f"probe_answer {r.probe_answer!r} stored, {extract_answer(r.text)!r} "
                    "re-derived from its text"
                )
    if report.perf.derivation >= REFERENCE_LIVES:
        _held_to_the_items(report, profile, lives.records)
    again = (judged or judged_of(report, profile, default_recompute())).lives
    got = again.verdicts if again is not None else []
    if not same_value(dump(lives.verdicts), dump(got)):
        raise VerificationFailed("lives verdicts: " + _difference(lives.verdicts, got))
    rounds = again.excluded_rounds if again is not None else []
    if lives.excluded_rounds != rounds:
        raise VerificationFailed(
            f"lives.excluded_rounds: {lives.excluded_rounds} stored, {rounds} re-derived"
        )
    asked = sum(len(p.requests) for p in lives.records)
    return (
        f"{len(got)} life verdicts re-derived from {asked} probes of "
        f"{len({(p.side, p.life) for p in lives.records})} lives"
    )


def _held_to_the_items(report: Report, profile: Profile, records: list[LifeProbes]) -> None:
    """Each probe set holds `lives.probes` distinct items (where the reference's quality run
    holds that many to draw from), each with the answer its item expects there."""
    truths = {
        i.id: i.expected
        for r in report.quality.runs
        if r.role == "reference" and r.suite == PROBED
        for i in r.items
    }
    want = profile.lives.probes
    for p in records:
        where = f"lives: {p.side} life {p.life + 1} {p.kind}"
        ids = {r.probe_id for r in p.requests}
        if len(truths) >= want and (len(p.requests) != want or len(ids) != want):
            raise VerificationFailed(
                f"{where}: {len(p.requests)} probe(s) of {len(ids)} item(s) stored, {want} "
                f"distinct re-derived from the profile (lives.probes)"
            )
        for r in p.requests:
            truth = truths.get(r.probe_id or "")
            if truth is not None and r.probe_truth != truth:
                raise VerificationFailed(
                    f"{where} probe {r.probe_id}: probe_truth {r.probe_truth!r} stored, "
                    f"{truth!r} the item's expected answer in the reference's quality records"
                )


def _difference(stored: list[Verdict], got: list[Verdict]) -> str:
    """The first verdict whose stored form differs from the re-derived one, both named."""
    by_gate = {v.gate: v for v in got}
    for v in stored:
        r = by_gate.get(v.gate)
        if r is None:
            return f"{v.gate} stored, no such verdict re-derived from the records"
        if not same_value(dump(v), dump(r)):
            for key, value in dump(v).items():
                if not same_value(value, dump(r)[key]):
                    return f"{v.gate}.{key}: {value!r} stored, {dump(r)[key]!r} re-derived"
    missing = [v.gate for v in got if v.gate not in {s.gate for s in stored}]
    return f"{missing[0] if missing else '?'} re-derived from the records but not stored"
