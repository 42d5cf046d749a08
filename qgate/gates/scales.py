"""FP8 KV-cache scale calibration: the warnings a report surfaces and the optional gate.

vLLM serves an FP8 KV cache (and, with FlashAttention 3, FP8 attention) with
per-tensor scales from the checkpoint; when the checkpoint has none it uses
1.0 and logs a warning. Such a cache works, but its accuracy depends on the
activations fitting FP8's range unscaled. qgate records the warning in the
effective configuration (effective.parse_engine_log) and, when the profile
sets `engine.uncalibrated_kv_scales: fail`, turns it into a failing gate.
Pure functions: `qgate verify` recomputes the gate from the stored configs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from qgate.core.serving import EffectiveConfig
from qgate.core.verdict import Verdict

Policy = Literal["warn", "fail"]


def quantized_kv(config: EffectiveConfig) -> bool:
    """True when the runtime reports an FP8 (or other non-default) KV cache dtype."""
    kv = (config.kv_cache_dtype or "auto").lower()
    return kv not in ("auto", "bfloat16", "float16", "float32", "bf16", "fp16", "half")


def warning_lines(configs: Iterable[EffectiveConfig]) -> list[str]:
    """One line per engine warning and per setting not verified, prefixed with the runtime's
    role (for every view)."""
    return [
        line
        for c in configs
        for line in [f"{c.role}: {w}" for w in c.engine_warnings]
        + [f"{c.role}: not verified: {n}" for n in c.not_verified]
    ]


def kv_scale_verdicts(policy: Policy, configs: Sequence[EffectiveConfig]) -> list[Verdict]:
    """Under 'fail', one gate per runtime with a quantized KV cache; none under 'warn'.

    Observed is the number of scales left at 1.0 (k, v, q, prob); the limit is 0.
    """
    if policy != "fail":
        return []
    out: list[Verdict] = []
    for config in sorted(configs, key=lambda c: c.role != "reference"):
        if not quantized_kv(config):
            continue
        bad = list(config.uncalibrated_scales)
        if bad:
            reason = (
                f"{config.role} serves a {config.kv_cache_dtype} KV cache with uncalibrated "
                f"scales ({', '.join(s + '=1.0' for s in bad)}); the profile requires "
                "calibrated scales (engine.uncalibrated_kv_scales: fail)"
            )
        else:
            reason = f"{config.role}: the engine reported no uncalibrated FP8 scale"
        out.append(
            Verdict(
                gate=f"{config.role}.kv_scales_calibrated",
                suite="engine",
                observed=float(len(bad)),
                limit=0.0,
                passed=not bad,
                reason=reason,
            )
        )
    return out
