"""Reading a profile file into a `Profile`, with every problem reported for people.

Each problem becomes one line `FILE:LINE KEY.PATH: message`. Pydantic's
error locations are mapped back to the YAML lines recorded by
`qgate.core.yamlload`; unknown keys get a "did you mean" from the model's field
names; pydantic's wording is trimmed to plain English (no URLs, no
"Value error,"). The checks that the schema alone words badly (engine
argument values, file-level trouble) are done here first.
"""

from __future__ import annotations

import difflib
import os
import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from qgate.core.files import sha256_bytes, sha256_file
from qgate.core.yamlload import KeyPath, YamlDocument, YamlSyntaxError, load_yaml, tab_problems
from qgate.profile import KeyIssue, Profile
from qgate.profile.checks import ARG_BLOCKS, file_problems, profile_problems, raw_problems
from qgate.profile.detect import DropRule
from qgate.profile.files import path_problems
from qgate.profile.files import resolve_paths as resolve_paths
from qgate.profile.problems import Problem as Problem
from qgate.profile.problems import format_path as format_path
from qgate.profile.problems import in_file
from qgate.profile.problems import profile_error as profile_error
from qgate.profile.scalars import ambiguous_problems, foreign_digit_problems

ENGINE_ARG_BLOCKS: tuple[KeyPath, ...] = ARG_BLOCKS


@dataclass(frozen=True)
class LoadedProfile:
    """A validated profile and the exact file it came from."""

    profile: Profile
    path: Path
    """Absolute path of the file."""
    sha256: str
    """sha256 (hex) of the bytes that were parsed; the report's subject digest."""
    raw_text: str
    """The text that was parsed."""


def profile_sha256(path: str | Path) -> str:
    """sha256 (hex) of a profile file's bytes, as `load_profile_file` records it."""
    return sha256_file(path)


MAX_PROFILE_BYTES = 1 << 20
"""A profile is a few kilobytes; reading more (say /dev/zero) would only exhaust memory."""


def read_profile_bytes(path: Path, shown: str) -> bytes:
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_PROFILE_BYTES + 1)
        if len(raw) <= MAX_PROFILE_BYTES:
            return raw
        message = "larger than 1 MiB; a profile is a few kilobytes of YAML"
    except IsADirectoryError:
        message = "is a directory, not a profile file"
    except FileNotFoundError:
        message = "broken symbolic link" if path.is_symlink() else "no such file"
    except PermissionError:
        message = "cannot read the file (permission denied)"
    except OSError as exc:
        message = f"cannot read the file ({exc.strerror or exc})"
    raise profile_error(shown, [Problem(None, (), message)])


