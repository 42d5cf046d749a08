"""The sampled test's verdicts on synthetic records, through the one judge (`evaluate_quality`):
A/A passes, a greedy fall-back FAILs naming temperature, a small N is INCONCLUSIVE, a 10-point
loss of sampled accuracy FAILs its max_drop, and `qgate verify`'s hooks re-grade the records."""

from __future__ import annotations

import random
from typing import Any

import pytest
from helpers.sampled_records import sampled_run

from qgate.core.verdict import Verdict
from qgate.errors import VerificationFailed
from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.quality.math_set import MathItem
from qgate.quality.records import SuiteRun
from qgate.quality.sampled_data import sampled_items
from qgate.report.verify.rederive import Rederived
from qgate.report.verify.rederive_sampled import check_sampled_items, rederive_sampled


def _profile(**sampled: Any) -> Profile:
    return Profile.model_validate(
        {
            "name": "s",
            "model": {"embedded": "smollm2"},
            "candidate": {},
            "quality": {"sampled": sampled},
        }
    )


def _texts(rng: random.Random, item: MathItem, k: int, right: float, spread: int) -> list[str]:
    """k answers: right with probability `right`, in one of `spread` phrasings (1: greedy)."""
    out = []
    for _ in range(k):
        value = item.answer if rng.random() < right else item.answer + rng.randint(1, 3)
        out.append(f"{value}" + " " * rng.randrange(spread) + ("." if spread > 1 else ""))
    return out


def _sides(profile: Profile, seed: int, cand_right: float, cand_spread: int) -> list[SuiteRun]:
    spec = profile.quality.sampled
    assert spec is not None
    rng = random.Random(seed)
    items = sampled_items(spec)
    ref = [_texts(rng, i, spec.samples, 0.7, 4) for i in items]
    if cand_spread == 1:  # greedy: one answer repeated, the reference's most common one
        cand = [[max(set(t), key=t.count)] * spec.samples for t in ref]
    else:
        cand = [_texts(rng, i, spec.samples, cand_right, cand_spread) for i in items]
    return [sampled_run(profile, "reference", ref), sampled_run(profile, "candidate", cand)]


def _gates(profile: Profile, runs: list[SuiteRun]) -> dict[str, Verdict]:
    return {v.gate: v for v in evaluate_quality(profile.quality, runs, None)}


def test_a_a_passes_both_gates() -> None:
    profile = _profile(prompts=200, samples=8)
    gates = _gates(profile, _sides(profile, 1, 0.7, 4))
    assert set(gates) == {"sampled.max_drop", "sampled.max_diversity_change"}
    assert all(v.passed for v in gates.values()), [v.reason for v in gates.values()]
    assert "shown within the margin" in gates["sampled.max_diversity_change"].reason


def test_a_greedy_fall_back_fails_naming_temperature() -> None:
    profile = _profile(prompts=100, samples=8)
    gates = _gates(profile, _sides(profile, 2, 0.7, 1))
    spread = gates["sampled.max_diversity_change"]
    assert not spread.passed and not spread.inconclusive
    assert "narrower" in spread.reason and "temperature ignored" in spread.reason


def test_a_small_n_is_inconclusive_not_passed() -> None:
    profile = _profile(prompts=20, samples=4, max_drop=0.2, max_diversity_change=0.2)
    gates = _gates(profile, _sides(profile, 0, 0.7, 4))
    assert any(v.inconclusive for v in gates.values())
    assert not any(v.passed for v in gates.values() if v.inconclusive)
    assert all(v.passed or v.inconclusive for v in gates.values())


def test_a_ten_point_loss_of_sampled_accuracy_fails_max_drop() -> None:
    profile = _profile(prompts=400, samples=8)
    gates = _gates(profile, _sides(profile, 4, 0.5, 4))
    drop = gates["sampled.max_drop"]
    assert not drop.passed and not drop.inconclusive and "harm shown" in drop.reason


def test_a_reference_that_never_varies_cannot_pass_the_spread_gate() -> None:
    profile = _profile(prompts=100, samples=8)
    spec = profile.quality.sampled
    assert spec is not None
    same = [[str(i.answer)] * spec.samples for i in sampled_items(spec)]
    runs = [sampled_run(profile, "reference", same), sampled_run(profile, "candidate", same)]
    spread = _gates(profile, runs)["sampled.max_diversity_change"]
    assert spread.inconclusive and "vary too little" in spread.reason


def test_a_missing_side_fails_both_gates() -> None:
    profile = _profile(prompts=64, samples=4)
    gates = _gates(profile, _sides(profile, 5, 0.7, 4)[:1])
    assert not any(v.passed or v.inconclusive for v in gates.values())


def test_verify_regrades_the_records_and_holds_them_to_the_profile() -> None:
    profile = _profile(prompts=64, samples=4)
    ref, _ = _sides(profile, 6, 0.7, 4)
    out = Rederived()
    rederive_sampled(ref, profile, out)
    check_sampled_items(ref, profile, out)
    assert out.items == 64
    forged = ref.model_copy(
        update={"items": [ref.items[0].model_copy(update={"score": 1.0})] + ref.items[1:]}
    )
    if ref.items[0].score != 1.0:
        with pytest.raises(VerificationFailed, match="stored score"):
            rederive_sampled(forged, profile, Rederived())
    hotter = ref.model_copy(update={"params": {**ref.params, "temperature": 2.0}})
    with pytest.raises(VerificationFailed, match="the profile asks"):
        check_sampled_items(hotter, profile, Rederived())
