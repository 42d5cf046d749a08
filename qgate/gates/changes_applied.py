"""Whether the running candidate confirms each of its changes, or leaves it unconfirmed.

The changes are those attribution uses (qgate/profile/changes.py). Evidence comes from what
the report signs: the candidate server's effective configuration (its own start-up report),
the counters of its reuse passes and perf scenarios, its emulation labels. A change no such
record speaks to is **unconfirmed**: the engine accepted the flag, nothing shows it took
effect (a `hf_overrides` rope_theta, for one, that passed every gate like a no-op). Pure, so
that every view derives the same list from the signed report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from qgate.core.serving import EffectiveConfig
from qgate.core.verdict import Verdict
from qgate.gates.speculative import acceptance
from qgate.perf.records import ScenarioRun
from qgate.profile import Profile
from qgate.profile.changes import changes_of
from qgate.quality.reuse_records import DEVICE, EXTERNAL, PassRun
from qgate.quality.spec_counters import SpecSnapshot
from qgate.runtime.effective import check_applied

__all__ = [
    "CONTRADICTED_FROM",
    "ChangeCheck",
    "Status",
    "change_warnings",
    "confirm_changes",
    "contradicted_verdicts",
    "unconfirmed_warning",
]

Status = Literal["confirmed", "contradicted", "unconfirmed"]
REPORTED = (
    "kv_cache_dtype",
    "dtype",
    "quantization",
    "max_model_len",
    "tensor_parallel_size",
    "pipeline_parallel_size",
)
OFFLOAD = ("kv_offloading_size", "kv_offloading_backend", "kv_transfer_config")


@dataclass(frozen=True)
class ChangeCheck:
    """One change of the candidate and what the running server says about it."""

    name: str
    candidate: str
    status: Status
    evidence: str


CONTRADICTED_FROM = 4
"""The quality derivation from which a contradicted change is a failed gate (not only a
warning) and the cold pass is no evidence that an offload change was applied."""


def _gained(passes: Sequence[PassRun], key: str, cold: bool = True) -> float:
    total = 0.0
    for p in passes:
        if p.role != "candidate" or (p.name == "cold" and not cold):
            continue
        for s in p.suites:
            if not s.before:  # a missing scrape: its delta would be the lifetime's totals
                continue
            total += max(0.0, s.after.get(key, 0.0) - s.before.get(key, 0.0))
    return total


def _perf_hits(runs: Sequence[ScenarioRun]) -> float | None:
    seen = None
    for r in runs:
        if r.role == "candidate" and "vllm:prefix_cache_queries_total" in r.counters_after:
            key = "vllm:prefix_cache_hits_total"
            hits = r.counters_after.get(key, 0.0) - r.counters_before.get(key, 0.0)
            seen = (seen or 0.0) + max(0.0, hits)
    return seen


_SPEC_METHOD = re.compile(r"method='(?P<method>[^']*)'")


def _asked_method(value: Any) -> str | None:
    """The method of a requested speculative_config (a JSON text, or a mapping)."""
    if isinstance(value, str):
        value = _value(value)
    if isinstance(value, dict):
        method = value.get("method")
        return str(method) if method is not None else None
    return None


def _speculation(
    value: Any, cand: EffectiveConfig | None, snapshots: Sequence[SpecSnapshot]
) -> tuple[Status, str]:
    """speculative_config: the engine's logged config first, then the candidate's counters."""
    asked = None if value in (None, "-") else value
    method = _asked_method(asked) if asked is not None else None
    seen = acceptance(snapshots, "candidate")
    drafts = f"; {seen.drafts:,.0f} drafts in its quality stage" if seen is not None else ""
    logged = cand.speculative_config if cand is not None else None
    if logged is not None:
        found = _SPEC_METHOD.search(logged)
        got = found.group("method") if found else None
        if asked is None:
            ok = logged == "None"
        else:
            ok = logged != "None" and (method is None or got == method)
        status: Status = "confirmed" if ok else "contradicted"
        return status, f"the server logged speculative_config={logged}{drafts}"
    if seen is not None and seen.drafts > 0:
        if asked is not None:
            return "confirmed", f"{seen.drafts:,.0f} drafts in its quality stage"
        return "contradicted", f"it drafted {seen.drafts:,.0f} times with no speculation asked"
    return "unconfirmed", "no engine log line or speculative-decoding counter shows it"


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _check(
    key: str,
    value: Any,
    cand: EffectiveConfig | None,
    passes: Sequence[PassRun],
    perf: Sequence[ScenarioRun],
    speculative: Sequence[SpecSnapshot] = (),
) -> tuple[Status, str]:
    if key == "speculative_config":
        return _speculation(value, cand, speculative)
    if key in REPORTED and cand is not None:
        applied = cand.model_dump()
        got = applied.get(key)
        if got is None:
            return "unconfirmed", f"the server reported no {key}"
        wrong = check_applied({key: value}, applied)
        if wrong:
            return "contradicted", wrong[0]
        return "confirmed", f"the server reports {key}={got}"
    if key == "enable_prefix_caching":
        device = _gained(passes, DEVICE)
        hits = _perf_hits(perf)
        seen = []
        if any(p.role == "candidate" for p in passes):
            seen.append(f"{device:,.0f} prompt tokens from its device cache in the reuse passes")
        if hits is not None:
            seen.append(f"{hits:,.0f} prefix-cache hit tokens in perf")
        if not seen:
            return "unconfirmed", "no reuse pass or perf counters of the candidate"
        served = device > 0 or bool(hits)
        if served == bool(value):
            return "confirmed", "; ".join(seen)
        return "contradicted", "; ".join(seen)
    if key in OFFLOAD:
        # the cold pass is the quality stage: a host tier serving it is not this change shown
        external = _gained(passes, EXTERNAL, cold=False)
        if external > 0:
            return "confirmed", f"{external:,.0f} prompt tokens from the host/external tier"
        if any(p.role == "candidate" and p.name == "restored" for p in passes):
            return "unconfirmed", "its restored pass served nothing from a host/external tier"
        return "unconfirmed", "no restored pass (quality.reuse) to show the tier serving"
    if key == "hf_overrides":
        return (
            "unconfirmed",
            "vLLM reports no model config back: nothing shows the override reached the model",
        )
    return "unconfirmed", "the server reports no effective value qgate reads"


def confirm_changes(
    profile: Profile,
    configs: Sequence[EffectiveConfig],
    passes: Sequence[PassRun] = (),
    perf: Sequence[ScenarioRun] = (),
    speculative: Sequence[SpecSnapshot] = (),
) -> list[ChangeCheck]:
    """Every change of the candidate against the reference, with its status and evidence."""
    cand = next((c for c in configs if c.role == "candidate"), None)
    out = []
    for change in changes_of(profile):
        kind, _, key = change.name.partition(".")
        if kind == "args" and key in REPORTED and change.candidate == "-":
            # the candidate asks for no value: no value the server reports can contradict it
            status: Status = "unconfirmed"
            evidence = f"the candidate leaves {key} to the engine's default"
        elif kind == "args":
            value = _value(change.candidate)
            status, evidence = _check(key, value, cand, passes, perf, speculative)
        elif kind == "env":
            got = cand.env_flags.get(key) if cand is not None else None
            status = "unconfirmed"
            evidence = (
                "set in the server's environment; no engine report shows it took effect"
                if got is not None
                else "not recorded in the server's environment"
            )
        elif change.name == "emulate_weights":
            labels = cand.emulated if cand is not None else []
            status = "confirmed" if labels else "unconfirmed"
            evidence = "; ".join(labels) or "no emulation label on the candidate"
        elif change.name == "engine" and cand is not None:
            status = "confirmed" if cand.kind == change.candidate else "contradicted"
            evidence = f"the candidate ran on {cand.kind}"
        else:
            status, evidence = "unconfirmed", "no record speaks to it"
        out.append(ChangeCheck(change.name, change.candidate, status, evidence))
    return out


def unconfirmed_warning(checks: Sequence[ChangeCheck]) -> str | None:
    """One report warning naming the changes the running candidate did not confirm."""
    bad = [c for c in checks if c.status != "confirmed"]
    if not bad:
        return None
    parts = [f"{c.name} {c.status} ({c.evidence})" for c in bad]
    return "candidate changes not confirmed by the running server: " + "; ".join(parts)


def change_warnings(
    profile: Profile,
    configs: Sequence[EffectiveConfig],
    passes: Sequence[PassRun] = (),
    perf: Sequence[ScenarioRun] = (),
    speculative: Sequence[SpecSnapshot] = (),
) -> list[str]:
    """The report's warning on unconfirmed changes (none when every change is confirmed):
    what `qgate run` writes and `qgate verify` re-derives (quality derivation 3 on)."""
    line = unconfirmed_warning(confirm_changes(profile, configs, passes, perf, speculative))
    return [] if line is None else [line]


def contradicted_verdicts(
    profile: Profile,
    configs: Sequence[EffectiveConfig],
    passes: Sequence[PassRun] = (),
    speculative: Sequence[SpecSnapshot] = (),
) -> list[Verdict]:
    """A failed gate `changes.<name>.applied` for each change the running candidate
    contradicts (its server says it did not apply a requested setting): such a candidate is not
    what the profile asked for, so its verdict cannot be PASS. From the server's report and the
    reuse passes only (what is known when the gates are judged, before perf)."""
    out = []
    for c in confirm_changes(profile, configs, passes, speculative=speculative):
        if c.status == "contradicted":
            out.append(
                Verdict(
                    gate=f"changes.{c.name}.applied",
                    suite="changes",
                    observed=None,
                    limit=None,
                    passed=False,
                    reason=f"CONTRADICTED: the candidate asked for {c.name}={c.candidate}; "
                    f"{c.evidence}",
                )
            )
    return out
