"""The reference's own noise floor: its bound, the flip allowances it derives, what it marks."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from scipy.stats import beta

from qgate.core.verdict import Verdict
from qgate.gates.probes import probe_allowance
from qgate.gates.quality import evaluate_quality
from qgate.profile import PerfProbes, QualitySpec
from qgate.quality import floor_run
from qgate.quality.noise_floor import FloorRecords, binomial_upper, floor_summary, mark_floor
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.runner import SuiteContext


def _run(role: str, right: list[bool], suite: str = "math.short") -> SuiteRun:
    items = [
        ItemRecord(
            id=f"q{i}",
            prompt_sha256="",
            output=f"The answer is {i if ok else -1}",
            answer=str(i if ok else -1),
            expected=str(i),
            correct=ok,
        )
        for i, ok in enumerate(right)
    ]
    return SuiteRun(suite=suite, role=role, data_sha256="", items=items)  # type: ignore[arg-type]


def _floor(first: list[bool], second: list[bool]) -> tuple[FloorRecords, SuiteRun]:
    records = FloorRecords(
        concurrency=32, second_concurrency=8, confidence=0.95, runs=[_run("reference", second)]
    )
    return records, _run("reference", first)


@pytest.mark.parametrize(("k", "n"), [(0, 40), (1, 40), (3, 120), (10, 50), (0, 1)])
def test_the_bound_is_clopper_pearsons(k: int, n: int) -> None:
    assert binomial_upper(k, n, 0.95) == pytest.approx(float(beta.ppf(0.95, k + 1, n - k)), 1e-6)
    assert binomial_upper(n, n, 0.95) == 1.0


def test_no_disagreement_still_bounds_the_rate_above_zero() -> None:
    """0 of 40 is not a zero rate: upper 1 - 0.05^(1/40) = 7.2%, so 40 items allow 3 flips."""
    records, first = _floor([True] * 20 + [False] * 20, [True] * 20 + [False] * 20)
    floor = floor_summary(records, [first])
    assert floor is not None and floor.changed == 0 and floor.n == 40
    assert floor.upper == pytest.approx(1 - 0.05 ** (1 / 40), 1e-6)
    assert floor.allowance(40) == 3 and floor.allowance(4) == 1
    assert "disagreed with itself on 0 of 40" in floor.text()


def test_an_unset_max_flips_is_derived_from_the_floor_and_a_set_one_inside_it_marked() -> None:
    ref = _run("reference", [True] * 30 + [False] * 10)
    cand_right = [True] * 30 + [False] * 10
    for i in (0, 1, 2):  # lost three, as a noisy A/A may
        cand_right[i] = False
    cand = _run("candidate", cand_right)
    second = [True] * 30 + [False] * 10
    second[5] = False  # the reference itself changed its mind once
    records, _ = _floor([], second)
    floor = floor_summary(records, [ref])
    assert floor is not None and floor.changed == 1
    allowed = math.ceil(binomial_upper(1, 40, 0.95) * 40)
    assert allowed == 5
    spec = QualitySpec.model_validate(
        {"concurrency": 32, "math": {"prompts": ["short"], "significance": False}}
    )
    before = evaluate_quality(spec, [ref, cand], None)
    assert [v.gate for v in before] == []  # no limit set: nothing gated
    (flips,) = evaluate_quality(spec, [ref, cand], None, floor)
    assert flips.gate == "math.short.max_flips" and flips.limit == 5 and flips.passed
    assert "limit from the noise floor" in flips.reason and "1 of 40" in flips.reason
    strict = QualitySpec.model_validate(
        {"concurrency": 32, "math": {"prompts": ["short"], "significance": False, "max_flips": 2}}
    )
    (tight,) = evaluate_quality(strict, [ref, cand], None, floor)
    assert not tight.passed and "INSIDE NOISE FLOOR" in tight.reason
    assert "INSIDE" not in evaluate_quality(strict, [ref, cand], None)[0].reason


def test_a_divergence_limit_its_own_reference_breaks_is_marked() -> None:
    from qgate.quality.divergence import DivergenceSummary

    records, first = _floor([True], [True])
    floor = floor_summary(records, [first])
    assert floor is not None
    noisy = DivergenceSummary(
        sequences=2,
        positions=8,
        mean_kld=0.02,
        median_kld=0.01,
        p90_kld=0.03,
        p99_kld=0.05,
        p999_kld=0.05,
        max_kld=0.05,
        top1_agreement=0.9,
        mean_abs_delta_p=0.01,
        p99_abs_delta_p=0.02,
    )
    floor = floor.__class__(**{**floor.__dict__, "divergence": noisy})
    gates = [
        Verdict(
            gate="divergence.max_mean_kld",
            suite="divergence",
            observed=0.0,
            limit=0.01,
            passed=True,
            reason="r",
            n=8,
        ),
        Verdict(
            gate="divergence.min_top1_agreement",
            suite="divergence",
            observed=1.0,
            limit=0.85,
            passed=True,
            reason="r",
            n=8,
        ),
    ]
    kl, top1 = mark_floor(gates, {}, floor)
    assert "INSIDE NOISE FLOOR" in kl.reason and "mean KL 0.02" in kl.reason
    assert top1.reason == "r"  # 90% agreement with itself is above the 85% required


def test_the_probe_allowance_is_the_profiles_else_the_floors_else_one() -> None:
    records, first = _floor([True] * 10, [True] * 10)
    floor = floor_summary(records, [first])
    assert probe_allowance(PerfProbes(max_flips=0), floor, 4) == 0
    assert probe_allowance(PerfProbes(), None, 4) == 1
    assert floor is not None and floor.allowance(4) == 2  # 0 of 10: upper 25.9%
    assert probe_allowance(PerfProbes(), floor, 4) == 2


def test_the_second_ask_needs_another_batch() -> None:
    with pytest.raises(ValueError, match="another batch"):
        QualitySpec.model_validate({"concurrency": 4, "noise_floor": {"concurrency": 4}})
    spec = QualitySpec.model_validate({"concurrency": 32, "noise_floor": {}, "math": {}})
    assert spec.noise_floor is not None and spec.noise_floor.second_concurrency(32) == 8


def test_the_reference_asks_its_math_and_recall_again_at_the_second_concurrency(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[str, int]] = []

    class Entry:
        def __init__(self, key: str) -> None:
            self.key, self.paired = key, False

        def load(self) -> Any:
            key = self.key

            class Runner:
                async def run(self, setting: object, ctx: SuiteContext) -> list[SuiteRun]:
                    seen.append((key, ctx.concurrency))
                    return [_run(ctx.role, [True], f"{key}.x")]

            return Runner()

    entries = [(Entry("math"), None), (Entry("recall"), None), (Entry("tool_calls"), None)]
    monkeypatch.setattr(floor_run, "configured", lambda spec: entries)
    spec = QualitySpec.model_validate(
        {"concurrency": 32, "math": {}, "noise_floor": {"divergence": False}}
    )
    ctx = SuiteContext(
        role="reference",
        base_url="http://h/v1",
        model="m",
        headers={},
        concurrency=32,
        seed=0,
        max_model_len=None,
        timeout_s=1.0,
    )
    records = asyncio.run(floor_run.ask_again(spec, ctx, None))
    assert seen == [("math", 8), ("recall", 8)]  # not the suites it does not re-ask
    assert records.second_concurrency == 8 and records.concurrency == 32
    assert [r.suite for r in records.runs] == ["math.x", "recall.x"]
