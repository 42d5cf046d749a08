"""The plan on this machine: its cores and memory decide side by side or in sequence.

`plan_for` measures what the pure `make_plan` (qgate/run/plan.py) is a function
of (usable cores, available memory, the engine's placement) and adds the lives
attribution may take; `plan` is the run's plan, logged before any life starts.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from qgate.core.plan import Life, Plan, Work
from qgate.profile import Profile
from qgate.profile.changes import changes_of
from qgate.profile.engine_checks import engine_block_notes
from qgate.profile.engines import declared
from qgate.profile.reuse_plan import reuse_notes
from qgate.profile.side import side as side_of
from qgate.profile.spec_plan import cross_check_notes, speculative_notes
from qgate.profile.vacuous import unshowable_envelope
from qgate.report.attribution import budget_note
from qgate.run.attribute import attribution_wanted
from qgate.run.context import RunSet
from qgate.run.envelope import skipped_perf_line
from qgate.run.lives import LOCAL, Lives
from qgate.run.plan import describe, make_plan
from qgate.run.reference import reference_cached
from qgate.run.sharing import memory_shares, sequence_reason
from qgate.runtime.capabilities import engine_on_cpu
from qgate.runtime.command import CPU_KVCACHE_DEFAULT, CPU_KVCACHE_ENV
from qgate.runtime.cores import bind_spec, usable_cores
from qgate.runtime.fingerprint import Fingerprint

__all__ = ["plan", "plan_for", "placement"]

log = logging.getLogger("qgate")


def placement(profile: Profile) -> str:
    """Where a started runtime runs, in words (the plan's placement)."""
    kinds = {profile.engine_of(role).kind for role in ("reference", "candidate")}
    if not any(declared(kind).starts_process for kind in kinds):
        return "already running (endpoints)"
    target = profile.target
    if target.accelerator.lower() == "cpu" or engine_on_cpu(profile):
        cores = usable_cores()
        return f"cores {bind_spec(cores)} (all {len(cores)} usable), one server at a time"
    return f"{target.count} x {target.accelerator}, one server at a time"


def plan_for(
    profiles: list[tuple[str, Profile]],
    reference_cached: bool | None,
    refresh: bool,
    lives: Lives = LOCAL,
) -> Plan:
    """The plan on this machine: its cores and memory decide side by side or in sequence.

    An executor that places lives elsewhere (qgate/cluster/lives.py) decides instead
    whether the reference and the candidate fit at once, through its `side_by_side`.
    """
    first = profiles[0][1]
    if lives.places_lives:
        return _plan_elsewhere(
            profiles, reference_cached, refresh, lives.side_by_side(first), lives.at_once(first)
        )
    cores = usable_cores()
    # side by side on the CPU only where the profile targets it (a GPU profile on a CPU
    # build of vLLM runs as written, one server at a time)
    on_cpu = first.target.accelerator.lower() == "cpu" and engine_on_cpu(first)
    why = sequence_reason(
        profiles,
        reference_cached=reference_cached,
        refresh=refresh,
        on_cpu=on_cpu,
        cores=len(cores),
        available_gib=_available_gib(),
        kv_cache_gib=_kv_cache_gib(first),
    )
    side_by_side = None
    if why is None and on_cpu:
        half = len(cores) // 2
        side_by_side = (
            f"cores {bind_spec(cores[:half])} (of {len(cores)})",
            f"cores {bind_spec(cores[half : half * 2])} (of {len(cores)})",
        )
    elif why is None:
        shares = memory_shares(first)
        assert shares is not None  # sequence_reason found them
        device = f"{first.target.accelerator} 0"
        side_by_side = (
            f"{device}, {shares[0]:.0%} of its memory",
            f"{device}, {shares[1]:.0%} of its memory, started once the reference is ready",
        )
    out = make_plan(
        profiles,
        reference_cached=reference_cached,
        placement=placement(first),
        refresh=refresh,
        side_by_side=side_by_side,
    )
    for name, profile in profiles:
        if profile.attribution is not None and profile.attribution.enabled:
            _attribution_life(out, name, profile)
        out.notes += reuse_notes(profile, name if len(profiles) > 1 else None)
        out.notes += speculative_notes(profile, name if len(profiles) > 1 else None)
        out.notes += cross_check_notes(profile, name if len(profiles) > 1 else None)
        blocks = engine_block_notes(profile, name if len(profiles) > 1 else None)
        out.notes += [n for n in blocks if n not in out.notes]
    if why is not None and first.engine.placement == "together":
        out.notes.append(f"engine.placement 'together' cannot apply here ({why}): in sequence")
    elif why is not None and out.lives and on_cpu:
        out.notes.append(f"in sequence: {why}")
    return out


def _plan_elsewhere(
    profiles: list[tuple[str, Profile]],
    reference_cached: bool | None,
    refresh: bool,
    where: tuple[str, str] | None,
    width: int,
) -> Plan:
    """The plan when an executor places the lives: side by side where `where` says both fit
    at once, and the profile allows it (one candidate, an uncached reference), else in
    sequence."""
    why = sequence_reason(
        profiles,
        reference_cached=reference_cached,
        refresh=refresh,
        on_cpu=True,  # each life has its own node: no device or cores to share
        cores=2,
        available_gib=None,
        kv_cache_gib=0.0,
    )
    if where is None:
        why = "the cluster does not hold both lives at once"
    out = make_plan(
        profiles,
        reference_cached=reference_cached,
        placement="a Ray node with the side's resources",
        refresh=refresh,
        side_by_side=where if why is None else None,
    )
    for name, profile in profiles:
        if profile.attribution is not None and profile.attribution.enabled:
            _attribution_life(out, name, profile)
    out.notes.append(
        "each life a Ray actor on a node of the cluster; the suites talk to it over HTTP "
        "from this machine" + (f"; in sequence: {why}" if why else "")
    )
    if len(profiles) > 1 and width > 1:
        out.notes.append(
            f"the candidates' lives start in waves of up to {width} at once (as many as the "
            "cluster holds), after the reference's"
        )
    return out


def _attribution_life(out: Plan, name: str, profile: Profile) -> None:
    """The lives attribution may take, after the candidate's (once per candidate)."""
    side = f"{name} attribution"
    if any(life.side == side for life in out.lives):
        return
    lives = profile.attribution.max_lives if profile.attribution else 8
    condition = f"when {name} fails its gates; up to {lives} lives"
    life = Life.of(side, Work.SUB_CANDIDATES, placement(profile), condition)
    # before the later perf rounds' lives: the run attributes failures first
    at = next((i for i, other in enumerate(out.lives) if other.round), len(out.lives))
    out.lives.insert(at, life)
    changes = changes_of(profile, profile.attribution.groups if profile.attribution else [])
    out.notes.append(f"{side}: {budget_note(len(changes), lives)}")


def _available_gib() -> float | None:
    """MemAvailable of /proc/meminfo in GiB (None where there is none)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        return None
    return None


def _kv_cache_gib(profile: Profile, inherited: Mapping[str, str] | None = None) -> float:
    """The larger KV cache (GiB) of the two servers, as each will get it: its side's
    environment, else the one qgate inherits (`inherited`, default os.environ), else qgate's
    CPU default (qgate/runtime/command.py `apply_platform_defaults`)."""
    shell = os.environ if inherited is None else inherited
    sizes = []
    for role in ("reference", "candidate"):
        value = side_of(profile, role).env.get(CPU_KVCACHE_ENV) or shell.get(CPU_KVCACHE_ENV)
        try:
            sizes.append(float(value or CPU_KVCACHE_DEFAULT))
        except ValueError:  # vLLM refuses it at start-up and names it
            sizes.append(float(CPU_KVCACHE_DEFAULT))
    return max(sizes)


def plan(runs: RunSet, fingerprint: Fingerprint | None) -> Plan:
    """The run plan (qgate/run/plan.py): every life, decided before any starts; logged."""
    profiles = list(zip(runs.names, (c.profile for c in runs.candidates), strict=True))
    refresh = runs.reference.opts.refresh_reference
    out = plan_for(
        profiles, reference_cached(runs.reference, fingerprint), refresh, runs.reference.lives
    )
    for name, ctx in zip(runs.names, runs.candidates, strict=True):
        if attribution_wanted(ctx):  # --attribute, where the profile does not ask for it
            _attribution_life(out, name, ctx.profile)
    for line in describe(out):
        log.info("%s", line)
    for name, ctx in zip(runs.names, runs.candidates, strict=True):
        skipped = skipped_perf_line(ctx.profile, out.suites) if ctx.opts.skip_perf else None
        if skipped is not None:
            log.warning("%s: %s", name, skipped)
        elif (never := unshowable_envelope(ctx.profile)) is not None:
            log.warning("%s: %s", name, never)  # sized by defaults alone (validate refuses else)
    return out
