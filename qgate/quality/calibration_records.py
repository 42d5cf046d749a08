"""The calibration file and result records: per ladder item whether each side answered it,
per level the counts, and the levels a run drew (qgate/quality/calibrate.py decides them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from pydantic import Field

from qgate.core.records import Record
from qgate.quality.data_ladder import level_of

__all__ = [
    "CALIBRATION_VERSION",
    "CEILING",
    "FLOOR",
    "CalibrationFile",
    "CalibrationItem",
    "CalibrationResult",
    "LevelStat",
    "canonical_bytes",
    "level_stats",
]

CALIBRATION_VERSION = 2
CEILING = 0.9
"""Reference accuracy at or above which a suite is at ceiling: few items are left to lose."""
FLOOR = 0.1
"""Reference accuracy at or below which a suite is at floor: at most that share can be lost."""


class CalibrationItem(Record):
    """One ladder item of a prior run: whether each side answered it."""

    id: str = Field(description="Item id ('L7-0003': level 7).")
    reference: bool = Field(description="The reference answered it correctly.")
    candidate: bool | None = Field(
        default=None, description="The candidate answered it correctly (None: no candidate)."
    )


class CalibrationFile(Record):
    """What `qgate calibrate` writes: a prior run's answers on ladder items, and what answered."""

    calibration_version: int = Field(description="Format version (CALIBRATION_VERSION).")
    source: str = Field(description="Where the records come from, for people.")
    suite: str = Field(description="The result id they were taken from, e.g. 'math.short'.")
    model: str = Field(description="The model that answered, for people (embedded name or path).")
    model_sha256: str = Field(
        description="The checkpoint's digest in that run (the fingerprint's checkpoint_sha256); "
        "a run of another checkpoint refuses the file."
    )
    engine: str = Field(description="The reference's engine kind in that run ('vllm').")
    engine_version: str | None = Field(description="That engine's version (None: not stated).")
    items: list[CalibrationItem] = Field(description="Per-item answers.")


def canonical_bytes(data: CalibrationFile) -> bytes:
    """The file as `qgate calibrate` writes it; `records_sha256` is the sha256 of these bytes."""
    return (json.dumps(data.model_dump(mode="json"), indent=1) + "\n").encode()


class LevelStat(Record):
    """One ladder level as the calibration records show it."""

    level: int = Field(description="Ladder level.")
    n: int = Field(description="Items with records.")
    reference_correct: int = Field(description="Items the reference answered.")
    paired: int = Field(description="Items the candidate also answered (its records).")
    lost: int = Field(description="Reference right, candidate wrong.")
    gained: int = Field(description="Reference wrong, candidate right.")
    drawn: bool = Field(description="The suite draws from this level.")
    why: str = Field(description="Why it is (not) drawn.")

    @property
    def accuracy(self) -> float:
        return self.reference_correct / self.n if self.n else 0.0


class CalibrationResult(Record):
    """What calibration decided for one suite, with the evidence (re-derived by verify)."""

    suite: str = Field(description="The suite it decides ('math').")
    records_sha256: str = Field(
        description="sha256 of the calibration records as `qgate calibrate` writes them "
        "(`canonical_bytes`; verify re-derives it from the fields below)."
    )
    source: str = Field(description="The file's own account of where its records come from.")
    records_suite: str = Field(description="The result id the records were taken from.")
    model: str = Field(description="The model the records measured, for people.")
    model_sha256: str = Field(description="Its checkpoint digest (checked against the run's).")
    engine: str = Field(description="The engine kind that served it.")
    engine_version: str | None = Field(description="That engine's version.")
    band: list[float] = Field(description="Reference accuracy [low, high] a level must lie in.")
    min_items: int = Field(description="Records a level needs to be judged.")
    allowed: list[int] = Field(description="Levels the profile lets it pick from.")
    levels: list[LevelStat] = Field(description="Per level: the evidence and the decision.")
    chosen: list[int] = Field(description="Levels drawn from, in order.")
    discordance: float | None = Field(
        description="Observed share of flipped items (lost + gained) over the chosen levels; "
        "None when the records hold no candidate."
    )
    reference_accuracy: float | None = Field(
        description="The reference's accuracy over the chosen levels (the draw's expectation)."
    )
    items: list[CalibrationItem] = Field(description="The calibration file's items.")


def level_stats(items: Iterable[CalibrationItem]) -> dict[int, LevelStat]:
    """Per ladder level: counts of the records (items of no ladder level are ignored)."""
    acc: dict[int, list[int]] = {}
    for item in items:
        level = level_of(item.id)
        if level is None:
            continue
        row = acc.setdefault(level, [0, 0, 0, 0, 0])
        row[0] += 1
        row[1] += item.reference
        if item.candidate is not None:
            row[2] += 1
            row[3] += item.reference and not item.candidate
            row[4] += item.candidate and not item.reference
    return {
        lv: LevelStat(
            level=lv, n=n, reference_correct=r, paired=p, lost=lo, gained=g, drawn=False, why=""
        )
        for lv, (n, r, p, lo, g) in sorted(acc.items())
    }
