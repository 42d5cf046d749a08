"""Where a server start's time went, from the engine's own log lines.

Pure functions over log text (tested on captured vLLM logs): the seconds the
engine says it spent loading weights, compiling, capturing graphs and
initialising the engine, and whether torch.compile read its graphs from the
engine's compile cache (kept across runs under the engine's cache folder,
`VLLM_CACHE_ROOT`, ~/.cache/vllm by default) or compiled them afresh. A
phase an engine does not log is absent, not zero; the time to ready itself
is measured by qgate (spawn to the first healthy /health).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from qgate.core.serving import EffectiveConfig

__all__ = ["CompileCache", "compile_cache", "ready_line", "start_facts", "startup_phases"]

CompileCache = Literal["hit", "miss"]

_NUMBER = r"(?P<s>\d+(?:\.\d+)?)"
# phase -> patterns; the last matching line of a phase wins (a restart logs them again)
_PHASES: dict[str, tuple[re.Pattern[str], ...]] = {
    "weights_s": (
        re.compile(rf"Model loading took [\d.]+ ?GiB and {_NUMBER} ?s(?:ec(?:ond)?s?)?"),
        re.compile(rf"Loading weights took {_NUMBER} ?s(?:ec(?:ond)?s?)?"),
    ),
    "compile_s": (
        re.compile(rf"torch\.compile take?s? {_NUMBER} ?s in total"),
        re.compile(rf"torch\.compile took {_NUMBER} ?s in total"),
    ),
    "graphs_s": (re.compile(rf"Graph capturing finished in {_NUMBER} ?secs?"),),
    "engine_init_s": (re.compile(rf"init engine \([^)]*\) took {_NUMBER} ?s(?:ec(?:ond)?s?)?"),),
}
_CACHE_HIT = re.compile(r"Directly load the compiled graph\(s\)[^\n]* from the cache")
_CACHE_MISS = re.compile(r"Compiling a graph for (?:dynamic|compile range|general) shape")


def startup_phases(log_text: str) -> dict[str, float]:
    """Seconds per start-up phase the engine logged (weights_s, compile_s, graphs_s, ...)."""
    out: dict[str, float] = {}
    for phase, patterns in _PHASES.items():
        found: list[tuple[int, float]] = []
        for pattern in patterns:
            found += [(m.start(), float(m.group("s"))) for m in pattern.finditer(log_text)]
        if found:
            out[phase] = max(found)[1]
    return out


def compile_cache(log_text: str) -> CompileCache | None:
    """'hit' when torch.compile loaded its graphs from the cache, 'miss' when it compiled
    them, None when nothing was compiled (eager, or an engine that does not say)."""
    if _CACHE_HIT.search(log_text):
        return "hit"
    if _CACHE_MISS.search(log_text):
        return "miss"
    return None


_PHASE_WORDS = {
    "weights_s": "weights",
    "compile_s": "torch.compile",
    "graphs_s": "graph capture",
    "engine_init_s": "engine init",
}


def ready_line(config: EffectiveConfig, log_path: Path | None) -> str:
    """'46 s (weights 0.35 s, engine init 0.86 s; log: ...)': the console's start-up line."""
    took = "?" if config.ready_s is None else f"{config.ready_s:.0f} s"
    parts = [f"{_PHASE_WORDS.get(k, k)} {v:.2f} s" for k, v in config.startup.items()]
    if config.compile_cache is not None:
        parts.append(f"compile cache {config.compile_cache}")
    where = f"log: {log_path}" if log_path else ""
    inside = "; ".join(p for p in (", ".join(parts), where) if p)
    return f"{took} ({inside})" if inside else took


def start_facts(log_text: str, spawned_at: float | None, ready_at: float | None) -> dict[str, Any]:
    """The EffectiveConfig fields of one start: ready_s, startup, compile_cache."""
    ready = None if spawned_at is None or ready_at is None else round(ready_at - spawned_at, 2)
    return {
        "ready_s": ready,
        "startup": startup_phases(log_text),
        "compile_cache": compile_cache(log_text),
    }
