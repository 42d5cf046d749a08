"""A candidate's changes against its reference, and sub-candidates with some applied."""

from __future__ import annotations

from pathlib import Path

from qgate.profile import Profile
from qgate.profile.changes import changes_of, sub_profile
from qgate.profile.load import load_profile

SHIPPED = Path(__file__).resolve().parents[3] / "precision_profiles"


def _profile(**candidate: object) -> Profile:
    return Profile.model_validate(
        {
            "name": "p",
            "model": {"embedded": "smollm2"},
            "engine": {
                "args": {"max_model_len": 2048, "enable_prefix_caching": True},
                "env": {"A": "1"},
            },
            "reference": {"args": {"kv_cache_dtype": "auto"}},
            "candidate": candidate,
            "quality": {"math": {"max_drop": 0.1}},
        }
    )


def test_every_difference_is_a_change_and_a_group_is_one() -> None:
    profile = _profile(
        args={"kv_cache_dtype": "fp8", "enable_prefix_caching": False, "max_num_seqs": 4},
        env={"A": "2", "VLLM_X_1": "1", "VLLM_X_2": "1"},
        emulate_weights={"format": "int4"},
    )
    names = [c.name for c in changes_of(profile)]
    assert names == [
        "args.enable_prefix_caching",
        "args.kv_cache_dtype",
        "args.max_num_seqs",
        "env.A",
        "env.VLLM_X_1",
        "env.VLLM_X_2",
        "emulate_weights",
    ]
    grouped = changes_of(profile, [["env.VLLM_X_*"]])
    assert grouped[0].name == "env.VLLM_X_1+env.VLLM_X_2"
    assert changes_of(profile)[2].reference == "-" and changes_of(profile)[2].candidate == "4"


def test_a_sub_candidate_is_the_reference_plus_the_changes_applied() -> None:
    profile = _profile(
        args={"kv_cache_dtype": "fp8", "enable_prefix_caching": False},
        emulate_weights={"format": "int4"},
    )
    none = sub_profile(profile, [])
    assert changes_of(none) == []  # the reference's settings exactly
    only = sub_profile(profile, ["args.enable_prefix_caching"])
    assert [c.name for c in changes_of(only)] == ["args.enable_prefix_caching"]
    assert only.candidate.emulate_weights is None and only.attribution is None
    weights = sub_profile(profile, ["emulate_weights"])
    assert [c.name for c in changes_of(weights)] == ["emulate_weights"]
    everything = sub_profile(profile, [c.name for c in changes_of(profile)])
    assert changes_of(everything) == changes_of(profile)


def test_the_shipped_attribution_profile_has_three_changes_one_of_them_harmful() -> None:
    profile = load_profile(SHIPPED / "smollm2-cpu-int4-attribute.yaml", check_files=False)
    assert [c.name for c in changes_of(profile)] == [
        "args.enable_prefix_caching",
        "args.max_num_seqs",
        "emulate_weights",
    ]
    assert profile.attribution is not None and profile.attribution.enabled


def test_a_candidate_differing_only_by_its_launcher_lists_that_change() -> None:
    """A start-up setting is a difference between the sides (issue 43): the change list, the
    plan's count of attribution lives and the trials all see it."""
    profile = Profile.model_validate(
        {
            "name": "p",
            "model": {"embedded": "smollm2"},
            "engine": {"args": {"max_model_len": 2048}},
            "candidate": {
                "engine": {"args": {"max_model_len": 2048}, "launcher": ["vllm-next", "serve"]}
            },
            "quality": {"math": {"max_drop": 0.1}},
        }
    )
    changes = changes_of(profile)
    assert [c.name for c in changes] == ["engine.launcher"]
    assert changes[0].reference == "-" and changes[0].candidate == '["vllm-next", "serve"]'
    applied = sub_profile(profile, ["engine.launcher"])
    assert applied.engine_of("candidate").launcher == ["vllm-next", "serve"]
    assert [c.name for c in changes_of(applied)] == ["engine.launcher"]
    assert applied.engine_of("candidate").args == profile.engine.args  # nothing else moved
    assert changes_of(sub_profile(profile, [])) == []


def test_a_trial_keeps_the_reuse_passes() -> None:
    profile = Profile.model_validate(
        {
            "name": "p",
            "model": {"embedded": "smollm2"},
            "candidate": {"args": {"kv_cache_dtype": "fp8"}},
            "quality": {"math": {"prompts": ["long"], "max_drop": 0.1}, "reuse": {}},
        }
    )
    assert sub_profile(profile, ["args.kv_cache_dtype"]).quality.reuse == profile.quality.reuse


def _aa_behind_a_launcher(cpu_dtype: str, accelerator: str = "cpu") -> Profile:
    """An A/A profile: the candidate is the reference behind a pass-through launcher (its own
    engine block), the demo's top-level `dtype: bfloat16` kept."""
    shared = {"max_model_len": 2048, "enforce_eager": True}
    return Profile.model_validate(
        {
            "name": "aa",
            "model": {"embedded": "smollm2"},
            "target": {"accelerator": accelerator},
            "engine": {"cpu_dtype": cpu_dtype, "args": {"dtype": "bfloat16", **shared}},
            "candidate": {"engine": {"args": shared, "launcher": ["env", "--"]}},
            "quality": {"math": {"max_drop": 0.1}},
        }
    )


def test_cpu_dtype_auto_serves_both_sides_alike_so_the_dtype_is_no_change() -> None:
    """Issue 44 item 4: with `engine.cpu_dtype: auto` the CPU decides both sides' dtype, and
    a side's own engine block may not name one; the top-level dtype was listed as a change
    (reference bfloat16, candidate '-') and then CONTRADICTED by the server (A/A friction)."""
    assert [c.name for c in changes_of(_aa_behind_a_launcher("auto"))] == ["engine.launcher"]
    # as written, or off the CPU, the candidate's own block really serves another dtype
    for profile in (_aa_behind_a_launcher("as_written"), _aa_behind_a_launcher("auto", "H200")):
        assert [c.name for c in changes_of(profile)] == ["args.dtype", "engine.launcher"]
