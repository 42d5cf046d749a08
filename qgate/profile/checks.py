"""Profile checks that the schema cannot express, each tied to a key path.

Everything here can be known without starting anything, so `qgate validate`
reports it with the file, the line and the key path instead of a server, a
shell or the operating system failing later:

- `raw_problems`: on the YAML data before the schema (NUL characters,
  non-finite numbers, environment variable names, key-variable names that
  look like pasted keys, engine argument names);
- `profile_problems`: on the validated profile (sizes that would hang or
  exhaust memory, duplicate lm-eval tasks, empty names, settings that do
  not apply to the engine kind or act on nothing, flip limits that cannot fail);
- `file_problems`: on the resolved profile, the local files and folders it
  names (model, tokenizer, data sets, traces, lm-eval include paths, key).

No message ever contains the value of a key-variable setting: the value may
be a secret pasted in the wrong place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from qgate.core.env_names import env_name_problem, key_env_problem
from qgate.core.yamlload import KeyPath
from qgate.profile import (
    AccuracyPolicy,
    PerfSpec,
    Profile,
    QualitySpec,
)
from qgate.profile.base import RESERVED_ARGS
from qgate.profile.engine_checks import engine_problems
from qgate.profile.engines import declared, engine_kinds
from qgate.profile.files import file_problems
from qgate.profile.inert import endpoint_round_problems, inert_problems, repeat_problems
from qgate.profile.limits import (
    LIMITS,
    MAX_CONCURRENCY,
    MAX_COUNT,
    MAX_SECONDS,
    MAX_SEED,
    MAX_TOKENS,
    limit_problems,
    number,
    perf_total_problems,
)
from qgate.profile.quality import detect_problem
from qgate.profile.reuse_checks import reuse_problems
from qgate.profile.scenarios import DEFAULT_BUCKET_S, MAX_BUCKETS
from qgate.profile.started_checks import (
    attribution_group_problems,
    key_in_args_problems,
    started_only_problems,
)
from qgate.profile.suites import suite_problems
from qgate.profile.vacuous import vacuous_problems

__all__ = [
    "ARG_BLOCKS",
    "ENGINE_ARG_NAME",
    "Found",
    "LIMITS",
    "MAX_CONCURRENCY",
    "MAX_COUNT",
    "MAX_SECONDS",
    "MAX_SEED",
    "MAX_TOKENS",
    "RUNTIME_BLOCKS",
    "file_problems",
    "profile_problems",
    "raw_problems",
]

Found = list[tuple[KeyPath, str]]

ENGINE_ARG_NAME = re.compile(r"-{0,2}[A-Za-z0-9][A-Za-z0-9_-]*\Z")
# Prefixes of common credentials: a value that starts like one is a pasted key.

RUNTIME_BLOCKS = ("engine", "reference", "candidate")

ARG_BLOCKS: tuple[KeyPath, ...] = (
    ("engine", "args"),
    *((role, "args") for role in ("reference", "candidate")),
    *((role, "engine", "args") for role in ("reference", "candidate")),
    *((role, "fallback", "args") for role in ("reference", "candidate")),
)
"""Every mapping of engine arguments: the shared block's, each side's, its own engine's and its
fallback's; each is one command line's (or one layer of it)."""


def _walk(node: Any, path: KeyPath, seen: set[int]) -> Iterator[tuple[KeyPath, Any, bool]]:
    """(path, value, is_key) of every scalar and key; shared (aliased) nodes once."""
    if isinstance(node, dict | list):
        if id(node) in seen:
            return
        seen.add(id(node))
    if isinstance(node, dict):
        for key, value in node.items():
            yield ((*path, key), key, True)
            yield from _walk(value, (*path, key), seen)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, (*path, index), seen)
    else:
        yield (path, node, False)


def _scalar_problems(data: dict[Any, Any]) -> Found:
    found: Found = []
    for path, value, is_key in _walk(data, (), set()):
        if isinstance(value, str) and "\x00" in value:
            if is_key:
                found.append((path, "a key contains a NUL character (\\0)"))
            else:
                found.append(
                    (
                        path,
                        "contains a NUL character (\\0), which no command line, "
                        "environment or file name can carry",
                    )
                )
        elif isinstance(value, float) and not math.isfinite(value) and not is_key:
            found.append((path, f"must be a finite number (got {value})"))
    return found


def _block(data: dict[Any, Any], *path: str | int) -> dict[Any, Any]:
    """The mapping at `path` in the YAML data; empty where there is none."""
    node: Any = data
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def _arg_name_problems(data: dict[Any, Any], block: KeyPath) -> Found:
    """Argument names of one args mapping: each a name, given once (either spelling), none
    that qgate sets itself."""
    found: Found = []
    spelled: dict[str, str] = {}
    for key in _block(data, *block):
        if not isinstance(key, str) or "\x00" in key:
            continue
        norm = key.strip("-").replace("-", "_")
        other = spelled.setdefault(norm.casefold(), key)
        if other != key:
            message = f"the same engine argument as {other!r}; give it once"
            found.append(((*block, key), message))
        elif not ENGINE_ARG_NAME.match(key):
            message = "not an engine argument name (letters, digits, _ and -)"
            found.append(((*block, key), message))
        elif norm in RESERVED_ARGS:
            message = f"set by qgate; use {RESERVED_ARGS[norm]} instead"
            found.append(((*block, key), message))
    return found


def raw_problems(data: dict[Any, Any]) -> Found:
    """Problems in the YAML data itself, found before the schema runs."""
    found = _scalar_problems(data)
    for name in RUNTIME_BLOCKS:
        for key in _block(data, name, "env"):
            if isinstance(key, str) and "\x00" not in key:
                message = env_name_problem(key)
                if message:
                    found.append(((name, "env", key), message))
    for block in ARG_BLOCKS:
        found += _arg_name_problems(data, block)
    secret_names: list[tuple[KeyPath, Any]] = [
        ((role, "endpoint", "api_key_env"), _block(data, role, "endpoint").get("api_key_env"))
        for role in ("reference", "candidate")
    ]
    signing = data.get("signing")
    if isinstance(signing, dict):
        secret_names.append((("signing", "key_env"), signing.get("key_env")))
    secrets = data.get("secrets")
    if isinstance(secrets, list):
        secret_names += [(("secrets", i), v) for i, v in enumerate(secrets)]
    for path, value in secret_names:
        if isinstance(value, str) and "\x00" not in value:
            message = key_env_problem(value)
            if message:
                found.append((path, message))
    return found


def _scenario_problems(perf: PerfSpec | None) -> Found:
    """A scenario bound by both a count and a duration; a series with too many buckets."""
    found: Found = []
    for index, s in enumerate(perf.scenarios if perf else []):
        path: KeyPath = ("perf", "scenarios", index)
        if s.duration_s is not None and s.requests is not None:
            found.append(
                (
                    (*path, "requests"),
                    "not together with duration_s: a scenario runs for a count of requests or "
                    "for a duration (remove one)",
                )
            )
        width = s.series_bucket_s or DEFAULT_BUCKET_S
        duration = s.duration_s
        # non-finite or beyond a week: reported already (raw_problems, LIMITS)
        if duration is None or not (duration <= MAX_SECONDS and width <= MAX_SECONDS):
            continue
        if duration / width > MAX_BUCKETS:
            key = "series_bucket_s" if s.series_bucket_s else "duration_s"
            found.append(
                (
                    (*path, key),
                    f"{number(duration)} s in {number(width)} s buckets is more than "
                    f"{MAX_BUCKETS:,} time-series buckets; set series_bucket_s to at least "
                    f"{number(math.ceil(duration / MAX_BUCKETS))}",
                )
            )
    return found


def _policies(spec: QualitySpec) -> Iterator[tuple[KeyPath, AccuracyPolicy]]:
    """Every exact-answer gate policy of the quality block, with its key path."""
    for name in type(spec).model_fields:
        value = getattr(spec, name)
        for index, item in enumerate(value) if isinstance(value, list) else [(None, value)]:
            if isinstance(item, AccuracyPolicy):
                yield ("quality", name) + (() if index is None else (index,)), item


def _power_problems(spec: QualitySpec) -> Found:
    """Detections outside the sizing model; a stated power a test that ignores data meets."""
    found: Found = []
    for path, policy in _policies(spec):
        if policy.detect is not None:
            problem = detect_problem(policy.detect, policy.alpha)
            if problem is not None:
                found.append(((*path, "detect", problem[0]), problem[1]))
        elif policy.power <= policy.alpha:
            found.append(
                (
                    (*path, "power"),
                    f"must be > alpha ({policy.alpha:g}): a test that ignores its items "
                    "rejects that often",
                )
            )
    return found


def profile_problems(profile: Profile) -> Found:
    """Problems of a profile that passed the schema."""
    found = limit_problems(profile) + perf_total_problems(profile.perf)
    found += inert_problems(profile) + repeat_problems(profile) + endpoint_round_problems(profile)
    found += _power_problems(profile.quality)
    found += _scenario_problems(profile.perf)
    found += reuse_problems(profile.quality) + suite_problems(profile)
    found += vacuous_problems(profile)
    if profile.model.served_name is not None and not profile.model.served_name.strip():
        found.append((("model", "served_name"), "must not be empty"))
    if not profile.engine.host.strip():
        found.append((("engine", "host"), "must not be empty"))
    launcher = profile.engine.launcher
    if launcher is not None and not launcher:
        found.append((("engine", "launcher"), "must list the command, e.g. [vllm, serve]"))
    for index, word in enumerate(launcher or []):
        if not word:
            found.append((("engine", "launcher", index), "must not be empty"))
    for role in ("reference", "candidate"):
        kind = profile.engine_of(role).kind
        running = kind in engine_kinds() and not declared(kind).starts_process
        if running and getattr(profile, role).emulate_weights:
            found.append(
                (
                    (role, "emulate_weights"),
                    "only valid when engine.kind is 'vllm' (qgate cannot change the "
                    "weights of a running endpoint)",
                )
            )
    found += started_only_problems(profile) + attribution_group_problems(profile)
    found += key_in_args_problems(profile)
    return found + engine_problems(profile)
