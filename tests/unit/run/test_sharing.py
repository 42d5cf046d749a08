"""Side by side or in sequence: qgate/run/sharing.py's reasons, and the plan they lead to."""

from __future__ import annotations

from pathlib import Path

from qgate.profile.load import load_profile
from qgate.run.placement import _kv_cache_gib, plan_for
from qgate.run.sharing import sequence_reason

SHIPPED = Path(__file__).resolve().parents[3] / "precision_profiles"


def _single(name: str):  # type: ignore[no-untyped-def]
    return load_profile(SHIPPED / f"{name}.yaml", check_files=False)


def _why(profile, **over):  # type: ignore[no-untyped-def]
    kw = {
        "reference_cached": False,
        "refresh": False,
        "on_cpu": True,
        "cores": 2,
        "available_gib": 20.0,
        "kv_cache_gib": 2.0,
        **over,
    }
    return sequence_reason([("candidate", profile)], **kw)


def test_side_by_side_only_where_both_fit() -> None:
    profile = _single("smollm2-cpu-int8")
    assert _why(profile) is None
    assert _why(profile, cores=1) == "1 usable core"
    assert "two servers need ~10 GiB" in _why(profile, available_gib=6.0)
    assert "cached" in _why(profile, reference_cached=True)
    assert _why(profile, reference_cached=True, refresh=True) is None
    assert "without gpu_memory_utilization on both sides" in _why(profile, on_cpu=False)
    engine = profile.engine.model_copy(update={"placement": "sequence"})
    assert _why(profile.model_copy(update={"engine": engine})) == "engine.placement: sequence"


def test_the_memory_check_counts_each_servers_kv_cache_as_it_will_get_it() -> None:
    """A side's VLLM_CPU_KVCACHE_SPACE, else the one qgate inherits, else qgate's default:
    a smaller value set by the profile or the shell is what the servers allocate (the check
    once took the default as a floor, and ran two 1 GiB servers in sequence)."""
    profile = _single("smollm2-cpu-int8")
    assert _kv_cache_gib(profile, {}) == 2.0  # qgate's CPU default
    assert _kv_cache_gib(profile, {"VLLM_CPU_KVCACHE_SPACE": "1"}) == 1.0
    candidate = profile.candidate.model_copy(update={"env": {"VLLM_CPU_KVCACHE_SPACE": "6"}})
    bigger = profile.model_copy(update={"candidate": candidate})
    assert _kv_cache_gib(bigger, {"VLLM_CPU_KVCACHE_SPACE": "1"}) == 6.0  # the side's wins
    assert _kv_cache_gib(profile, {"VLLM_CPU_KVCACHE_SPACE": "lots"}) == 2.0
    # 1 GiB each: two servers need ~8 GiB, and 9 available are enough
    assert _why(profile, available_gib=9.0, kv_cache_gib=1.0) is None


def test_two_servers_share_one_accelerator_when_their_memory_shares_fit() -> None:
    profile = _single("smollm2-h200-fp8")  # gpu_memory_utilization 0.3 for both sides
    assert _why(profile, on_cpu=False, cores=1, available_gib=1.0) is None  # CPU limits moot
    greedy = profile.model_copy(
        update={
            "candidate": profile.candidate.model_copy(
                update={"args": {**profile.candidate.args, "gpu_memory_utilization": 0.7}}
            )
        }
    )
    assert _why(greedy, on_cpu=False) == "gpu_memory_utilization 0.3 + 0.7 > 0.9 of one device"
    eight = profile.model_copy(update={"target": profile.target.model_copy(update={"count": 8})})
    assert _why(eight, on_cpu=False) == "8 accelerators (servers share one device only)"
    plan = plan_for([("candidate", profile)], reference_cached=False, refresh=False)
    assert plan.mode == "together" and plan.starts == 2
    assert plan.lives[0].placement == "H200 0, 30% of its memory"
    assert "started once the reference is ready" in plan.lives[1].placement
    assert any("share one device" in note for note in plan.notes)
