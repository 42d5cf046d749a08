"""Engine args as command-line flags for engines other than vLLM (pure functions).

vLLM's own rules (BooleanOptionalAction, append flags) live in command.py.
Elsewhere a flag is a plain argparse option: True is the bare flag, False and
None leave it out, a list gives its values after one flag.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from qgate.errors import BadInput
from qgate.profile.base import EngineArgValue
from qgate.runtime.command import flag_value

__all__ = ["plain_flags"]


def plain_flags(
    args: Mapping[str, EngineArgValue],
    spell: Callable[[str], str],
    reserved: Mapping[str, str] | None = None,
) -> list[str]:
    """`--name value` for each arg, `spell(key)` giving the name, in the order given."""
    out: list[str] = []
    for key, value in args.items():
        norm = key.strip("-").replace("-", "_")
        if reserved and norm in reserved:
            raise BadInput(f"engine arg '{key}' is set by qgate; use {reserved[norm]}")
        flag = "--" + spell(key.strip("-"))
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, list):
            if value:
                out += [flag, *(flag_value(item) for item in value)]
        else:
            out += [flag, flag_value(value)]
    return out
