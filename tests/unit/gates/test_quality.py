from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from qgate.core.verdict import Verdict
from qgate.gates.quality import evaluate_quality, overall_passed, policy_for
from qgate.profile import DivergenceSuite, LmEvalTask, MathSuite, QualitySpec, RecallSuite
from qgate.quality.divergence import position_divergence
from qgate.quality.records import DivergenceRun, DivergenceSequence, ItemRecord, SuiteRun


def _run(
    suite: str, role: str, correct: Sequence[bool], ids: Sequence[str] | None = None
) -> SuiteRun:
    ids = list(ids) if ids is not None else [f"q{i}" for i in range(len(correct))]
    items = [
        ItemRecord(
            id=i,
            prompt_sha256="0" * 64,
            output="x",
            answer="1",
            expected="1" if ok else "2",
            correct=ok,
        )
        for i, ok in zip(ids, correct, strict=True)
    ]
    return SuiteRun(suite=suite, role=role, data_sha256="d" * 64, items=items)  # type: ignore[arg-type]


def _math_spec(**policy: object) -> QualitySpec:
    """The point rule unless the test says otherwise: these tests exercise the flip, drop and
    significance arithmetic on a handful of items (the bound rule, the default, is
    test_noninferiority.py's)."""
    policy = {"rule": "point", **policy}
    return QualitySpec(math=MathSuite(prompts=["short"], **policy))  # type: ignore[arg-type]


def _by_gate(verdicts: list[Verdict]) -> dict[str, Verdict]:
    return {v.gate: v for v in verdicts}


def test_identical_runs_pass_every_gate() -> None:
    spec = _math_spec(min_accuracy=0.5, max_drop=0.05, max_flips=0)
    answers = [True] * 300 + [False] * 100
    runs = [_run("math.short", "reference", answers), _run("math.short", "candidate", answers)]
    verdicts = evaluate_quality(spec, runs, None)
    gates = _by_gate(verdicts)
    assert set(gates) == {
        "math.short.min_accuracy",
        "math.short.max_drop",
        "math.short.max_flips",
        "math.short.significance",
    }
    assert overall_passed(verdicts)
    assert gates["math.short.max_drop"].observed == 0.0
    assert gates["math.short.significance"].observed == 1.0
    assert not gates["math.short.max_drop"].underpowered
    assert "75.0%" in gates["math.short.min_accuracy"].reason


def test_one_flip_fails_max_flips_zero() -> None:
    spec = _math_spec(max_flips=0)
    ref = [True] * 20
    cand = [True] * 19 + [False]
    gates = _by_gate(
        evaluate_quality(
            spec,
            [_run("math.short", "reference", ref), _run("math.short", "candidate", cand)],
            None,
        )
    )
    v = gates["math.short.max_flips"]
    assert not v.passed
    assert v.observed == 1.0
    assert "1 lost" in v.reason
    # one loss is not significant on its own
    assert gates["math.short.significance"].passed


def test_many_flips_fail_significance() -> None:
    spec = _math_spec()
    ref = [True] * 60 + [False] * 40
    cand = [False] * 12 + [True] * 48 + [False] * 39 + [True]
    verdicts = evaluate_quality(
        spec, [_run("math.short", "reference", ref), _run("math.short", "candidate", cand)], None
    )
    sig = _by_gate(verdicts)["math.short.significance"]
    assert not sig.passed
    assert sig.observed is not None and sig.observed < 0.05
    assert "12 lost vs 1 gained" in sig.reason
    assert not overall_passed(verdicts)


def test_improved_candidate_passes_with_gained_flips() -> None:
    spec = _math_spec(max_drop=0.02, min_accuracy=0.5)
    ref = [True] * 60 + [False] * 40
    cand = [True] * 60 + [True] * 10 + [False] * 30
    gates = _by_gate(
        evaluate_quality(
            spec,
            [_run("math.short", "reference", ref), _run("math.short", "candidate", cand)],
            None,
        )
    )
    assert all(v.passed for v in gates.values())
    assert gates["math.short.max_drop"].observed == -0.1
    assert "0 lost vs 10 gained" in gates["math.short.significance"].reason


