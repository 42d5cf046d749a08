"""The perf records hold what the profile asked: every scenario run, every block of every
round, every measured request of every block (issue 43, insider edits).

The figures are re-derived from the records (recompute.py), so records that were dropped
leave figures that still "follow": one block pair dropped from a two-block run moved a TTFT
ratio from x1.46 [0.47, 3.83] to x0.71 [0.51, 0.98] and turned a speed gate from FAIL to
PASS. Here the shape of the records is held to the profile: each side of each scenario run
(a sweep level, an input length) holds, in every round, the blocks 0 .. B-1 (B: perf.blocks,
else what the run's plan mode gives: 2 side by side, 1 in sequence), each block holds the
scenario's measured requests (`requests`, or conversations x turns; a duration-bound
scenario's count is its own), and the quality probes mixed in are as many as
qgate/profile/probe_count.probe_points places (a count-bound scenario: every probe item at
least once, more where probe_share of its requests is more; a duration-bound one: one per
round(1 / probe_share) measured completions). A difference is rejected naming the field
and both values.

From perf derivation 10 the probe items are the plan's, not the records' (issue 54: a report
whose failing probes were deleted, the scenario's or only its lost asks, verified because
the count came from the records, and "none" was always allowed): `perf.probes.items`, at most
the math items the reference's `math.short` run holds (the set they are drawn from). Before,
the items the records hold, or none. From perf derivation 13 a scenario that shapes its probes
(perf.probes.shaped, qgate/perf/shaped_probes.py) holds each probe the server counted to at
least its preamble budget in prompt tokens: a short-form probe put in its place is refused.

The sides are the plan's too (issue 54 item 2): where the candidate's perf ran (`ran`, or
`ungated`), it and, compared with it, the reference hold records. Before, the sides were read
from the records, so a candidate whose perf records were deleted with its lost graded turns or
probes, every verdict derived again, verified as a PASS with no speed gate.
"""

from __future__ import annotations

from collections.abc import Iterator

from qgate.core.plan import Plan
from qgate.errors import VerificationFailed
from qgate.gates.judgement import ALONE, SHAPED
from qgate.perf.records import ScenarioRun, is_workload
from qgate.perf.shaped_probes import run_budgets
from qgate.profile import PerfSpec, Profile
from qgate.profile.perf import run_names
from qgate.profile.probe_count import measured_count, probe_points
from qgate.profile.vacuous import PROBED_FORM
from qgate.quality.math_set import PROBED
from qgate.report.model import Report
from qgate.report.verify.sessions_check import check_graded_turns, planned_turns

__all__ = ["check_perf_design", "expected_blocks", "planned_sides", "scenario_runs"]


def _fail(message: str) -> VerificationFailed:
    return VerificationFailed(message)


def scenario_runs(spec: PerfSpec) -> Iterator[tuple[str, int, int | None]]:
    """(run name, scenario index, measured requests or None) of every run the perf stage
    makes of `spec`, in order (`run_names`: as qgate/perf/runner.py names them)."""
    for index, scenario in enumerate(spec.scenarios):
        for name in run_names(scenario):
            yield name, index, measured_count(scenario)


def expected_blocks(profile: Profile, plan: Plan | None) -> tuple[int, str]:
    """Blocks per side per round the run made, and where that number comes from."""
    spec = profile.perf
    if spec is None:
        return 1, "no perf section"
    if spec.blocks is not None:
        return spec.blocks, f"perf.blocks {spec.blocks}"
    together = plan is not None and plan.mode == "together" and spec.compare_to == "reference"
    if together:
        return 2, "perf.blocks unset: 2 side by side (plan mode together)"
    return 1, "perf.blocks unset: 1 in sequence"


def _check_shape(run: ScenarioRun, budget: int, where: str) -> None:
    """A shaped scenario's probes were asked at its length: each one the server counted holds
    at least its preamble budget in prompt tokens (a short-form probe holds ~60)."""
    for q in run.requests:
        if q.probe_id is not None and q.prompt_tokens is not None and q.prompt_tokens < budget:
            raise _fail(
                f"{where}: probe {q.probe_id}: {q.prompt_tokens} prompt tokens stored, at least "
                f"{budget} re-derived (perf.probes.shaped: its prompt length less the question's "
                "room)"
            )


def _probe_gap(share: float) -> int:
    """Measured completions per quality probe (qgate/perf/runner.py); 0: no probes."""
    return max(1, round(1 / share)) if share > 0 else 0


def planned_probe_items(report: Report, profile: Profile) -> int | None:
    """The probe items every scenario run asks by the plan (0: none planned); None where the
    report predates the plan being held (perf derivation below 10: the records decide)."""
    if report.perf.derivation < ALONE:
        return None
    spec, math = profile.perf, profile.quality.math
    if spec is None or math is None or PROBED_FORM not in math.prompts:
        return 0
    drawn = next(
        (r for r in report.quality.runs if r.role == "reference" and r.suite == PROBED), None
    )
    return 0 if drawn is None else min(spec.probes.items, len(drawn.items))


