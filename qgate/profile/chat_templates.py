"""Chat templates qgate ships, named in engine args as `chat_template: qgate:NAME`.

A model whose own template has no tool section (SmolLM2) cannot be asked tool calls the
way production asks them; qgate ships templates for such models under
evals/chat_templates/ (docs/concepts/agent-suites.md), resolved to their file when vLLM
starts and checked by name at validate time.

Any other value is as vLLM reads it: one holding `{`, `}` or a newline is the template
itself; an absolute path is a file, which validate checks like the profile's other files; a
relative name is one of vLLM's own templates (vllm/transformers_utils/chat_templates/) or a
file of the server's run folder (its working directory), so `..` and `~` are refused.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "TEMPLATE_PREFIX",
    "chat_template_names",
    "resolve_chat_template",
    "template_file",
    "template_problem",
]

TEMPLATE_PREFIX = "qgate:"
"""A `chat_template` engine arg `qgate:NAME` names evals/chat_templates/NAME.jinja."""

_INLINE = "{}\n"
"""vLLM reads a `chat_template` holding one of these as the template, not a file's name."""


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


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57]) + "..."


def template_problem(value: str) -> str | None:
    """Why vLLM cannot read the template a `chat_template` value names, known without reading
    any file: an unknown `qgate:NAME`, a relative path that climbs out or starts with `~`."""
    if any(c in value for c in _INLINE):
        return None
    if value.startswith(TEMPLATE_PREFIX):
        name = value.removeprefix(TEMPLATE_PREFIX)
        if name in chat_template_names():
            return None
        shipped = ", ".join(chat_template_names())
        return f"qgate ships no chat template {_shown(name)} (it ships: {shipped})"
    path = Path(value)
    if value.startswith("~"):
        return f"{_shown(value)}: vLLM does not expand ~; give the absolute path"
    if not path.is_absolute() and ".." in path.parts:
        return (
            f"{_shown(value)} climbs out of vLLM's templates folder (a relative name is one of "
            f"vLLM's own templates); give an absolute path, or {TEMPLATE_PREFIX}NAME for one "
            "qgate ships"
        )
    return None


def template_file(value: str) -> Path | None:
    """The local file a `chat_template` value names (`qgate:NAME` or an absolute path), or
    None: the template itself, or a name vLLM looks up among its own."""
    if any(c in value for c in _INLINE):
        return None
    if value.startswith(TEMPLATE_PREFIX):
        return Path(resolve_chat_template(value))
    return Path(value) if Path(value).is_absolute() else None
