"""Environment variable names, and values that look like keys: what may be named, what shown.

A setting like `api_key_env` must hold the *name* of a variable; a pasted key
there is refused without ever being quoted back.
"""

from __future__ import annotations

import re

__all__ = [
    "ENV_NAME",
    "KEY_PREFIXES",
    "env_name_problem",
    "key_env_problem",
    "looks_like_key",
    "shown_env_name",
]

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
KEY_PREFIXES = ("sk-", "sk_", "hf_", "ghp_", "gho_", "ghs_", "github_pat_", "glpat-", "xox", "AKIA")


def looks_like_key(value: str) -> bool:
    """True for a value that is more likely a credential than a variable name."""
    if value.startswith(KEY_PREFIXES):
        return True
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", value):
        return False  # how variables are named, however long (OPENAI_API_KEY)
    if re.fullmatch(r"[0-9a-fA-F]{32,}", value):
        return True
    # Keys are long and mix cases and digits, or hold characters no name has.
    mixed = any(c.islower() for c in value) and any(c.isupper() for c in value)
    keyish = (mixed and any(c.isdigit() for c in value)) or not ENV_NAME.match(value)
    return len(value) >= 20 and keyish


def key_env_problem(value: str) -> str | None:
    """Why `value` cannot be the name of a variable that holds a key; never quotes it."""
    if looks_like_key(value):
        return (
            "looks like a key, not an environment variable name: put the key in a "
            "variable and give that variable's name here (the value is not shown)"
        )
    if not ENV_NAME.match(value):
        return (
            "must name an environment variable (letters, digits and _, not starting "
            "with a digit); the value is not shown"
        )
    return None


def shown_env_name(value: str) -> str:
    """`value` for a message, unless it may be a pasted key."""
    return "(hidden: it looks like a key, not a variable name)" if key_env_problem(value) else value


def env_name_problem(name: str) -> str | None:
    """Why `name` cannot be an environment variable name, or None."""
    if not name:
        return "an environment variable name must not be empty"
    if "=" in name:
        return "an environment variable name must not contain '='"
    if not ENV_NAME.match(name):
        return "not an environment variable name (letters, digits and _, not starting with a digit)"
    return None
