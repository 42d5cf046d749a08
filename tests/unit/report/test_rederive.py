"""Re-deriving correctness (math, recall, lm-eval exact_match) and divergence from raw records."""

from __future__ import annotations

import hashlib
import math

import pytest
from helpers.report_synthetic import divergence_sequence

from qgate.errors import VerificationFailed
from qgate.profile import LmEvalTask, Profile
from qgate.quality.lmeval_suite import lm_eval_data_sha256, samples_to_records
from qgate.quality.records import DivergenceRun, ItemRecord, SuiteRun
from qgate.report.verify.rederive import (
    Rederived,
    check_questions,
    rederive_correctness,
    rederive_divergence,
)
from qgate.report.verify.rederive_lm_eval import exact_match

PROFILE = Profile.model_validate(
    {
        "name": "t",
        "model": {"embedded": "smollm2"},
        "candidate": {"args": {"kv_cache_dtype": "fp8"}},
        "quality": {
            "lm_eval": [
                {"task": "qgate_math", "metric": "exact_match,last-integer", "max_drop": 0.1},
                {"task": "qgate_recall_1k", "metric": "exact_match", "max_drop": 0.1},
                {"task": "hub_task", "metric": "acc", "max_drop": 0.1},
            ]
        },
    }
)


def _item(i: str, output: str, answer: str | None, expected: str, correct: bool) -> ItemRecord:
    return ItemRecord(
        id=i,
        prompt_sha256=hashlib.sha256(i.encode()).hexdigest(),
        output=output,
        answer=answer,
        expected=expected,
        correct=correct,
    )


def _run(suite: str, items: list[ItemRecord], data_sha256: str = "0" * 64) -> SuiteRun:
    return SuiteRun(suite=suite, role="candidate", data_sha256=data_sha256, items=items)


def test_recall_items_are_rederived() -> None:
    good = [
        _item("r0", "The code is KX-7342.", "KX-7342", "KX-7342", True),
        _item("r1", "AB-1111 or KX-7342", "AB-1111", "KX-7342", False),
        _item("r2", "I do not know", None, "KX-7342", False),
    ]
    out = Rederived()
    rederive_correctness([_run("recall.1024", good)], PROFILE, out)
    assert out.items == 3 and out.not_rederived == []
    # the model listed every code; claiming it recalled the planted one is a forgery
    forged = [_item("r1", "AB-1111 or KX-7342", "KX-7342", "KX-7342", True)]
    with pytest.raises(VerificationFailed, match=r"recall.1024 candidate item r1: stored correct"):
        rederive_correctness([_run("recall.1024", forged)], PROFILE, Rederived())


def test_math_item_with_spelled_and_marked_answers() -> None:
    items = [
        _item("m0", "#### 1,234", "1234", "1234", True),
        _item("m1", "forty-two", "42", "42", True),
        _item("m2", "3 + 4 = 8", "8", "7", False),
    ]
    out = Rederived()
    rederive_correctness([_run("math.long", items)], PROFILE, out)
    assert out.items == 3


@pytest.mark.parametrize(
    ("prediction", "reference", "options"),
    [
        ("1,234", "1234", {"regexes_to_ignore": [","], "ignore_case": True}),
        ("ABC", "abc", {"ignore_case": True}),
        ("ABC", "abc", {}),
        ("a.b!", "ab", {"ignore_punctuation": True}),
        ("a1b2", "ab", {"ignore_numbers": True}),
        ("42 ", "42", {}),
        ("The answer: 42", "42", {"regexes_to_ignore": ["(?s).*: "]}),
    ],
)
def test_exact_match_agrees_with_lm_eval(
    prediction: str, reference: str, options: dict[str, object]
) -> None:
    metrics = pytest.importorskip("lm_eval.api.metrics")
    want = metrics.exact_match_hf_evaluate(
        predictions=[prediction], references=[reference], **options
    )["exact_match"]
    assert exact_match(prediction, reference, options) == (want == 1.0)


def _lm_eval_samples(answers: list[tuple[str, str, float]]) -> list[dict[str, object]]:
    return [
        {
            "doc_id": n,
            "filter": "last-integer",
            "arguments": [[f"Question {n}"]],
            "resps": [[raw]],
            "filtered_resps": [filtered],
            "target": str(n),
            "exact_match": score,
        }
        for n, (raw, filtered, score) in enumerate(answers)
    ]


def test_lm_eval_exact_match_items_are_rederived_from_the_logged_samples() -> None:
    task = PROFILE.quality.lm_eval[0]
    samples = _lm_eval_samples([(" 0", "0", 1.0), (" 1,0", "1,0", 0.0), (" 2", "2", 1.0)])
    items = samples_to_records(samples, task.metric, task.task)
    run = _run("lm_eval.qgate_math", items, lm_eval_data_sha256(task))
    out = Rederived()
    rederive_correctness([run], PROFILE, out)
    assert out.items == 3 and out.not_rederived == []
    run.items[1].correct = True  # "1,0" minus commas is "10", not "1"
    with pytest.raises(VerificationFailed, match=r"lm_eval.qgate_math candidate item doc-00001"):
        rederive_correctness([run], PROFILE, Rederived())


def test_lm_eval_items_that_cannot_be_rederived_are_listed() -> None:
    items = [_item(f"doc-{n:05d}", "x", "x", "x", True) for n in range(4)]
    runs = [
        _run("lm_eval.hub_task", items),  # metric acc
        _run("lm_eval.qgate_recall_1k", items, "f" * 64),  # YAML/data digest differs
        _run("lm_eval.not_configured", items),
    ]
    out = Rederived()
    rederive_correctness(runs, PROFILE, out)
    assert out.items == 0
    assert out.not_rederived == [
        "lm_eval.hub_task (candidate): metric acc is not exact_match; "
        "items doc-00000, doc-00001, doc-00002, ... (4 items)",
        "lm_eval.qgate_recall_1k (candidate): qgate_recall_1k.yaml or its data differ from "
        "what the run used; items doc-00000, doc-00001, doc-00002, ... (4 items)",
        "lm_eval.not_configured (candidate): task not in the profile; "
        "doc-00000, doc-00001, doc-00002, ... (4 items)",
    ]


