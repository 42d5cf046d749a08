"""Calibration to the reference: which ladder levels can flip, and how often items flip there.

A paired test learns only from discordant items. A level the reference
answers almost always (ceiling) or almost never (floor) has few items that a
regression can flip, so the suite draws from the levels whose reference
accuracy lies in a band (default 20-85%: at least a fifth of the level on
either side of the model's boundary, and room for a 20-point drop to show).

The evidence is a calibration file: per ladder item, whether the reference
answered it, and the candidate when the run that produced it had one. It is
written by `qgate calibrate` from a prior, verified report (the reference's
records, cached or not) and bound to the model it measured (the checkpoint's
digest), the engine and its version: a run of another model refuses it.
Everything here is a pure function of that file and the profile, so `plan`,
`run` and `verify` decide the same levels, and the report embeds the file's
items so that `verify` re-derives the choice without it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from qgate.core.files import sha256_bytes
from qgate.errors import BadInput
from qgate.profile import LADDER_LEVELS, AccuracyPolicy, Calibration, MathSuite, ModelSpec
from qgate.quality.calibration_records import (
    CALIBRATION_VERSION,
    CEILING,
    FLOOR,
    CalibrationFile,
    CalibrationItem,
    CalibrationResult,
    LevelStat,
    canonical_bytes,
    level_stats,
)
from qgate.quality.data_ladder import LADDER, level_of
from qgate.quality.records import SuiteRun

__all__ = [
    "CEILING",
    "CALIBRATION_VERSION",
    "FLOOR",
    "CalibrationFile",
    "CalibrationItem",
    "CalibrationResult",
    "LevelStat",
    "boundary_warning",
    "calibrate",
    "calibration_from_runs",
    "canonical_bytes",
    "model_label",
    "model_problem",
    "check_stored",
    "choose_levels",
    "expected_accuracy",
    "level_stats",
    "math_calibration",
    "math_draw",
    "math_levels",
    "rederive",
    "stored_records",
]


def choose_levels(
    stats: dict[int, LevelStat], band: Sequence[float], min_items: int, allowed: Sequence[int]
) -> list[LevelStat]:
    """Every allowed level with its decision: drawn when its reference accuracy is in the band.

    When no level is in the band, the level nearest to it is drawn alone (a
    suite needs items), and its reason says so.
    """
    low, high = band
    out: list[LevelStat] = []
    for lv in allowed:
        s = stats.get(lv) or LevelStat(
            level=lv, n=0, reference_correct=0, paired=0, lost=0, gained=0, drawn=False, why=""
        )
        acc = f"reference {100 * s.accuracy:.0f}% of {s.n}"
        if s.n < min_items:
            why, drawn = f"{s.n} records, fewer than {min_items}: not judged", False
        elif s.accuracy > high:
            why, drawn = f"{acc}: ceiling (above {100 * high:.0f}%)", False
        elif s.accuracy < low:
            why, drawn = f"{acc}: floor (below {100 * low:.0f}%)", False
        else:
            why, drawn = f"{acc}: in the band", True
        out.append(s.model_copy(update={"drawn": drawn, "why": why}))
    if not any(s.drawn for s in out):
        judged = [s for s in out if s.n >= min_items]
        if judged:
            mid = (low + high) / 2
            # ties: the hardest level above the band, the easiest below it
            near = min(
                judged,
                key=lambda s: (abs(s.accuracy - mid), -s.level if s.accuracy > high else s.level),
            )
            out = [
                s.model_copy(update={"drawn": True, "why": s.why + "; none in the band: nearest"})
                if s.level == near.level
                else s
                for s in out
            ]
    return out


def calibrate(
    data: CalibrationFile, records_sha256: str, setting: Calibration, allowed: Sequence[int]
) -> CalibrationResult:
    """The levels to draw from, and the observed discordance there (pure)."""
    levels = choose_levels(level_stats(data.items), setting.band, setting.min_items, allowed)
    chosen = [s for s in levels if s.drawn]
    paired = sum(s.paired for s in chosen)
    flips = sum(s.lost + s.gained for s in chosen)
    n = sum(s.n for s in chosen)
    return CalibrationResult(
        suite="math",
        records_sha256=records_sha256,
        source=data.source,
        records_suite=data.suite,
        model=data.model,
        model_sha256=data.model_sha256,
        engine=data.engine,
        engine_version=data.engine_version,
        band=list(setting.band),
        min_items=setting.min_items,
        allowed=list(allowed),
        levels=levels,
        chosen=[s.level for s in chosen],
        discordance=flips / paired if paired else None,
        reference_accuracy=sum(s.reference_correct for s in chosen) / n if n else None,
        items=data.items,
    )


@lru_cache(maxsize=8)
def _read(path: Path, mtime_ns: int) -> tuple[CalibrationFile, str]:
    try:
        raw = path.read_bytes()
        loaded = json.loads(raw)
        version = loaded.get("calibration_version") if isinstance(loaded, dict) else None
        if isinstance(version, int) and version != CALIBRATION_VERSION:
            raise BadInput(
                f"{path}: calibration_version {version} is not supported (version "
                f"{CALIBRATION_VERSION} names the model it measured: run `qgate calibrate` again)"
            )
        data = CalibrationFile.model_validate(loaded)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the calibration records ({exc.strerror})") from exc
    except (ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise BadInput(f"{path}: not a qgate calibration file ({first})") from exc
    if data.calibration_version != CALIBRATION_VERSION:
        raise BadInput(f"{path}: calibration_version {data.calibration_version} is not supported")
    return data, sha256_bytes(canonical_bytes(data))


_STORED: ContextVar[CalibrationResult | None] = ContextVar("qgate_calibration", default=None)


@contextmanager
def stored_records(result: CalibrationResult | None) -> Iterator[None]:
    """Within: calibrate from a report's stored items, not the file (`qgate verify` elsewhere)."""
    token = _STORED.set(result)
    try:
        yield
    finally:
        _STORED.reset(token)


