"""Whether a profile has the acceptance gate of a speculative candidate, and what `qgate plan`
says about it (pure functions of the profile; the gate itself is qgate/gates/speculative.py)."""

from __future__ import annotations

import json

from qgate.profile.model import Profile, SpeculativeSpec
from qgate.profile.side import side
from qgate.profile.speculative import SPECULATIVE_ARG

__all__ = [
    "cross_check_notes",
    "cross_checked",
    "draft_length",
    "speculates",
    "speculative_notes",
    "speculative_policy",
]


def speculates(profile: Profile, role: str) -> bool:
    """Whether the side's engine arguments set `speculative_config`."""
    return side(profile, role).arg(SPECULATIVE_ARG) not in (None, "", False)


def draft_length(profile: Profile, role: str) -> int | None:
    """The side's `num_speculative_tokens` (None: not stated as a JSON number)."""
    value = side(profile, role).arg(SPECULATIVE_ARG)
    try:
        parsed = json.loads(str(value))
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return None
    tokens = parsed.get("num_speculative_tokens") if isinstance(parsed, dict) else None
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None


def cross_checked(profile: Profile) -> bool:
    """Whether the candidate's divergence scores are checked by a second path
    (`quality.divergence.cross_check`: always, or when the candidate speculates)."""
    spec = profile.quality.divergence
    if spec is None:
        return False
    return spec.cross_check == "always" or speculates(profile, "candidate")


def cross_check_notes(profile: Profile, name: str | None = None) -> list[str]:
    """The plan's line on the divergence cross-check: why it runs and what it costs."""
    spec = profile.quality.divergence
    if spec is None or not cross_checked(profile):
        return []
    who = f"{name}: " if name else ""
    why = "the candidate speculates" if speculates(profile, "candidate") else "cross_check: always"
    return [
        f"{who}divergence cross-check ({why}): the candidate also generates its "
        f"{spec.sequences} divergence prompts greedily, {spec.tokens} tokens each with top-"
        f"{spec.top_k} logprobs ({spec.sequences * spec.tokens:,} generated tokens), and its "
        "scores must agree with them (each sequence's mean KL <= "
        f"{spec.max_cross_kld:g}); else every divergence gate is NOT TRUSTED, a failure"
    ]


def speculative_policy(profile: Profile) -> SpeculativeSpec | None:
    """The acceptance gate's limits: `quality.speculative`, or its defaults for a candidate
    that speculates; None when the profile has no acceptance gate."""
    if profile.quality.speculative is not None:
        return profile.quality.speculative
    return SpeculativeSpec() if speculates(profile, "candidate") else None


def _method(profile: Profile, role: str) -> str:
    value = side(profile, role).arg(SPECULATIVE_ARG)
    try:
        parsed = json.loads(str(value))
    except ValueError:
        return str(value)
    if isinstance(parsed, dict):
        shown = {k: parsed[k] for k in ("method", "num_speculative_tokens", "model") if k in parsed}
        return ", ".join(f"{k} {v}" for k, v in shown.items()) or str(value)
    return str(value)


def speculative_notes(profile: Profile, name: str | None = None) -> list[str]:
    """The plan's lines on the acceptance gate: what it compares and what it needs."""
    policy = speculative_policy(profile)
    if policy is None:
        return []
    who = f"{name}: " if name else ""
    if not speculates(profile, "candidate"):
        return [
            f"{who}quality.speculative is set but the candidate sets no speculative_config: "
            "its acceptance gate will be NOT EXERCISED"
        ]
    lines = [
        f"{who}speculative candidate ({_method(profile, 'candidate')}): its quality suites gated "
        "against the reference as usual; acceptance length (1 + accepted / drafts) from the "
        "server's /metrics counters (vllm:spec_decode_*) before the first suite and after each"
    ]
    if speculates(profile, "reference"):
        rule = f"at least {policy.min_share_of_reference:g} x the reference's (it speculates too)"
        if policy.min_acceptance_length is not None:
            rule += f" and at least {policy.min_acceptance_length:g}"
    elif policy.min_acceptance_length is not None:
        rule = f"at least {policy.min_acceptance_length:g} (the reference does not speculate)"
    else:
        rule = (
            "no floor (quality.speculative.min_acceptance_length) and a reference that does not "
            "speculate: only that speculation ran is gated; set a floor to gate how much"
        )
    lines.append(f"{who}acceptance gate: {rule}")
    lines.append(
        f"{who}needs: the server to show the speculation applied (its logged config: one that "
        "logs none is CONTRADICTED, a failed gate) and at least "
        f"{policy.min_drafts} draft(s) over the suites (fewer: NOT EXERCISED, never a PASS)"
    )
    return lines
