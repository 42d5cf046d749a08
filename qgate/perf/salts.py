"""Cache salts: no perf request reads KV that another side, round, block, scenario, warm-up or
probe wrote (issue 55: reuse speed the benchmark cannot inflate).

vLLM keys its prefix cache by the request's `cache_salt` too, so two requests with different
salts never share a cached block. qgate/run/perf.py sets `SALT` to the scope of one side's
perf block (`salt_scope`) where the side's engine serves the `cache_salt` feature; the
workloads then salt each request with that scope, the scenario and what the request is:

- a fixed or trace scenario shares no context, so each request has its own salt (two windows
  drawn at one offset of the prompt pool would otherwise be served from the cache);
- a multi-turn scenario's conversations share one salt: their shared prefix and their own
  growing histories are the reuse the scenario measures;
- each warm-up, probe ask and graded session has its own.

The scope is recorded with each scenario run (`params.cache_salt`), so the report says which
runs were salted. Without the feature (or in `qgate perf`, which measures a server as it is)
nothing is salted.

A life's probes (qgate/run/life_probes.py) ask the very prompts its quality stage, and its
start probes, asked already: unsalted, the probe after the idle pause is served from their
KV and exercises decode only, masking a fault in prefill after idle. So each life's probe set
has a scope of its own (`life_scope`: side, life, perf round, purpose, and moment: 'start' or
'idle'), and each probe ask its own salt within it (`life_salt`): no life probe reads KV that
quality, another probe, moment or life, or the other side wrote.
"""

from __future__ import annotations

import contextvars
import re
import zlib
from typing import Any

__all__ = ["SALT", "life_salt", "life_scope", "salt_param", "salt_scope", "salted"]

SALT: contextvars.ContextVar[str | None] = contextvars.ContextVar("qgate_perf_salt", default=None)
_FORBIDDEN = re.compile(r"[@/\\\x00]")  # what vLLM refuses in a salt (at most 128 characters)


def salt_scope(role: str, round: int, block: int) -> str:
    """The scope of one side's perf block: its role, perf round and block."""
    return _FORBIDDEN.sub("_", f"qgate-{role[:48]}-r{round}-b{block}")


def salted(payload: dict[str, Any], scenario: str, *parts: object) -> dict[str, Any]:
    """`payload` with the salt of this scope, scenario and `parts` (unchanged when off)."""
    scope = SALT.get()
    if scope is not None:
        tail = "-".join(str(p) for p in parts)
        payload["cache_salt"] = f"{scope}-{zlib.crc32(scenario.encode()):08x}-{tail}"
    return payload


def salt_param() -> dict[str, str]:
    """A scenario run's recorded parameter: the scope its requests were salted with, if any."""
    scope = SALT.get()
    return {} if scope is None else {"cache_salt": scope}


def life_scope(side: str, life: int, round: int, purpose: str, kind: str) -> str:
    """The scope of one life's probe set: its side, life, perf round, purpose (a crc32 of it
    unless 'life', an attribution trial's name being free text) and moment ('start', 'idle')."""
    what = "" if purpose == "life" else f"-{zlib.crc32(purpose.encode()):08x}"
    return _FORBIDDEN.sub("_", f"qgate-life-{side[:48]}-l{life}-r{round}{what}-{kind}")


def life_salt(scope: str, ask: int) -> str:
    """The salt of the `ask`-th probe (0-based, in the order asked) of a life's probe set."""
    return f"{scope}-p{ask}"
