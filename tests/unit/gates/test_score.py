"""A fractional lm-eval metric (LongBench's `score`) is gated on paired score differences."""

from __future__ import annotations

import itertools

import pytest

from qgate.errors import VerificationFailed
from qgate.gates.score import sign_flip_p
from qgate.gates.suite import evaluate_suite
from qgate.profile import LmEvalTask
from qgate.quality.lmeval_suite import samples_to_records
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.report.verify.rederive import Rederived, rederive_correctness


def _run(role: str, scores: list[float]) -> SuiteRun:
    items = [
        ItemRecord(
            id=f"doc-{k:05d}",
            prompt_sha256="0" * 64,
            output="Paragraph 3",
            answer="Paragraph 3",
            expected="Paragraph 3",
            correct=s == 1.0,
            score=s,
        )
        for k, s in enumerate(scores)
    ]
    return SuiteRun(suite="lm_eval.longbench", role=role, data_sha256="0" * 64, items=items)  # type: ignore[arg-type]


def _policy(**kw: object) -> LmEvalTask:
    """The point rule unless said: these tests read the fractional arithmetic on 10-20 items."""
    kw = {"rule": "point", **kw}
    return LmEvalTask(task="longbench_passage_retrieval_en", metric="score", **kw)  # type: ignore[arg-type]


def test_half_scores_count_as_half_not_as_wrong() -> None:
    ref = _run("reference", [1.0] * 20)
    cand = _run("candidate", [0.5] * 6 + [1.0] * 14)  # named two paragraphs, one right
    verdicts = {
        v.gate.rsplit(".", 1)[1]: v
        for v in evaluate_suite(
            "lm_eval.lb", _policy(max_drop=0.2, min_accuracy=0.8, max_flips=6), ref, cand
        )
    }
    drop = verdicts["max_drop"]
    # LongBench's own score drops 15 points; exact matches at 1.0 would say 30 (a FAIL)
    assert drop.observed == pytest.approx(0.15) and drop.passed
    assert drop.metric == "mean_score_drop" and "fractional" in drop.reason
    assert verdicts["min_accuracy"].observed == pytest.approx(0.85)
    assert verdicts["max_flips"].observed == 6 and verdicts["max_flips"].passed
    sig = verdicts["significance"]
    assert sig.metric == "sign_flip_p" and sig.observed == pytest.approx(1 / 64)
    assert not sig.passed  # six lowered scores, none raised: p = 2^-6 < 0.05


def test_binary_scores_keep_the_exact_answer_gates() -> None:
    ref = _run("reference", [1.0] * 10)
    cand = _run("candidate", [0.0] + [1.0] * 9)
    verdicts = evaluate_suite("lm_eval.lb", _policy(max_drop=0.2), ref, cand)
    assert {v.metric for v in verdicts} == {"accuracy_drop", "mcnemar_p"}


def test_the_sign_flip_test() -> None:
    assert sign_flip_p([0.0, 0.0]) == 1.0
    diffs = [0.5, 0.25, -0.25, 1.0]
    exact = (
        sum(
            sum(s * d for s, d in zip(signs, diffs, strict=True)) >= sum(diffs) - 1e-9
            for signs in itertools.product((1, -1), repeat=4)
        )
        / 16
    )
    assert sign_flip_p(diffs) == exact
    many = [0.5] * 30 + [-0.5] * 10  # past the exact limit: seeded draws, the same every time
    p = sign_flip_p(many)
    assert p == sign_flip_p(many) and 0.0 < p < 0.01
    assert sign_flip_p([0.5] * 10 + [-0.5] * 10) > 0.4


def test_lm_eval_samples_keep_their_score() -> None:
    samples = [
        {"doc_id": 0, "filter": "none", "score": 0.5, "resps": [["a"]], "target": "P1"},
        {"doc_id": 1, "filter": "none", "score": 1.0, "resps": [["b"]], "target": "P2"},
    ]
    records = samples_to_records(samples, "score", "lb")
    assert [(r.score, r.correct) for r in records] == [(0.5, False), (1.0, True)]


def test_verify_rejects_a_correct_flag_its_score_does_not_give() -> None:
    from qgate.profile import Profile

    run = _run("candidate", [0.5, 1.0])
    run.items[0].correct = True
    prof = Profile.model_validate(
        {
            "name": "p",
            "model": {"embedded": "smollm2"},
            "candidate": {"args": {"kv_cache_dtype": "fp8"}},
            "quality": {"lm_eval": [{"task": "longbench", "metric": "score", "max_drop": 0.1}]},
        }
    )
    with pytest.raises(VerificationFailed, match=r"doc-00000.correct: True stored, False"):
        rederive_correctness([run], prof, Rederived())