def math_calibration(spec: MathSuite) -> CalibrationResult | None:
    """The math suite's calibration, when its profile asks for one (pure: file -> decision)."""
    if spec.calibration is None:
        return None
    allowed = spec.levels or list(range(1, LADDER_LEVELS + 1))
    stored = _STORED.get()
    if stored is not None:
        return calibrate(file_of(stored), stored.records_sha256, spec.calibration, allowed)
    path = spec.calibration.records
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the calibration records ({exc.strerror})") from exc
    data, digest = _read(path, mtime)
    return calibrate(data, digest, spec.calibration, allowed)


def math_levels(spec: MathSuite) -> list[int] | None:
    """Ladder levels the math suite draws from (None: the core set)."""
    result = math_calibration(spec)
    if result is None:
        return spec.levels
    if not result.chosen:
        raise BadInput(
            f"quality.math.calibration: {spec.calibration and spec.calibration.records} has no "
            "ladder level with enough records to judge (min_items); calibrate on more items"
        )
    return result.chosen


def math_draw(spec: MathSuite) -> str:
    """Where a math suite's items come from and why, for the plan."""
    if spec.set is not None:
        return f"{spec.set} (a JSONL set: no ladder levels)"
    result = math_calibration(spec)
    if result is None and spec.levels is None:
        return (
            "the core set (tiers arith, multi, word: about ladder levels 1-2); why: no "
            "quality.math.levels or calibration in the profile (the default, sized for a "
            "small model; a strong model is at ceiling on it)"
        )
    if result is None:
        assert spec.levels is not None
        ends = sorted({min(spec.levels), max(spec.levels)})
        named = "; ".join(f"L{lv}: {LADDER[lv].describe()}" for lv in ends)
        return (
            f"ladder levels {spec.levels}; why: named in quality.math.levels, not calibrated "
            f"({named})"
        )
    low, high = result.band
    decided = "; ".join(f"L{s.level} {s.why}" for s in result.levels)
    return (
        f"ladder levels {result.chosen}; why: the reference's accuracy in "
        f"{100 * low:.0f}-{100 * high:.0f}% on {result.source} ({decided})"
    )


def expected_accuracy(policy: AccuracyPolicy) -> float | None:
    """The reference's accuracy a calibrated suite expects over its levels (None: unknown)."""
    if not isinstance(policy, MathSuite):
        return None
    result = math_calibration(policy)
    return None if result is None else result.reference_accuracy