def test_drop_over_limit_fails_with_reason() -> None:
    spec = _math_spec(max_drop=0.02)
    ref = [True] * 50 + [False] * 50
    cand = [True] * 44 + [False] * 56
    v = _by_gate(
        evaluate_quality(
            spec,
            [_run("math.short", "reference", ref), _run("math.short", "candidate", cand)],
            None,
        )
    )["math.short.max_drop"]
    assert not v.passed
    assert v.observed is not None and abs(v.observed - 0.06) < 1e-12
    assert "drop 6.0 pts > 2.0 allowed" in v.reason
    assert "candidate 44.0% [" in v.reason


def test_drop_exactly_at_limit_passes() -> None:
    spec = _math_spec(max_drop=0.1, significance=False)
    ref = [True] * 10
    cand = [True] * 9 + [False]
    v = evaluate_quality(
        spec, [_run("math.short", "reference", ref), _run("math.short", "candidate", cand)], None
    )
    assert overall_passed(v)


def test_too_small_sample_is_flagged_underpowered_but_not_failed() -> None:
    spec = _math_spec(max_drop=0.01)
    answers = [True] * 20 + [False] * 20
    gates = _by_gate(
        evaluate_quality(
            spec,
            [_run("math.short", "reference", answers), _run("math.short", "candidate", answers)],
            None,
        )
    )
    drop = gates["math.short.max_drop"]
    assert drop.passed
    assert drop.underpowered
    assert "UNDERPOWERED" in drop.reason
    assert gates["math.short.significance"].underpowered


def test_missing_and_extra_items_fail_without_crash() -> None:
    spec = _math_spec(max_drop=0.05)
    ref = _run("math.short", "reference", [True] * 5, ids=["a", "b", "c", "d", "e"])
    cand = _run("math.short", "candidate", [True] * 5, ids=["a", "b", "c", "d", "z"])
    verdicts = evaluate_quality(spec, [ref, cand], None)
    gates = _by_gate(verdicts)
    pairing = gates["math.short.pairing"]
    assert not pairing.passed
    assert "1 reference items missing from the candidate (e)" in pairing.reason
    assert "(z)" in pairing.reason
    assert not overall_passed(verdicts)


def test_missing_candidate_run_fails_each_gate() -> None:
    spec = _math_spec(max_drop=0.05, max_flips=1)
    verdicts = evaluate_quality(spec, [_run("math.short", "reference", [True])], None)
    assert {v.gate for v in verdicts} == {
        "math.short.max_drop",
        "math.short.max_flips",
        "math.short.significance",
    }
    assert all(not v.passed and "no candidate run" in v.reason for v in verdicts)


def test_suite_ids_map_to_their_policies() -> None:
    spec = QualitySpec(
        math=MathSuite(prompts=["short", "long"], max_drop=0.1),
        recall=RecallSuite(context_tokens=[1024, 4096], min_accuracy=0.9),
        lm_eval=[LmEvalTask(task="gsm8k_local", max_flips=3)],
    )
    assert policy_for(spec, "math.long") is spec.math
    assert policy_for(spec, "recall.4096") is spec.recall
    assert policy_for(spec, "recall.2048") is None
    assert policy_for(spec, "lm_eval.gsm8k_local") is spec.lm_eval[0]
    runs = []
    for suite in ("math.short", "math.long", "recall.1024", "recall.4096", "lm_eval.gsm8k_local"):
        runs += [_run(suite, "reference", [True] * 30), _run(suite, "candidate", [True] * 30)]
    gates = [v.gate for v in evaluate_quality(spec, runs, None)]
    assert "recall.4096.min_accuracy" in gates
    assert "lm_eval.gsm8k_local.max_flips" in gates
    assert "math.long.max_drop" in gates
    assert "recall.1024.max_drop" not in gates


def test_evaluate_is_deterministic() -> None:
    spec = _math_spec(max_drop=0.05, min_accuracy=0.3, max_flips=2)
    runs = [
        _run("math.short", "reference", [True, False] * 30),
        _run("math.short", "candidate", [False, True] * 30),
    ]
    assert evaluate_quality(spec, runs, None) == evaluate_quality(spec, list(runs), None)


