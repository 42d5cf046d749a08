"""The reuse passes' pure parts: counters to shares, the gates, NOT EXERCISED, settings."""

from __future__ import annotations

import pytest

from qgate.gates.reuse import evaluate_reuse
from qgate.profile import MathSuite, QualitySpec, RecallSuite
from qgate.profile.reuse_plan import reuse_suites
from qgate.quality.asked_again import pass_items, pass_setting, split_setting
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.reuse_counters import kv_capacity_tokens, parse_pass_counters
from qgate.quality.reuse_pass import filler_prompts
from qgate.quality.reuse_records import (
    COMPUTED,
    DEVICE,
    EXTERNAL,
    PREEMPTIONS,
    PassRun,
    PassSuite,
    Shares,
    item_usage,
    shares,
)

METRICS = """\
# HELP vllm:prompt_tokens_by_source_total Number of prompt tokens by source.
# TYPE vllm:prompt_tokens_by_source_total counter
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_compute"} 300.0
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_cache_hit"} 700.0
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="external_kv_transfer"} 0.0
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} 2.0
# HELP vllm:kv_cache_usage_perc KV-cache usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="128",engine="0",num_gpu_blocks="700"} 1.0
"""


def test_counters_keep_prompt_tokens_by_source_and_the_kv_capacity() -> None:
    got = parse_pass_counters(METRICS)
    assert got[COMPUTED] == 300.0 and got[DEVICE] == 700.0 and got[EXTERNAL] == 0.0
    assert got[PREEMPTIONS] == 2.0 and got["vllm:kv_cache_usage_perc"] == 0.25
    assert kv_capacity_tokens(METRICS) == 700 * 128
    assert kv_capacity_tokens("") is None


def test_shares_are_deltas_of_the_sources() -> None:
    before = {COMPUTED: 100.0, DEVICE: 0.0, EXTERNAL: 0.0, PREEMPTIONS: 1.0}
    after = {COMPUTED: 150.0, DEVICE: 150.0, EXTERNAL: 50.0, PREEMPTIONS: 4.0}
    s = shares(before, after)
    assert s.prompt_tokens == 250.0
    assert (s.computed, s.device, s.external) == (0.2, 0.6, 0.2)
    assert s.preemptions == 3.0
    assert shares({}, {}).prompt_tokens is None  # no by-source counters: nothing to say


def _item(i: int, correct: bool, output: str = "x") -> ItemRecord:
    return ItemRecord(
        id=f"q{i}",
        prompt_sha256=f"p{i}",
        output=output,
        answer="1" if correct else "2",
        expected="1",
        correct=correct,
    )


def _run(role: str, correct: list[bool], suite: str = "math.long") -> SuiteRun:
    return SuiteRun(
        suite=suite,
        role=role,  # type: ignore[arg-type]
        data_sha256="d",
        items=[_item(i, c) for i, c in enumerate(correct)],
    )


ZERO = {COMPUTED: 0.0, DEVICE: 0.0, EXTERNAL: 0.0, PREEMPTIONS: 0.0}


def _counted(device: float, computed: float) -> tuple[dict[str, float], dict[str, float]]:
    return dict(ZERO), {COMPUTED: computed, DEVICE: device, EXTERNAL: 0.0, PREEMPTIONS: 0.0}


def _cold_pass(role: str, cached: float) -> PassRun:
    """A side's cold counters: `cached` of 1000 prompt tokens from its device cache (a shared
    preamble is cached within the cold pass itself)."""
    before, after = _counted(cached, 1000.0 - cached)
    return PassRun(
        name="cold",
        role=role,  # type: ignore[arg-type]
        suites=[PassSuite(suite="math.long", before=before, after=after)],
    )


SPEC = QualitySpec.model_validate(
    {
        "math": {"prompts": ["short", "long"], "max_flips": 1, "significance": False},
        "reuse": {"passes": ["warm"], "suites": ["math.long"], "min_exercised_share": 0.5},
    }
)


def _passes(
    cand_warm: list[bool], ref_warm: list[bool], cand_device: float, cold_cached: float = 0.0
) -> tuple[list[SuiteRun], list[PassRun]]:
    cold = [_run("reference", [True] * 6), _run("candidate", [True] * 6)]
    passes = [_cold_pass("reference", cold_cached), _cold_pass("candidate", cold_cached)]
    for role, warm, device in (
        ("reference", ref_warm, 0.0),
        ("candidate", cand_warm, cand_device),
    ):
        before, after = _counted(device, 1000.0 - device)
        passes.append(
            PassRun(
                name="warm",
                role=role,  # type: ignore[arg-type]
                suites=[
                    PassSuite(suite="math.long", run=_run(role, warm), before=before, after=after)
                ],
            )
        )
    return cold, passes


