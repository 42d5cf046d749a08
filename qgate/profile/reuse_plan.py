"""Which reuse passes each side gets, and why: what the candidate changes decides it.

Pure functions of the profile for `qgate plan` (and the plan stored in a report). A
candidate that turns on prefix caching needs a warm pass, one with a host/external KV tier
(`kv_offloading_size`, `kv_offloading_backend`, `kv_transfer_config`) a restored pass, one
that changes scheduler limits or the KV cache's size a load pass; without `quality.reuse` the
notes say which passes its changes call for, since its quality suites alone never run them.
"""

from __future__ import annotations

from typing import Any

from qgate.profile.model import Profile
from qgate.profile.quality import AccuracyPolicy, QualitySpec
from qgate.profile.reuse import PassName
from qgate.profile.side import side
from qgate.profile.suites import asked_again, exact_results

__all__ = ["called_for", "reuse_notes", "reuse_suites", "side_traits"]

OFFLOAD_ARGS = ("kv_offloading_size", "kv_offloading_backend", "kv_transfer_config")
SCHEDULER_ARGS = (
    "max_num_seqs",
    "max_num_batched_tokens",
    "num_gpu_blocks_override",
    "kv_cache_memory_bytes",
    "gpu_memory_utilization",
)
DEV_MODE = "VLLM_SERVER_DEV_MODE"


def _args(profile: Profile, role: str) -> dict[str, Any]:
    return side(profile, role).args


def _env(profile: Profile, role: str) -> dict[str, str]:
    return side(profile, role).env


def side_traits(profile: Profile, role: str) -> dict[str, str]:
    """What a side's configuration says about its KV cache, in words ('' where it says nothing)."""
    args = _args(profile, role)
    caching = args.get("enable_prefix_caching")
    offload = [f"{k} {args[k]}" for k in OFFLOAD_ARGS if args.get(k) is not None]
    limits = [f"{k} {args[k]}" for k in SCHEDULER_ARGS if args.get(k) is not None]
    return {
        "prefix": "off" if caching is False else "on" if caching else "on (engine default)",
        "offload": ", ".join(offload),
        "limits": ", ".join(limits),
        "dev": "yes" if _env(profile, role).get(DEV_MODE) == "1" else "",
        "details": "yes" if args.get("enable_prompt_tokens_details") is True else "",
    }


def called_for(profile: Profile) -> dict[PassName, str]:
    """Each pass the candidate's changes call for, with the change that calls for it."""
    ref, cand = _args(profile, "reference"), _args(profile, "candidate")
    out: dict[PassName, str] = {}
    if cand.get("enable_prefix_caching") is True and ref.get("enable_prefix_caching") is not True:
        out["warm"] = "the candidate turns prefix caching on"
    changed = [k for k in OFFLOAD_ARGS if cand.get(k) != ref.get(k) and cand.get(k) is not None]
    if changed:
        out["restored"] = f"the candidate adds a host/external KV tier ({', '.join(changed)})"
        out.setdefault("warm", "the restored pass is judged against warm answers")
    limits = [k for k in SCHEDULER_ARGS if cand.get(k) != ref.get(k)]
    if limits:
        out["load"] = f"the candidate changes scheduler or KV-cache limits ({', '.join(limits)})"
    return out


def reuse_notes(profile: Profile, name: str | None = None) -> list[str]:
    """The plan's lines on reuse passes for one candidate (named in a multi run)."""
    who = f"{name}: " if name else ""
    wanted = called_for(profile)
    reuse = profile.quality.reuse
    if reuse is None:
        if not wanted:
            return []
        why = "; ".join(f"{p} ({w})" for p, w in wanted.items())
        return [
            f"{who}no quality.reuse: the quality suites ask each item once, cold, so they do not "
            f"run the path the candidate changes; passes its changes call for: {why}"
        ]
    traits = {role: side_traits(profile, role) for role in ("reference", "candidate")}
    lines = [f"{who}reuse passes on both sides: cold, " + ", ".join(reuse.passes)]
    for p in reuse.passes:
        lines.append(f"{who}{p} pass: {_expect(p, traits, reuse.min_exercised_share)}")
        if p in wanted:
            lines[-1] += f"; called for: {wanted[p]}"
    missing = [p for p in wanted if p not in reuse.passes]
    if missing:
        lines.append(
            f"{who}not configured but called for by the candidate's changes: "
            + "; ".join(f"{p} ({wanted[p]})" for p in missing)
        )
    return lines


def _expect(name: PassName, traits: dict[str, dict[str, str]], share: float) -> str:
    cand, ref = traits["candidate"], traits["reference"]
    need = f"{100 * share:.0f}%"
    if name == "warm":
        if cand["prefix"] == "off":
            return (
                "the candidate's prefix caching is off: it cannot serve this pass from a cache "
                "and its gates will be NOT EXERCISED"
            )
        floor = (
            "computed again (its prefix caching is off): the noise floor of asking twice"
            if ref["prefix"] == "off"
            else "served from its own prefix cache"
        )
        return (
            f"the candidate must reuse >= {need} of what its cold pass computed (its device "
            f"prefix cache or a host tier); reference {floor}"
        )
    if name == "restored":
        how = (
            "device prefix cache reset keeping the host tier (VLLM_SERVER_DEV_MODE=1)"
            if cand["dev"]
            else "no VLLM_SERVER_DEV_MODE=1 in the candidate's env: the device cache is evicted "
            "by filler prompts instead of reset"
        )
        if not cand["offload"]:
            return (
                f"{how}; the candidate has no host/external KV tier: its gates will be NOT "
                "EXERCISED"
            )
        return (
            f"{how}; a probe must show the reset took; the candidate ({cand['offload']}) must "
            f"serve >= {need} from that tier"
        )
    limits = cand["limits"] or "the engine's defaults"
    own = (
        "the items' own served share from their answers' usage"
        if cand["details"]
        else "no enable_prompt_tokens_details on the candidate: the items' own served share "
        "cannot be told from the filler's"
    )
    return (
        f"filler traffic of the KV capacity on each side; the candidate ({limits}) must "
        f"preempt at least load.min_preemptions requests while its items are in flight; {own}"
    )


def reuse_suites(spec: QualitySpec) -> list[tuple[str, AccuracyPolicy]]:
    """The math and recall results the passes ask again, in the profile's order."""
    reuse = spec.reuse
    if reuse is None:
        return []
    out = []
    for suite, policy in exact_results(spec):
        if not asked_again(suite):
            continue
        family = suite.partition(".")[0]
        if reuse.suites is None or suite in reuse.suites or family in reuse.suites:
            out.append((suite, policy))
    return out
