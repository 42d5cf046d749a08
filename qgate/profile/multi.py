"""Several candidates in one profile: `candidates:` instead of `candidate:`.

A multi profile is everything a profile is, with a mapping of named
candidates in place of the one candidate. It is expanded into one ordinary
single-candidate `Profile` per candidate (named `<profile>.<candidate>`), so
every stage, gate, record and verification of a single run is reused as it
is. The JSON form (what a multi report embeds) is the shared part once, with
`candidates: {name: {<runtime overrides>, required, description}}` where a
single profile has `candidate:`. Loading a file: qgate/profile/load_multi.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from qgate.profile import Profile, RuntimeSpec
from qgate.profile.perf import PerfGate

__all__ = [
    "CANDIDATE_NAME",
    "META_KEYS",
    "CandidateSpec",
    "MultiProfile",
    "NamedCandidate",
    "expand_json",
    "multi_from_json",
    "json_gates",
    "own_gates",
    "shared_gates",
]

CANDIDATE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A candidate's name: also a folder name in the run folder and part of the profile name."""


class CandidateSpec(RuntimeSpec):
    """One entry of `candidates:` (given instead of `candidate:`; name -> this mapping).

    Every candidate is gated against the same reference results, and its perf
    (when its gates pass) is compared with the same reference baseline.
    """

    required: bool = Field(
        default=True,
        description="A failing required candidate fails the run (exit 1); a failing optional "
        "one is listed in the report and does not.",
    )
    description: str = Field(default="", description="Free text for people.")
    perf_gates: list[PerfGate] | None = Field(
        default=None,
        description="This candidate's speed gates, in place of `perf.gates` (a gate that suits "
        "a serving-policy candidate can be noise for a precision one); needs `perf`.",
    )


META_KEYS = ("required", "description", "perf_gates")
"""The keys a `candidates:` entry has beyond a runtime's overrides."""


@dataclass(frozen=True)
class NamedCandidate:
    """One candidate of a multi profile and its expansion into a single-candidate profile."""

    name: str
    required: bool
    description: str
    profile: Profile
    perf_gates: list[dict[str, Any]] | None = None
    """The candidate's own speed gates (JSON form), or None for the shared `perf.gates`."""


@dataclass(frozen=True)
class MultiProfile:
    """A profile with several named candidates, each expanded into a single `Profile`."""

    name: str
    candidates: list[NamedCandidate]
    shared_gates: list[dict[str, Any]] | None = None
    """`perf.gates` as written (JSON form), for candidates without their own."""

    def to_json(self) -> dict[str, Any]:
        """The JSON form: the shared part once, the candidates where `candidate` would be."""
        first = self.candidates[0].profile.model_dump(mode="json")
        out: dict[str, Any] = {}
        for key, value in first.items():
            if key == "name":
                out[key] = self.name
            elif key == "candidate":
                out["candidates"] = {
                    c.name: {
                        **c.profile.candidate.model_dump(mode="json"),
                        "required": c.required,
                        "description": c.description,
                        **({"perf_gates": c.perf_gates} if c.perf_gates is not None else {}),
                    }
                    for c in self.candidates
                }
            elif key == "perf" and isinstance(value, dict) and self.shared_gates is not None:
                out[key] = {**value, "gates": self.shared_gates}
            else:
                out[key] = value
        return out


def sub_name(profile: str, candidate: str) -> str:
    """The name of one candidate's expanded profile."""
    return f"{profile}.{candidate}"


def own_gates(spec: Any) -> Any:
    """A `candidates:` entry's own speed gates (as written), or None."""
    return spec.get("perf_gates") if isinstance(spec, dict) else None


def shared_gates(data: dict[str, Any]) -> list[dict[str, Any]] | None:
    """`perf.gates` of a multi profile's JSON form, or None without a perf section."""
    perf = data.get("perf")
    return list(perf.get("gates", [])) if isinstance(perf, dict) else None


def expand_json(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Candidate name -> the single profile's data (same key order, `candidate` in place)."""
    candidates = data.get("candidates")
    if not isinstance(candidates, dict):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name, spec in candidates.items():
        sub: dict[str, Any] = {}
        for key, value in data.items():
            if key == "name":
                sub[key] = sub_name(str(value), str(name))
            elif key == "candidates":
                sub["candidate"] = (
                    {k: v for k, v in spec.items() if k not in META_KEYS}
                    if isinstance(spec, dict)
                    else spec
                )
            elif key == "perf" and isinstance(value, dict) and own_gates(spec) is not None:
                sub[key] = {**value, "gates": own_gates(spec)}
            else:
                sub[key] = value
        out[str(name)] = sub
    return out


def multi_from_json(data: dict[str, Any]) -> MultiProfile:
    """The multi profile of a JSON form (a report's); pydantic's ValidationError or ValueError."""
    entries = data.get("candidates")
    if not isinstance(entries, dict) or not entries or "candidate" in data:
        raise ValueError("a multi profile has a non-empty `candidates` mapping and no `candidate`")
    out = []
    for name, sub in expand_json(data).items():
        meta = CandidateSpec.model_validate(entries[name])
        profile = Profile.model_validate(sub)
        gates = None
        if meta.perf_gates is not None and profile.perf is not None:
            gates = [g.model_dump(mode="json") for g in profile.perf.gates]
        out.append(NamedCandidate(name, meta.required, meta.description, profile, gates))
    return MultiProfile(str(data.get("name")), out, json_gates(data))


def json_gates(data: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The shared gates in the form a validated profile dumps them (defaults filled)."""
    gates = shared_gates(data)
    if gates is None:
        return None
    return [PerfGate.model_validate(g).model_dump(mode="json") for g in gates]
