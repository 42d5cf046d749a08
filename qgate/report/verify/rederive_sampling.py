"""Re-derive the sampling canaries in `qgate verify` (the `sampling` suite's hooks in
qgate/profile/builtin_suites.py): each canary's grade from the answers its record stored, and
the canaries held to the profile's parameters, each once."""

from __future__ import annotations

from qgate.errors import VerificationFailed
from qgate.profile import Profile
from qgate.quality.records import SuiteRun
from qgate.quality.sampling_data import EXPECTED, grade_canary
from qgate.report.verify.rederive import Rederived, check_item

__all__ = ["check_sampling_items", "rederive_sampling"]


def rederive_sampling(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """Each canary: honoured or not, from the answers it stored, by the grading the run used."""
    for item in run.items:
        grade = grade_canary(item.id, item.output)
        check_item(run, item, grade.answer, grade.honoured)
    out.items += len(run.items)


def check_sampling_items(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """The canaries are the profile's parameters, in its order, each expecting 'honoured'."""
    spec = profile.quality.sampling
    if spec is None:
        return
    ids = [i.id for i in run.items]
    if ids != list(spec.params) or any(i.expected != EXPECTED for i in run.items):
        raise VerificationFailed(
            f"{run.suite} {run.role}: canaries {ids} stored, the profile asks {list(spec.params)}"
        )
