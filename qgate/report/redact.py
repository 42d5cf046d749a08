"""Secret redaction of everything that goes into a report.

Environment maps anywhere in the report (keys named env, env_flags,
environment) have secret-looking values replaced; then every string in the
report that contains one of those secret values (a command line, a URL) has it
replaced too. Uses the Runtime engineer's `qgate.runtime.redact.redact_env`
when it exists, so both agree on what a secret is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from qgate.report.model import Report

REDACTED = "***REDACTED***"
_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW(OR)?D|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH|"
    r"SIGNING_KEY|COOKIE|SESSION)",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"^(sk-|hf_|ghp_|gho_|ghs_|github_pat_|xox[abpr]-|AKIA|ASIA|glpat-|eyJ)|-----BEGIN"
)
_ENV_KEYS = frozenset({"env", "env_flags", "environment"})
_MIN_SECRET_LEN = 4


def _looks_secret(name: str, value: str, extra: frozenset[str]) -> bool:
    return name in extra or bool(_SECRET_NAME.search(name)) or bool(_SECRET_VALUE.search(value))


def redact_env(env: Mapping[str, str], extra_secret_names: Iterable[str] = ()) -> dict[str, str]:
    """A copy of `env` with secret-looking values (by name or by shape) replaced."""
    try:
        from qgate.runtime.redact import redact_env as runtime_redact  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        extra = frozenset(extra_secret_names)
        return {k: REDACTED if _looks_secret(k, v, extra) else v for k, v in env.items()}
    return dict(runtime_redact(env, list(extra_secret_names)))


def _collect_env_secrets(node: Any, extra: list[str], found: set[str], out: Any = None) -> Any:
    if isinstance(node, dict):
        result: dict[str, Any] = {}
        for key, value in node.items():
            if (
                key in _ENV_KEYS
                and isinstance(value, dict)
                and all(isinstance(v, str) for v in value.values())
            ):
                clean = redact_env(value, extra)
                found.update(
                    v for k, v in value.items() if clean.get(k) != v and len(v) >= _MIN_SECRET_LEN
                )
                result[key] = clean
            else:
                result[key] = _collect_env_secrets(value, extra, found)
        return result
    if isinstance(node, list):
        return [_collect_env_secrets(v, extra, found) for v in node]
    return node


def _scrub(node: Any, secrets: list[str]) -> Any:
    if isinstance(node, str):
        for secret in secrets:
            if secret in node:
                node = node.replace(secret, REDACTED)
        return node
    if isinstance(node, dict):
        return {k: _scrub(v, secrets) for k, v in node.items()}
    if isinstance(node, list):
        return [_scrub(v, secrets) for v in node]
    return node


def _secret_sections(data: dict[str, Any]) -> list[str]:
    # per-item and per-request records hold model text, never configuration;
    # leaving them out keeps redaction cheap on reports with 10^4 records
    return [k for k in data if k not in ("quality", "perf")]


def redact_report(report: Report, extra_secret_names: Iterable[str] = ()) -> Report:
    """The report with env secrets and every occurrence of their values redacted."""
    extra = list(extra_secret_names) + [str(s) for s in report.profile.get("secrets", [])]
    data = report.model_dump(mode="json")
    found: set[str] = set()
    for key in _secret_sections(data):
        data[key] = _collect_env_secrets(data[key], extra, found)
    found.update(v for name in extra if (v := os.environ.get(name)) and len(v) >= _MIN_SECRET_LEN)
    if found:
        ordered = sorted(found, key=len, reverse=True)
        for key in _secret_sections(data):
            data[key] = _scrub(data[key], ordered)
    return Report.model_validate(data)
