"""An attribution re-derived: every trial's verdict from its records, the search from the trials.

Each trial is a candidate like any other: its answers and logprobs are
re-derived from the raw responses, its verdicts recomputed against the report's
reference records with the gates `run` used. Then ddmin (qgate/core/ddmin.py)
is replayed on the recorded outcomes: the trials must be the ones it asks for,
in its order, and its smallest failing set, whether it ran to its end, and the set it
would have tried next the ones the report states.
"""

from __future__ import annotations

from qgate.core.ddmin import Outcome, search_rounds
from qgate.core.verdict import Verdict
from qgate.errors import VerificationFailed
from qgate.gates.changes_applied import CONTRADICTED_FROM
from qgate.gates.judge import quality_verdicts
from qgate.gates.judgement import Derivation, Evidence
from qgate.gates.quality import harm_shown
from qgate.profile import Profile
from qgate.profile.changes import changes_of, sub_profile
from qgate.quality.noise_floor import floor_summary
from qgate.report.attribution import Trial
from qgate.report.model import Report
from qgate.report.verify.compare_values import describe, dump, same_value
from qgate.report.verify.recompute import Recompute
from qgate.report.verify.rederive import (
    Rederived,
    check_questions,
    rederive_correctness,
    rederive_divergence,
)

__all__ = ["check_attribution"]


def _fail(message: str) -> VerificationFailed:
    return VerificationFailed(f"attribution: {message}")


def _trial_verdicts(report: Report, prof: Profile, t: Trial, fns: Recompute) -> list[Verdict]:
    """A trial's verdicts, recomputed as the run judged it (its sub-profile, its records
    against the reference's): the one verdict assembly from quality derivation 4 on (a trial
    records no speculative counters), the suites' and divergence gates alone before."""
    q = report.quality
    reference = [r for r in q.runs if r.role == "reference"]
    if q.derivation < CONTRADICTED_FROM:
        if t.passes or t.effective_config is not None:
            raise _fail(f"trial {t.name} holds passes or a server report its derivation lacks")
        summary = floor_summary(q.noise_floor, reference)
        floor = (summary,) if summary is not None else ()
        return list(
            fns.evaluate_quality(prof.quality, reference + list(t.runs), t.divergence, *floor)
        )
    passes = [s.run for p in t.passes for s in p.suites if s.run]
    rederive_correctness(passes, prof, Rederived(derivation=q.derivation))
    ref_passes = [p for p in q.passes if p.role == "reference"]
    ref_cfg = [c for c in report.effective_configs if c.role == "reference"]
    cand_cfg = [t.effective_config] if t.effective_config is not None else []
    evidence = Evidence(
        runs=tuple(reference + list(t.runs)),
        divergence=t.divergence,
        passes=tuple(ref_passes + list(t.passes)),
        configs=tuple(ref_cfg + cand_cfg),
        noise_floor=q.noise_floor,
    )
    derivation = Derivation(quality=q.derivation, perf=report.perf.derivation)
    return quality_verdicts(
        sub_profile(prof, t.changes), evidence, derivation, fns.evaluate_quality
    )


def check_attribution(report: Report, prof: Profile, fns: Recompute) -> str | None:
    """The checked line, or None without an attribution; VerificationFailed on a mismatch."""
    att = report.attribution
    if att is None:
        return None
    if "complete" not in att.model_fields_set:
        raise _fail(
            "made by an older qgate, whose search tried every change alone first and did not "
            "record whether it ran to its end; verify it with that qgate"
        )
    names = [c.name for c in att.changes]
    outcomes: dict[tuple[str, ...], Outcome] = {}
    for t in att.trials:
        if unknown := sorted(set(t.changes) - set(names)):
            raise _fail(f"trial {t.name} applies {unknown[0]}, not one of the changes")
        key = tuple(n for n in names if n in t.changes)
        if key in outcomes:
            raise _fail(f"trial {t.name} repeats the changes of an earlier trial")
        if t.verdict != "ERROR":
            done = Rederived(derivation=report.quality.derivation)
            rederive_correctness(list(t.runs), prof, done)
            check_questions(list(t.runs), prof, done)
            if t.divergence is not None:
                rederive_divergence(t.divergence, done, required=True)
            fresh = _trial_verdicts(report, prof, t, fns)
            if not same_value(dump(t.verdicts), dump(fresh)):
                raise _fail(describe(f"trial {t.name}: verdicts", dump(t.verdicts), dump(fresh)))
            if t.verdict != ("FAIL" if harm_shown(fresh) else "PASS"):
                raise _fail(f"trial {t.name}: verdict {t.verdict} does not follow from its gates")
        elif t.runs or t.verdicts or t.passes:
            raise _fail(f"trial {t.name} is ERROR but holds records")
        outcomes[key] = t.verdict
    asked: list[tuple[str, ...]] = []

    def replay(key: tuple[str, ...]) -> Outcome:
        if key not in outcomes:
            raise _fail(f"the search tries {' + '.join(key)}, which no trial records")
        asked.append(key)
        return outcomes[key]

    found = search_rounds(names, lambda keys: [replay(k) for k in keys], att.max_lives, att.width)
    if len(asked) != len(att.trials) or att.lives != len(att.trials):
        raise _fail(f"{len(att.trials)} trials recorded, the search asks for {len(asked)}")
    failing = list(found.failing) if found.failing else None
    if failing != att.minimal:
        given = " + ".join(failing) if failing else "none"
        raise _fail(f"the smallest failing set does not follow from the trials (they give {given})")
    if found.complete != att.complete:
        raise _fail(
            f"complete {att.complete} stored, the replayed search gives {found.complete} "
            f"({'it ran to its end' if found.complete else 'the budget ran out first'})"
        )
    untried = [" + ".join(found.next_set)] if found.next_set else []
    if untried != att.not_tried:
        raise _fail(f"not_tried {att.not_tried} stored, the replayed search gives {untried} next")
    spec = prof.attribution
    derived = changes_of(prof, spec.groups if spec else [])
    same = (
        "the changes re-derived from the profile"
        if derived == att.changes
        else ("the changes differ from the declared profile's (a fallback ran on that machine)")
    )
    trials = f"{len(att.trials)} trial{'' if len(att.trials) == 1 else 's'}"
    return f"attribution: {trials} recomputed, the search replayed; {same}"
