"""The local files and folders a profile names: where each may lie, and whether it can be read.

Every `Path` key of the schema is listed in `PATH_KEYS` (a unit test walks the schema and
fails on one that is not), so a key added later is resolved and checked like the rest:

- `path_problems`, on the paths as written: a relative path is read from the profile's
  folder and must stay inside that folder or the project it lives in (the nearest folder
  above it that holds `.git` or `pyproject.toml`), or in qgate's own `evals/`; `..` that
  climbs out of them is refused. A file elsewhere is named by an absolute path (or `~/`),
  which says so openly.
- `resolve_paths`: every relative path made absolute against the profile's folder.
- `file_problems`, on the resolved paths: each exists, is a folder or a regular file as
  its key needs (never a device or a pipe that a read would hang on), can be read, is no
  larger than its key allows, and its data (JSONL lines, calibration JSON) reads as its
  stage would read it; so is each side's `chat_template` file (qgate/profile/chat_templates.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from qgate.core.jsonl_checks import MATH_ITEM, TRACE_LINE, JsonlShape, corpus_prompt, jsonl_problem
from qgate.core.yamlload import KeyPath
from qgate.profile import (
    Calibration,
    DivergenceSuite,
    EngineLaunch,
    LmEvalTask,
    MathSuite,
    ModelSpec,
    Profile,
    SigningSpec,
    TraceScenario,
)
from qgate.profile.chat_templates import template_file, template_problem
from qgate.profile.engine_checks import starts_process
from qgate.profile.engines import declared
from qgate.profile.side import side

__all__ = ["PATH_KEYS", "PathKey", "file_problems", "path_problems", "resolve_paths"]

Found = list[tuple[KeyPath, str]]
MiB = 1 << 20


@dataclass(frozen=True)
class PathKey:
    """What one `Path` key names: a folder, or a file of at most `max_bytes` read by `data`."""

    folder: bool
    max_bytes: int = 0
    data: Callable[[Any, Path], str | None] | None = None
    """The first problem of the file's contents as its stage reads them (the owning model)."""


def _jsonl(shape: Callable[[Any], JsonlShape]) -> Callable[[Any, Path], str | None]:
    return lambda owner, path: jsonl_problem(path, shape(owner))


def _calibration(_: Any, path: Path) -> str | None:
    """The calibration file's outline (qgate/quality/calibrate.py reads the rest)."""
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, RecursionError) as exc:
        return f"not a qgate calibration file: not JSON ({str(exc)[:80]})"
    except OSError as exc:
        return f"cannot read the calibration records ({exc.strerror or exc})"
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        return "not a qgate calibration file (no 'items' list); write one with `qgate calibrate`"
    if "calibration_version" not in data:
        return "not a qgate calibration file (no 'calibration_version')"
    return None


PATH_KEYS: dict[tuple[type[BaseModel], str], PathKey] = {
    (ModelSpec, "path"): PathKey(folder=True),
    (ModelSpec, "tokenizer"): PathKey(folder=True),
    (MathSuite, "set"): PathKey(False, 256 * MiB, _jsonl(lambda _: MATH_ITEM)),
    (Calibration, "records"): PathKey(False, 64 * MiB, _calibration),
    (DivergenceSuite, "corpus"): PathKey(
        False, 256 * MiB, _jsonl(lambda d: corpus_prompt(d.sequences))
    ),
    (LmEvalTask, "include_path"): PathKey(folder=True),
    (TraceScenario, "path"): PathKey(False, 1024 * MiB, _jsonl(lambda _: TRACE_LINE)),
    (SigningSpec, "key"): PathKey(False, MiB),
}
"""(model, field) -> what it names, for every `Path` key of the schema."""


def _path_values(model: BaseModel, path: KeyPath = ()) -> Iterator[tuple[KeyPath, BaseModel, str]]:
    """(key path, owning model, field) of every set `Path` key, in every model."""
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, Path):
            yield (*path, name), model, name
        children = enumerate(value) if isinstance(value, list) else [(None, value)]
        for index, child in children:
            if isinstance(child, BaseModel):
                where = (*path, name) if index is None else (*path, name, index)
                yield from _path_values(child, where)


def _key(model: BaseModel, name: str) -> PathKey:
    for owner in type(model).__mro__:
        key = PATH_KEYS.get((owner, name))
        if key is not None:
            return key
    raise KeyError(f"{type(model).__name__}.{name} is not in PATH_KEYS")


def _shown(path: Path | str) -> str:
    text = str(path)
    # A newline in a file name must not break the one-line message.
    return text if text.isprintable() else text.encode("unicode_escape").decode()