def _div_run(kld: list[float], agree: list[bool]) -> DivergenceRun:
    seq = DivergenceSequence(
        id="p0",
        prompt_sha256="0" * 64,
        token_ids=list(range(len(kld))),
        kld=kld,
        top1_agree=agree,
        delta_p=[0.0] * len(kld),
    )
    return DivergenceRun(data_sha256="c" * 64, top_k=20, tokens=len(kld), sequences=[seq])


def test_divergence_gates() -> None:
    spec = QualitySpec(
        divergence=DivergenceSuite(
            max_mean_kld=0.01, max_p99_kld=0.5, max_max_kld=1.0, min_top1_agreement=0.9
        )
    )
    good = _div_run([0.001] * 100, [True] * 100)
    verdicts = evaluate_quality(spec, [], good)
    assert [v.gate for v in verdicts] == [
        "divergence.max_mean_kld",
        "divergence.max_p99_kld",
        "divergence.max_max_kld",
        "divergence.min_top1_agreement",
    ]
    assert overall_passed(verdicts)

    bad = _div_run([0.001] * 99 + [2.0], [True] * 80 + [False] * 20)
    gates = _by_gate(evaluate_quality(spec, [], bad))
    assert not gates["divergence.max_max_kld"].passed
    assert not gates["divergence.max_mean_kld"].passed  # mean = 0.02099
    assert not gates["divergence.min_top1_agreement"].passed
    assert "80.0% < 90.0% required" in gates["divergence.min_top1_agreement"].reason


def test_divergence_missing_records_fail() -> None:
    spec = QualitySpec(divergence=DivergenceSuite(max_mean_kld=0.01))
    verdicts = evaluate_quality(spec, [], None)
    assert len(verdicts) == 1 and not verdicts[0].passed
    assert "no divergence records" in verdicts[0].reason


def test_the_reverse_direction_is_gated_only_where_the_profile_asks() -> None:
    # reference sure of token 5; the candidate splits its mass: KL(c||r) > KL(r||c) here
    ref, cand = {5: math.log(0.9), 6: math.log(0.1)}, {5: math.log(0.5), 6: math.log(0.5)}
    seq = DivergenceSequence(
        id="p0",
        prompt_sha256="0" * 64,
        token_ids=[5],
        kld=[0.0],
        top1_agree=[True],
        delta_p=[0.0],
        reference_top_ids=[list(ref)],
        reference_top_logprobs=[list(ref.values())],
        candidate_top_ids=[list(cand)],
        candidate_top_logprobs=[list(cand.values())],
    )
    run = DivergenceRun(data_sha256="c" * 64, top_k=2, tokens=1, sequences=[seq])
    reverse = position_divergence(cand, ref, 5, 2).kld
    assert reverse > position_divergence(ref, cand, 5, 2).kld
    assert evaluate_quality(QualitySpec(divergence=DivergenceSuite()), [], run) == []
    (v,) = evaluate_quality(
        QualitySpec(divergence=DivergenceSuite(max_mean_reverse_kld=reverse / 2)), [], run
    )
    assert (v.gate, v.metric, v.comparator, v.passed) == (
        "divergence.max_mean_reverse_kld",
        "mean_reverse_kld",
        "<=",
        False,
    )
    assert v.observed == pytest.approx(reverse)
    (ok,) = evaluate_quality(
        QualitySpec(divergence=DivergenceSuite(max_mean_reverse_kld=2 * reverse)), [], run
    )
    assert ok.passed
    # a report made before both sides' logprobs were stored cannot show it: not a pass
    stripped = seq.model_copy(update={"candidate_top_ids": None})
    bare = run.model_copy(update={"sequences": [stripped]})
    (missing,) = evaluate_quality(
        QualitySpec(divergence=DivergenceSuite(max_mean_reverse_kld=1.0)), [], bare
    )
    assert not missing.passed and "no stored top-k logprobs" in missing.reason
