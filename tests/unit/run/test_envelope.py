"""`qgate plan`'s envelope lines: per stage, what is graded and what it costs (issue 44 item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qgate.profile import EnvelopeSpec, LivesSpec
from qgate.profile.load import load_profile
from qgate.run.envelope import skipped_perf_line
from qgate.run.plan import describe, make_plan

SHIPPED = Path(__file__).resolve().parents[3] / "precision_profiles"


def _lines(name: str, **quality: object) -> list[str]:
    profile = load_profile(SHIPPED / f"{name}.yaml", check_files=False)
    if quality:
        spec = profile.quality.model_validate({**profile.quality.model_dump(), **quality})
        profile = profile.model_copy(update={"quality": spec})
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="cores 0-1")
    return describe(plan)


def test_the_aa_plan_names_its_noise_floor_its_probes_and_its_context() -> None:
    lines = _lines("smollm2-cpu-aa")
    at = lines.index("  envelope (graded points, per stage):")
    envelope = lines[at + 1 :]
    floor = next(e for e in envelope if "noise floor:" in e)
    assert "asks 120 items again (math.short, math.long, recall.512) at concurrency 8" in floor
    assert "re-scores 16 divergence sequences" in floor and "+100% of 136" in floor
    assert "derives max_flips of math.short, math.long, recall.512, perf probes" in floor
    assert "INSIDE" not in floor
    probes = next(e for e in envelope if "perf probes:" in e)
    assert "2 level(s) (fixed-256x32@c1, fixed-256x32@c4)" in probes
    assert "28 probe requests per side (+350% of 8 measured)" in probes
    assert any("math.long ~1,024-token preamble; recall 512" in e for e in envelope)


def test_a_flip_limit_no_floor_can_reach_is_inside_it_at_plan_time() -> None:
    math = {"prompts": ["short"], "limit": 40, "max_flips": 0}
    floor = next(e for e in _lines("smollm2-cpu-aa", math=math, recall=None) if "noise floor:" in e)
    assert "INSIDE NOISE FLOOR whatever it measures: math.short max_flips 0" in floor
    assert "(even 0 of 40 allows 3)" in floor


def test_without_a_floor_the_plan_says_flips_meet_limits_alone() -> None:
    lines = _lines("smollm2-cpu-int8")
    assert any("noise floor: not measured (quality.noise_floor)" in e for e in lines)


def _pooled(lines: list[str]) -> str:
    return next(e for e in lines if "pooled envelope gate:" in e)


def test_the_pooled_gate_line_counts_the_answers_against_what_the_margin_needs() -> None:
    demo = _pooled(_lines("smollm2-cpu-int8"))
    assert "at least 44 candidate probe answers (36 perf, 8 lives)" in demo
    assert "19 clean answers show at most 15% broken (95%)" in demo
    assert "up to 2 broken still show it" in demo
    aa = _pooled(_lines("smollm2-cpu-aa"))  # 2 levels x 14 perf + 8 lives against the default 10%
    assert "at least 36 candidate probe answers (28 perf, 8 lives)" in aa
    assert "29 clean answers show at most 10% broken (95%)" in aa
    few = _pooled(_lines("smollm2-cpu-aa", math={"prompts": ["short"], "limit": 4}))
    assert "CANNOT SHOW its margin: 16 answers planned, fewer than the 29" in few


SINGLE = sorted(p.stem for p in SHIPPED.glob("*.yaml") if "\ncandidates:" not in p.read_text())


@pytest.mark.parametrize("name", SINGLE)
def test_no_shipped_profile_plans_a_pooled_gate_that_cannot_show_its_margin(name: str) -> None:
    """Issue 53: a gate that can never PASS is no gate. Every shipped profile's pooled envelope
    gate either pools no probe (none planned, or no quality stage: a preview) or plans the
    clean answers its margin needs, in one perf block (this plan's placement: a side in
    sequence, the fewest blocks a run of it can get)."""
    line = next((e for e in _lines(name) if "pooled envelope gate:" in e), "")
    assert "CANNOT SHOW" not in line, (name, line)


def test_without_the_short_form_no_probe_is_planned() -> None:
    """Probes are math items in the short form: a math suite of the long form alone gives
    none (the plan counted 8 perf and 8 life probes that no run could ask)."""
    line = _pooled(_lines("smollm2-cpu-int8-detect"))
    assert "none: the candidate asks no probe" in line


def test_a_profile_that_asks_no_probe_is_told_nothing_grades_its_serving() -> None:
    line = _pooled(_lines("smollm2-cpu-agent"))
    assert "none: the candidate asks no probe" in line


def test_probes_beyond_the_math_set_are_not_counted_as_planned() -> None:
    """A probe set holds at most the short form's items: 3 items with 6 asked a level plan 3."""
    math = {"prompts": ["short"], "limit": 3}
    lines = _lines("smollm2-cpu-int8", math=math)
    probes = next(e for e in lines if "perf probes:" in e)
    assert "perf probes: 3 graded items (of 6 asked: the math set holds 3)" in probes, probes
    pooled = _pooled(lines)
    assert "at least 24 candidate probe answers (18 perf, 6 lives)" in pooled, pooled  # not 44


def _perf_lines(shaped: str) -> list[str]:
    """The A/A profile without math.long and recall, its scenario's prompts at 1,000 tokens."""
    profile = load_profile(SHIPPED / "smollm2-cpu-aa.yaml", check_files=False)
    math = {**profile.quality.math.model_dump(), "prompts": ["short"]}  # type: ignore[union-attr]
    quality = profile.quality.model_validate(
        {**profile.quality.model_dump(), "math": math, "recall": None}
    )
    perf = profile.perf.model_dump()  # type: ignore[union-attr]
    perf["scenarios"][0]["input_tokens"] = 1000
    perf["probes"]["shaped"] = shaped
    profile = profile.model_copy(
        update={"quality": quality, "perf": profile.perf.model_validate(perf)}  # type: ignore[union-attr]
    )
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="cores 0-1")
    return describe(plan)


def test_the_plan_names_the_scenarios_whose_probes_ask_at_their_length() -> None:
    context = next(e for e in _perf_lines("auto") if "context lengths graded:" in e)
    assert "perf probes at their scenario's prompt length (perf.probes.shaped): " in context
    assert "fixed-256x32 ~1,000" in context
    never = next(e for e in _perf_lines("never") if "context lengths graded:" in e)
    assert "NOT GRADED: perf serves prompts past the suites' longest (0 tokens)" in never
    assert "fixed-256x32 1,000 (perf.probes.shaped: never)" in never


def test_skip_perf_says_the_lives_alone_cannot_show_the_envelope_margin() -> None:
    """`qgate run --skip-perf` pools only the first life's probe answers: the run says at its
    start that the envelope gate will end INCONCLUSIVE (not PASS), and with how many."""
    profile = load_profile(SHIPPED / "smollm2-cpu-int8.yaml", check_files=False)
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="cores 0-1")
    line = skipped_perf_line(profile, plan.suites)
    assert line is not None
    assert "pools only the first life's 8 probe answers, fewer than the 19" in line
    assert "it will end INCONCLUSIVE, and so will the run" in line
    many = profile.model_copy(update={"envelope": EnvelopeSpec(max_broken=0.4)})  # 6 show it
    assert skipped_perf_line(many, plan.suites) is None
    off = profile.model_copy(update={"lives": LivesSpec(probes=0)})  # no answer: no gate at all
    assert skipped_perf_line(off, plan.suites) is None
