"""Several candidates in one profile: `candidates:` instead of `candidate:`.

A multi profile is everything a profile is, with a mapping of named
candidates in place of the one candidate. It is expanded into one ordinary
single-candidate `Profile` per candidate (named `<profile>.<candidate>`), so
every stage, gate, record and verification of a single run is reused as it
is. The JSON form (what a multi report embeds) is the shared part once, with
`candidates: {name: {<runtime overrides>, required, description}}` where a
single profile has `candidate:`. Loading a file: qgate/profile_multi_loader.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from qgate.profile import Profile, RuntimeSpec

__all__ = [
    "CANDIDATE_NAME",
    "META_KEYS",
    "CandidateSpec",
    "MultiProfile",
    "NamedCandidate",
    "expand_json",
    "multi_from_json",
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


META_KEYS = ("required", "description")
"""The keys a `candidates:` entry has beyond a runtime's overrides."""


@dataclass(frozen=True)
class NamedCandidate:
    """One candidate of a multi profile and its expansion into a single-candidate profile."""

    name: str
    required: bool
    description: str
    profile: Profile


@dataclass(frozen=True)
class MultiProfile:
    """A profile with several named candidates, each expanded into a single `Profile`."""

    name: str
    candidates: list[NamedCandidate]

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
                    }
                    for c in self.candidates
                }
            else:
                out[key] = value
        return out


def sub_name(profile: str, candidate: str) -> str:
    """The name of one candidate's expanded profile."""
    return f"{profile}.{candidate}"


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
        out.append(
            NamedCandidate(name, meta.required, meta.description, Profile.model_validate(sub))
        )
    return MultiProfile(name=str(data.get("name")), candidates=out)