def planned_sides(report: Report, profile: Profile) -> list[str]:
    """The sides whose perf records the run makes, whatever the records hold: none unless the
    candidate's perf ran (its gates passed, or forced past them), then the candidate and,
    where it is compared with it, the reference."""
    spec = profile.perf
    if spec is None or report.perf.status not in ("ran", "ungated"):
        return []
    return ["candidate", "reference"] if spec.compare_to == "reference" else ["candidate"]


def _check_sides(report: Report, profile: Profile, blocks: int, why: str) -> None:
    """Each planned side holds perf records: deleting a side's (its lost graded turns or
    probes with it) no longer leaves a report whose figures and gates simply lack it."""
    spec = profile.perf
    assert spec is not None
    status = report.perf.status
    rounds = spec.rounds if status == "ran" else 1
    names = list(scenario_runs(spec))
    turns = sum(planned_turns(spec.scenarios[i]) for _, i, _ in names) * rounds * blocks
    for role in planned_sides(report, profile):
        if any(r.role == role for r in report.perf.runs):
            continue
        graded = f"; graded session turns: 0 stored, {turns} re-derived" if turns else ""
        raise _fail(
            f"perf.runs: the {role} holds no records, perf {status} plans {len(names)} scenario "
            f"run(s) x {rounds} round(s) x {blocks} block(s) ({why}) of it{graded}"
        )


def check_perf_design(report: Report, profile: Profile, plan: Plan | None = None) -> str:
    """Raise VerificationFailed when the perf records are not the shape the profile asks;
    a line for `checked`. `plan`: the run's plan where the report holds none (a multi
    report's candidate)."""
    perf = report.perf
    spec = profile.perf
    if spec is None or not (perf.runs or planned_sides(report, profile)):
        return ""
    plan = report.plan if report.plan is not None else plan
    blocks, why = expected_blocks(profile, plan)
    _check_sides(report, profile, blocks, why)
    compared = spec.compare_to == "reference"  # without it the candidate runs its own blocks
    if compared and report.plan is not None and report.plan.blocks != blocks:
        raise _fail(f"plan.blocks: {report.plan.blocks} stored, {blocks} re-derived ({why})")
    runs: dict[tuple[str, str, int], list[ScenarioRun]] = {}
    for r in perf.runs:
        runs.setdefault((r.scenario, r.role, r.round), []).append(r)
    roles = sorted({r.role for r in perf.runs})
    rounds = sorted({r.round for r in perf.runs})
    names = list(scenario_runs(spec))
    held = {r.scenario for r in perf.runs}
    missing = [n for n, _, _ in names if n not in held]
    if missing:
        raise _fail(
            f"perf: scenario run {missing[0]} of the profile has no records "
            f"({len(held)} scenario runs held, the profile makes {len(names)})"
        )
    measured = turns = 0
    planned = planned_probe_items(report, profile)
    shaped = run_budgets(profile) if perf.derivation >= SHAPED else {}
    for name, index, count in names:
        for role in roles:
            for k in rounds:
                side = runs.get((name, role, k), [])
                got = sorted(r.block for r in side)
                if got != list(range(blocks)):
                    raise _fail(
                        f"perf {name}: the {role}'s round {k + 1} holds blocks "
                        f"{[b + 1 for b in got]}, {why} asks {blocks} "
                        f"(blocks per round: {len(got)} stored, {blocks} re-derived)"
                    )
                for run in side:
                    work = sum(1 for q in run.requests if is_workload(q))
                    probes = sum(1 for q in run.requests if q.probe_id is not None)
                    where = f"perf {name}: the {role}'s round {k + 1} block {run.block + 1}"
                    turns += check_graded_turns(run, spec.scenarios[index], where)
                    if count is not None and work != count:
                        raise _fail(
                            f"{where}: measured requests: {work} stored, {count} re-derived "
                            f"(perf.scenarios[{index}])"
                        )
                    asked_items = len({q.probe_id for q in run.requests if q.probe_id is not None})
                    items = asked_items if planned is None else planned
                    points = probe_points(count, items, spec.probe_share)
                    if points is None:
                        gap = _probe_gap(spec.probe_share)
                        want = work // gap if gap else 0
                        rule = f"one per {gap} measured requests"
                    else:
                        want = len(points)
                        rule = f"{items} item(s), at least a share of the {count} requests"
                    if probes != want and (planned is not None or probes != 0):
                        raise _fail(
                            f"{where}: quality probes: {probes} stored, {want} re-derived "
                            f"({rule}, perf.probe_share {spec.probe_share:g})"
                        )
                    if shaped and name in shaped:
                        _check_shape(run, shaped[name], where)
                    measured += work
    graded = f" and {turns} graded session turns" if turns else ""
    return (
        f"perf records hold every scenario run, {blocks} block(s) per side per round and "
        f"{measured} measured requests{graded} as the profile asks"
    )
