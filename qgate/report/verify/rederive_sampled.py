"""Re-derive the sampled test in `qgate verify` (the `sampled` suite's hooks in
qgate/profile/builtin_suites.py): each question's score, answer and correctness graded again
from the sample texts its record stored, and the run held to what the profile asks (its
questions and their answers, the temperature, the samples and the data digest). Its verdicts
are then made again by the one judge from these records."""

from __future__ import annotations

from qgate.errors import VerificationFailed
from qgate.profile import Profile
from qgate.quality.records import SuiteRun
from qgate.quality.sampled_data import grade_sampled, sampled_data_sha256, sampled_items
from qgate.report.verify.rederive import Rederived, check_item

__all__ = ["check_sampled_items", "rederive_sampled"]


def rederive_sampled(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """Each question: its share of correct samples from the texts it stored."""
    spec = profile.quality.sampled
    if spec is None:
        return
    for item in run.items:
        grade = grade_sampled(item.output, item.expected, spec.samples)
        check_item(run, item, grade.answer, grade.correct)
        if item.score is None or abs(item.score - grade.score) > 1e-9:
            raise VerificationFailed(
                f"{run.suite} {run.role} item {item.id}: stored score {item.score} but its "
                f"samples give {grade.score:g}"
            )
    out.items += len(run.items)


def check_sampled_items(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """The run asked what the profile asks: its data digest and parameters, and each question's
    expected answer that of the set."""
    spec = profile.quality.sampled
    if spec is None:
        return
    where = f"{run.suite} {run.role}"
    if run.data_sha256 != sampled_data_sha256(spec):
        raise VerificationFailed(f"{where}: data digest is not the one the profile's setting gives")
    asked = {k: run.params.get(k) for k in ("temperature", "samples", "max_tokens")}
    want = {"temperature": spec.temperature, "samples": spec.samples, "max_tokens": spec.max_tokens}
    if asked != want:
        raise VerificationFailed(f"{where}: asked {asked}, the profile asks {want}")
    truth = {i.id: str(i.answer) for i in sampled_items(spec)}
    wrong = [i.id for i in run.items if truth.get(i.id) != i.expected]
    if wrong:
        raise VerificationFailed(f"{where}: expected answers not the set's for {wrong[:3]}")
