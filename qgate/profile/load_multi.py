"""Reading a profile file that may name several candidates (`candidates:`).

Exactly one of `candidate:` and `candidates:` is given. A file with
`candidate:` loads exactly as before (qgate/profile/load.py). A file with
`candidates:` is expanded into one single-candidate document per candidate
and each is validated by the very same code; problems in a candidate's
entry are reported at `candidates.NAME...` with its line, problems of the
shared part once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from qgate.core.files import sha256_bytes
from qgate.core.yamlload import KeyPath, YamlDocument
from qgate.errors import ProfileError
from qgate.profile import Profile
from qgate.profile.detect import DropRule
from qgate.profile.load import (
    LoadedProfile,
    Problem,
    decode_text,
    doc_problems,
    parse_profile_text,
    profile_error,
    read_document,
    read_profile_bytes,
)
from qgate.profile.multi import (
    CANDIDATE_NAME,
    META_KEYS,
    MultiProfile,
    NamedCandidate,
    expand_json,
    json_gates,
    own_gates,
)
from qgate.profile.problems import in_file

__all__ = [
    "LoadedMulti",
    "first_profile",
    "load_any_profile_file",
    "load_multi_file",
    "parse_multi_text",
]


@dataclass(frozen=True)
class LoadedMulti:
    """A validated multi profile and the exact file it came from."""

    multi: MultiProfile
    path: Path
    sha256: str
    raw_text: str


_OWN: KeyPath = ("perf", "gates")


def _sub_document(doc: YamlDocument, name: str, data: dict[str, Any]) -> YamlDocument:
    """One candidate's expansion, with the lines of `candidates.NAME` as `candidate`.

    A candidate's own `perf_gates` stand where `perf.gates` would.
    """
    own = own_gates(doc.data["candidates"].get(name)) is not None

    def moved(path: KeyPath) -> KeyPath | None:
        if path[:3] == ("candidates", name, "perf_gates"):
            return (*_OWN, *path[3:])
        if path[:2] == ("candidates", name):
            return ("candidate", *path[2:])
        if (own and path[:2] == _OWN) or (path and path[0] == "candidates"):
            return None
        return path

    lines: dict[KeyPath, int] = {}
    for path, line in doc.lines.items():
        if (where := moved(path)) is not None:
            lines[where] = line
    lines.setdefault(("candidate",), doc.lines.get(("candidates",), 1))
    ambiguous = [
        replace(a, path=where) for a in doc.ambiguous if (where := moved(a.path)) is not None
    ]
    return YamlDocument(data=data, lines=lines, ambiguous=ambiguous)


def _in_file(problem: Problem, name: str, own: bool) -> Problem:
    path = problem.path
    if path[:1] == ("candidate",):
        path = ("candidates", name, *path[1:])
    elif own and path[:2] == _OWN:
        path = ("candidates", name, "perf_gates", *path[2:])
    return replace(problem, path=path)


def _meta_problems(doc: YamlDocument, name: str, spec: dict[Any, Any]) -> list[Problem]:
    out = []
    ambiguous = {a.path for a in doc.ambiguous}  # `required: yes`: reported once, as such
    for key, kind in zip(META_KEYS, (bool, str, list), strict=True):
        path: KeyPath = ("candidates", name, key)
        if key in spec and not isinstance(spec[key], kind) and path not in ambiguous:
            out.append(Problem(doc.line_of(path), path, f"must be {kind.__name__}"))
    if "perf_gates" in spec and not isinstance(doc.data.get("perf"), dict):
        path = ("candidates", name, "perf_gates")
        out.append(Problem(doc.line_of(path), path, "speed gates need a perf section"))
    return out


def _shape_problems(doc: YamlDocument) -> list[Problem]:
    data = doc.data
    both = "candidate" in data and "candidates" in data
    if both:
        return [
            Problem(
                doc.line_of(("candidates",)),
                ("candidates",),
                "give only one of 'candidate' and 'candidates'",
            )
        ]
    entries = data.get("candidates")
    if not isinstance(entries, dict) or not entries:
        return [
            Problem(
                doc.line_of(("candidates",)),
                ("candidates",),
                "must map at least one candidate name to its settings",
            )
        ]
    out = []
    folded: dict[str, str] = {}
    for name, spec in entries.items():
        path: KeyPath = ("candidates", name)
        other = folded.setdefault(name.casefold(), name) if isinstance(name, str) else name
        if other != name:
            message = f"differs from candidate {other!r} only in case; names are folders"
            out.append(Problem(doc.line_of(path), path, message))
        elif not isinstance(name, str) or not CANDIDATE_NAME.fullmatch(name):
            out.append(
                Problem(
                    doc.line_of(path),
                    path,
                    "candidate names are 1-64 letters, "
                    "digits, '_', '.' or '-', starting with a letter or digit",
                )
            )
        elif not isinstance(spec, dict):
            out.append(Problem(doc.line_of(path), path, "must be a mapping (use {} for none)"))
        else:
            out += _meta_problems(doc, name, spec)
    if not out and not any(s.get("required", True) for s in entries.values()):
        out.append(
            Problem(
                doc.line_of(("candidates",)),
                ("candidates",),
                "at least one candidate must be required (else no run could fail)",
            )
        )
    return out


def parse_multi_text(
    text: str,
    shown: str,
    folder: Path,
    check_files: bool = True,
    doc: YamlDocument | None = None,
    rule: DropRule | None = None,
) -> MultiProfile:
    """Validate the text of a profile with `candidates:`; ProfileError listing every problem
    (`rule`: as `parse_profile_text`'s)."""
    doc = doc or read_document(text, shown)
    problems = [Problem(p.line, p.path, p.message) for p in doc.problems]
    problems += _shape_problems(doc)
    entries = doc.data.get("candidates")
    if not isinstance(entries, dict) or not entries or "candidate" in doc.data:
        raise profile_error(shown, problems)
    candidates: list[NamedCandidate] = []
    seen: set[str] = set()
    for name, data in expand_json(doc.data).items():
        if not CANDIDATE_NAME.fullmatch(name) or not isinstance(entries.get(name), dict):
            continue  # reported by _shape_problems
        own = own_gates(entries[name]) is not None
        profile, found = doc_problems(_sub_document(doc, name, data), folder, check_files, rule)
        for problem in (_in_file(p, name, own) for p in found):
            key = f"{problem.line} {problem.path} {problem.message}"
            if key not in seen:  # a problem of the shared part shows once, not per candidate
                seen.add(key)
                problems.append(problem)
        if profile is not None:
            spec = entries[name]
            gates = None
            if own and profile.perf is not None:
                gates = [g.model_dump(mode="json") for g in profile.perf.gates]
            candidates.append(
                NamedCandidate(
                    name,
                    bool(spec.get("required", True)),
                    str(spec.get("description", "")),
                    profile,
                    gates,
                )
            )
    shared = None
    try:
        shared = json_gates(doc.data)
    except (ValidationError, TypeError, AttributeError):
        if not problems:  # a candidate that uses them reports where; else say it here
            problems.append(Problem(doc.line_of(_OWN), _OWN, "invalid speed gates"))
    if problems:
        raise profile_error(shown, [in_file(p, doc.lines) for p in problems])
    return MultiProfile(str(doc.data["name"]), candidates, shared)


def _load(
    path: str | Path, check_files: bool, rule: DropRule | None = None
) -> LoadedProfile | LoadedMulti:
    shown = str(path)
    file = Path(path)
    raw = read_profile_bytes(file, shown)
    text = decode_text(raw, shown)
    absolute = Path(os.path.normpath(file.absolute()))
    doc = read_document(text, shown)  # read once: PyYAML reads about 10,000 values a second
    if "candidates" in doc.data:
        multi = parse_multi_text(text, shown, absolute.parent, check_files, doc, rule)
        return LoadedMulti(multi=multi, path=absolute, sha256=sha256_bytes(raw), raw_text=text)
    profile = parse_profile_text(text, shown, absolute.parent, check_files, doc, rule)
    return LoadedProfile(profile=profile, path=absolute, sha256=sha256_bytes(raw), raw_text=text)


def load_any_profile_file(
    path: str | Path, check_files: bool = True
) -> LoadedProfile | LoadedMulti:
    """A profile file with one candidate (LoadedProfile) or several (LoadedMulti)."""
    return _load(path, check_files)


def load_multi_file(
    path: str | Path, check_files: bool = True, rule: DropRule | None = None
) -> LoadedMulti:
    """A profile file that must name several candidates (`rule`: as `parse_profile_text`'s)."""
    loaded = _load(path, check_files, rule)
    if not isinstance(loaded, LoadedMulti):
        raise ProfileError(
            f"invalid profile {path}", [f"{path}: has one `candidate:`, expected `candidates:`"]
        )
    return loaded


def first_profile(loaded: LoadedProfile | LoadedMulti) -> Profile:
    """The profile itself, or a multi profile's first candidate's (the shared keys are one)."""
    if isinstance(loaded, LoadedMulti):
        return loaded.multi.candidates[0].profile
    return loaded.profile
