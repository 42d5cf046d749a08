"""Secret redaction of everything that goes into a report.

The rules of what is secret live in `qgate.core.redact` (shared with the
runtime's logs and command lines). Here they are applied to a whole report:
environment maps anywhere in it (keys env, env_flags, environment), command
lines (secret flag values), credential-shaped strings, and every string that
contains a value found secret, including values of `profile.secrets` names
taken from this process's environment.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from qgate.core.redact import REDACTED, redact_argv, redact_env, redact_text
from qgate.report.model import Report
from qgate.report.multi_model import MultiReport

__all__ = ["REDACTED", "redact_multi", "redact_report", "redact_sections"]

_ENV_KEYS = frozenset({"env", "env_flags", "environment"})
_ARGV_KEYS = frozenset({"command", "command_line", "launcher"})
_MIN_SECRET_LEN = 4


def _is_env(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _envs(node: Any, extra: list[str], found: set[str]) -> Any:
    """Redact every environment map; collect the values that were hidden."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _ENV_KEYS and _is_env(value):
                clean = redact_env(value, extra)
                found.update(
                    v for k, v in value.items() if clean[k] != v and len(v) >= _MIN_SECRET_LEN
                )
                out[key] = clean
            else:
                out[key] = _envs(value, extra, found)
        return out
    if isinstance(node, list):
        return [_envs(v, extra, found) for v in node]
    return node


def _strings(node: Any, argv: Callable[[list[str]], list[str]], text: Callable[[str], str]) -> Any:
    if isinstance(node, str):
        return text(node)
    if isinstance(node, dict):
        return {
            k: argv(v)
            if k in _ARGV_KEYS and isinstance(v, list) and all(isinstance(a, str) for a in v)
            else _strings(v, argv, text)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_strings(v, argv, text) for v in node]
    return node


def redact_report(report: Report, extra_secret_names: Iterable[str] = ()) -> Report:
    """The report with secrets hidden in every configuration part.

    Per-item and per-request records (quality, perf) hold model text and
    timings, never configuration, and are left as they are: scanning 10^4
    records would cost more than it protects.
    """
    extra = list(extra_secret_names) + [str(s) for s in report.profile.get("secrets", [])]
    data = report.model_dump(mode="json")
    # reference_provenance holds digests, key ids and a signed envelope, never configuration;
    # rewriting one of its bytes would break that signature
    sections = [k for k in data if k not in ("quality", "perf", "reference_provenance")]
    redact_sections(data, sections, extra)
    return Report.model_validate(data)


def redact_sections(data: dict[str, Any], sections: list[str], extra: list[str]) -> None:
    """Hide secrets in `data[k]` for every k in `sections` (in place): envs, argv, strings."""
    found: set[str] = set()
    for key in sections:
        data[key] = _envs(data[key], extra, found)
    found.update(v for n in extra if (v := os.environ.get(n)) and len(v) >= _MIN_SECRET_LEN)
    secrets = sorted(found, key=len, reverse=True)
    config = {k: data[k] for k in sections}
    data.update(
        _strings(config, lambda a: redact_argv(a, secrets), lambda t: redact_text(t, secrets))
    )


def redact_multi(report: MultiReport, extra_secret_names: Iterable[str] = ()) -> MultiReport:
    """Secrets hidden in every embedded report and in the multi report's own configuration."""
    extra = list(extra_secret_names) + [str(s) for s in report.profile.get("secrets", [])]
    entries = [
        e.model_copy(update={"report": redact_report(e.report, extra) if e.report else None})
        for e in report.candidates
    ]
    data = report.model_copy(update={"candidates": []}).model_dump(mode="json")
    redact_sections(data, [k for k in data if k not in ("candidates", "table")], extra)
    data["candidates"] = [e.model_dump(mode="json") for e in entries]
    return MultiReport.model_validate(data)
