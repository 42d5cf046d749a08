"""The pooled envelope gate (issue 53 item 4): one bound on the rate of broken answers over every
probe answer the candidate gave while serving.

    verdicts = envelope_verdicts(profile.envelope, evidence.runs, evidence.perf_runs, lives)

A perf scenario asks 3-4 probe items and a life 2-4: each such gate alone can never reject by
its exact test (the smallest p with 4 items is 0.0625), and 4 clean answers bound a garbling
rate only at 53%. Pooled, they mean something: every graded probe answer of the candidate
(each scenario at every level, block and round, and every life's start and idle probes) is
one trial, broken when it is wrong on an item that

- the reference answered right under the same condition: every one of its asks of that item
  in the same scenario, or (lives) its own lives' probes of that kind (gates/life.py's
  `judged_asks`, the life gates' own set);
- the candidate answered right in its own quality stage (a loss there is the quality gates').

The gate PASSes when the one-sided exact (Clopper-Pearson) upper bound on the broken rate is
within `envelope.max_broken`, FAILs when the lower bound is above it (harm shown) and is
INCONCLUSIVE otherwise, a pool with no judged answer included. No verdict when the candidate
asked no graded probe at all (probes off, no math suite): `qgate plan` says such a profile
cannot be probed. The per-scenario and per-life gates stay beside it as gross-fault alarms.
Pure, like every gate: the one judge calls it for `qgate run` and `qgate verify`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from qgate.core.bounds import clean_asks_to_show, rate_lower, rate_upper
from qgate.core.verdict import Verdict
from qgate.gates.life import judged_asks
from qgate.gates.probes import graded_probes, lost_at_light_load
from qgate.gates.reference_lives import LifeKey
from qgate.perf.life_probes import LifeProbes
from qgate.perf.probes import graded
from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.profile import EnvelopeSpec
from qgate.quality.records import SuiteRun

__all__ = ["GATE", "Pool", "envelope_verdicts", "pool"]

GATE = "envelope.broken_rate"


@dataclass
class Pool:
    """The candidate's judged probe answers, counted by where they were asked."""

    asked: int = 0
    """Every graded probe answer the candidate gave (judged or not)."""
    by_source: dict[str, tuple[int, int]] = field(default_factory=dict)
    """'perf' and 'lives' -> (judged answers, broken answers)."""

    def add(self, source: str, judged: Iterable[RequestRecord]) -> None:
        n, k = self.by_source.get(source, (0, 0))
        for r in judged:
            n, k = n + 1, k + (not graded(r))
        self.by_source[source] = (n, k)

    @property
    def judged(self) -> int:
        return sum(n for n, _ in self.by_source.values())

    @property
    def broken(self) -> int:
        return sum(k for _, k in self.by_source.values())


def pool(
    quality_runs: Sequence[SuiteRun],
    perf_runs: Sequence[ScenarioRun],
    lives: Sequence[LifeProbes],
    alone: bool = True,
    leave_out: Collection[LifeKey] = (),
) -> Pool:
    """Every judged probe answer of the candidate, perf scenarios and lives (the lives' as the
    life gates judge them: `leave_out` the broken reference lives, which set no floor)."""
    out = Pool()
    by_key: dict[tuple[str, str], list[ScenarioRun]] = {}
    for run in perf_runs:
        by_key.setdefault((run.scenario, run.role), []).append(run)
    for name in dict.fromkeys(run.scenario for run in perf_runs):
        cands = graded_probes(by_key.get((name, "candidate"), []))
        refs = graded_probes(by_key.get((name, "reference"), []))
        out.asked += len(cands)
        ref_wrong = {r.probe_id for r in refs if not graded(r)}
        skip = ref_wrong | lost_at_light_load(by_key.get((name, "candidate"), []))
        out.add("perf", (r for r in cands if r.probe_id not in skip))
    for _, asked, judged in judged_asks(quality_runs, lives, alone, leave_out):
        out.asked += len(asked)
        out.add("lives", judged)
    return out


def envelope_verdicts(
    spec: EnvelopeSpec,
    quality_runs: Sequence[SuiteRun],
    perf_runs: Sequence[ScenarioRun],
    lives: Sequence[LifeProbes],
    alone: bool = True,
    leave_out: Collection[LifeKey] = (),
) -> list[Verdict]:
    """The pooled envelope gate over the candidate's probe answers ([]: it asked none)."""
    got = pool(quality_runs, perf_runs, lives, alone, leave_out)
    if not got.asked:
        return []
    confidence = 1 - spec.alpha
    level = f"{100 * confidence:g}%"
    n, k = got.judged, got.broken
    parts = ", ".join(f"{src} {b} of {m}" for src, (m, b) in sorted(got.by_source.items()) if m)
    seen = f"{k} broken of {n} judged answers ({parts or 'none judged'}; {got.asked} asked)"
    need = clean_asks_to_show(spec.max_broken, confidence)
    if not n:
        high, low, passed, inconclusive = 1.0, 0.0, False, True
        why = (
            f"{GATE}: INCONCLUSIVE: no probe answer judged ({got.asked} asked, every item "
            "wrong on the reference or lost in the candidate's quality stage); "
            f"{need} clean answers show {100 * spec.max_broken:g}%"
        )
    else:
        high, low = rate_upper(k, n, confidence), rate_lower(k, n, confidence)
        passed = high <= spec.max_broken
        inconclusive = not passed and low <= spec.max_broken
        if passed:
            why = (
                f"{GATE}: at most {100 * high:.1f}% of answers broken under serving "
                f"({level} upper bound; {seen}) <= {100 * spec.max_broken:g}% allowed: shown "
                "within the margin"
            )
        elif inconclusive:
            why = (
                f"{GATE}: INCONCLUSIVE: at most {100 * high:.1f}% broken ({level} upper bound; "
                f"{seen}) > {100 * spec.max_broken:g}% allowed, and harm is not shown (lower "
                f"bound {100 * low:.1f}%); a clean candidate needs at least {need} judged "
                "answers to show this margin"
            )
        else:
            why = (
                f"{GATE}: at least {100 * low:.1f}% of answers broken under serving ({level} "
                f"lower bound; {seen}) > {100 * spec.max_broken:g}% allowed: harm shown"
            )
    return [
        Verdict(
            gate=GATE,
            suite="envelope",
            observed=high,
            limit=spec.max_broken,
            passed=passed,
            underpowered=n < need,
            reason=why,
            metric="broken_rate_upper_bound",
            comparator="<=",
            n=n,
            inconclusive=inconclusive,
        )
    ]