def evals_root() -> Path:
    """qgate's evals/ folder, as qgate/quality/data.py finds it ($QGATE_EVALS_DIR first)."""
    env = os.environ.get("QGATE_EVALS_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "evals"


def project_root(folder: Path) -> Path | None:
    """The nearest folder at or above `folder` that holds `.git` or `pyproject.toml`."""
    for parent in [folder, *folder.parents]:
        if (parent / ".git").exists() or (parent / "pyproject.toml").exists():
            return parent
    return None


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def path_problems(profile: Profile, folder: Path) -> Found:
    """Relative paths (as written) that climb out of the folders a profile may read from."""
    found: Found = []
    folder = Path(os.path.normpath(folder.absolute()))
    roots = [folder, project_root(folder), Path(os.path.normpath(evals_root().absolute()))]
    for where, model, name in _path_values(profile):
        written: Path = getattr(model, name)
        if str(written).startswith("~"):
            try:
                written.expanduser()
            except RuntimeError:  # ~name of no user
                found.append((where, f"{_shown(written)}: no such user's home folder"))
            continue
        if "\x00" in str(written) or written.is_absolute():
            continue
        resolved = Path(os.path.normpath(folder / written))
        if ".." in written.parts and not any(r and _inside(resolved, r) for r in roots):
            found.append(
                (
                    where,
                    f"{_shown(written)} climbs out of the profile's folder and its project: a "
                    "relative path must stay inside the folder of the profile, the project it "
                    "lives in (the folder above it with .git or pyproject.toml) or qgate's "
                    "evals/; name a file elsewhere by its absolute path",
                )
            )
    return found


def resolve_paths(profile: Profile, folder: Path) -> None:
    """Make every relative path in the profile absolute against `folder` (in place)."""
    for _, model, name in list(_path_values(profile)):
        path = getattr(model, name)
        try:
            path = path.expanduser()
        except RuntimeError:
            continue  # ~name of no user: reported by path_problems
        setattr(model, name, path if path.is_absolute() else folder / path)


def _problem(path: Path, key: PathKey) -> str | None:
    try:
        return _fs_problem(path, key)
    except OSError as exc:  # a name too long for the file system, a loop of links...
        return f"cannot check {_shown(path)} ({exc.strerror or exc})"


def _fs_problem(path: Path, key: PathKey) -> str | None:
    shown = _shown(path)
    kind = "folder" if key.folder else "file"
    if not path.exists():
        return f"no such {kind}: {shown}"
    if key.folder:
        if not path.is_dir():
            return f"not a folder: {shown}"
        if not os.access(path, os.R_OK | os.X_OK):
            return f"cannot read the folder (permission denied): {shown}"
        return None
    if path.is_dir():
        return f"is a folder, not a file: {shown}"
    if not path.is_file():
        return f"not a regular file (a device or a pipe?): {shown}"
    if not os.access(path, os.R_OK):
        return f"cannot read the file (permission denied): {shown}"
    size = path.stat().st_size
    if size > key.max_bytes:
        return f"{size:,} bytes, more than the {key.max_bytes // MiB:,} MiB this key reads: {shown}"
    return None


def file_problems(profile: Profile) -> Found:
    """Local files and folders the profile names that are missing, unreadable or not data.

    Paths must already be resolved. The model folder is checked only where a side starts
    a server (an endpoint serves its own).
    """
    found: Found = []
    serves = any(starts_process(profile.engine_of(r).kind) for r in ("reference", "candidate"))
    for where, model, name in _path_values(profile):
        value: Path = getattr(model, name)
        if "\x00" in str(value):
            continue  # a NUL was reported by raw_problems; no file system can hold it
        if where == ("model", "path") and not serves:
            continue
        key = _key(model, name)
        message = _problem(value, key)
        if message and where == ("model", "path") and not value.exists():
            message += " (is the profile meant for another machine? validate --skip-files)"
        if message is None and key.data is not None:
            message = key.data(model, value)
        if message:
            found.append((where, message))
    return found + _program_problems(profile) + _template_problems(profile)


TEMPLATE_KEY = PathKey(False, MiB)
"""A chat template is a few kilobytes of Jinja."""


def _template_problems(profile: Profile) -> Found:
    """A side's `chat_template` file (`qgate:NAME` or an absolute path) that cannot be read."""
    found: Found = []
    for role in ("reference", "candidate"):
        this = side(profile, role)
        value = this.args.get("chat_template")
        where = this.arg_path("chat_template")
        if not declared(this.kind).takes_vllm_args or not isinstance(value, str) or not where:
            continue
        if "\x00" in value or template_problem(value):
            continue  # reported by raw_problems or engine_problems
        path = template_file(value)
        message = _problem(path, TEMPLATE_KEY) if path is not None else None
        if message and (where, message) not in found:  # both sides share engine.args
            found.append((where, message))
    return found


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _program_problems(profile: Profile) -> Found:
    """A launcher or command whose program is an absolute path that cannot be run."""
    found: Found = []
    blocks: list[tuple[KeyPath, EngineLaunch]] = [(("engine",), profile.engine)]
    blocks += [
        ((r, "engine"), e) for r in ("reference", "candidate") if (e := getattr(profile, r).engine)
    ]
    for where, launch in blocks:
        for name in ("launcher", "command"):
            words = getattr(launch, name) or []
            program = words[0] if words else ""
            if not program.startswith("/") or "{" in program or "\x00" in program:
                continue  # looked up on PATH, or a placeholder qgate fills in
            path = Path(program)
            message = None
            if not _is_file(path):
                message = f"no such program: {_shown(path)}"
            elif not os.access(path, os.X_OK):
                message = f"not executable: {_shown(path)}"
            if message:
                found.append(((*where, name, 0), message))
    return found
