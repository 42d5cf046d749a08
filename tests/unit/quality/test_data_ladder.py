"""The math difficulty ladder: answers by construction, rising difficulty, stable prefixes."""

from __future__ import annotations

import json
import re

import pytest

from qgate.profile import MathSuite
from qgate.quality import data_ladder
from qgate.quality.data import evals_root
from qgate.quality.data_math import evaluate_expression
from qgate.quality.math_set import load_ladder, math_data_sha256, math_items


def test_every_committed_ladder_answer_recomputes_from_its_expression() -> None:
    lines = (evals_root() / "math" / "ladder.jsonl").read_text().splitlines()
    assert len(lines) == data_ladder.LADDER_FILE_ITEMS * len(data_ladder.LADDER)
    for line in lines:
        item = json.loads(line)
        assert item["answer"] == evaluate_expression(item["expr"])
        assert data_ladder.level_of(item["id"]) == item["level"]
        if item["family"] == "product":
            a, b = (int(x) for x in re.findall(r"\d+", item["question"]))
            assert item["answer"] == a * b


def test_a_level_is_a_prefix_of_any_larger_draw_and_questions_are_distinct() -> None:
    for level in (1, 5, 10):
        small, large = data_ladder.ladder_items(level, 7), data_ladder.ladder_items(level, 90)
        assert large[:7] == small
        assert len({i["question"] for i in large}) == 90


def test_levels_grow_in_steps_digits_and_distractors_up_to_frontier_hard() -> None:
    levels = [data_ladder.LADDER[lv] for lv in sorted(data_ladder.LADDER)]
    for easier, harder in zip(levels, levels[1:], strict=False):
        assert harder.steps > easier.steps
        assert sum(harder.digits) > sum(easier.digits)
        assert harder.distractors >= easier.distractors
    top = [lv for lv in levels if lv.level >= 8]
    assert {lv.steps for lv in top} <= set(range(8, 13)) and max(lv.steps for lv in top) == 12
    assert min(lv.digits[0] for lv in top) >= 6 and max(lv.digits[0] for lv in top) == 9


def test_word_problems_have_their_steps_and_distractor_sentences() -> None:
    for level in (4, 8, 10):
        spec = data_ladder.LADDER[level]
        words = [i for i in data_ladder.ladder_items(level, 30) if i["family"] == "word"]
        assert words
        for item in words:
            assert item["steps"] == spec.steps
            assert item["distractors"] == spec.distractors
            # the start, one sentence per operation (a box purchase is two steps), the
            # distractors and the question
            sentences = str(item["question"]).count(". ") + 1
            assert spec.steps // 2 + spec.distractors + 2 <= sentences
            assert sentences <= spec.steps + spec.distractors + 2


def test_carries_are_counted_as_in_long_multiplication() -> None:
    assert data_ladder._mul_carries(11, 11) == 0
    assert data_ladder._mul_carries(5, 9) == 1  # 45
    assert data_ladder._mul_carries(99, 9) == 2  # 9x9=81 carries 8, 9x9+8=89 carries 8
    deep = [i for i in data_ladder.ladder_items(8, 12) if i["family"] == "product"]
    assert all(int(i["carries"]) > 20 for i in deep)


def test_level_of_reads_ladder_ids_only() -> None:
    assert data_ladder.level_of("L7-0003") == 7
    assert data_ladder.level_of("L10-0001") == 10
    assert data_ladder.level_of("arith-0001") is None
    assert data_ladder.level_of("x1-L3-0001") is None


def test_a_draw_interleaves_levels_and_continues_past_the_committed_file() -> None:
    per = data_ladder.LADDER_FILE_ITEMS
    items, _ = load_ladder([3, 9], 2 * per + 10)
    assert [i.id for i in items[:4]] == ["L3-0001", "L9-0001", "L3-0002", "L9-0002"]
    generated = data_ladder.ladder_items(9, per + 5)[-5:]
    assert [i.id for i in items if i.id.startswith("L9")][-5:] == [str(g["id"]) for g in generated]
    assert [i.answer for i in items if i.id.startswith("L9")][-5:] == [
        g["answer"] for g in generated
    ]


def test_a_ladder_suite_draws_its_levels_and_its_digest_names_them() -> None:
    spec = MathSuite(levels=[2, 6], limit=20)
    items = math_items(spec)
    assert len(items) == 20 and {i.tier for i in items} == {"L2", "L6"}
    assert len(math_items(MathSuite(levels=[5]))) == 16  # default: 16 a level
    digest = math_data_sha256(spec, "short", max_model_len=None)
    assert digest != math_data_sha256(
        MathSuite(levels=[2, 7], limit=20), "short", max_model_len=None
    )
    assert digest != math_data_sha256(
        MathSuite(levels=[2, 6], limit=22), "short", max_model_len=None
    )
    assert digest != math_data_sha256(MathSuite(limit=20), "short", max_model_len=None)


def test_a_ladder_suite_refuses_a_jsonl_set_and_repeated_levels(tmp_path: object) -> None:
    with pytest.raises(ValueError, match="no ladder levels"):
        MathSuite(set="x.jsonl", levels=[1])
    with pytest.raises(ValueError, match="at most once"):
        MathSuite(levels=[3, 3])
    with pytest.raises(ValueError):
        MathSuite(levels=[11])
