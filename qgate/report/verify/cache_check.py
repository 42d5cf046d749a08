"""The raw records behind the cache provenance, checked (qgate/perf/cache_sources.py,
qgate/perf/salts.py): their own arithmetic, and the salts held to the plan.

- Counters: each source's prompt tokens never go back within a run, and the sources add up
  to the by-source total the server reported.
- Usage: a request's cached prompt tokens lie within its prompt tokens.
- Salts: from perf derivation `CACHE_FROM` on, every run of a side whose engine serves
  `cache_salt` carries the scope qgate/perf/salts.py makes for its role, round and block, and
  a side that cannot salt carries none. So a deleted salt, or a run moved to another block,
  is an error, not an unsalted figure read as clean.
"""

from __future__ import annotations

from qgate.errors import VerificationFailed
from qgate.perf.cache_sources import CACHE_FROM
from qgate.perf.counters import BY_SOURCE, SOURCES, source_key
from qgate.perf.records import ScenarioRun
from qgate.perf.salts import salt_scope
from qgate.profile import Profile
from qgate.profile.engine_checks import served
from qgate.report.model import Report

__all__ = ["check_cache"]

_EPS = 0.5  # counters are token counts; floats only by transport


def _counter_problem(run: ScenarioRun) -> str | None:
    before, after = run.counters_before, run.counters_after
    keys = [source_key(s) for s in SOURCES if source_key(s) in after]
    for k in keys:
        if after[k] + _EPS < before.get(k, 0.0):
            return f"{k} goes back from {before.get(k, 0.0):g} to {after[k]:g}"
    if keys and BY_SOURCE in after:
        for name, counters in (("before", before), ("after", after)):
            parts = sum(counters.get(source_key(s), 0.0) for s in SOURCES)
            total = counters.get(BY_SOURCE, 0.0)
            if abs(parts - total) > _EPS:
                return f"its sources add up to {parts:g} {name}, the total says {total:g}"
    return None


def _usage_problem(run: ScenarioRun) -> str | None:
    for r in run.requests:
        cached = r.cached_prompt_tokens
        if cached is not None and (cached < 0 or cached > (r.prompt_tokens or 0)):
            return f"request {r.index} has {cached} cached of {r.prompt_tokens} prompt tokens"
    return None


def _salt_problem(run: ScenarioRun, salts: bool) -> str | None:
    held = run.params.get("cache_salt")
    want = salt_scope(run.role, run.round, run.block) if salts else None
    if held != want:
        why = "its engine serves cache_salt" if salts else "its engine serves no cache_salt"
        return f"cache_salt {held!r} stored, {want!r} re-derived ({why})"
    return None


def check_cache(report: Report, profile: Profile) -> str:
    """Raise VerificationFailed on a perf run whose cache records do not hold; a line for
    `checked` (empty without perf runs)."""
    runs = report.perf.runs
    if not runs:
        return ""
    planned = report.perf.derivation >= CACHE_FROM
    for run in runs:
        where = f"perf run {run.scenario} ({run.role}, round {run.round}, block {run.block})"
        salts = planned and "cache_salt" in served(profile.engine_of(run.role))
        problem = _counter_problem(run) or _usage_problem(run)
        if problem is None and planned and run.role != "standalone":
            problem = _salt_problem(run, salts)
        if problem is not None:
            raise VerificationFailed(f"{where}: {problem}")
    salted = sum(1 for r in runs if "cache_salt" in r.params)
    return (
        f"cache records of {len(runs)} perf runs checked (sources add up, cached within "
        f"prompt tokens); {salted} salted as their side and block ask"
    )