def test_only_the_chosen_math_and_recall_results_are_asked_again() -> None:
    assert [s for s, _ in reuse_suites(SPEC)] == ["math.long"]
    both = SPEC.model_copy(update={"reuse": SPEC.reuse.model_copy(update={"suites": None})})  # type: ignore[union-attr]
    assert [s for s, _ in reuse_suites(both)] == ["math.short", "math.long"]


def test_an_exercised_warm_pass_is_gated_paired_and_against_its_cold_answers() -> None:
    cold, passes = _passes([True] * 6, [True] * 6, cand_device=800.0)
    verdicts = {v.gate: v for v in evaluate_reuse(SPEC, cold, passes)}
    assert list(verdicts) == [
        "math.long@warm.exercised",
        "math.long@warm.max_flips",
        "math.long@warm.self_flips",
    ]
    ex = verdicts["math.long@warm.exercised"]
    assert ex.passed and ex.exercised is True and ex.observed == pytest.approx(0.8)
    assert "80.0% device cache" in ex.reason and "against the same side's cold pass" in ex.reason
    assert all(v.passed for v in verdicts.values())


def test_losses_beyond_the_references_own_floor_fail() -> None:
    # the reference loses one cold-correct answer when served warm (its floor), the candidate 3
    cold, passes = _passes([False, False, False, True, True, True], [False] + [True] * 5, 800.0)
    verdicts = {v.gate: v for v in evaluate_reuse(SPEC, cold, passes)}
    own = verdicts["math.long@warm.self_flips"]
    assert not own.passed and own.observed == 2.0
    assert "candidate lost 3" in own.reason and "reference lost 1" in own.reason
    assert not verdicts["math.long@warm.max_flips"].passed  # 2 lost vs the reference's warm pass
    # at the floor it passes
    cold, passes = _passes([False] + [True] * 5, [False] + [True] * 5, 800.0)
    assert all(v.passed for v in evaluate_reuse(SPEC, cold, passes))


def test_a_pass_below_the_stated_share_is_not_exercised_never_a_pass() -> None:
    cold, passes = _passes([True] * 6, [True] * 6, cand_device=100.0)
    verdicts = evaluate_reuse(SPEC, cold, passes)
    assert verdicts and all(not v.passed and v.exercised is False for v in verdicts)
    assert all(v.reason.startswith("NOT EXERCISED") for v in verdicts)
    assert "reused 10.0% of the prompt tokens its cold pass computed" in verdicts[0].reason


def test_warm_counts_a_host_tier_as_reuse_restored_only_the_host_tier() -> None:
    """A small device cache with a host tier serves its warm pass from the host (H200 run)."""
    s = Shares(1000.0, computed=0.006, device=0.318, external=0.677, preemptions=0.0)
    assert s.of("reused") == 0.318 + 0.677
    assert s.of("external") == 0.677
    assert Shares(None, None, None, None, None).of("reused") is None


def test_a_missing_pass_fails_its_gates() -> None:
    cold, passes = _passes([True] * 6, [True] * 6, 800.0)
    verdicts = evaluate_reuse(SPEC, cold, passes[:3])
    assert verdicts and not any(v.passed for v in verdicts)
    assert "no candidate warm pass" in verdicts[-1].reason


def test_a_pass_asked_with_another_prompt_fails_its_self_flips() -> None:
    cold, passes = _passes([True] * 6, [True] * 6, 800.0)
    run = passes[3].suites[0].run
    assert run is not None
    run.items[0] = run.items[0].model_copy(update={"prompt_sha256": "other"})
    own = {v.gate: v for v in evaluate_reuse(SPEC, cold, passes)}["math.long@warm.self_flips"]
    assert not own.passed and "another prompt" in own.reason


def test_the_load_pass_is_exercised_by_preemptions() -> None:
    spec = SPEC.model_copy(
        update={"reuse": SPEC.reuse.model_copy(update={"passes": ["load"]})}  # type: ignore[union-attr]
    )
    cold, passes = _passes([True] * 6, [True] * 6, 0.0)
    for p in passes[2:]:
        p.name = "load"
    verdicts = evaluate_reuse(spec, cold, passes)
    assert verdicts[0].gate == "math.long@load.exercised" and not verdicts[0].passed
    passes[3].suites[0].after[PREEMPTIONS] = 3.0
    verdicts = evaluate_reuse(spec, cold, passes)
    assert verdicts[0].passed and verdicts[0].observed == 3.0


