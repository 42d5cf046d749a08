"""The raw records behind the cache provenance, checked (qgate/perf/cache_sources.py,
qgate/perf/salts.py): their own arithmetic, and the salts held to the plan.

- Counters: each source's prompt tokens never go back within a run, and the sources add up
  to the by-source total the server reported.
- Usage: a request's cached prompt tokens lie within its prompt tokens.
- Salts: from perf derivation `CACHE_FROM` on, every run of a side whose engine serves
  `cache_salt` carries the scope qgate/perf/salts.py makes for its role, round and block, and
  a side that cannot salt carries none. So a deleted salt, or a run moved to another block,
  is an error, not an unsalted figure read as clean.
- Life salts: from perf derivation `LIFE_SALTS` on, every life probe set of a side whose
  engine serves `cache_salt` carries the scope qgate/perf/salts.py makes for its side, life,
  round, purpose and moment (`probe_salt`), and one of a side that cannot salt carries none:
  a deleted or edited salt, or a set moved to another life or moment, is an error.
"""

from __future__ import annotations

from qgate.errors import VerificationFailed
from qgate.gates.judgement import LIFE_SALTS
from qgate.perf.cache_sources import CACHE_FROM
from qgate.perf.counters import BY_SOURCE, SOURCES, source_key
from qgate.perf.life_probes import life_label, probe_salt
from qgate.perf.records import ScenarioRun
from qgate.perf.salts import salt_scope
from qgate.profile import Profile
from qgate.profile.engine_checks import served
from qgate.report.model import Report

__all__ = ["check_cache", "check_life_salts"]

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


def check_life_salts(report: Report, profile: Profile) -> str | None:
    """Raise VerificationFailed on a life probe set whose cache salt is not the one re-derived
    from its side, life, round, purpose and moment (none before perf derivation `LIFE_SALTS`);
    a line for `checked` (None without life probes)."""
    records = report.lives.records if report.lives is not None else []
    if not records:
        return None
    planned = report.perf.derivation >= LIFE_SALTS
    for p in records:
        want = probe_salt(profile, p.role, p.side, p.life, p.round, p.purpose, p.kind)
        if not planned:
            want = None
        if p.cache_salt != want:
            why = (
                f"made before perf derivation {LIFE_SALTS} salted life probes"
                if not planned
                else "its engine serves cache_salt"
                if want is not None
                else "its engine serves no cache_salt"
            )
            raise VerificationFailed(
                f"lives: {life_label(p)} {p.kind} probes: cache_salt {p.cache_salt!r} stored, "
                f"{want!r} re-derived ({why})"
            )
    salted = sum(1 for p in records if p.cache_salt is not None)
    return (
        f"cache salts of {len(records)} life probe sets re-derived ({salted} salted by side, "
        "life, round and moment)"
    )
