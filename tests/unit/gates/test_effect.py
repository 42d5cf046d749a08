"""A candidate whose change had no measurable effect is flagged, and fails when asked."""

from __future__ import annotations

from qgate.gates.effect import GATE, effect_verdicts, no_effect_message
from qgate.gates.quality import evaluate_quality
from qgate.profile import QualitySpec
from qgate.quality.records import DivergenceRun, DivergenceSequence, ItemRecord, SuiteRun


def _run(role: str, outputs: list[str]) -> SuiteRun:
    items = [
        ItemRecord(
            id=f"m{i}", prompt_sha256="0" * 64, output=o, answer=o, expected="4", correct=o == "4"
        )
        for i, o in enumerate(outputs)
    ]
    return SuiteRun(suite="math.short", role=role, data_sha256="d", items=items)  # type: ignore[arg-type]


def _div(kld: float) -> DivergenceRun:
    seq = DivergenceSequence(
        id="p",
        prompt_sha256="0" * 64,
        token_ids=[1, 2],
        kld=[0.0, kld],
        top1_agree=[True, True],
        delta_p=[0.0, 0.0],
    )
    return DivergenceRun(data_sha256="c", top_k=20, tokens=2, sequences=[seq])


def test_identical_answers_and_logprobs_are_flagged() -> None:
    runs = [_run("reference", ["4", "5"]), _run("candidate", ["4", "5"])]
    message = no_effect_message(runs, _div(0.0))
    assert message is not None
    assert "no measurable effect" in message and "2 answers, 2 scored positions" in message


def test_one_changed_answer_or_logprob_clears_it() -> None:
    same = [_run("reference", ["4", "5"]), _run("candidate", ["4", "5"])]
    assert (
        no_effect_message([_run("reference", ["4", "5"]), _run("candidate", ["4", "6"])], None)
        is None
    )
    assert no_effect_message(same, _div(1e-9)) is None


def test_nothing_compared_is_not_flagged() -> None:
    assert no_effect_message([_run("reference", ["4"])], None) is None


def test_warn_by_default_fail_when_asked() -> None:
    runs = [_run("reference", ["4"]), _run("candidate", ["4"])]
    assert effect_verdicts(QualitySpec(math={}), runs, None) == []  # type: ignore[arg-type]
    spec = QualitySpec(math={}, on_no_effect="fail")  # type: ignore[arg-type]
    (verdict,) = effect_verdicts(spec, runs, None)
    assert verdict.gate == GATE and not verdict.passed
    assert GATE in [v.gate for v in evaluate_quality(spec, runs, None)]
