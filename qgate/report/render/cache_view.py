"""Where each side's prompt tokens came from, beside a scenario's ratios (ScenarioResult.cache,
qgate/perf/cache_sources.py): read from the judged result, nothing recomputed."""

from __future__ import annotations

from qgate.gates.judgement import ScenarioResult
from qgate.perf.cache_sources import CacheSources
from qgate.report.render.parts import Table

__all__ = ["cache_table"]

HEADER = [
    "Prompt tokens",
    "Requests",
    "Tokens",
    "Within a conversation",
    "Across conversations",
    "Unexplained",
    "Device cache (/metrics)",
    "Host or external tier",
    "Salted",
]


def _share(part: int | None, whole: int) -> str:
    if part is None:
        return "–"
    return f"{part} ({100 * part / whole:.1f}%)" if whole else str(part)


def _row(role: str, c: CacheSources) -> list[str]:
    counted = (c.computed or 0) + (c.device_cache or 0) + (c.external_tier or 0)
    return [
        role,
        f"{c.requests} ({c.detailed} told)",
        str(c.prompt_tokens),
        _share(c.within_conversation, c.prompt_tokens),
        _share(c.across_conversations, c.prompt_tokens),
        _share(c.unexplained, c.prompt_tokens),
        _share(c.device_cache, counted),
        _share(c.external_tier, counted),
        "yes" if c.salted else "no",
    ]


def cache_table(result: ScenarioResult) -> Table | None:
    """Each side's cache provenance in one scenario; None for reports without it."""
    if not result.cache:
        return None
    rows = [_row(role, c) for role, c in result.cache.items()]
    caption = (
        "Where prompt tokens came from: per request (usage.prompt_tokens_details; '–' where the "
        "server did not say), and per scenario from /metrics (probes and graded turns included)"
    )
    return Table(HEADER, rows, caption=caption)
