"""Synthetic records of the sampled test (quality.sampled): one side's suite run from the
answers it gave, graded as the runner grades them (qgate/quality/sampled_data.py).

Shared by the gate's tests (tests/unit/gates/test_sampled.py) and verify's
(tests/unit/report/test_verify_sampled.py), so that both judge the same records.
"""

from __future__ import annotations

from qgate.core.records import Role
from qgate.profile import Profile
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.sampled_data import grade_sampled, output_of, sampled_data_sha256, sampled_items

__all__ = ["sampled_run"]


def sampled_run(profile: Profile, role: Role, texts: list[list[str]]) -> SuiteRun:
    """`role`'s sampled suite run: per planned question (in order), its `samples` answers."""
    spec = profile.quality.sampled
    assert spec is not None
    items = []
    for item, answers in zip(sampled_items(spec), texts, strict=True):
        output = output_of(answers)
        grade = grade_sampled(output, str(item.answer), spec.samples)
        items.append(
            ItemRecord(
                id=item.id,
                prompt_sha256="0" * 64,
                output=output,
                answer=grade.answer,
                expected=str(item.answer),
                correct=grade.correct,
                score=grade.score,
            )
        )
    params: dict[str, str | int | float | bool | None] = {
        "temperature": spec.temperature,
        "samples": spec.samples,
        "max_tokens": spec.max_tokens,
    }
    return SuiteRun(
        suite="sampled",
        role=role,
        data_sha256=sampled_data_sha256(spec),
        params=params,
        items=items,
    )