def test_settings_split_per_result_and_cut_to_the_limit() -> None:
    math = MathSuite(prompts=["short", "long"], limit=20)
    parts = split_setting("math", math)
    assert [s for s, _ in parts] == ["math.short", "math.long"]
    assert parts[1][1].prompts == ["long"] and parts[1][1].limit == 20
    assert pass_setting(parts[1][1], 5).limit == 5
    assert pass_setting(parts[1][1], 50).limit == 20
    recall = RecallSuite(context_tokens=[512, 1024], haystacks=4, depths=[0.2, 0.8])
    rparts = split_setting("recall", recall)
    assert [s for s, _ in rparts] == ["recall.512", "recall.1024"]
    assert pass_setting(rparts[0][1], 3).haystacks == 2
    # the items a pass then asks: math's first N of the suite's, recall's whole haystacks
    assert [pass_items(parts[1][1], n, 20) for n in (None, 5, 50)] == [20, 5, 20]
    assert [pass_items(rparts[0][1], n, 8) for n in (None, 3, 64)] == [8, 4, 8]


def test_filler_prompts_are_unique_sized_and_the_same_on_both_sides() -> None:
    a = filler_prompts(1000, 300, "load")
    assert len(a) == 4 and all(len(p) == 300 for p in a)
    assert len({tuple(p) for p in a}) == 4
    assert a == filler_prompts(1000, 300, "load")
    assert a != filler_prompts(1000, 300, "evict")


def test_a_profile_names_each_pass_once() -> None:
    with pytest.raises(ValueError, match="at most once"):
        QualitySpec.model_validate({"reuse": {"passes": ["warm", "warm"]}})


def test_warm_is_judged_against_its_cold_pass_not_a_raw_share_of_hits() -> None:
    """math.long's shared preamble makes the cold pass ~74% cached on the CPU: a warm pass that
    is no more cached than that reused nothing the cold pass left (issue 43)."""
    cold, passes = _passes([True] * 6, [True] * 6, cand_device=740.0, cold_cached=736.0)
    verdicts = evaluate_reuse(SPEC, cold, passes)
    ex = verdicts[0]
    assert ex.gate == "math.long@warm.exercised" and not ex.passed and ex.exercised is False
    assert ex.observed == pytest.approx(4.0 / 264.0)
    assert "74.0% warm, 73.6% cold" in ex.reason
    assert all(v.reason.startswith("NOT EXERCISED") for v in verdicts)
    # the same cold pass, and a warm pass that reused what it computed: exercised
    cold, passes = _passes([True] * 6, [True] * 6, cand_device=990.0, cold_cached=736.0)
    ex = evaluate_reuse(SPEC, cold, passes)[0]
    assert ex.passed and ex.observed == pytest.approx(254.0 / 264.0)
    # a report of derivation 3 keeps its raw share
    cold, passes = _passes([True] * 6, [True] * 6, cand_device=740.0, cold_cached=736.0)
    assert evaluate_reuse(SPEC, cold, passes, derivation=3)[0].passed


def test_warm_without_cold_counters_or_fully_cached_cold_is_not_exercised() -> None:
    cold, passes = _passes([True] * 6, [True] * 6, cand_device=990.0, cold_cached=1000.0)
    ex = evaluate_reuse(SPEC, cold, passes)[0]
    assert not ex.passed and "already served entirely from cache" in ex.reason
    cold, passes = _passes([True] * 6, [True] * 6, cand_device=990.0)
    ex = evaluate_reuse(SPEC, cold, passes[2:])[0]
    assert not ex.passed and ex.observed is None and "no cold-pass counters" in ex.reason


@pytest.mark.parametrize(
    ("before", "says"),
    [
        ({}, "no counters scraped before"),
        ({COMPUTED: 0.0, DEVICE: 0.0, PREEMPTIONS: 0.0}, "missing from the scrape before"),
        ({**ZERO, DEVICE: 995.0}, "went backwards"),
        ({**ZERO, COMPUTED: float("nan")}, "is not a count"),
    ],
)
def test_a_missing_or_broken_snapshot_is_not_exercised_never_lifetime_totals(
    before: dict[str, float], says: str
) -> None:
    """A timed-out 'before' scrape ({}) would make the window the server's lifetime."""
    cold, passes = _passes([True] * 6, [True] * 6, cand_device=990.0)
    passes[3].suites[0].before = before
    verdicts = evaluate_reuse(SPEC, cold, passes)
    ex = verdicts[0]
    assert not ex.passed and ex.exercised is False and ex.observed is None
    assert says in ex.reason and "counters say nothing" in ex.reason
    assert all(not v.passed and v.exercised is False for v in verdicts)
    assert shares(before, passes[3].suites[0].after).problem is not None


