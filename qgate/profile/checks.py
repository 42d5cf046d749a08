"""Profile checks that the schema cannot express, each tied to a key path.

Everything here can be known without starting anything, so `qgate validate`
reports it with the file, the line and the key path instead of a server, a
shell or the operating system failing later:

- `raw_problems`: on the YAML data before the schema (NUL characters,
  non-finite numbers, environment variable names, key-variable names that
  look like pasted keys, engine argument names);
- `profile_problems`: on the validated profile (sizes that would hang or
  exhaust memory, duplicate lm-eval tasks, empty names, settings that do
  not apply to the engine kind);
- `file_problems`: on the resolved profile, the local files and folders it
  names (model, tokenizer, data sets, traces, lm-eval include paths, key).

No message ever contains the value of a key-variable setting: the value may
be a secret pasted in the wrong place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from qgate.core.env_names import env_name_problem, key_env_problem
from qgate.core.jsonl_checks import MATH_ITEM, TRACE_LINE, JsonlShape, corpus_prompt, jsonl_problem
from qgate.core.yamlload import KeyPath
from qgate.profile import (
    AccuracyPolicy,
    Detect,
    DivergenceSuite,
    EngineSpec,
    FixedScenario,
    LmEvalTask,
    MathSuite,
    MultiTurnScenario,
    PerfSpec,
    Profile,
    QualitySpec,
    RecallSuite,
    ScenarioBase,
    TraceScenario,
)
from qgate.profile.base import RESERVED_ARGS
from qgate.profile.engine_checks import engine_problems, starts_process
from qgate.profile.quality import detect_problem
from qgate.profile.reuse_checks import reuse_problems
from qgate.profile.scenarios import DEFAULT_BUCKET_S, MAX_BUCKETS
from qgate.profile.started_checks import (
    attribution_group_problems,
    key_in_args_problems,
    started_only_problems,
)

__all__ = [
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

MAX_TOKENS = 10_000_000
MAX_COUNT = 1_000_000
MAX_CONCURRENCY = 10_000
MAX_SECONDS = 7 * 24 * 3600
MAX_SEED = 2**63 - 1

_TOKENS = " tokens; no model's context is that long"
_COUNT = "; a run that large would not finish"
# (model, field) -> (largest sensible value, why). Sizes beyond these would
# not fail: they would allocate until the machine runs out, or never end.
LIMITS: dict[tuple[type[BaseModel], str], tuple[int, str]] = {
    (MathSuite, "max_tokens"): (MAX_TOKENS, _TOKENS),
    (MathSuite, "long_tokens"): (MAX_TOKENS, _TOKENS),
    (MathSuite, "limit"): (MAX_COUNT, " items" + _COUNT),
    (Detect, "max_items"): (MAX_COUNT, " items" + _COUNT),
    (RecallSuite, "context_tokens"): (MAX_TOKENS, _TOKENS),
    (RecallSuite, "max_tokens"): (MAX_TOKENS, _TOKENS),
    (RecallSuite, "haystacks"): (MAX_COUNT, " haystacks" + _COUNT),
    (DivergenceSuite, "sequences"): (MAX_COUNT, " sequences" + _COUNT),
    (DivergenceSuite, "tokens"): (MAX_TOKENS, _TOKENS),
    (LmEvalTask, "limit"): (MAX_COUNT, " documents" + _COUNT),
    (QualitySpec, "concurrency"): (MAX_CONCURRENCY, " requests in flight"),
    (QualitySpec, "seed"): (MAX_SEED, "; engines take a 64-bit seed"),
    (ScenarioBase, "warmup"): (MAX_COUNT, " requests" + _COUNT),
    (ScenarioBase, "requests"): (MAX_COUNT, " requests" + _COUNT),
    (ScenarioBase, "duration_s"): (MAX_SECONDS, " s, a week"),
    (ScenarioBase, "series_bucket_s"): (MAX_SECONDS, " s, a week"),
    (FixedScenario, "input_tokens"): (MAX_TOKENS, _TOKENS),
    (FixedScenario, "output_tokens"): (MAX_TOKENS, _TOKENS),
    (FixedScenario, "concurrency"): (MAX_CONCURRENCY, " requests in flight"),
    (MultiTurnScenario, "conversations"): (MAX_CONCURRENCY, " conversations in flight"),
    (MultiTurnScenario, "turns"): (MAX_COUNT, " turns" + _COUNT),
    (MultiTurnScenario, "shared_prefix_tokens"): (MAX_TOKENS, _TOKENS),
    (MultiTurnScenario, "turn_input_tokens"): (MAX_TOKENS, _TOKENS),
    (MultiTurnScenario, "output_tokens"): (MAX_TOKENS, _TOKENS),
    (MultiTurnScenario, "think_time_s"): (MAX_SECONDS, " s, a week"),
    (TraceScenario, "time_scale"): (1_000_000, "; the replay would not finish"),
    (PerfSpec, "bootstrap"): (MAX_COUNT, " resamples" + _COUNT),
    (EngineSpec, "startup_timeout_s"): (MAX_SECONDS, " s, a week"),
    (EngineSpec, "request_timeout_s"): (MAX_SECONDS, " s, a week"),
}


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


def _block(data: dict[Any, Any], name: str, key: str) -> dict[Any, Any]:
    parent = data.get(name)
    value = parent.get(key) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else {}


def raw_problems(data: dict[Any, Any]) -> Found:
    """Problems in the YAML data itself, found before the schema runs."""
    found = _scalar_problems(data)
    for name in RUNTIME_BLOCKS:
        for key in _block(data, name, "env"):
            if isinstance(key, str) and "\x00" not in key:
                message = env_name_problem(key)
                if message:
                    found.append(((name, "env", key), message))
        for key in _block(data, name, "args"):
            if not isinstance(key, str) or "\x00" in key:
                continue
            norm = key.strip("-").replace("-", "_")
            if not ENGINE_ARG_NAME.match(key):
                message = "not an engine argument name (letters, digits, _ and -)"
                found.append(((name, "args", key), message))
            elif norm in RESERVED_ARGS:
                message = f"set by qgate; use {RESERVED_ARGS[norm]} instead"
                found.append(((name, "args", key), message))
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


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,}"


def _over_limit(value: Any, limit: int, why: str) -> tuple[KeyPath, str] | None:
    """(where in a list, or (), and the message) for the first value beyond `limit`."""
    items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
    for index, item in items:
        number = isinstance(item, int | float) and not isinstance(item, bool)
        # Infinity and NaN were reported by `raw_problems` already.
        if number and math.isfinite(item) and abs(item) > limit:
            where = () if index is None else (index,)
            bound = f"at least {-limit:,}" if item < 0 else f"at most {limit:,}"
            return where, f"must be {bound}{why} (got {_number(item)})"
    return None


def _limit_problems(model: BaseModel, path: KeyPath) -> Found:
    found: Found = []
    for name in type(model).model_fields:
        value = getattr(model, name)
        for owner in type(model).__mro__:
            rule = LIMITS.get((owner, name))
            if rule is not None:
                over = _over_limit(value, *rule)
                if over:
                    found.append(((*path, name, *over[0]), over[1]))
                break
        children = value if isinstance(value, list) else [value]
        for index, child in enumerate(children):
            if isinstance(child, BaseModel):
                where = (*path, name, index) if isinstance(value, list) else (*path, name)
                found += _limit_problems(child, where)
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
                    f"{_number(duration)} s in {_number(width)} s buckets is more than "
                    f"{MAX_BUCKETS:,} time-series buckets; set series_bucket_s to at least "
                    f"{_number(math.ceil(duration / MAX_BUCKETS))}",
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
    found = _limit_problems(profile, ())
    found += _power_problems(profile.quality)
    found += _scenario_problems(profile.perf)
    found += reuse_problems(profile.quality)
    first: dict[str, int] = {}
    for index, task in enumerate(profile.quality.lm_eval):
        if not task.task.strip():
            found.append((("quality", "lm_eval", index, "task"), "must name an lm-eval task"))
            continue
        if not all(part.strip() for part in task.metric.split(",")):
            found.append(
                (
                    ("quality", "lm_eval", index, "metric"),
                    "must be a metric, or a metric and a filter, "
                    "e.g. 'exact_match,flexible-extract'",
                )
            )
        if task.task in first:
            found.append(
                (
                    ("quality", "lm_eval", index, "task"),
                    f"duplicate lm-eval task {task.task!r} (first at quality.lm_eval"
                    f"[{first[task.task]}]); both would report as lm_eval.{task.task}",
                )
            )
        first.setdefault(task.task, index)
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
        if profile.engine_of(role).kind == "endpoint" and getattr(profile, role).emulate_weights:
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


def _missing(path: Path, folder: bool) -> str | None:
    kind = "folder" if folder else "file"
    text = str(path)
    # A newline in a file name must not break the one-line message.
    shown = text if text.isprintable() else text.encode("unicode_escape").decode()
    if not path.exists():
        return f"no such {kind}: {shown}"
    if folder and not path.is_dir():
        return f"not a folder: {shown}"
    if not folder and path.is_dir():
        return f"is a folder, not a file: {shown}"
    return None


def file_problems(profile: Profile) -> Found:
    """Local files and folders the profile names that do not exist or cannot be read as data.

    Paths must already be resolved. JSONL data (math set, corpus, trace) is
    read line by line as its stage would read it.
    """
    wanted: list[tuple[KeyPath, Path | None, bool]] = [
        (("model", "tokenizer"), profile.model.tokenizer, True),
        (("signing", "key"), profile.signing.key, False),
    ]
    if any(starts_process(profile.engine_of(r).kind) for r in ("reference", "candidate")):
        wanted.append((("model", "path"), profile.model.path, True))
    shapes: dict[KeyPath, JsonlShape] = {}
    if profile.quality.math is not None:
        wanted.append((("quality", "math", "set"), profile.quality.math.set, False))
        shapes[("quality", "math", "set")] = MATH_ITEM
    if profile.quality.divergence is not None:
        divergence = profile.quality.divergence
        wanted.append((("quality", "divergence", "corpus"), divergence.corpus, False))
        shapes[("quality", "divergence", "corpus")] = corpus_prompt(divergence.sequences)
    for index, task in enumerate(profile.quality.lm_eval):
        wanted.append((("quality", "lm_eval", index, "include_path"), task.include_path, True))
    for index, scenario in enumerate(profile.perf.scenarios if profile.perf else []):
        if scenario.kind == "trace":
            wanted.append((("perf", "scenarios", index, "path"), scenario.path, False))
            shapes[("perf", "scenarios", index, "path")] = TRACE_LINE
    found: Found = []
    for path, value, folder in wanted:
        if value is None or "\x00" in str(value):
            continue  # a NUL was reported by raw_problems; no file system can hold it
        message = _missing(value, folder)
        if message and path == ("model", "path") and not value.exists():
            message += " (is the profile meant for another machine? validate --skip-files)"
        if message:
            found.append((path, message))
        elif path in shapes:
            message = jsonl_problem(value, shapes[path])
            if message:
                found.append((path, message))
    return found
