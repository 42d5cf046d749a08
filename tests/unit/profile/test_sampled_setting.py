"""`quality.sampled`: its defaults, the settings that could never pass or never fail refused
(k = 1, T = 0, too few prompts, exact-answer keys), and its plan row: the requests it costs
and its stated power, never the exact test's power line."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from qgate.errors import ProfileError
from qgate.profile import Profile
from qgate.profile.load import load_profile_file
from qgate.profile.sampled import SampledSuite
from qgate.quality.plans import sampled_plan
from qgate.quality.sampled_power import POWER, power_line
from qgate.run.plan import describe, make_plan

HEAD = "name: s\nmodel: {embedded: smollm2}\ntarget: {accelerator: cpu}\ncandidate: {}\n"


def test_defaults_are_judged_by_bounds_only() -> None:
    spec = SampledSuite()
    assert (spec.prompts, spec.samples, spec.temperature) == (128, 8, 1.0)
    assert (spec.rule, spec.significance, spec.max_flips) == ("bound", False, None)
    assert spec.fraction_items and not SampledSuite.__base__.fraction_items  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("setting", "why"),
    [
        ({"samples": 1}, "greater than or equal to 2"),
        ({"temperature": 0}, "greater than 0"),
        ({"prompts": 32}, "prompts 32 can never PASS"),
        ({"max_diversity_change": 0.02}, "can never PASS"),
        ({"significance": True}, "`significance` and `max_flips`"),
        ({"max_flips": 0}, "`significance` and `max_flips`"),
        ({"rule": "point"}, "`rule` must be 'bound'"),
        ({"max_drop": None}, "must be set"),
        ({"detect": {"drop": 0.1}}, "size nothing"),
    ],
)
def test_settings_that_can_never_decide_are_refused(setting: dict[str, object], why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        SampledSuite.model_validate(setting)


def test_a_refusal_names_the_file_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(HEAD + "quality:\n  sampled: {prompts: 64, samples: 1}\n")
    with pytest.raises(ProfileError) as refused:
        load_profile_file(path, check_files=False)
    assert "p.yaml:6 quality.sampled.samples" in str(refused.value.details[0])


def test_the_plan_says_what_it_costs_and_its_stated_power() -> None:
    (row,) = sampled_plan(SampledSuite(prompts=128, samples=8))
    assert (row.suite, row.items, row.requests) == ("sampled", 128, 1024)
    assert "2048 in all" in row.detail
    assert "perf/bench_sampled.py" in row.detail and "greedy" in row.detail


def test_qgate_plan_prints_the_row_and_no_exact_test_power_for_it() -> None:
    profile = Profile.model_validate(
        {
            "name": "s",
            "model": {"embedded": "smollm2"},
            "candidate": {},
            "quality": {"sampled": {"prompts": 64, "samples": 4}},
        }
    )
    plan = make_plan([("candidate", profile)], reference_cached=None, placement="cpu")
    lines = describe(plan)
    assert any(line.startswith("  quality sampled: 64 items per side") for line in lines)
    assert not plan.power and not any("power sampled" in line for line in lines)


def test_power_is_quoted_from_the_largest_benchmarked_setting_reached() -> None:
    assert "at N=64, k=8" in power_line(SampledSuite(prompts=100, samples=10))
    assert "not stated" in power_line(SampledSuite(prompts=64, samples=2))
    assert "not stated for this setting" in power_line(SampledSuite(temperature=0.7))
    assert all(row.false_fail <= 0.05 and row.greedy >= 0.99 for row in POWER.values())
