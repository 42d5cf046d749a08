"""What each side's engine must serve for the profile's suites, checked at validate time.

A suite that NEEDS a feature the side's engine lacks is refused (exit 2)
with one line, e.g. `candidate.engine.kind: sglang does not serve
prompt_logprobs, which quality.divergence needs`. A check that only profits
from a feature (exact stream token counts, the prefix-cache hit rate) runs
without it and the report says "not available for ENGINE" (`feature_notes`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgate.core.features import FEATURES, Feature
from qgate.profile.base import snake_args
from qgate.profile.chat_templates import template_problem
from qgate.profile.engines import declared, engine_class, engine_kinds, unknown_engine_message
from qgate.profile.kv_tier import kv_tier_problems
from qgate.profile.side import side
from qgate.profile.suites import engine_args_needed, features_needed, features_used

if TYPE_CHECKING:
    from qgate.profile import EngineLaunch, Profile
    from qgate.profile.base import KeyPath

__all__ = [
    "PERF_PROFITS",
    "engine_block_notes",
    "engine_problems",
    "feature_notes",
    "starts_process",
]

ROLES = ("reference", "candidate")

# Perf checks that only profit from a feature: (feature, what is not available without it).
PERF_PROFITS: tuple[tuple[Feature, str], ...] = (
    ("token_ids", "exact stream token counts (the stream check counts chunks instead)"),
    ("engine_metrics", "prefix-cache hit rate and the other server counters"),
    (
        "cache_salt",
        "salted perf prompts (a prefix cache may serve KV that warm-ups, probes or earlier "
        "blocks wrote)",
    ),
)


def starts_process(kind: str) -> bool:
    """Whether qgate starts a server process for this kind (and needs the checkpoint)."""
    return kind in engine_kinds() and engine_class(kind).starts_process


def _where(profile: Profile, role: str) -> KeyPath:
    return (role, "engine") if getattr(profile, role).engine is not None else ("engine",)


def served(launch: EngineLaunch) -> frozenset[Feature]:
    """The features an engine block's server serves."""
    return engine_class(launch.kind).served_features(launch)


def engine_problems(profile: Profile) -> list[tuple[KeyPath, str]]:
    """Each side's engine block problems, and suites that need what its engine lacks."""
    found: list[tuple[KeyPath, str]] = []
    for role in ROLES:
        launch = profile.engine_of(role)
        where = _where(profile, role)
        if launch.kind not in engine_kinds():  # the registry, not the schema, knows the kinds
            found.append(((*where, "kind"), unknown_engine_message(launch.kind)))
            continue
        engine = engine_class(launch.kind)
        packaged = engine.package_issues(launch, profile.target.accelerator)
        for path, message in [*engine.spec_issues(launch), *packaged]:
            found.append(((*where, *path), message))
        named = getattr(profile, role).endpoint is not None
        if engine.takes_endpoint != named:
            need = "required" if engine.takes_endpoint else "only valid"
            found.append(((role, "endpoint"), f"{need} when engine.kind is 'endpoint'"))
        have = served(launch)
        for suite, needs in features_needed(profile.quality).items():
            for feature in (f for f in FEATURES if f in needs):
                if feature not in have:
                    found.append(
                        (
                            (*where, "kind"),
                            f"{launch.kind} does not serve {feature}, which quality.{suite} needs",
                        )
                    )
    found += _engine_arg_problems(profile)
    found += kv_tier_problems(profile)  # a KV tier that outlives a life or is shared
    unique: list[tuple[KeyPath, str]] = []
    for item in found:
        if item not in unique:
            unique.append(item)
    return unique


def feature_notes(profile: Profile) -> list[str]:
    """One note per side and suite or perf check that runs without a feature its engine lacks."""
    notes: list[str] = []
    for role in ROLES:
        launch = profile.engine_of(role)
        if launch.kind not in engine_kinds():
            continue
        have = served(launch)
        for suite, uses in features_used(profile.quality).items():
            for feature in (f for f in FEATURES if f in uses - have):
                notes.append(
                    f"{role}: quality.{suite}: exact token sizes not available for "
                    f"{launch.kind} (it does not serve {feature}; sized from characters)"
                )
        if profile.perf is None:
            continue
        for feature, what in PERF_PROFITS:
            if feature not in have:
                notes.append(
                    f"{role}: {what}: not available for {launch.kind} (it does not serve {feature})"
                )
    return notes


def engine_block_notes(profile: Profile, name: str | None = None) -> list[str]:
    """One note per side whose own `engine` block leaves out arguments or environment of the
    top-level block: a side's block replaces the top-level one, nothing is inherited, so a side
    written only to change its launcher serves without them (the other side with them). Only
    where the side's block is of the same engine kind and command as the top-level one: another
    engine or command takes flags of its own. The candidate is called `name` where given (a
    multi-candidate run)."""
    notes: list[str] = []
    top = profile.engine
    for role in ROLES:
        own = getattr(profile, role).engine
        if own is None or own.kind != top.kind or own.command != top.command:
            continue
        this = side(profile, role)
        args = sorted(k for k in snake_args(top.args) if k not in this.args)
        env = sorted(k for k in top.env if k not in this.env)
        left = [f"args {', '.join(args)}"] * bool(args) + [f"env {', '.join(env)}"] * bool(env)
        if left:
            who, block = role, f"{role}.engine"
            if role == "candidate" and name:
                who, block = name, f"candidates.{name}.engine"
            notes.append(
                f"{who}: its own engine block replaces the top-level one, which it does not "
                f"inherit: {'; '.join(left)} not set on this side (repeat them under "
                f"{block} if meant)"
            )
    return notes


def _engine_arg_problems(profile: Profile) -> list[tuple[KeyPath, str]]:
    """Engine args a configured suite needs that a side qgate starts as vLLM lacks."""

    needed = engine_args_needed(profile.quality)
    found: list[tuple[KeyPath, str]] = []
    for role in ROLES:
        if not declared(profile.engine_of(role).kind).takes_vllm_args:
            continue  # an endpoint's or another engine's flags are not ours to read
        this = side(profile, role)
        have = this.args
        template = have.get("chat_template")
        where = this.arg_path("chat_template")
        problem = template_problem(template) if isinstance(template, str) else None
        if problem and where:
            found.append((where, problem))
        for suite, args in needed.items():
            for arg, why in args:
                if have.get(arg) in (None, False):
                    found.append(
                        ((role, "args", arg), f"quality.{suite} needs engine arg {arg}: {why}")
                    )
    return found
