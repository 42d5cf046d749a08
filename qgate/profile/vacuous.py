"""Settings that act on nothing, flip limits that can never fail (issue 54), and gates that
can never pass: a `rule: bound` over too few items, and (issue 53 item 2) a pooled envelope
gate whose runs can never pool the answers its margin needs.

A setting whose source is missing (life or perf probes without a math suite to draw items
from, a noise floor over no exact-answer suite, an acceptance gate for a candidate that does
not speculate) is ignored at run time, and a gate whose `max_flips` allows every item its
suite holds to be lost passes whatever the candidate answers: both let a user believe
something was checked that was not. Only keys the profile writes are judged, never
defaults; a suite whose item count is known only at run time (a shipped set without
`limit`, a `detect` sizing, a plug-in suite) is left alone.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel

from qgate.core.bounds import clean_asks_to_show, clean_items_to_show, loss_upper
from qgate.core.yamlload import KeyPath
from qgate.profile.model import Profile
from qgate.profile.noise_floor import FLOOR_SUITES
from qgate.profile.probe_count import most_answers
from qgate.profile.quality import (
    AccuracyPolicy,
    ContextLadder,
    DegenerationSuite,
    LmEvalTask,
    MathSuite,
    RecallSuite,
    SampledSuite,
    SamplingSuite,
    StructuredSuite,
    ToolCallsSuite,
)
from qgate.profile.scenarios import MultiTurnScenario
from qgate.profile.spec_plan import draft_length, speculates
from qgate.profile.speculative import SPECULATIVE_ARG

__all__ = [
    "accuracy_policies",
    "fixed_items",
    "no_probe_source",
    "unshowable_envelope",
    "vacuous_problems",
]

Found = list[tuple[KeyPath, str]]

PROBED_FORM = "short"
"""The math prompt form the life and perf probes ask (qgate/quality/math_set.py PROBED)."""


def fixed_items(policy: AccuracyPolicy) -> int | None:
    """Items per result of an exact-answer suite as the profile fixes them (at most that many
    for `limit`); None where only the run knows (a `detect` sizing, a set without `limit`)."""
    if policy.detect is not None:
        return None
    if isinstance(policy, MathSuite | LmEvalTask):
        return policy.limit
    if isinstance(policy, RecallSuite):
        return policy.haystacks * len(policy.depths) * len(policy.similar)
    if isinstance(policy, ContextLadder):
        return policy.per_bucket
    if isinstance(policy, ToolCallsSuite | StructuredSuite):
        return policy.items
    if isinstance(policy, SamplingSuite):
        return len(policy.params)
    if isinstance(policy, SampledSuite):
        return policy.prompts
    if isinstance(policy, DegenerationSuite):
        return policy.items
    return None


def _written(model: BaseModel, path: KeyPath, name: str) -> KeyPath:
    """`path.name` where the profile writes `name`, else `path` (the block's own line)."""
    return (*path, name) if name in model.model_fields_set else path


def _never_fails(limit: int, items: int, what: str) -> str:
    return (
        f"allows {limit} lost of the at most {items} {what}: this limit can never fail; "
        f"set it below {items} or remove it"
    )


def accuracy_policies(profile: Profile) -> Iterator[tuple[KeyPath, AccuracyPolicy]]:
    """Every exact-answer policy of the profile's quality section, with its key path."""
    quality = profile.quality
    for name in type(quality).model_fields:
        value = getattr(quality, name)
        for index, item in enumerate(value) if isinstance(value, list) else [(None, value)]:
            if isinstance(item, AccuracyPolicy):
                yield ("quality", name) + (() if index is None else (index,)), item


def _never_passes(policy: AccuracyPolicy, items: int) -> str | None:
    """Why a `rule: bound` max_drop over `items` can never PASS: even with nothing lost its
    upper bound stays above the margin (None: it can)."""
    assert policy.max_drop is not None
    confidence = 1 - policy.alpha
    items = min(items, 10**12)  # the bound only narrows with more; a float holds this many
    if loss_upper(0, 0, items, confidence) <= policy.max_drop + 1e-12:
        return None
    if policy.max_drop <= 0:
        return (
            "with rule 'bound' a max_drop of 0 can never pass: no count of items bounds the "
            "loss at 0; allow a margin, or judge by the point rule (rule: point)"
        )
    need = clean_items_to_show(policy.max_drop, confidence)
    return (
        f"with rule 'bound' over at most {items} items the {100 * confidence:g}% bound on the "
        f"loss stays above {100 * policy.max_drop:g} pts even when nothing is lost "
        f"(it is {100 * loss_upper(0, 0, items, confidence):.1f}): this gate can never pass; "
        f"give it at least {need} items or a wider max_drop"
    )


def _suite_flip_problems(profile: Profile) -> Found:
    found: Found = []
    for path, policy in accuracy_policies(profile):
        items = fixed_items(policy)
        if policy.max_flips is not None and items is not None and policy.max_flips >= items:
            found.append(((*path, "max_flips"), _never_fails(policy.max_flips, items, "items")))
        if policy.rule == "bound" and policy.max_drop is not None and items is not None:
            q = profile.quality  # under stop: looks every look is judged at alpha / looks
            judged = policy.alpha / q.looks if q.stop == "looks" else policy.alpha
            why = _never_passes(policy.model_copy(update={"alpha": judged}), items)
            if why is not None:
                found.append((_written(policy, path, "max_drop"), why))
    return found


def _probe_items(profile: Profile, asked: int) -> int:
    """Distinct probe items asked: `asked`, or fewer where the math suite's limit is lower."""
    math = profile.quality.math
    limit = fixed_items(math) if math is not None else None
    return asked if limit is None else min(asked, limit)


def no_probe_source(profile: Profile) -> str | None:
    """Why no probe items can be drawn (None: the math suite's short form gives them)."""
    math = profile.quality.math
    if math is None:
        return "quality has no math suite"
    if PROBED_FORM not in math.prompts:
        return f"quality.math.prompts has no {PROBED_FORM!r}"
    return None


def _lives_problems(profile: Profile) -> Found:
    spec = profile.lives
    if "lives" not in profile.model_fields_set or spec.probes == 0:
        return []
    missing = no_probe_source(profile)
    if missing is not None:
        return [
            (
                _written(spec, ("lives",), "probes"),
                f"life probes are math items (short form) and {missing}: add one, or set "
                "lives: {probes: 0}",
            )
        ]
    items = _probe_items(profile, spec.probes)
    if "max_flips" in spec.model_fields_set and spec.max_flips >= items:
        return [(("lives", "max_flips"), _never_fails(spec.max_flips, items, "probe items"))]
    return []


def _perf_probe_problems(profile: Profile) -> Found:
    perf = profile.perf
    if perf is None or "probes" not in perf.model_fields_set or perf.probes.items == 0:
        return []
    probes, path = perf.probes, ("perf", "probes")
    missing = no_probe_source(profile)
    if missing is not None:
        return [
            (
                _written(probes, path, "items"),
                f"perf probes are math items (short form) and {missing}: add one, or set items: 0",
            )
        ]
    items = _probe_items(profile, probes.items)
    if probes.max_flips is not None and probes.max_flips >= items:
        return [((*path, "max_flips"), _never_fails(probes.max_flips, items, "probe items"))]
    return []


def _envelope_problems(profile: Profile) -> Found:
    """An `envelope` written where no probe answer can reach it: no probe source, or every
    probe turned off (lives: {probes: 0} and no perf probes)."""
    if "envelope" not in profile.model_fields_set:
        return []
    perf = profile.perf
    asks = profile.lives.probes > 0 or (perf is not None and perf.probes.items > 0)
    missing = no_probe_source(profile) if asks else "every probe is turned off"
    if missing is None:
        return []
    return [
        (
            ("envelope",),
            f"the envelope gate pools probe answers and {missing}: it would judge nothing; "
            "remove envelope, or give it probes (a math suite with the short form)",
        )
    ]


def _envelope_reach_problems(profile: Profile) -> Found:
    """A pooled envelope gate that can never show its margin (issue 53 item 2), refused where
    the profile writes a key that sizes the pool (`envelope`, `lives`, `perf.probes`,
    `perf.probe_share`), never on defaults alone (this module's rule: `unshowable_envelope`
    says it of those, and `qgate validate`, `plan` and `run` print it as a note)."""
    line = unshowable_envelope(profile)
    if line is None or not _sizes_pool(profile):
        return []
    return [(_reach_key(profile), line)]


def unshowable_envelope(profile: Profile) -> str | None:
    """Why the pooled envelope gate can never show its margin, or None: the most probe answers
    any run of the profile can give it (qgate/profile/probe_count.py, every count at its most:
    the math set at its `limit`, perf blocks at 2 unless placed in sequence) are fewer than the
    clean answers its bound needs, so every run of it ends INCONCLUSIVE. None where no probe
    can be drawn (`_envelope_problems`, the probes' own rules) or where a scenario's probes are
    not counted in advance (duration-bound, a trace)."""
    math = profile.quality.math
    if math is None or no_probe_source(profile) is not None:
        return None
    most = most_answers(profile, fixed_items(math))
    spec = profile.envelope
    need = clean_asks_to_show(spec.max_broken, 1 - spec.alpha)
    if most is None or not 0 < most.total < need:
        return None
    return (
        f"the pooled envelope gate can never show its margin: at most {most.total} probe "
        f"answers ({most.perf} perf, {most.lives} lives), fewer than the {need} clean "
        f"answers that show at most {100 * spec.max_broken:g}% broken "
        f"({100 * (1 - spec.alpha):g}%), so every run would end INCONCLUSIVE; raise "
        "perf.probes.items or lives.probes, or envelope.max_broken"
    )


def _sizes_pool(profile: Profile) -> bool:
    """Whether the profile writes a key that sizes the pooled envelope gate's evidence."""
    perf = profile.perf
    written = perf.model_fields_set if perf is not None else set()
    return bool({"envelope", "lives"} & profile.model_fields_set) or bool(
        {"probes", "probe_share"} & written
    )


def _reach_key(profile: Profile) -> KeyPath:
    """The key to name for a pooled gate that cannot show its margin: the one of its three
    the profile writes (the margin first), else the perf probes where there is a perf stage."""
    perf = profile.perf
    items = perf is not None and "items" in perf.probes.model_fields_set
    if "max_broken" in profile.envelope.model_fields_set:
        return ("envelope", "max_broken")
    if items or (perf is not None and "probes" not in profile.lives.model_fields_set):
        return ("perf", "probes", "items")
    return ("lives", "probes")


def _graded_turn_problems(profile: Profile) -> Found:
    found: Found = []
    for index, s in enumerate(profile.perf.scenarios if profile.perf else []):
        if not isinstance(s, MultiTurnScenario) or s.graded is None:
            continue
        graded = s.graded
        if "max_flips" not in graded.model_fields_set:
            continue
        asked = sum(1 for t in range(graded.turns) if t % 4 >= 2)  # turns 3, 4, 7, 8, ...
        items = (graded.sessions or s.conversations) * asked
        if graded.max_flips >= items:
            found.append(
                (
                    ("perf", "scenarios", index, "graded", "max_flips"),
                    _never_fails(graded.max_flips, items, "graded turns"),
                )
            )
    return found


def _noise_floor_problems(profile: Profile) -> Found:
    quality = profile.quality
    floor = quality.noise_floor
    if floor is None or any(getattr(quality, key) for key in FLOOR_SUITES):
        return []
    if quality.divergence is not None and floor.divergence:
        return []
    suites = " and ".join(FLOOR_SUITES)
    if quality.divergence is not None:  # its re-scoring turned off
        why = f"re-asks only {suites} items here (divergence: false), and quality has neither"
    else:
        why = f"re-asks {suites} items and re-scores divergence, and quality has none of them"
    return [
        (("quality", "noise_floor"), f"the reference's noise floor {why}: add one, or remove this")
    ]


def _speculative_problems(profile: Profile) -> Found:
    spec = profile.quality.speculative
    if spec is None:
        return []
    path = ("quality", "speculative")
    if not speculates(profile, "candidate"):
        return [
            (
                path,
                f"the candidate sets no {SPECULATIVE_ARG} engine arg, so its acceptance gate "
                "would be NOT EXERCISED (never a PASS): set it, or remove this",
            )
        ]
    floor, tokens = spec.min_acceptance_length, draft_length(profile, "candidate")
    if floor is not None and tokens is not None and floor > tokens + 1:
        return [
            (
                (*path, "min_acceptance_length"),
                f"{floor:g} is above {tokens + 1}, the most a draft of num_speculative_tokens "
                f"{tokens} can reach (1 + {tokens}): this gate can never pass",
            )
        ]
    return []


def vacuous_problems(profile: Profile) -> Found:
    """Written settings with nothing to act on, and written flip limits that cannot fail."""
    return (
        _suite_flip_problems(profile)
        + _lives_problems(profile)
        + _perf_probe_problems(profile)
        + _envelope_problems(profile)
        + _envelope_reach_problems(profile)
        + _graded_turn_problems(profile)
        + _noise_floor_problems(profile)
        + _speculative_problems(profile)
    )