def decode_text(raw: bytes, shown: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        byte = raw[exc.start]
        raise profile_error(
            shown, [Problem(line, (), f"not UTF-8 text (byte 0x{byte:02x}); save it as UTF-8")]
        ) from None


def _scalar_problem(value: Any) -> str | None:
    if value is None or isinstance(value, str | int | float | bool):
        return None
    if isinstance(value, dict):
        return (
            "must be a scalar or a list of scalars, not a mapping "
            """(pass nested settings as a JSON string, e.g. '{"level": 0}')"""
        )
    if isinstance(value, list):
        return "must be a scalar or a list of scalars, not a nested list"
    return f"must be a scalar or a list of scalars; YAML read a {type(value).__name__}, quote it"


def _engine_arg_problems(data: dict[Any, Any]) -> list[tuple[KeyPath, str]]:
    """Engine args are a free mapping, but only of values a command line can carry."""
    found: list[tuple[KeyPath, str]] = []
    for block in ENGINE_ARG_BLOCKS:
        args: Any = data
        for key in block:
            args = args.get(key) if isinstance(args, dict) else None
        if not isinstance(args, dict):
            continue
        for key, value in args.items():
            if isinstance(value, list):
                for index, item in enumerate(value):
                    message = None if item is not None else "list items must not be null"
                    message = message or _scalar_problem(item)
                    if message:
                        found.append(((*block, key, index), message))
            else:
                message = _scalar_problem(value)
                if message:
                    found.append(((*block, key), message))
    return found


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = get_origin(annotation)
    if origin is Annotated:
        return _models_in(get_args(annotation)[0])
    if origin in (Union, types.UnionType, list, dict, tuple):
        return [m for arg in get_args(annotation) for m in _models_in(arg)]
    return []


def _kind_tags(model: type[BaseModel]) -> tuple[Any, ...]:
    field = model.model_fields.get("kind")
    if field is None or get_origin(field.annotation) is not Literal:
        return ()
    return get_args(field.annotation)


def _field_names_at(loc: tuple[Any, ...]) -> list[str]:
    """Field names of the model(s) that a pydantic location points into."""
    models: list[type[BaseModel]] = [Profile]
    for part in loc:
        if not isinstance(part, str):
            continue
        owners = [m for m in models if part in m.model_fields]
        if owners:
            models = [x for m in owners for x in _models_in(m.model_fields[part].annotation)]
            continue
        tagged = [m for m in models if part in _kind_tags(m)]
        if tagged:
            models = tagged
    return sorted({name for m in models for name in m.model_fields})


def _data_path(data: Any, loc: tuple[Any, ...]) -> tuple[KeyPath, bool]:
    """Map a pydantic location to a path in the data; True if union branch names were skipped."""
    path: list[Any] = []
    skipped = False
    node = data
    for part in loc:
        in_dict = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_dict or in_list:
            node = node[part]
            path.append(part)
        else:
            skipped = True
    return tuple(path), skipped


def _did_you_mean(word: Any, choices: list[str]) -> str | None:
    match = difflib.get_close_matches(str(word), choices, n=1, cutoff=0.6)
    return f"did you mean {match[0]!r}?" if match else None


def _show(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


_PHRASES: tuple[tuple[str, str], ...] = (
    (r"^(Value error|Assertion failed), ", ""),
    (r"^Field required$", "required key is missing"),
    (r"^Input should be ", "must be "),
    (r"a valid dictionary( or instance of \w+)?", "a mapping"),
    (r"^List should have at least (\d+) items? after .*", r"must list at least \1 item(s)"),
    (r"^List should have at most (\d+) items? after .*", r"must list at most \1 item(s)"),
    (r"^String should have at least 1 character$", "must not be empty"),
    (r"^String should have at least (\d+) characters$", r"must have at least \1 characters"),
)


def _human(error: dict[str, Any]) -> str:
    message = str(error["msg"])
    for pattern, replacement in _PHRASES:
        message = re.sub(pattern, replacement, message)
    value = error.get("input")
    shows_value = error["type"] not in ("missing", "value_error", "union_tag_invalid")
    if error["type"] == "string_type" and isinstance(value, int | float | bool):
        return f'{message}; quote it, e.g. "{value}"'
    if error["type"] == "literal_error" and isinstance(value, str):
        expected = re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected", "")))
        hint = _did_you_mean(value, expected)
        return f"{message} (got {_show(value)}" + (f"; {hint})" if hint else ")")
    if shows_value and (value is None or isinstance(value, str | int | float | bool)):
        return f"{message} (got {_show(value)})"
    return message


def _problems_from(exc: ValidationError, doc: YamlDocument, skip: list[KeyPath]) -> list[Problem]:
    problems: list[Problem] = []
    grouped: dict[KeyPath, list[dict[str, Any]]] = {}
    errors: list[dict[str, Any]] = [dict(e) for e in exc.errors(include_url=False)]
    for error in errors:
        loc = tuple(error["loc"])
        kind = error["type"]
        if kind == "missing":
            path = (*_data_path(doc.data, loc[:-1])[0], loc[-1])
            skipped = False
        else:
            path, skipped = _data_path(doc.data, loc)
        if any(path[: len(s)] == s for s in skip):
            continue
        line = doc.line_of(path)
        if kind == "missing":
            problems.append(Problem(line, path, _human(error), missing=True))
        elif "[key]" in loc:
            problems.append(Problem(line, path, "keys here must be strings"))
        elif kind == "extra_forbidden":
            hint = _did_you_mean(loc[-1], _field_names_at(loc[:-1]))
            names = ", ".join(_field_names_at(loc[:-1]))
            hint = hint or f"expected one of: {names}"
            problems.append(Problem(line, path, f"unknown key; {hint}"))
        elif kind == "union_tag_invalid":
            tag = error.get("ctx", {}).get("tag")
            expected = re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected_tags", "")))
            hint = _did_you_mean(tag, expected) or "expected one of: " + ", ".join(expected)
            kind_path = (*path, "kind")
            problems.append(
                Problem(doc.line_of(kind_path), kind_path, f"unknown scenario kind {tag!r}; {hint}")
            )
        elif kind == "value_error" and isinstance(error.get("ctx", {}).get("error"), KeyIssue):
            for rel, message in error["ctx"]["error"].issues:
                full = (*path, *rel)
                problems.append(Problem(doc.line_of(full), full, message))
        elif skipped:
            grouped.setdefault(path, []).append(error)
        else:
            problems.append(Problem(line, path, _human(error)))
    for path, branches in grouped.items():
        if len(branches) == 1:
            problems.append(Problem(doc.line_of(path), path, _human(branches[0])))
            continue
        # One value failed every branch of a union: say what would have been accepted.
        wanted = []
        for error in branches:
            text = _human({**error, "input": ...}).split(",")[0].removeprefix("must be ")
            if text not in wanted:
                wanted.append(text)
        value = branches[0].get("input")
        got = f" (got {_show(value)})" if isinstance(value, str | int | float | bool) else ""
        problems.append(Problem(doc.line_of(path), path, f"must be {' or '.join(wanted)}{got}"))
    return problems


def parse_profile_text(
    text: str,
    shown: str,
    folder: Path,
    check_files: bool = True,
    doc: YamlDocument | None = None,
    rule: DropRule | None = None,
) -> Profile:
    """Validate profile text; `shown` names the file in messages, `folder` anchors paths.

    With `check_files`, every local file and folder the profile names must exist; `doc` is
    the text's document when the caller read it already (`read_document`); `rule`: the
    `rule` of every policy that writes none, where not today's default (verify reading the
    file of a report that ran before the default changed).
    """
    doc = doc or read_document(text, shown)
    profile, problems = doc_problems(doc, folder, check_files, rule)
    if problems or profile is None:
        written = [in_file(p, doc.lines) for p in problems]
        raise profile_error(shown, written or [Problem(None, (), "invalid profile")])
    return profile


def read_document(text: str, shown: str) -> YamlDocument:
    """The YAML mapping of a profile's text (tabs, syntax, empty or non-mapping: ProfileError)."""
    tabs = tab_problems(text)
    if tabs:
        raise profile_error(shown, [Problem(t.line, t.path, t.message) for t in tabs])
    try:
        doc = load_yaml(text)
    except YamlSyntaxError as exc:
        raise profile_error(shown, [Problem(exc.line, exc.path, exc.message)]) from None
    if doc.data is None:
        raise profile_error(
            shown,
            [Problem(1, (), "empty profile; expected keys such as name, model, quality")],
        )
    if not isinstance(doc.data, dict):
        found = "a list" if isinstance(doc.data, list) else f"a {type(doc.data).__name__}"
        message = f"a profile must be a mapping of keys, not {found}"
        raise profile_error(shown, [Problem(doc.line_of(()), (), message)])
    return doc


def doc_problems(
    doc: YamlDocument, at: Path, files: bool, rule: DropRule | None = None
) -> tuple[Profile | None, list[Problem]]:
    """The profile of one YAML mapping (paths resolved against `at`) and every problem in it."""
    problems = [Problem(p.line, p.path, p.message) for p in doc.problems]
    ambiguous = ambiguous_problems(doc.ambiguous)
    problems += [Problem(line, path, message) for line, path, message in ambiguous]
    arg_problems = _engine_arg_problems(doc.data)
    problems += [Problem(doc.line_of(path), path, message) for path, message in arg_problems]
    raw = raw_problems(doc.data) + foreign_digit_problems(doc.data)
    problems += [Problem(doc.line_of(path), path, message) for path, message in raw]
    profile: Profile | None = None
    try:
        profile = Profile.model_validate(doc.data, context=None if rule is None else {"rule": rule})
    except ValidationError as exc:
        # A bad engine arg is reported once, by the check above, not per union branch.
        skip = [path[:-1] if isinstance(path[-1], int) else path for path, _ in arg_problems]
        skip += [path for path, _ in raw]
        skip += [path for _, path, _ in ambiguous]
        problems += _problems_from(exc, doc, skip)
    if profile is not None:
        where = path_problems(profile, at)
        problems += [Problem(doc.line_of(path), path, message) for path, message in where]
        resolve_paths(profile, at)
        checks = profile_problems(profile) + (file_problems(profile) if files else [])
        problems += [Problem(doc.line_of(path), path, message) for path, message in checks]
    return profile, problems


def load_profile_file(
    path: str | Path, check_files: bool = True, rule: DropRule | None = None
) -> LoadedProfile:
    """Read, validate and resolve a profile file; raise ProfileError listing every problem.

    `check_files=False` skips the checks of local files (model, data sets,
    traces...), for a profile meant for another machine; `rule`: as `parse_profile_text`.
    """
    shown = str(path)
    file = Path(path)
    raw = read_profile_bytes(file, shown)
    text = decode_text(raw, shown)
    absolute = Path(os.path.normpath(file.absolute()))
    profile = parse_profile_text(text, shown, absolute.parent, check_files, rule=rule)
    return LoadedProfile(profile=profile, path=absolute, sha256=sha256_bytes(raw), raw_text=text)


def load_profile(path: str | Path, check_files: bool = True) -> Profile:
    """Load and validate a profile file; raise ProfileError listing every problem.

    Each problem is one line `FILE:LINE KEY.PATH: message`. Relative paths in
    the profile are resolved against the profile file's folder. Use
    `load_profile_file` to also get the absolute path, the sha256 of the exact
    bytes read and the text.
    """
    return load_profile_file(path, check_files).profile
