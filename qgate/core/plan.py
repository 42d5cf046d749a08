"""The run plan as data: every server life of a run, decided before any starts.

Made by qgate/run/plan.py, recorded in the report (single and multi), printed
by `qgate plan` and at the start of `qgate run`.
"""

from __future__ import annotations

import enum
from typing import Literal

from pydantic import Field

from qgate.core.records import Record

__all__ = [
    "GatePower",
    "Life",
    "Plan",
    "Preflight",
    "ScenarioPlan",
    "SuitePlan",
    "Work",
    "serves_of",
    "swapped",
]

Preflight = Literal["dry", "start", "none"]


class Work(enum.Flag):
    """What one life serves, typed: the run decides by these; people read `Life.serves`."""

    QUALITY = enum.auto()  # the quality suites
    GATES = enum.auto()  # the candidate's gates against the reference
    PERF = enum.auto()  # the candidate's perf scenarios (after its gates, when it has any)
    PERF_BASELINE = enum.auto()  # the reference's perf scenarios
    SUB_CANDIDATES = enum.auto()  # attribution: sub-candidates, one life each, gates only


def swapped(round: int) -> bool:
    """Whether perf round `round` (0-based, perf.rounds) runs its sides in the reverse order
    of round 0: ABBA, every odd round (people count rounds from 1: rounds 2, 4, ...)."""
    return round % 2 == 1


def serves_of(work: Work, blocks: int | None = None) -> list[str]:
    """`work` in words, in the order a life serves it; `blocks`: perf in interleaved blocks
    (side by side), where perf waits for every gate when the life runs quality suites."""
    out = []
    if Work.SUB_CANDIDATES in work:
        out.append("sub-candidates, one life each: quality suites, gates (no perf)")
    if Work.QUALITY in work:
        out.append("quality suites")
    if Work.GATES in work:
        out.append("gates")
    gated = ", if every gate passed"
    interleaved = "" if blocks is None else f" in {blocks} interleaved block(s)"
    if Work.PERF_BASELINE in work:
        after = gated if blocks is not None and Work.QUALITY in work else ""
        out.append(f"perf baseline{interleaved}{after}")
    if Work.PERF in work:
        out.append(f"perf{interleaved}{gated if Work.GATES in work else ''}")
    return out


class Life(Record):
    """One server start: whose, what it serves, in which order, where."""

    side: str = Field(description="'reference', or the candidate's name ('candidate' alone).")
    serves: list[str] = Field(description="What this life serves, in order (`work` in words).")
    condition: str = Field(default="", description="When it happens ('' = always).")
    placement: str = Field(description="Where it runs (cores, accelerators).")
    work: Work = Field(
        default=Work(0),
        exclude=True,
        description="What it serves, typed (not recorded: a report's plan keeps the words).",
    )
    round: int = Field(
        default=0,
        exclude=True,
        description="The perf round it belongs to (0: the run's own lives; k: a fresh life of "
        "perf round k, perf.rounds), typed (not recorded: the condition says it in words).",
    )

    @classmethod
    def of(
        cls,
        side: str,
        work: Work,
        placement: str,
        condition: str = "",
        blocks: int | None = None,
        round: int = 0,
    ) -> Life:
        """The life of `side` serving `work`, its words derived (`serves_of`)."""
        serves = serves_of(work, blocks)
        return cls(
            side=side,
            serves=serves,
            condition=condition,
            placement=placement,
            work=work,
            round=round,
        )


class SuitePlan(Record):
    """One result id of the quality stage and how many items it asks each side."""

    suite: str = Field(description="Result id, e.g. 'math.long'.")
    items: int | None = Field(description="Items per side (None: all of an external task).")
    detail: str = Field(default="", description="What an item is.")
    draw: str = Field(
        default="",
        description="Where its items come from and why (the core set, ladder levels, calibration).",
    )
    requests: int | None = Field(
        default=None, description="Requests per side where an item asks several (None: one)."
    )


class ScenarioPlan(Record):
    """One perf run (a sweep level is its own) and the tokens it asks each side."""

    scenario: str = Field(description="Run name ('name@cN' for a sweep level).")
    requests: int | None = Field(description="Requests per side, warm-ups included.")
    tokens: int | None = Field(description="Prompt plus output tokens per side, estimated.")
    graded_turns: int | None = Field(
        default=None,
        description="Graded session turns paired per side (a multi-turn scenario's `graded` "
        "sessions: items of its turn gate); None: none.",
    )
    graded_detail: str = Field(
        default="", description="The graded sessions: how many, their turns, which are graded."
    )


class GatePower(Record):
    """What an exact-answer suite's paired test can detect at its planned size."""

    suite: str = Field(description="Result id, e.g. 'math.long'.")
    items: int = Field(description="Paired items planned.")
    alpha: float = Field(description="The policy's test level.")
    power: float = Field(description="The power asked (detect.power, else the policy's power).")
    discordance: str = Field(description="The flip rate assumed, for people.")
    min_detectable_drop: float | None = Field(
        description="Smallest drop detected at that power (None: none at this size)."
    )
    target_drop: float | None = Field(
        description="The drop it must catch: detect.drop, else max_drop (None: neither set)."
    )
    items_needed: int | None = Field(
        description="Items the target needs at that power (None: more than the bound)."
    )
    sized: bool = Field(description="The suite is sized by its `detect` (items = items_needed).")
    show_power: float | None = Field(
        default=None,
        description="Under rule 'bound': the chance a candidate with no true loss PASSes (its "
        "bound within max_drop) at this size and the assumed flip rate (None: no margin to "
        "show, the point rule, or a plan made before).",
    )
    show_items: int | None = Field(
        default=None,
        description="Items at which that chance reaches the power asked (None: not computed, "
        "or more than 2,000).",
    )
    warning: str | None = Field(
        default=None,
        description="Ceiling or floor: the reference's expected accuracy leaves little to flip.",
    )

    @property
    def powered(self) -> bool:
        """The planned items reach the stated power for the target drop (no target: True)."""
        if self.target_drop is None:
            return True
        return self.items_needed is not None and self.items_needed <= self.items


class Plan(Record):
    """What `qgate run` will do with each runtime, decided before it starts any."""

    mode: Literal["sequence", "together"] = Field(
        default="sequence",
        description="'sequence': runtimes one after another, each with the whole machine; "
        "'together': reference and candidate started at once, side by side on their own cores.",
    )
    blocks: int = Field(default=1, description="Perf blocks per side (interleaved when together).")
    rounds: int = Field(
        default=1,
        description="Perf rounds: round 1 in the run's own lives, each later one in fresh lives "
        "of both sides, in ABBA order (perf.rounds).",
    )
    reference_cached: bool | None = Field(
        description="The reference's quality results are in the cache (None: not known here)."
    )
    preflight: dict[str, Preflight] = Field(description="Per candidate: how it is preflighted.")
    lives: list[Life] = Field(description="Every server start, in order.")
    suites: list[SuitePlan] = Field(default_factory=list, description="The quality stage.")
    scenarios: list[ScenarioPlan] = Field(default_factory=list, description="The perf stage.")
    power: list[GatePower] = Field(
        default_factory=list, description="Per gated exact-answer suite: what its size detects."
    )
    notes: list[str] = Field(default_factory=list, description="What people should know.")
    envelope: list[str] = Field(
        default_factory=list,
        description="Per stage, the envelope points it grades (concurrency levels, lives, the "
        "noise floor, context lengths) and their cost in requests (issue 44 item 6).",
    )

    @property
    def starts(self) -> int:
        """Server starts at most (conditional lives included); preflights not counted."""
        return len(self.lives)
