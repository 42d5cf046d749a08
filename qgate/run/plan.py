"""The run plan: decided before anything starts, printed by `qgate plan`, followed by `qgate run`.

Each runtime gets one life. The reference serves its quality suites and, in
the same life, its perf baseline; a candidate serves its quality suites and,
only when every gate passed, its perf. With a cached reference the quality
suites come from the signed cache and the reference starts once, for its perf
baseline, after the candidates (and only when one of them ran perf). Before
the reference stage a cheap preflight checks each candidate's command line
with the engine's own argument parser (`engine.preflight: auto`), or starts and
stops it (`always`). With perf.rounds R > 1, rounds 2..R add a fresh perf-only
life of each side that measured speed in round 1, in ABBA order, after passed
gates (qgate/run/rounds.py).

The plan is data (recorded in the report) and text (printed by `qgate plan`
and at the start of `qgate run`); `make_plan` is a pure function of the
profiles, the machine's usable cores and what the cache holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.core.plan import (
    GatePower,
    Life,
    Plan,
    Preflight,
    ScenarioPlan,
    SuitePlan,
    Work,
    swapped,
)
from qgate.gates.quality import policy_for
from qgate.gates.turns import graded_plan, turn_power
from qgate.perf.expand import expand_inputs
from qgate.perf.runner import levels
from qgate.profile import FixedScenario, MultiTurnScenario, Profile, QualitySpec
from qgate.profile.engine_checks import starts_process
from qgate.profile.engines import engine_class
from qgate.profile.probe_count import blocks_of, measured_count, rounds_of
from qgate.profile.suites import configured, engine_args_needed, profile_key
from qgate.quality.calibrate import boundary_warning, expected_accuracy
from qgate.quality.sizing import gate_power
from qgate.run.envelope import envelope_lines
from qgate.run.life_probes import lives_note

__all__ = ["describe", "make_plan", "round_lives"]


def _suites(spec: QualitySpec) -> list[SuitePlan]:
    out: list[SuitePlan] = []
    for entry, setting in configured(spec):
        rows = entry.plan_rows(setting)
        if rows is None:  # a suite that does not say its size
            rows = [SuitePlan(suite=rid, items=None) for rid, _ in entry.results_of(setting)]
        out += rows
    return out


def _power(spec: QualitySpec) -> list[GatePower]:
    """Per gated exact-answer suite of known size: what its paired test can detect."""
    out = []
    for s in _suites(spec):
        policy = policy_for(spec, s.suite)
        gated = policy is not None and (policy.max_drop is not None or policy.significance)
        gated = gated and policy is not None and not policy.fraction_items  # its row states it
        if policy is not None and gated and s.items is not None:
            power = gate_power(s.suite, policy, s.items)
            expected = expected_accuracy(policy)
            if expected is not None:
                warning = boundary_warning(s.suite, expected, power.min_detectable_drop)
                power = power.model_copy(update={"warning": warning})
            out.append(power)
    return out


def _power_line(g: GatePower) -> str:
    at = f"alpha {g.alpha:g}, power {g.power:g}, {g.discordance}"
    mdd = "no drop" if g.min_detectable_drop is None else f"{100 * g.min_detectable_drop:.1f} pts"
    line = f"  power {g.suite}: {g.items} items detect {mdd} ({at})"
    if g.target_drop is None:
        return line
    need = "more than the bound" if g.items_needed is None else f"{g.items_needed} items"
    what = "detect" if g.sized else "max_drop"
    line += f"; {what} {100 * g.target_drop:.1f} pts needs {need}"
    if g.sized and not g.powered:
        line += " (CAPPED at detect.max_items: the stated power is not reached)"
    elif not g.powered:
        line += f" (UNDERPOWERED: state quality.{profile_key(g.suite)}.detect to size it)"
    if g.show_power is not None:
        line += (
            f"; shows a candidate with no true loss within max_drop {100 * g.show_power:.0f}% "
            "of the time"
        )
        if g.show_items is None or g.show_items > g.items:
            more = "more than 2,000" if g.show_items is None else str(g.show_items)
            line += f" (CANNOT SHOW it at the power asked: {more} items would)"
    return line


def _scenarios(profile: Profile) -> list[ScenarioPlan]:
    out: list[ScenarioPlan] = []
    for scenario in profile.perf.scenarios if profile.perf else []:
        for s in expand_inputs(scenario):
            measured = measured_count(s)
            for name, _ in levels(s):
                requests = None if measured is None else measured + s.warmup
                tokens: int | None = None
                if requests is not None and isinstance(s, FixedScenario):
                    assert isinstance(s.input_tokens, int)  # expand_inputs made it one length
                    tokens = requests * (s.input_tokens + s.output_tokens)
                elif requests is not None and isinstance(s, MultiTurnScenario):
                    # each turn re-sends the conversation so far (prefix-cache hits included)
                    per_turn = s.turn_input_tokens + s.output_tokens
                    turns = range(1, s.turns + 1)
                    history = sum(s.shared_prefix_tokens + per_turn * t for t in turns)
                    tokens = (s.conversations + s.warmup) * history
                graded, detail = graded_plan(s)
                out.append(
                    ScenarioPlan(
                        scenario=name,
                        requests=requests,
                        tokens=tokens,
                        graded_turns=graded,
                        graded_detail=detail,
                    )
                )
    return out


def _preflight(profile: Profile, reference_cached: bool | None, refresh: bool) -> Preflight:
    mode = profile.engine.preflight
    launch = profile.engine_of("candidate")
    if mode == "never" or not starts_process(launch.kind):
        return "none"
    if mode == "always":
        return "start"
    if not profile.quality.has_suites() or (reference_cached and not refresh):
        return "none"  # no reference stage to wait for: the candidate starts next anyway
    return "dry" if engine_class(launch.kind).has_dry_check else "start"


def make_plan(
    profiles: Sequence[tuple[str, Profile]],
    *,
    reference_cached: bool | None,
    placement: str,
    refresh: bool = False,
    side_by_side: tuple[str, str] | None = None,
) -> Plan:
    """The plan for the candidates `profiles` (name, profile as selected for this machine).

    `side_by_side`: the reference's and the candidate's placements when they run
    together (sequence_reason found nothing against it).
    """
    first = profiles[0][1]
    has_quality = first.quality.has_suites()
    perf = first.perf is not None and first.perf.compare_to == "reference"
    cached = bool(reference_cached) and not refresh and has_quality
    if side_by_side is not None:
        return _together(profiles[0], side_by_side, reference_cached)
    lives: list[Life] = []
    quality = Work.QUALITY if has_quality else Work(0)
    if not cached:
        ref = Life.of("reference", quality | (Work.PERF_BASELINE if perf else Work(0)), placement)
        lives.append(ref if ref.serves else ref.model_copy(update={"serves": ["nothing"]}))
    gated = quality | Work.GATES if has_quality else Work(0)
    for name, profile in profiles:
        lives.append(
            Life.of(name, gated | (Work.PERF if profile.perf is not None else Work(0)), placement)
        )
    if cached and perf:
        lives.append(
            Life.of("reference", Work.PERF_BASELINE, placement, "when some candidate's perf ran")
        )
    rounds = rounds_of(first)
    lives += round_lives(lives, rounds)
    notes: list[str] = []
    if cached:
        notes.append("reference quality results from the signed cache (authenticated at use)")
    elif has_quality and perf:
        notes.append(
            "the reference's perf baseline is measured in its first life, before the "
            "gates are known; a candidate that fails them leaves it unused"
        )
    if perf:
        within = (
            "the noise between requests and between the blocks of each life"
            if blocks_of(first, together=False) > 1
            else "the noise between requests only"
        )
        across = (
            f"; with {rounds} rounds in fresh lives (ABBA) they also cover the spread of the "
            "round ratios, restart to restart"
            if rounds > 1
            else ""
        )
        notes.append(
            "speed is compared across lives in sequence: the machine's state can "
            f"move between them, and the intervals cover {within}{across}"
        )
    notes += _engine_args_notes(first)
    if note := stop_note(first.quality):
        notes.append(note)
    if note := lives_note(first, len(lives), together=False):
        notes.append(note)
    return Plan(
        reference_cached=reference_cached,
        blocks=blocks_of(first, together=False),
        rounds=rounds,
        preflight={name: _preflight(p, reference_cached, refresh) for name, p in profiles},
        lives=lives,
        suites=_suites(first.quality),
        scenarios=_scenarios(first),
        power=_power(first.quality) + turn_power(first),
        notes=notes,
        envelope=envelope_lines(
            first, _suites(first.quality), _scenarios(first), blocks_of(first, False), rounds
        ),
    )


def stop_note(spec: QualitySpec) -> str | None:
    """What `quality.stop` does to the quality stage, for the plan (None: off)."""
    if spec.stop == "off":
        return None
    if spec.stop != "looks":
        return (
            f"quality.stop: {spec.stop}: exact-answer suites run in blocks and end once their "
            "verdicts are settled (never another verdict)"
        )
    return (
        f"quality.stop: looks: exact-answer suites are asked in the order seed {spec.seed} "
        f"gives and judged at {spec.looks} evenly spaced looks, every gate at alpha / "
        f"{spec.looks} (the power above is at that level); each ends at the first look that "
        "shows PASS or harm, else at its last item"
    )


def _engine_args_notes(profile: Profile) -> list[str]:
    """What the profile's suites need of the engine, for either placement's plan."""
    return [
        f"quality.{suite} needs engine args {', '.join(a for a, _ in args)} on both sides "
        "(vLLM; `qgate validate` refuses a side it starts without them)"
        for suite, args in engine_args_needed(profile.quality).items()
    ]


def _later(rounds: int) -> str:
    """'round 2' or 'rounds 2-R': the rounds after the first, for people."""
    return "round 2" if rounds == 2 else f"rounds 2-{rounds}"


def _when(side: str, k: int, rounds: int, candidates: Sequence[str]) -> str:
    if side == "reference":  # it measures for whichever candidate passed
        side = candidates[0] if len(candidates) == 1 else "some candidate"
    whose = "the candidate's" if side == "candidate" else f"{side}'s"
    return f"perf round {k + 1} of {rounds}, a fresh life, when {whose} gates passed"


def round_lives(first: Sequence[Life], rounds: int, blocks: int | None = None) -> list[Life]:
    """The fresh lives of perf rounds 2..`rounds`: the perf lives of `first` (round 1), perf
    only, in ABBA order (every other round reversed, qgate/run/rounds.py). `blocks`: side by
    side, both sides of a round started at once, the first listed interleaving first."""
    perf = Work.PERF | Work.PERF_BASELINE
    measured = [life for life in first if life.work & perf]
    candidates = [life.side for life in measured if life.side != "reference"]
    out: list[Life] = []
    for k in range(1, rounds):
        order = list(reversed(measured)) if swapped(k) else measured
        for i, life in enumerate(order):
            when = _when(life.side, k, rounds, candidates)
            if blocks is not None:
                when += "; started together, its blocks first" if i == 0 else "; started together"
            out.append(Life.of(life.side, life.work & perf, life.placement, when, blocks, k))
    return out


def _together(
    named: tuple[str, Profile], where: tuple[str, str], reference_cached: bool | None
) -> Plan:
    """Reference and candidate started at once, side by side; perf in interleaved blocks."""
    name, profile = named
    blocks = blocks_of(profile, together=True)
    perf = profile.perf is not None
    compared = perf and profile.perf is not None and profile.perf.compare_to == "reference"
    quality = profile.quality.has_suites()  # none: a dummy-weights preview, speed only
    suites = Work.QUALITY if quality else Work(0)
    ref_work = suites | (Work.PERF_BASELINE if compared else Work(0))
    cand_work = (suites | Work.GATES if quality else Work(0)) | (Work.PERF if perf else Work(0))
    last = "first (quality.stop: verdict)" if profile.quality.stop == "verdict" else "last"
    on_cpu = profile.target.accelerator.lower() == "cpu"
    start = (
        "start together and run side by side, each on its own cores: their start-ups "
        "and quality suites overlap"
        if on_cpu
        else "share one device, each with its share of the memory: the candidate starts once "
        "the reference is ready (vLLM sizes its KV cache from the free memory), then "
        "their quality suites overlap"
    )
    notes = [
        f"reference and candidate {start}; the reference scores its divergence "
        f"continuations first and hands them to the candidate's divergence, which runs {last}"
        if quality
        else f"reference and candidate {start.split(': ')[0]}: their start-ups overlap",
    ]
    if note := stop_note(profile.quality):
        notes.append(note)
    if compared:
        notes.append(
            f"speed is measured on each side's own {'cores' if on_cpu else 'share'}, in "
            "interleaved blocks (reference, candidate, ...; the other side paused): each "
            "ratio's interval covers the spread of its block ratios"
            + (" (one block: the noise between requests only)" if blocks == 1 else "")
        )
    notes += _engine_args_notes(profile)
    rounds = rounds_of(profile)
    if compared and rounds > 1:
        notes.append(
            f"perf.rounds {rounds}: after passed gates, both sides start again in fresh lives "
            f"for {_later(rounds)}, the interleaving begun by the candidate in even rounds "
            "(ABBA): each ratio's interval also covers the spread of its round ratios"
        )
    lives = [
        Life.of("reference", ref_work, where[0], blocks=blocks),
        Life.of(name, cand_work, where[1], "started together with the reference", blocks),
    ]
    lives += round_lives(lives, rounds if compared else 1, blocks)
    if note := lives_note(profile, len(lives), together=True):
        notes.append(note)
    return Plan(
        mode="together",
        blocks=blocks,
        rounds=rounds,
        reference_cached=reference_cached,
        # on the CPU the candidate starts beside the reference, right away; on an accelerator
        # it starts once the reference is ready, so a bad argument is worth catching first
        preflight={name: "none" if on_cpu else _preflight(profile, reference_cached, False)},
        lives=lives,
        suites=_suites(profile.quality),
        scenarios=_scenarios(profile),
        power=_power(profile.quality) + turn_power(profile),
        notes=notes,
        envelope=envelope_lines(
            profile, _suites(profile.quality), _scenarios(profile), blocks, rounds
        ),
    )


def describe(plan: Plan) -> list[str]:
    """The plan in lines for people (`qgate plan`, the start of `qgate run`)."""
    cached = {True: "cached", False: "not cached", None: "unknown here"}[plan.reference_cached]
    how = "side by side" if plan.mode == "together" else "in sequence"
    lines = [f"plan: {plan.starts} server start(s) {how}; reference results {cached}"]
    checks = {name: how for name, how in plan.preflight.items() if how != "none"}
    for name, how in checks.items():
        what = "the engine's argument parser (no start)" if how == "dry" else "start and stop"
        lines.append(f"  preflight {name}: {what}")
    for i, life in enumerate(plan.lives, 1):
        when = f" ({life.condition})" if life.condition else ""
        lines.append(f"  {i}. {life.side}: {', '.join(life.serves)}{when}; {life.placement}")
    for s in plan.suites:
        items = "all" if s.items is None else str(s.items)
        detail = f" ({s.detail})" if s.detail else ""
        lines.append(f"  quality {s.suite}: {items} items per side{detail}")
        if s.draw:
            lines.append(f"    draws from {s.draw}")
    for g in plan.power:
        lines.append(_power_line(g))
        if g.warning:
            lines.append(f"    WARNING: {g.warning}")
    for p in plan.scenarios:
        reqs = "until its duration" if p.requests is None else f"{p.requests} requests"
        toks = "" if p.tokens is None else f", ~{p.tokens:,} tokens"
        per = "per side" if plan.blocks == 1 else f"per side and block, {plan.blocks} blocks"
        per += f", in each of {plan.rounds} rounds" if plan.rounds > 1 else ""
        lines.append(f"  perf {p.scenario}: {reqs} {per}{toks}")
        if p.graded_turns:
            lines.append(f"    graded turns: {p.graded_turns} per side ({p.graded_detail})")
    if plan.envelope:
        lines.append("  envelope (graded points, per stage):")
        lines += [f"    {e}" for e in plan.envelope]
    lines += [f"  note: {n}" for n in plan.notes]
    return lines
