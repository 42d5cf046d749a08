"""Which points of the operating envelope a run grades, stage by stage, and what they cost.

`qgate plan` (and the start of `qgate run`) prints these lines under the plan: the quality
stage's concurrency and lives, the reference's noise floor (its second asks, and the limits
it derives), the graded probes of every perf level, block and round, the context lengths
the suites reach, and the sides qgate does not start (endpoints), which the life probes grade
as found (issue 44 item 6). Costs are in requests, decided before anything starts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from qgate.core.bounds import clean_asks_to_show, rate_upper
from qgate.core.plan import ScenarioPlan, SuitePlan
from qgate.perf.shaped_probes import PROBE_MARGIN_TOKENS, graded_tokens, shape_budgets
from qgate.profile import ContextLadder, EnvelopeSpec, Profile
from qgate.profile.noise_floor import FLOOR_SUITES
from qgate.profile.probe_count import drawn, life_answers, perf_asks
from qgate.profile.suites import entry_of_result, exact_results
from qgate.profile.vacuous import no_probe_source
from qgate.quality.math_set import PROBED
from qgate.quality.noise_floor import binomial_upper
from qgate.run.life_probes import endpoint_roles

__all__ = ["envelope_lines", "skipped_perf_line"]


def _share(extra: int, base: int) -> str:
    return f"+{100 * extra / base:.0f}% of {base}" if base else f"+{extra}"


def _entry_model(result_id: str) -> type | None:
    """The profile model of the suite that owns `result_id` (None: no registered suite)."""
    entry = entry_of_result(result_id)
    return entry.model if entry is not None else None


def _floor_line(profile: Profile, suites: Sequence[SuitePlan]) -> str:
    spec = profile.quality
    floor = spec.noise_floor
    if floor is None:
        return (
            "noise floor: not measured (quality.noise_floor): flips are read against limits alone"
        )
    again = [s for s in suites if s.suite.split(".")[0] in FLOOR_SUITES and s.items]
    items = sum(s.items or 0 for s in again)
    div = spec.divergence.sequences if spec.divergence is not None else None
    scored = f" and re-scores {div} divergence sequences" if div and floor.divergence else ""
    total = sum(s.items or 0 for s in suites)
    cost = items + (div or 0 if floor.divergence else 0)
    unset = [
        sid
        for sid, p in exact_results(spec)
        if p.max_flips is None and not p.fraction_items and sid in {s.suite for s in suites}
    ]
    perf = profile.perf
    if perf is not None and perf.probes.items and perf.probes.max_flips is None:
        unset.append("perf probes")
    derives = f"; derives max_flips of {', '.join(unset)}" if unset else ""
    # the least any floor of these items allows (0 disagreements): a limit below it is inside
    least = binomial_upper(0, items, floor.confidence)
    sizes = {s.suite: s.items or 0 for s in suites}
    inside = [
        f"{sid} max_flips {p.max_flips} (even 0 of {items} allows "
        f"{math.ceil(least * sizes[sid] - 1e-9)})"
        for sid, p in exact_results(spec)
        if p.max_flips is not None
        and sid in sizes
        and p.max_flips < math.ceil(least * sizes[sid] - 1e-9)
    ]
    marked = f"; INSIDE NOISE FLOOR whatever it measures: {', '.join(inside)}" if inside else ""
    asked = ", ".join(s.suite for s in again)
    return (
        f"noise floor: the reference asks {items} items again ({asked}) at concurrency "
        f"{floor.second_concurrency(spec.concurrency)}{scored}, in its own life "
        f"({_share(cost, total)} reference quality requests){derives}{marked}"
    )


def _short(suites: Sequence[SuitePlan]) -> int | None:
    """Items of the math set's short form, where the plan knows them (the probes' source)."""
    return next((s.items for s in suites if s.suite == PROBED and s.items is not None), None)


def _probed(profile: Profile, scenarios: Sequence[ScenarioPlan]) -> bool:
    perf = profile.perf
    return perf is not None and bool(scenarios) and perf.probes.items > 0 and _probe_source(profile)


def _probe_source(profile: Profile) -> bool:
    """Whether probes can be drawn: math items in the short form (validate's own test)."""
    return no_probe_source(profile) is None


def _pooled_line(
    profile: Profile,
    suites: Sequence[SuitePlan],
    scenarios: Sequence[ScenarioPlan],
    blocks: int,
    rounds: int,
) -> str:
    """The pooled envelope gate's evidence as planned: the candidate's probe answers against
    the clean answers its bound needs (at least: a duration-bound scenario may ask more)."""
    spec = profile.envelope
    short = _short(suites)
    perf = 0
    if _probed(profile, scenarios):
        assert profile.perf is not None
        perf = perf_asks(profile.perf, drawn(profile.perf.probes.items, short))[0]
        perf *= blocks * rounds
    per_life = life_answers(profile, drawn(profile.lives.probes, short))
    own = per_life * rounds if _probe_source(profile) else 0
    total = perf + own
    if not total:
        return (
            "pooled envelope gate: none: the candidate asks no probe (no math suite with the "
            "short form, or every probe off): nothing grades its answers while serving"
        )
    need = clean_asks_to_show(spec.max_broken, 1 - spec.alpha)
    shown = (
        f"{need} clean answers show at most {100 * spec.max_broken:g}% broken "
        f"({100 * (1 - spec.alpha):g}%)"
    )
    verdict = (
        f"CANNOT SHOW its margin: {total} answers planned, fewer than the {need} a clean "
        "candidate needs (raise perf.probes.items or lives.probes, or envelope.max_broken)"
        if total < need
        else f"if all {total} are judged, up to {_tolerated(total, spec)} broken still show it"
    )
    return (
        f"pooled envelope gate: at least {total} candidate probe answers ({perf} perf, "
        f"{own} lives); {shown}: {verdict}"
    )


def skipped_perf_line(profile: Profile, suites: Sequence[SuitePlan]) -> str | None:
    """What `qgate run --skip-perf` leaves the pooled envelope gate: the first life's probe
    answers alone (no perf probe, no later round), said at the run's start where they cannot
    show its margin (None: no perf stage to skip, no life probe, or their answers suffice)."""
    perf, spec = profile.perf, profile.envelope
    if perf is None or not _probe_source(profile):
        return None
    lives = life_answers(profile, drawn(profile.lives.probes, _short(suites)))
    need = clean_asks_to_show(spec.max_broken, 1 - spec.alpha)
    if not 0 < lives < need:  # none: the gate has no answer to judge, and gives no verdict
        return None
    return (
        f"--skip-perf: the pooled envelope gate pools only the first life's {lives} probe "
        f"answers, fewer than the {need} a clean candidate needs to show at most "
        f"{100 * spec.max_broken:g}% broken: it will end INCONCLUSIVE, and so will the run "
        "(run the perf stage, or raise lives.probes, for a verdict)"
    )


def _tolerated(n: int, spec: EnvelopeSpec) -> int:
    """The most broken answers among `n` whose upper bound is still within the margin."""
    k = 0
    while k < n and rate_upper(k + 1, n, 1 - spec.alpha) <= spec.max_broken:
        k += 1
    return k


def _probe_line(
    profile: Profile,
    suites: Sequence[SuitePlan],
    scenarios: Sequence[ScenarioPlan],
    blocks: int,
    rounds: int,
) -> str:
    perf = profile.perf
    if perf is None or not scenarios:
        return "perf probes: no perf stage"
    if not _probed(profile, scenarios):
        return "perf probes: none (perf.probes.items 0, or no math suite to draw them from)"
    items = drawn(perf.probes.items, _short(suites))
    asks = perf_asks(perf, items)[0]
    measured = sum(s.requests or 0 for s in scenarios)
    runs = blocks * rounds
    levels = ", ".join(s.scenario for s in scenarios)
    capped = f" (of {perf.probes.items} asked: the math set holds {items})" * (
        items < perf.probes.items
    )
    return (
        f"perf probes: {items} graded items{capped} in each of {len(scenarios)} level(s) "
        f"({levels}) x {blocks} block(s) x {rounds} round(s): {asks * runs} probe requests per "
        f"side ({_share(asks * runs, measured * runs)} measured)"
    )


def _endpoint_lives(profile: Profile) -> str:
    """What the life probes grade of a side qgate does not start ('' when none or no probes)."""
    ends = endpoint_roles(profile)
    if not ends or profile.lives.probes == 0 or profile.quality.math is None:
        return ""
    idle = profile.lives.idle_s
    pause = f" and after a {idle:g} s idle pause" if idle > 0 else ""
    who = "both sides are endpoints" if len(ends) == 2 else f"the {ends[0]} is an endpoint"
    return (
        f"; {who} qgate does not start, graded as found: {profile.lives.probes} life probe(s)"
        f" at qgate's first contact{pause}"
    )


def envelope_lines(
    profile: Profile,
    suites: Sequence[SuitePlan],
    scenarios: Sequence[ScenarioPlan],
    blocks: int,
    rounds: int,
) -> list[str]:
    """The envelope points this plan grades, one line per stage."""
    spec = profile.quality
    if not spec.has_suites():
        return ["quality: none (a preview: speed only)"]
    items = sum(s.requests or s.items or 0 for s in suites)
    out = [
        f"quality: {', '.join(s.suite for s in suites)} at concurrency {spec.concurrency}, "
        f"in each side's first life ({items} requests per side)",
        _floor_line(profile, suites),
        _probe_line(profile, suites, scenarios, blocks, rounds),
        _pooled_line(profile, suites, scenarios, blocks, rounds),
    ]
    fresh = rounds - 1
    out.append(
        "lives graded: the first of each side (quality)"
        + (
            f"; perf rounds start {fresh} fresh life(s) per side, graded by their probes"
            if fresh
            else ""
        )
        + _endpoint_lives(profile)
    )
    lengths = []
    if spec.math is not None and "long" in spec.math.prompts:
        lengths.append(f"math.long ~{spec.math.long_tokens:,}-token preamble")
    if spec.recall is not None:
        lengths.append("recall " + ", ".join(f"{t:,}" for t in spec.recall.context_tokens))
    buckets = [s.suite for s in suites if _entry_model(s.suite) is ContextLadder]
    lengths.append(f"ladder buckets {', '.join(buckets)}" if buckets else "no context ladder")
    if shaped := _shaped_line(profile):
        lengths.append(shaped)
    out.append("context lengths graded: " + "; ".join(lengths))
    return out


def _shaped_line(profile: Profile) -> str:
    """Which perf scenarios ask their probes at their prompt length, and which serve prompts
    past every graded length unprobed ('' when nothing to say)."""
    perf = profile.perf
    if perf is None or perf.probes.items == 0 or profile.quality.math is None:
        return ""
    budgets = shape_budgets(profile)
    if budgets:
        shown = ", ".join(f"{n} ~{b + PROBE_MARGIN_TOKENS:,}" for n, b in budgets.items())
        return f"perf probes at their scenario's prompt length (perf.probes.shaped): {shown}"
    past = shape_budgets(profile, "auto")  # what `auto` would have shaped
    if past:
        shown = ", ".join(f"{n} {b + PROBE_MARGIN_TOKENS:,}" for n, b in past.items())
        return (
            f"NOT GRADED: perf serves prompts past the suites' longest "
            f"({graded_tokens(profile):,} tokens) with short probes only: {shown} "
            "(perf.probes.shaped: never)"
        )
    return ""