def test_the_usage_tally_counts_the_items_never_filler_started_before_it() -> None:
    """Per-request usage: what the items were served, without the filler traffic that runs in
    the same scrape window (issue 43: load counts the filler)."""
    import asyncio

    from qgate.quality.client import USAGE, UsageTally

    usage = {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 40}}

    async def answer() -> None:
        tally = USAGE.get()
        if tally is not None:
            tally.add(usage)

    async def main() -> UsageTally:
        gate = asyncio.Event()

        async def filler() -> None:
            await gate.wait()
            for _ in range(5):
                await answer()

        background = asyncio.create_task(filler())  # started before the items: not counted
        tally = UsageTally()
        token = USAGE.set(tally)
        try:
            gate.set()
            await asyncio.gather(answer(), answer())
            await background
        finally:
            USAGE.reset(token)
        return tally

    tally = asyncio.run(main())
    assert (tally.requests, tally.prompt_tokens, tally.cached_tokens) == (2, 200, 80)
    got = item_usage(tally.as_record())
    assert got is not None and got.cached_share == pytest.approx(0.4)
    tally.add({"prompt_tokens": 10})  # one answer without details: no share at all
    got = item_usage(tally.as_record())
    assert got is not None and got.cached_share is None


def test_the_load_pass_says_the_items_were_counted_by_their_own_answers() -> None:
    spec = SPEC.model_copy(
        update={"reuse": SPEC.reuse.model_copy(update={"passes": ["load"]})}  # type: ignore[union-attr]
    )
    cold, passes = _passes([True] * 6, [True] * 6, 0.0)
    for p in passes[2:]:
        p.name = "load"
        p.suites[0].after[PREEMPTIONS] = 3.0
        p.suites[0].usage = {
            "requests": 6.0,
            "prompt_tokens": 600.0,
            "detailed": 6.0,
            "cached_tokens": 150.0,
        }
    ex = evaluate_reuse(spec, cold, passes)[0]
    assert ex.passed and ex.n == 600
    assert "the items' own answers (usage.prompt_tokens_details, per request)" in ex.reason
    assert "candidate items 6 answers, 600 prompt tokens, 25.0% cached" in ex.reason
    assert "window (filler included)" in ex.reason
    passes[3].suites[0].usage = {}  # the server returned no usage details
    ex = evaluate_reuse(spec, cold, passes)[0]
    assert "no per-request cached tokens" in ex.reason and ex.n is None


def _restored(
    device_before: float, device_after: float, external: float
) -> tuple[QualitySpec, list[SuiteRun], list[PassRun]]:
    spec = SPEC.model_copy(
        update={"reuse": SPEC.reuse.model_copy(update={"passes": ["restored"]})}  # type: ignore[union-attr]
    )
    cold, passes = _passes([True] * 6, [True] * 6, 0.0)
    for p in passes[2:]:
        p.name = "restored"
        p.suites[0].after = {**ZERO, COMPUTED: 1000.0 - external, EXTERNAL: external}
        p.probes = [
            PassSuite(
                suite=label,
                before=dict(ZERO),
                after={**ZERO, COMPUTED: 512.0 - dev, DEVICE: dev},
            )
            for label, dev in (
                ("probe:before-reset", device_before),
                ("probe:after-reset", device_after),
            )
        ]
    return spec, cold, passes


def test_restored_proves_the_reset_took_and_the_hits_came_from_the_host_tier() -> None:
    """HTTP 200 from /reset_prefix_cache is no proof (issue 43: restored equalled warm)."""
    spec, cold, passes = _restored(384.0, 0.0, 700.0)
    ex = evaluate_reuse(spec, cold, passes)[0]
    assert ex.passed and ex.observed == pytest.approx(0.7)
    assert "the reset took (reset probe: 384 prompt tokens from the device cache" in ex.reason
    # the probe still served from the device cache after the reset: it did not take
    spec, cold, passes = _restored(384.0, 384.0, 700.0)
    ex = evaluate_reuse(spec, cold, passes)[0]
    assert not ex.passed and ex.exercised is False and "the reset did not take" in ex.reason
    # the device cache never served the probe: nothing shows a reset
    spec, cold, passes = _restored(0.0, 0.0, 700.0)
    assert "cannot be shown to take" in evaluate_reuse(spec, cold, passes)[0].reason
    # the reset took but nothing came from a host tier (a CPU server has none)
    spec, cold, passes = _restored(384.0, 0.0, 0.0)
    ex = evaluate_reuse(spec, cold, passes)[0]
    assert not ex.passed and ex.exercised is False and "0.0% of the items'" in ex.reason
    # no probe recorded
    spec, cold, passes = _restored(384.0, 0.0, 700.0)
    passes[3].probes = []
    ex = evaluate_reuse(spec, cold, passes)[0]
    assert not ex.passed and "no reset probe recorded" in ex.reason
