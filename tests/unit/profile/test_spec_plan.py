"""What `qgate plan` says about the acceptance gate of a speculative candidate (issue 42)."""

from __future__ import annotations

from typing import Any

from qgate.profile import Profile
from qgate.profile.spec_plan import speculates, speculative_notes, speculative_policy

NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3}'


def _profile(cand: dict[str, Any], ref: dict[str, Any] | None = None, **spec: Any) -> Profile:
    quality: dict[str, Any] = {"math": {"max_drop": 0.1}}
    if spec:
        quality["speculative"] = spec
    return Profile.model_validate(
        {
            "name": "t",
            "model": {"embedded": "smollm2"},
            "reference": {"args": ref or {}},
            "candidate": {"args": cand},
            "quality": quality,
        }
    )


def test_a_speculative_candidate_against_a_plain_reference_needs_a_floor() -> None:
    lines = speculative_notes(_profile({"speculative-config": NGRAM}, min_acceptance_length=1.5))
    assert "method ngram, num_speculative_tokens 3" in lines[0]
    assert lines[1] == "acceptance gate: at least 1.5 (the reference does not speculate)"
    assert "NOT EXERCISED" in lines[2] and "CONTRADICTED" in lines[2]
    bare = speculative_notes(_profile({"speculative_config": NGRAM}), "c1")
    assert bare[1].startswith("c1: acceptance gate: no floor")


def test_a_speculative_reference_gives_the_share_rule() -> None:
    p = _profile({"speculative_config": NGRAM}, {"speculative_config": NGRAM})
    assert speculates(p, "reference") and speculates(p, "candidate")
    assert "at least 0.95 x the reference's" in speculative_notes(p)[1]


def test_no_gate_and_no_line_without_speculation() -> None:
    p = _profile({"dtype": "float32"})
    assert speculative_policy(p) is None and speculative_notes(p) == []
    odd = speculative_notes(_profile({"dtype": "float32"}, min_acceptance_length=2.0))
    assert len(odd) == 1 and "NOT EXERCISED" in odd[0]
