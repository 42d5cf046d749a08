"""Chat templates qgate ships, named in engine args as `chat_template: qgate:NAME`.

A model whose own template has no tool section (SmolLM2) cannot be asked tool calls the
way production asks them; qgate ships templates for such models under
evals/chat_templates/ (docs/concepts/agent-suites.md), resolved to their file when vLLM
starts and checked by name at validate time.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["TEMPLATE_PREFIX", "chat_template_names", "resolve_chat_template"]

TEMPLATE_PREFIX = "qgate:"
"""A `chat_template` engine arg `qgate:NAME` names evals/chat_templates/NAME.jinja."""


def _evals_root() -> Path:
    # as qgate/quality/data.py finds it ($QGATE_EVALS_DIR first); not imported from
    # qgate/profile/files.py, which imports the engine checks that import this module
    env = os.environ.get("QGATE_EVALS_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "evals"


def resolve_chat_template(value: str) -> str:
    """The file a `chat_template` value names: `qgate:NAME` is one qgate ships; else as is."""
    if not value.startswith(TEMPLATE_PREFIX):
        return value
    return str(_evals_root() / "chat_templates" / f"{value.removeprefix(TEMPLATE_PREFIX)}.jinja")


def chat_template_names() -> list[str]:
    """The chat templates qgate ships (`qgate:NAME`)."""
    return sorted(p.stem for p in (_evals_root() / "chat_templates").glob("*.jinja"))
