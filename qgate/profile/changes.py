"""A candidate's changes against its reference, and the profile with some of them applied.

Pure functions of the profile: `qgate run --attribute` tries sub-candidates built
with `sub_profile` (qgate/run/attribute.py), and `qgate verify` re-derives the
list of changes a report's attribution names.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from qgate.core.records import Record
from qgate.profile.engines import declared
from qgate.profile.model import EngineLaunch, Profile, RuntimeSpec

__all__ = ["Change", "changes_of", "machine_dtype", "raw_change_names", "sub_profile"]


class Change(Record):
    """One way the candidate differs from the reference (a group counts as one)."""

    name: str = Field(
        description="'args.kv_cache_dtype', 'env.X', 'emulate_weights', "
        "'engine', 'engine.launcher' (a start-up setting), or a group's names joined by '+'."
    )
    reference: str = Field(description="The reference's setting, as text ('-' when unset).")
    candidate: str = Field(description="The candidate's setting, as text ('-' when unset).")


_UNSET = object()

STARTUP = ("launcher", "command", "features", "host")
"""Start-up settings of a side's engine block that are changes when the sides differ in them
(besides its kind, arguments and environment); the port and the start-up timeout are where
and how long, not what is served."""


def _text(value: Any) -> str:
    return "-" if value is _UNSET or value is None else json.dumps(value, sort_keys=True)


def _effective(profile: Profile, role: str, field: str) -> dict[str, Any]:
    # keys as written, not side()'s snake_case: `sub_profile` writes a change back under its
    # key into the blocks that spelled it
    spec: RuntimeSpec = getattr(profile, role)
    return {**getattr(profile.engine_of(role), field), **getattr(spec, field)}


def machine_dtype(profile: Profile) -> bool:
    """Both sides' serving dtype is the machine's (`engine.cpu_dtype: auto`, a CPU target, each
    side an engine it applies to): the same on both, whatever the engine blocks say, so a
    top-level dtype that a side's own engine block lacks is no difference (issue 44: A/A)."""
    return (
        profile.engine.cpu_dtype == "auto"
        and profile.target.accelerator.lower() == "cpu"
        and all(
            declared(profile.engine_of(r).kind).takes_cpu_dtype for r in ("reference", "candidate")
        )
    )


def _raw_changes(profile: Profile) -> list[Change]:
    out: list[Change] = []
    alike = machine_dtype(profile)
    for field in ("args", "env"):
        ref, cand = _effective(profile, "reference", field), _effective(profile, "candidate", field)
        for key in sorted(ref.keys() | cand.keys()):
            if alike and field == "args" and key == "dtype":
                continue
            r, c = ref.get(key, _UNSET), cand.get(key, _UNSET)
            if r != c:
                out.append(Change(name=f"{field}.{key}", reference=_text(r), candidate=_text(c)))
    ref_w, cand_w = profile.reference.emulate_weights, profile.candidate.emulate_weights
    if ref_w != cand_w:
        out.append(
            Change(
                name="emulate_weights",
                reference=_text(ref_w and ref_w.model_dump(mode="json")),
                candidate=_text(cand_w and cand_w.model_dump(mode="json")),
            )
        )
    if profile.engine_of("reference").kind != profile.engine_of("candidate").kind:
        out.append(
            Change(
                name="engine",
                reference=profile.engine_of("reference").kind,
                candidate=profile.engine_of("candidate").kind,
            )
        )
    ref_e, cand_e = profile.engine_of("reference"), profile.engine_of("candidate")
    for key in STARTUP:
        r, c = getattr(ref_e, key), getattr(cand_e, key)
        if r != c:
            out.append(Change(name=f"engine.{key}", reference=_text(r), candidate=_text(c)))
    return out


def raw_change_names(profile: Profile) -> list[str]:
    """The names of the candidate's changes, one per setting (before any grouping)."""
    return [c.name for c in _raw_changes(profile)]


def changes_of(profile: Profile, groups: Sequence[Sequence[str]] = ()) -> list[Change]:
    """The candidate's changes against the reference; each group's members as one change."""
    raw = _raw_changes(profile)
    out: list[Change] = []
    taken: set[str] = set()
    for group in groups:
        members = [
            c
            for c in raw
            if c.name not in taken
            and any(fnmatch.fnmatchcase(c.name, pattern) for pattern in group)
        ]
        if members:
            taken |= {c.name for c in members}
            out.append(
                Change(
                    name="+".join(c.name for c in members),
                    reference="; ".join(c.reference for c in members),
                    candidate="; ".join(c.candidate for c in members),
                )
            )
    return out + [c for c in raw if c.name not in taken]


def sub_profile(profile: Profile, applied: Sequence[str]) -> Profile:
    """The reference's settings as a candidate, with the named changes of the candidate applied.

    A change named 'a+b' (a group) applies each member. Arguments and environment are set
    on the candidate side over the shared `engine` block, so what the reference overrides
    stays overridden unless the change is applied.
    """
    names = {member for name in applied for member in name.split("+")}
    spec = profile.candidate
    fields: dict[str, Any] = {}
    for field in ("args", "env"):
        own = dict(getattr(profile.reference, field))
        shared = getattr(profile.engine_of("candidate"), field)
        cand = _effective(profile, "candidate", field)
        for name in names:
            kind, _, key = name.partition(".")
            if kind != field:
                continue
            if key in cand:
                own[key] = cand[key]
            elif key in shared:  # the candidate's value is the shared one
                own[key] = shared[key]
            else:
                own.pop(key, None)
        fields[field] = own
    ref = profile.reference
    side = spec if "engine" in names else ref
    weights = (spec if "emulate_weights" in names else ref).emulate_weights
    engine = side.engine
    startup = {
        k: getattr(profile.engine_of("candidate"), k) for k in STARTUP if f"engine.{k}" in names
    }
    if startup and "engine" not in names:
        base = profile.engine_of("reference")
        kept = {k: getattr(base, k) for k in EngineLaunch.model_fields}
        engine = EngineLaunch.model_validate({**kept, **startup})
    candidate = RuntimeSpec(
        args=fields["args"],
        env=fields["env"],
        engine=engine,
        endpoint=side.endpoint,
        emulate_weights=weights,
    )
    # A trial keeps the reuse passes (quality.reuse): a failure that lives only in a pass
    # must fail the trials that hold its cause; the trial records hold the passes for verify.
    return profile.model_copy(update={"candidate": candidate, "attribution": None})