def calibration_from_runs(
    runs: Sequence[SuiteRun],
    suite: str,
    source: str,
    *,
    model: str,
    model_sha256: str,
    engine: str,
    engine_version: str | None,
) -> CalibrationFile:
    """A calibration file from a report's runs of `suite` (the reference's, the candidate's),
    bound to the model, engine and version that answered them."""
    by_role = {r.role: r for r in runs if r.suite == suite}
    ref = by_role.get("reference")
    if ref is None:
        raise BadInput(f"{source}: no reference run of {suite}")
    cand = {i.id: i.correct for i in by_role["candidate"].items} if "candidate" in by_role else {}
    items = [
        CalibrationItem(id=i.id, reference=i.correct, candidate=cand.get(i.id))
        for i in ref.items
        if level_of(i.id) is not None
    ]
    if not items:
        raise BadInput(f"{source}: {suite} has no ladder items (ids 'L<level>-...')")
    return CalibrationFile(
        calibration_version=CALIBRATION_VERSION,
        source=source,
        suite=suite,
        model=model,
        model_sha256=model_sha256,
        engine=engine,
        engine_version=engine_version,
        items=items,
    )


def rederive(result: CalibrationResult, setting: Calibration) -> list[str]:
    """Problems with a stored calibration: its decision re-derived from its own items."""
    problems = []
    digest = sha256_bytes(canonical_bytes(file_of(result)))
    if digest != result.records_sha256:
        problems.append(
            f"calibration.records_sha256: {result.records_sha256} stored, {digest} re-derived "
            "from its records"
        )
    fresh = calibrate(file_of(result), result.records_sha256, setting, result.allowed)
    if fresh != result:
        problems.append(
            f"calibration of {result.suite}: the stored decision (levels {result.chosen}) does "
            f"not follow from its records (they give levels {fresh.chosen})"
        )
    return problems


def file_of(result: CalibrationResult) -> CalibrationFile:
    """The calibration file a stored result was made from (its fields hold all of it)."""
    return CalibrationFile(
        calibration_version=CALIBRATION_VERSION,
        source=result.source,
        suite=result.records_suite,
        model=result.model,
        model_sha256=result.model_sha256,
        engine=result.engine,
        engine_version=result.engine_version,
        items=result.items,
    )


def model_label(model: ModelSpec) -> str:
    """A profile's model, for people: its embedded name, else its path."""
    return model.embedded or str(model.path)


def model_problem(result: CalibrationResult, model: str, model_sha256: str | None) -> str | None:
    """Why calibration records cannot serve a run of `model` (checkpoint digest
    `model_sha256`): they measured another checkpoint. None when they fit, or when the run
    has no checkpoint digest to compare (an endpoint's model)."""
    if model_sha256 is None or result.model_sha256 == model_sha256:
        return None
    return (
        f"quality.math.calibration: the records measured {result.model} (checkpoint "
        f"{result.model_sha256[:12]}), this run serves {model} (checkpoint {model_sha256[:12]}); "
        "calibrate on this model's own report (`qgate calibrate`)"
    )


def check_stored(
    stored: CalibrationResult | None, spec: MathSuite | None, runs: Sequence[SuiteRun]
) -> list[str]:
    """Problems with a report's calibration: present exactly when the profile asks for one,
    its decision re-derived from its own items, every math item from a chosen level."""
    setting = spec.calibration if spec is not None else None
    if setting is None:
        return [] if stored is None else ["the report holds a calibration the profile never asked"]
    if stored is None:
        return ["quality.math.calibration is set but the report holds no calibration"]
    problems = rederive(stored, setting)
    allowed = spec.levels if spec is not None and spec.levels else list(range(1, LADDER_LEVELS + 1))
    if stored.allowed != allowed:
        problems.append(f"calibration: levels {stored.allowed} offered, the profile {allowed}")
    for run in runs:
        if not run.suite.startswith("math."):
            continue
        outside = sorted({i.id for i in run.items if level_of(i.id) not in stored.chosen})
        if outside:
            problems.append(
                f"{run.suite} ({run.role}): items {', '.join(outside[:3])} are not from the "
                f"calibrated levels {stored.chosen}"
            )
    return problems


def boundary_warning(suite: str, accuracy: float, undetectable: float | None) -> str | None:
    """The ceiling/floor warning for a suite whose reference answers `accuracy`, or None.

    `undetectable` is the smallest drop the suite detects at its power (None: none).
    """
    if FLOOR < accuracy < CEILING:
        return None
    below = (
        "no drop is detectable here"
        if undetectable is None
        else f"a drop below {100 * undetectable:.1f} points is invisible here"
    )
    if accuracy >= CEILING:
        return (
            f"the reference answers {100 * accuracy:.0f}% of {suite}: {below}, and damage to "
            "harder items does not reach it (draw from harder ladder levels)"
        )
    return (
        f"the reference answers {100 * accuracy:.0f}% of {suite}: at most "
        f"{100 * accuracy:.0f} points can be lost here and {below} (draw from easier levels)"
    )
