"""The run plan: one life per runtime, its preflight, its counts; `qgate plan` starts nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from qgate.cli.main import main
from qgate.core.plan import Life, Plan, Work
from qgate.profile.load import load_profile
from qgate.profile.load_multi import load_multi_file
from qgate.run.plan import describe, make_plan

SHIPPED = Path(__file__).resolve().parents[3] / "precision_profiles"
PROFILES = sorted(SHIPPED.glob("*.yaml"))


def _single(name: str):  # type: ignore[no-untyped-def]
    return load_profile(SHIPPED / f"{name}.yaml", check_files=False)


def test_fresh_reference_serves_quality_and_perf_in_one_life() -> None:
    plan = make_plan(
        [("candidate", _single("smollm2-cpu-int8"))], reference_cached=False, placement="cores 0-1"
    )
    assert [life.side for life in plan.lives] == ["reference", "candidate"]
    assert plan.starts == 2
    assert plan.lives[0].serves == ["quality suites", "perf baseline"]
    assert plan.lives[1].serves == ["quality suites", "gates", "perf, if every gate passed"]
    assert plan.preflight == {"candidate": "dry"}
    suites = {s.suite: s.items for s in plan.suites}
    # sized by detect (the demo's header says why): 8 haystacks x 5 depths, 81 per form
    assert suites["recall.512"] == 40 and suites["divergence"] == 16
    assert suites["math.short"] == suites["math.long"] == 81


def test_lives_are_typed_and_their_words_derived_from_the_type() -> None:
    plan = make_plan(
        [("candidate", _single("smollm2-cpu-int8"))], reference_cached=False, placement="x"
    )
    assert [life.work for life in plan.lives] == [
        Work.QUALITY | Work.PERF_BASELINE,
        Work.QUALITY | Work.GATES | Work.PERF,
    ]
    cached = make_plan(
        [("candidate", _single("smollm2-cpu-int8"))], reference_cached=True, placement="x"
    )
    assert cached.lives[1].work == Work.PERF_BASELINE and cached.lives[1].side == "reference"
    # the words are recorded (a report's plan is unchanged); the type is not
    recorded = json.loads(plan.model_dump_json())["lives"][0]
    assert list(recorded) == ["side", "serves", "condition", "placement"]
    assert Plan.model_validate_json(plan.model_dump_json()).lives[0].serves == recorded["serves"]
    together = Life.of("reference", Work.QUALITY | Work.PERF_BASELINE, "x", blocks=2)
    assert together.serves == [
        "quality suites",
        "perf baseline in 2 interleaved block(s), if every gate passed",
    ]


def test_cached_reference_starts_once_after_the_candidates_for_perf_only() -> None:
    profile = _single("smollm2-cpu-int8")
    plan = make_plan([("candidate", profile)], reference_cached=True, placement="x")
    assert [(life.side, life.serves) for life in plan.lives] == [
        ("candidate", ["quality suites", "gates", "perf, if every gate passed"]),
        ("reference", ["perf baseline"]),
    ]
    assert plan.lives[1].condition  # only when some candidate's perf ran
    assert plan.preflight == {"candidate": "none"}  # the candidate starts next anyway
    refreshed = make_plan(
        [("candidate", profile)], reference_cached=True, placement="x", refresh=True
    )
    assert refreshed.lives[0].side == "reference" and refreshed.preflight["candidate"] == "dry"


def test_several_candidates_share_one_reference_life() -> None:
    multi = load_multi_file(SHIPPED / "smollm2-cpu-multi.yaml", check_files=False).multi
    plan = make_plan(
        [(c.name, c.profile) for c in multi.candidates], reference_cached=False, placement="x"
    )
    assert [life.side for life in plan.lives] == ["reference", *(c.name for c in multi.candidates)]
    # a command-line engine has no dry check of its own: it is started and stopped
    assert plan.preflight["api-server"] == "start"
    assert plan.preflight["fp8-weights"] == "dry"


def test_fixed_scenario_tokens_are_requests_times_lengths() -> None:
    plan = make_plan(
        [("candidate", _single("smollm2-cpu-int8"))], reference_cached=None, placement="x"
    )
    lines = describe(plan)
    fixed = next(p for p in plan.scenarios if p.scenario.startswith("fixed-256x32"))
    assert fixed.requests is not None and fixed.tokens == fixed.requests * (256 + 32)
    assert lines[0].startswith("plan: 2 server start(s) in sequence; reference results unknown")
    assert any(ln.startswith("  1. reference: quality suites, perf baseline") for ln in lines)


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_plan_prints_for_every_shipped_profile(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an AVX2-only CPU answer: GPU profiles cannot run here and still get their plan
    monkeypatch.setenv("QGATE_CPU_FLAGS", "avx2")
    result = CliRunner().invoke(
        main, ["plan", str(path), "--cache-dir", str(tmp_path), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert plan["reference_cached"] in (False, None)  # an empty cache folder
    assert plan["lives"][0]["side"] == "reference" and len(plan["lives"]) >= 2
    text = CliRunner().invoke(main, ["plan", str(path), "--cache-dir", str(tmp_path)])
    assert text.exit_code == 0 and text.output.startswith("plan: "), text.output


def test_plan_of_a_missing_profile_is_a_bad_input() -> None:
    result = CliRunner().invoke(main, ["plan", "no-such-profile.yaml"])
    assert result.exit_code == 2
    assert "no such file" in result.output


def test_side_by_side_plan_has_no_preflight_and_interleaved_blocks() -> None:
    plan = make_plan(
        [("candidate", _single("smollm2-cpu-int8"))],
        reference_cached=False,
        placement="x",
        side_by_side=("cores 0", "cores 1"),
    )
    assert plan.mode == "together" and plan.blocks == 2 and plan.starts == 2
    assert plan.preflight == {"candidate": "none"}
    assert [(life.side, life.placement) for life in plan.lives] == [
        ("reference", "cores 0"),
        ("candidate", "cores 1"),
    ]
    lines = describe(plan)
    assert lines[0].startswith("plan: 2 server start(s) side by side")
    assert any("per side and block, 2 blocks" in ln for ln in lines)


def test_plan_prints_the_drop_each_gate_detects_at_its_size() -> None:
    plan = make_plan(
        [("candidate", _single("smollm2-cpu-fp8"))], reference_cached=False, placement="x"
    )
    power = {g.suite: g for g in plan.power}
    assert set(power) == {"math.short", "math.long", "recall.1024"}  # divergence has no test
    long = power["math.long"]
    assert (long.items, long.alpha, long.target_drop, long.sized) == (64, 0.0167, 0.15, False)
    assert long.min_detectable_drop is not None and 0.2 < long.min_detectable_drop < 0.35
    assert long.items_needed is not None and long.items_needed > 64
    line = next(ln for ln in describe(plan) if ln.startswith("  power math.long:"))
    mdd = 100 * long.min_detectable_drop
    assert line.startswith(f"  power math.long: 64 items detect {mdd:.1f} pts")
    assert (
        f"max_drop 15.0 pts needs {long.items_needed} items (UNDERPOWERED: state "
        "quality.math.detect to size it)" in line
    )


def test_a_stated_detection_sizes_the_generated_set() -> None:
    plan = make_plan(
        [("candidate", _single("smollm2-cpu-int8-detect"))], reference_cached=False, placement="x"
    )
    (g,) = plan.power
    suites = {s.suite: s.items for s in plan.suites}
    assert g.sized and g.items == g.items_needed == suites["math.long"] > 144  # past the core set
    assert g.min_detectable_drop is not None and g.min_detectable_drop <= 0.10
    assert "UNDERPOWERED" not in "\n".join(describe(plan))


def test_attribution_is_a_conditional_life_after_the_candidate() -> None:
    from qgate.run.placement import plan_for

    plan = plan_for(
        [("candidate", _single("smollm2-cpu-int4-attribute"))],
        reference_cached=False,
        refresh=False,
    )
    last = plan.lives[-1]
    assert last.side == "candidate attribution"
    assert last.condition == "when candidate fails its gates; up to 6 lives"
    assert (
        "candidate attribution: 3 changes: the budget of 6 lives covers the search's worst case (6)"
    ) in plan.notes
    plain = plan_for(
        [("candidate", _single("smollm2-cpu-int4-fail"))], reference_cached=False, refresh=False
    )
    assert all("attribution" not in life.side for life in plain.lives)


def _calibration_file(tmp_path: Path, accuracy: dict[int, float], flips: dict[int, int]) -> Path:
    """Simulated records of a prior run: per level 40 items, the reference right on a share,
    the first `flips[level]` of its right items lost by the candidate."""
    items = []
    for level, acc in accuracy.items():
        right = round(40 * acc)
        for k in range(40):
            ref = k < right
            cand = ref and k >= flips.get(level, 0)
            items.append({"id": f"L{level}-{k + 1:04d}", "reference": ref, "candidate": cand})
    path = tmp_path / "calibration.json"
    doc = {"calibration_version": 2, "source": "a simulated run", "suite": "math.short"}
    doc |= {"model": "smollm2", "model_sha256": "a" * 64, "engine": "vllm", "engine_version": "1"}
    path.write_text(json.dumps({**doc, "items": items}))
    return path


def test_plan_names_the_levels_calibration_draws_from_and_sizes_at_the_observed_flips(
    tmp_path: Path,
) -> None:
    from qgate.profile import Calibration, Detect, MathSuite

    strong = {1: 0.99, 2: 0.99, 3: 0.99, 4: 0.95, 5: 0.9, 6: 0.7, 7: 0.5, 8: 0.25, 9: 0.05}
    path = _calibration_file(tmp_path, strong, {6: 4, 7: 4, 8: 2})
    profile = _single("smollm2-cpu-int8")
    profile.quality.math = MathSuite(
        prompts=["short"],
        calibration=Calibration(records=path),
        detect=Detect(drop=0.05),
        alpha=0.0167,
    )
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="x")
    text = "\n".join(describe(plan))
    assert "draws from ladder levels [6, 7, 8]; why: the reference's accuracy in 20-85%" in text
    assert "L2 reference 100% of 40: ceiling" in text and "L9 reference 5% of 40: floor" in text
    power = next(g for g in plan.power if g.suite == "math.short")
    assert power.sized and "observed on 120 calibration items of levels [6, 7, 8]" in (
        power.discordance
    )
    assert power.warning is None
    suites = {s.suite: s.items for s in plan.suites}
    assert suites["math.short"] == power.items_needed


def test_plan_warns_when_the_reference_is_at_ceiling(tmp_path: Path) -> None:
    from qgate.profile import Calibration, MathSuite

    path = _calibration_file(tmp_path, {1: 0.99, 2: 0.99, 3: 0.99}, {})
    profile = _single("smollm2-cpu-int8")
    profile.quality.math = MathSuite(
        prompts=["short"], levels=[1, 2, 3], calibration=Calibration(records=path), max_drop=0.05
    )
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="x")
    power = next(g for g in plan.power if g.suite == "math.short")
    assert power.warning is not None
    lines = describe(plan)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("  power math.short:"))
    assert lines[at + 1].startswith("    WARNING: the reference answers 100% of math.short: a drop")
    assert "none in the band: nearest" in "\n".join(lines)


def test_the_demo_plan_says_it_draws_from_the_core_set_and_why() -> None:
    plan = make_plan(
        [("candidate", _single("smollm2-cpu-int8"))], reference_cached=False, placement="x"
    )
    lines = describe(plan)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("  quality math.short:"))
    assert lines[at + 1].startswith("    draws from the core set")
    assert "no quality.math.levels or calibration" in lines[at + 1]


def _with_rounds(name: str, rounds: int):  # type: ignore[no-untyped-def]
    profile = _single(name)
    perf = profile.perf.model_copy(update={"rounds": rounds})
    return profile.model_copy(update={"perf": perf})


def test_perf_rounds_add_fresh_perf_lives_in_abba_order() -> None:
    profile = _with_rounds("smollm2-cpu-int8", 3)
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="x")
    assert [(life.side, life.round) for life in plan.lives] == [
        ("reference", 0),
        ("candidate", 0),
        ("candidate", 1),
        ("reference", 1),
        ("reference", 2),
        ("candidate", 2),
    ]
    assert plan.rounds == 3 and plan.starts == 6
    assert [life.work for life in plan.lives[2:4]] == [Work.PERF, Work.PERF_BASELINE]
    assert plan.lives[2].serves == ["perf"] and plan.lives[3].serves == ["perf baseline"]
    assert plan.lives[2].condition.startswith("perf round 2 of 3, a fresh life")
    lines = describe(plan)
    assert any("2 blocks, in each of 3 rounds" in ln for ln in lines)
    assert any("round ratios, restart to restart" in ln for ln in lines)
    # a cached reference's perf-only life came last in round 1: round 2 starts with it
    cached = make_plan([("candidate", profile)], reference_cached=True, placement="x")
    assert [life.side for life in cached.lives] == [
        "candidate",
        "reference",
        "reference",
        "candidate",
        "candidate",
        "reference",
    ]


def test_perf_rounds_side_by_side_start_both_and_swap_who_interleaves_first() -> None:
    profile = _with_rounds("smollm2-cpu-int8", 2)
    plan = make_plan(
        [("candidate", profile)],
        reference_cached=False,
        placement="x",
        side_by_side=("cores 0", "cores 1"),
    )
    assert [(life.side, life.round, life.placement) for life in plan.lives] == [
        ("reference", 0, "cores 0"),
        ("candidate", 0, "cores 1"),
        ("candidate", 1, "cores 1"),
        ("reference", 1, "cores 0"),
    ]
    assert plan.lives[2].condition.endswith("started together, its blocks first")
    assert plan.lives[3].serves == ["perf baseline in 2 interleaved block(s)"]
    assert any("interleaving begun by the candidate in even rounds" in n for n in plan.notes)


def test_one_round_adds_no_life() -> None:
    plan = make_plan(
        [("candidate", _single("smollm2-cpu-int8"))], reference_cached=False, placement="x"
    )
    assert plan.rounds == 1 and all(life.round == 0 for life in plan.lives)
    assert "rounds" not in " ".join(describe(plan))
