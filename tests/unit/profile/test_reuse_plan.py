"""`qgate plan` on reuse passes: which each side gets and why, from the candidate's changes."""

from __future__ import annotations

from typing import Any

from qgate.profile import Profile
from qgate.profile.reuse_plan import called_for, reuse_notes


def _profile(candidate: dict[str, Any], reuse: dict[str, Any] | None = None) -> Profile:
    quality: dict[str, Any] = {"math": {"prompts": ["long"]}}
    if reuse is not None:
        quality["reuse"] = reuse
    return Profile.model_validate(
        {
            "name": "p",
            "model": {"embedded": "smollm2"},
            "reference": {"args": {"enable_prefix_caching": False}},
            "candidate": {"args": candidate},
            "quality": quality,
        }
    )


def test_the_candidates_changes_decide_which_passes_it_needs() -> None:
    offload = {"enable_prefix_caching": True, "kv_offloading_size": 64, "max_num_seqs": 16}
    wanted = called_for(_profile(offload))
    assert list(wanted) == ["warm", "restored", "load"]
    assert "kv_offloading_size" in wanted["restored"] and "max_num_seqs" in wanted["load"]
    assert called_for(_profile({"enable_prefix_caching": False})) == {}


def test_without_reuse_the_plan_says_what_the_suites_do_not_run() -> None:
    (line,) = reuse_notes(_profile({"enable_prefix_caching": True}))
    assert "no quality.reuse" in line and "warm (the candidate turns prefix caching on)" in line
    assert reuse_notes(_profile({"enable_prefix_caching": False})) == []


def test_with_reuse_each_pass_says_what_it_must_serve_and_what_cannot_be() -> None:
    notes = reuse_notes(
        _profile({"enable_prefix_caching": True}, {"passes": ["warm", "restored"]}), "pc"
    )
    assert notes[0] == "pc: reuse passes on both sides: cold, warm, restored"
    assert ">= 50% of what its cold pass computed" in notes[1] and "noise floor" in notes[1]
    assert "no host/external KV tier" in notes[2] and "NOT EXERCISED" in notes[2]
    assert "evicted by filler prompts" in notes[2]  # no VLLM_SERVER_DEV_MODE=1
    off = reuse_notes(_profile({"enable_prefix_caching": False}, {"passes": ["warm"]}))
    assert "cannot serve this pass from a cache" in off[1]
    load = reuse_notes(_profile({"max_num_seqs": 2}, {"passes": ["load"]}))
    assert "cannot be told from the filler's" in load[1]
    told = {"max_num_seqs": 2, "enable_prompt_tokens_details": True}
    assert "the items' own served share" in reuse_notes(_profile(told, {"passes": ["load"]}))[1]
    missing = reuse_notes(_profile({"max_num_seqs": 2}, {"passes": ["warm"]}))
    assert "not configured but called for" in missing[-1] and "load" in missing[-1]
