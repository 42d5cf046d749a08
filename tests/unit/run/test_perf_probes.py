"""The perf probes of a side: items the reference answered right, the same on both sides."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from qgate.profile import MathSuite, PerfSpec
from qgate.quality.math_set import math_items
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.stage import QualityOutput
from qgate.run.perf import probe_set

SPEC = MathSuite.model_validate({"limit": 12, "prompts": ["short"]})
ITEMS = math_items(SPEC)


def quality(role: str, right: set[int], answer: str = "1") -> QualityOutput:
    items = [
        ItemRecord(
            id=item.id,
            prompt_sha256="x",
            output="",
            answer=answer,
            expected=str(item.answer),
            correct=i in right,
        )
        for i, item in enumerate(ITEMS)
    ]
    run = SuiteRun(suite="math.short", role=role, data_sha256="d", items=items)  # type: ignore[arg-type]
    return QualityOutput(role=role, runs=[run])  # type: ignore[arg-type]


def ctx(items: int) -> Any:
    perf = PerfSpec.model_validate(
        {
            "scenarios": [{"name": "f", "input_tokens": 8, "output_tokens": 4, "requests": 2}],
            "probes": {"items": items},
        }
    )
    return SimpleNamespace(profile=SimpleNamespace(perf=perf, quality=SimpleNamespace(math=SPEC)))


def test_both_sides_ask_the_items_the_reference_answered_right() -> None:
    ref = quality("reference", {2, 5, 7, 9, 11})
    cand = quality("candidate", {0, 1}, answer="2")
    mine, theirs = probe_set(ctx(4), cand, ref), probe_set(ctx(4), ref, ref)
    ids = [ITEMS[i].id for i in (2, 5, 7, 9)]
    assert [p.id for p in mine] == [p.id for p in theirs] == ids
    assert [p.truth for p in mine] == [str(ITEMS[i].answer) for i in (2, 5, 7, 9)]
    assert {p.expected for p in mine} == {"2"}  # the candidate's own quality answers
    assert ITEMS[2].question in mine[0].body[0]["content"]  # type: ignore[index]


def test_too_few_right_items_are_filled_in_order_and_zero_items_is_off() -> None:
    ref = quality("reference", {4})
    assert [p.id for p in probe_set(ctx(3), ref, ref)] == [ITEMS[i].id for i in (4, 0, 1)]
    assert probe_set(ctx(0), ref, ref) == []
    no_math: Any = SimpleNamespace(
        profile=SimpleNamespace(perf=ctx(3).profile.perf, quality=SimpleNamespace(math=None))
    )
    assert probe_set(no_math, ref, ref) == []
