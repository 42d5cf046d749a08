"""Re-derive the degeneration probe in `qgate verify` (the suite's hooks in
qgate/profile/builtin_suites.py): each answer's grade from its stored text and finish reason,
and the items held to the prompts the profile's setting generates."""

from __future__ import annotations

from qgate.errors import VerificationFailed
from qgate.profile import Profile
from qgate.quality.degeneration_data import EXPECTED, grade_long, long_items
from qgate.quality.records import SuiteRun
from qgate.report.verify.rederive import Rederived, check_item

__all__ = ["check_degeneration_items", "rederive_degeneration"]


def rederive_degeneration(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """Each long answer: clean or not (and why), by the grading the run used."""
    for item in run.items:
        grade = grade_long(item.output, item.finish_reason)
        check_item(run, item, grade.answer, grade.clean)
        if grade.failure != item.failure:
            raise VerificationFailed(
                f"{run.suite} {run.role} item {item.id}: stored failure {item.failure!r} but "
                f"its answer gives {grade.failure!r}"
            )
    out.items += len(run.items)


def check_degeneration_items(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """The items are the profile's long prompts, in order, each expecting a clean answer."""
    spec = profile.quality.degeneration
    if spec is None:
        return
    want = [i.id for i in long_items(spec.items)]
    ids = [i.id for i in run.items]
    if ids != want or any(i.expected != EXPECTED for i in run.items):
        raise VerificationFailed(
            f"{run.suite} {run.role}: items {ids[:3]}... stored, "
            f"the profile generates {want[:3]}..."
        )