def test_lm_eval_task_shipped_by_lm_eval_is_listed() -> None:
    task = LmEvalTask(task="gsm8k", metric="exact_match,strict-match", max_drop=0.1)
    profile = PROFILE.model_copy(deep=True)
    profile.quality.lm_eval = [task]
    out = Rederived()
    rederive_correctness(
        [_run("lm_eval.gsm8k", [_item("doc-00000", "x", "x", "x", True)])], profile, out
    )
    assert "not a local task YAML" in out.not_rederived[0]


def _divergence() -> DivergenceRun:
    return DivergenceRun(
        data_sha256="0" * 64,
        top_k=20,
        tokens=4,
        sequences=[divergence_sequence(0), divergence_sequence(1)],
    )


def test_divergence_values_follow_from_logprobs() -> None:
    out = Rederived()
    rederive_divergence(_divergence(), out, required=True)
    assert out.positions == 8


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.kld.__setitem__(3, s.kld[3] * 0.5), "position 3: stored kld="),
        (lambda s: s.top1_agree.__setitem__(2, True), "position 2: stored kld="),
        (lambda s: s.delta_p.__setitem__(0, 0.0), "position 0: stored kld="),
        (lambda s: s.candidate_top_logprobs[1].__setitem__(0, -0.01), "position 1: stored kld="),
        (lambda s: s.candidate_top_ids[1].pop(), "position 1: logprobs unusable"),
        (lambda s: s.kld.pop(), "per-position lists differ in length"),
        (lambda s: setattr(s, "reference_top_ids", None), "per-position logprobs are missing"),
    ],
)
def test_divergence_forgeries_name_the_position(edit: object, message: str) -> None:
    run = _divergence()
    edit(run.sequences[1])  # type: ignore[operator]
    with pytest.raises(VerificationFailed, match="divergence sequence s1") as info:
        rederive_divergence(run, Rederived(), required=True)
    assert message in info.value.message


def test_old_divergence_without_logprobs_is_listed_when_not_required() -> None:
    run = _divergence()
    for seq in run.sequences:
        seq.reference_top_ids = None
    out = Rederived()
    rederive_divergence(run, out, required=False)
    assert out.positions == 0
    assert out.not_rederived == ["divergence: 2 sequences predate stored logprobs"]


def test_divergence_tolerates_last_bit_differences_only() -> None:
    # another CPU may round exp/log differently in the last bit; a forgery is far larger
    run = _divergence()
    seq = run.sequences[0]
    seq.kld[1] = math.nextafter(seq.kld[1], 1.0)
    seq.delta_p[1] = math.nextafter(seq.delta_p[1], 1.0)
    rederive_divergence(run, Rederived(), required=True)
    seq.kld[1] *= 1 + 1e-6
    with pytest.raises(VerificationFailed, match="position 1"):
        rederive_divergence(run, Rederived(), required=True)


def test_both_runtimes_must_expect_the_same_answer() -> None:
    ref = SuiteRun(
        suite="recall.512",
        role="reference",
        data_sha256="0" * 64,
        items=[_item("r0", "KX-7342", "KX-7342", "KX-7342", True)],
    )
    cand = _run("recall.512", [_item("r0", "AB-1111", "AB-1111", "AB-1111", True)])
    with pytest.raises(VerificationFailed, match="recall.512 item r0: the reference expected"):
        check_questions([ref, cand], PROFILE, Rederived())


def _math_run(role: str, answers: dict[str, str] | None = None) -> SuiteRun:
    from qgate.profile import MathSuite
    from qgate.quality.math_set import load_math_set, math_data_sha256, short_prompt

    spec = MathSuite(prompts=["short"], max_drop=0.1, limit=5)
    items = load_math_set(None, 5)[0]
    return SuiteRun(
        suite="math.short",
        role=role,  # type: ignore[arg-type]
        data_sha256=math_data_sha256(spec, "short", max_model_len=None),
        items=[
            ItemRecord(
                id=i.id,
                prompt_sha256=hashlib.sha256(short_prompt(i.question).encode()).hexdigest(),
                output=str(i.answer),
                answer=str(i.answer),
                expected=(answers or {}).get(i.id, str(i.answer)),
                correct=True,
            )
            for i in items
        ],
    )


def test_math_items_are_checked_against_the_set_the_run_used() -> None:
    profile = Profile.model_validate(
        {
            "name": "t",
            "model": {"embedded": "smollm2"},
            "candidate": {"args": {"kv_cache_dtype": "fp8"}},
            "quality": {"math": {"prompts": ["short"], "max_drop": 0.1, "limit": 5}},
        }
    )
    out = Rederived()
    check_questions([_math_run("reference"), _math_run("candidate")], profile, out)
    assert out.data_checked == 10 and out.not_rederived == []
    # a forger rewrites the expected answer of both runtimes to the wrong output
    first = _math_run("reference").items[0]
    forged = {first.id: "12345"}
    with pytest.raises(VerificationFailed, match=f"item {first.id}: expected '12345' but the"):
        runs = [_math_run("reference", forged), _math_run("candidate", forged)]
        check_questions(runs, profile, out)
    other = _math_run("candidate")
    other.data_sha256 = "f" * 64
    out = Rederived()
    check_questions([other], profile, out)
    assert "the local math set differs from the run's" in out.not_rederived[0]
