"""The probe gate of a perf scenario: its graded probes, reference against candidate.

    verdicts = probe_verdicts(spec.probes, "chat@c16", ref_runs, cand_runs)

Pure, like every gate: `qgate run` (report assembly) and `qgate verify` call it over
the same request records. Each probe is re-graded from its recorded text against
the item's known answer (`probes.grade`: an answer with no number is wrong, never
"different from the reference"), so an edited `probe_correct` changes nothing and an
edited verdict no longer follows from the records. Per side, an item is correct when
every ask of it in the scenario (every block and round) was; the two sides' items
are paired and judged by the math gates' own `evaluate_suite` (lost items against
`max_flips`, the one-sided exact McNemar test at `alpha`).

An item the candidate already answered wrongly in its own quality stage (its recorded
`probe_expected`, which verify checks against the quality records) is left out of the
pairs: that loss shows at light load and is the quality gates' to judge; the probe gate
judges what the load adds.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

from qgate.core.records import Role
from qgate.core.verdict import Verdict
from qgate.gates.suite import evaluate_suite
from qgate.perf.probes import graded
from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.profile import AccuracyPolicy, PerfProbes
from qgate.quality.extract import answer_matches
from qgate.quality.noise_floor import FloorSummary, mark_floor
from qgate.quality.records import ItemRecord, SuiteRun

__all__ = [
    "asks_suite",
    "graded_probes",
    "lost_at_light_load",
    "probe_allowance",
    "probe_suite",
    "probe_verdicts",
]


def graded_probes(runs: Iterable[ScenarioRun]) -> list[RequestRecord]:
    """Every graded probe request of `runs` (a probe item with its known answer)."""
    return [r for run in runs for r in run.requests if r.probe_id is not None and r.probe_truth]


def lost_at_light_load(runs: Iterable[ScenarioRun]) -> set[str]:
    """Items whose quality-stage answer (`probe_expected`) on this side was already wrong."""
    return {
        r.probe_id
        for r in graded_probes(runs)
        if r.probe_id is not None
        and r.probe_expected is not None
        and not answer_matches(r.probe_expected, r.probe_truth or "")
    }


def probe_suite(
    name: str, role: Role, runs: Sequence[ScenarioRun], skip: Collection[str] = ()
) -> SuiteRun | None:
    """One side's graded probes of a scenario as a suite run, without the `skip` items
    (None: it asked none)."""
    by_item: dict[str, list[RequestRecord]] = {}
    for r in graded_probes(runs):
        if r.probe_id in skip:
            continue
        assert r.probe_id is not None
        by_item.setdefault(r.probe_id, []).append(r)
    return asks_suite(f"perf.{name}.probes", role, by_item, graded)


def asks_suite(
    suite: str,
    role: Role,
    by_item: dict[str, list[RequestRecord]],
    correct: Callable[[RequestRecord], bool],
) -> SuiteRun | None:
    """Graded answers asked among the load, as one side's suite run: an item is right only if
    every ask of it was (the record shown is its first wrong ask); None: nothing asked."""
    if not by_item:
        return None
    items = []
    for item, asks in by_item.items():
        ok = [correct(r) for r in asks]
        wrong = next((r for r, good in zip(asks, ok, strict=True) if not good), asks[0])
        items.append(
            ItemRecord(
                id=item,
                prompt_sha256="",
                output=wrong.text or "",
                answer=wrong.probe_answer,
                expected=wrong.probe_truth or "",
                correct=all(ok),
                output_tokens=None,
            )
        )
    return SuiteRun(
        suite=suite,
        role=role,
        data_sha256="",
        items=items,
        params={"asks": sum(len(a) for a in by_item.values())},
    )


def probe_verdicts(
    spec: PerfProbes | None,
    name: str,
    reference: Sequence[ScenarioRun],
    candidate: Sequence[ScenarioRun],
    floor: FloorSummary | None = None,
) -> list[Verdict]:
    """The probe gate of scenario run `name` (every block and round of each side).

    No verdict when neither side asked a graded probe (probes off, no math suite, or a
    report from before graded probes) or there is no reference to pair with; a side
    without probes while the other has some fails the gate (nothing shows it answers
    correctly under this load).
    """
    if spec is None or not reference or not candidate:
        return []
    if not graded_probes([*reference, *candidate]):
        return []
    skip = lost_at_light_load(candidate)
    ref = probe_suite(name, "reference", reference, skip)
    cand = probe_suite(name, "candidate", candidate, skip)
    suite = f"perf.{name}.probes"
    max_flips = probe_allowance(spec, floor, len(ref.items) if ref is not None else 0)
    policy = AccuracyPolicy(max_flips=max_flips, significance=spec.significance, alpha=spec.alpha)
    if ref is None or cand is None:
        missing = "reference" if ref is None else "candidate"
        why = f"the {missing} asked no graded probe in this scenario"
        if ref is None and cand is None:
            why = f"no item left to judge: the candidate lost all {len(skip)} in its quality stage"
        return [
            Verdict(
                gate=f"{suite}.max_flips",
                suite=suite,
                observed=None,
                limit=float(max_flips),
                passed=False,
                reason=f"{suite}: {why}",
            )
        ]
    verdicts = evaluate_suite(suite, policy, ref, cand)
    derived = {} if spec.max_flips is not None else {f"{suite}.max_flips": max_flips}
    verdicts = mark_floor(verdicts, derived, floor)
    asks = f" ({ref.params['asks']} reference and {cand.params['asks']} candidate asks"
    if skip:
        asks += f"; {len(skip)} item(s) left out, lost already in the candidate's quality stage"
    asks += ")"
    return [v.model_copy(update={"reason": v.reason + asks}) for v in verdicts]


def probe_allowance(spec: PerfProbes, floor: FloorSummary | None, items: int) -> int:
    """A scenario's probe `max_flips`: the profile's; unset, what the reference's noise floor
    allows among its `items` probe items (at least 1), else 1."""
    if spec.max_flips is not None:
        return spec.max_flips
    return max(1, floor.allowance(items)) if floor is not None else 1
