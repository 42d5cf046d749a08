"""Calibration to the reference: levels in the band, observed discordance, the boundary warning."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from qgate.errors import BadInput
from qgate.profile import Calibration, Detect, MathSuite
from qgate.quality import calibrate as cal
from qgate.quality.math_set import math_items
from qgate.quality.records import ItemRecord, SuiteRun

IDENTITY = {"model": "smollm2", "model_sha256": "a" * 64, "engine": "vllm", "engine_version": "1"}


def _simulated(
    accuracy: dict[int, float], flips: dict[int, float], n: int = 40
) -> cal.CalibrationFile:
    """A prior run: per level, the reference right with `accuracy`, items flipped at `flips`."""
    rng = random.Random(7)
    items = []
    for level, acc in accuracy.items():
        right = set(rng.sample(range(n), round(acc * n)))
        flipped = set(rng.sample(range(n), round(flips.get(level, 0.0) * n)))
        for k in range(n):
            ref = k in right
            cand = (not ref) if k in flipped else ref
            items.append(
                cal.CalibrationItem(id=f"L{level}-{k + 1:04d}", reference=ref, candidate=cand)
            )
    return cal.CalibrationFile(
        calibration_version=cal.CALIBRATION_VERSION,
        source="simulated",
        suite="math.short",
        **IDENTITY,
        items=items,
    )


def _write(tmp_path: Path, data: cal.CalibrationFile) -> Path:
    path = tmp_path / "calibration.json"
    path.write_text(data.model_dump_json())
    return path


# A strong reference: 99% on the easy (flat-set) levels, its boundary at levels 6-8.
STRONG = {1: 0.99, 2: 0.99, 3: 0.99, 4: 0.97, 5: 0.93, 6: 0.8, 7: 0.55, 8: 0.3, 9: 0.08, 10: 0.0}
FLIPS = {6: 0.1, 7: 0.15, 8: 0.12}


def test_a_reference_at_ceiling_moves_the_draw_to_the_harder_levels_where_items_flip(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, _simulated(STRONG, FLIPS))
    flat = MathSuite(levels=[1, 2, 3], calibration=Calibration(records=path))
    result = cal.math_calibration(flat)
    assert result is not None and len(result.chosen) == 1  # none in band among 1-3: the nearest
    assert "none in the band" in next(s.why for s in result.levels if s.drawn)

    spec = MathSuite(calibration=Calibration(records=path))
    result = cal.math_calibration(spec)
    assert result is not None
    assert result.chosen == [6, 7, 8]
    assert cal.math_levels(spec) == [6, 7, 8]
    assert {i.tier for i in math_items(spec)} == {"L6", "L7", "L8"}
    reasons = {s.level: s.why for s in result.levels}
    assert "ceiling" in reasons[2] and "floor" in reasons[10] and "in the band" in reasons[7]
    # discordance is observed where the draw now is, and none on the flat levels
    assert result.discordance is not None and result.discordance > 0.05
    assert all(s.lost + s.gained == 0 for s in result.levels if s.level <= 3)
    assert result.reference_accuracy is not None and 0.2 <= result.reference_accuracy <= 0.85


def test_the_band_and_min_items_decide(tmp_path: Path) -> None:
    path = _write(tmp_path, _simulated(STRONG, FLIPS, n=6))
    few = cal.math_calibration(MathSuite(calibration=Calibration(records=path)))
    assert few is not None and all("not judged" in s.why for s in few.levels)
    assert few.chosen == []  # nothing judged: no level, and the suite refuses to run
    with pytest.raises(BadInput, match="no ladder level with enough records"):
        cal.math_levels(MathSuite(calibration=Calibration(records=path)))
    path = _write(tmp_path, _simulated(STRONG, FLIPS))
    wide = cal.math_calibration(MathSuite(calibration=Calibration(records=path, band=[0.05, 0.95])))
    assert wide is not None and set(wide.chosen) >= {5, 6, 7, 8, 9}


def test_verify_rederives_the_decision_from_the_embedded_items(tmp_path: Path) -> None:
    setting = Calibration(records=_write(tmp_path, _simulated(STRONG, FLIPS)))
    result = cal.math_calibration(MathSuite(calibration=setting))
    assert result is not None
    assert cal.rederive(result, setting) == []
    forged = result.model_copy(update={"chosen": [2, 3]})
    assert "does not follow" in cal.rederive(forged, setting)[0]
    flipped = [i.model_copy(update={"reference": True}) for i in result.items]
    assert cal.rederive(result.model_copy(update={"items": flipped}), setting)


def test_bad_calibration_files_are_bad_input(tmp_path: Path) -> None:
    missing = MathSuite(calibration=Calibration(records=tmp_path / "none.json"))
    with pytest.raises(BadInput, match="cannot read"):
        cal.math_calibration(missing)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"items": []}))
    with pytest.raises(BadInput, match="not a qgate calibration file"):
        cal.math_calibration(MathSuite(calibration=Calibration(records=path)))


def test_a_file_without_its_model_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "v1.json"
    items = [{"id": "L1-0001", "reference": True, "candidate": True}]
    path.write_text(
        json.dumps({"calibration_version": 1, "source": "s", "suite": "m", "items": items})
    )
    with pytest.raises(BadInput, match="calibration_version 1 is not supported"):
        cal.math_calibration(MathSuite(calibration=Calibration(records=path)))


def test_records_of_another_model_are_refused_naming_both(tmp_path: Path) -> None:
    from qgate.profile import Profile
    from qgate.run.context import check_calibration_model

    path = _write(tmp_path, _simulated(STRONG, FLIPS))
    profile = Profile.model_validate(
        {
            "name": "glm",
            "model": {"path": "/models/GLM-5.2"},
            "candidate": {"args": {"kv_cache_dtype": "fp8"}},
            "quality": {"math": {"calibration": {"records": str(path)}}},
        }
    )
    check_calibration_model(profile, "a" * 64)  # the model the records measured
    check_calibration_model(profile, None)  # no checkpoint digest to compare (an endpoint)
    with pytest.raises(BadInput) as exc:
        check_calibration_model(profile, "b" * 64)
    assert "smollm2" in exc.value.message and "/models/GLM-5.2" in exc.value.message
    assert "aaaaaaaaaaaa" in exc.value.message and "bbbbbbbbbbbb" in exc.value.message


def test_the_shipped_records_name_the_embedded_model() -> None:
    root = Path(__file__).resolve().parents[3] / "precision_profiles" / "calibration"
    for path in root.glob("*.json"):
        result = cal.math_calibration(MathSuite(calibration=Calibration(records=path)))
        assert result is not None and result.model == "smollm2" and result.engine == "vllm"
        # the committed file is in the form `qgate calibrate` writes: its digest is the file's
        assert result.records_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_boundary_warning_at_ceiling_and_floor() -> None:
    assert cal.boundary_warning("math.short", 0.5, 0.1) is None
    ceiling = cal.boundary_warning("math.short", 0.99, 0.062)
    assert ceiling is not None
    assert ceiling.startswith("the reference answers 99% of math.short")
    assert "below 6.2 points is invisible" in ceiling
    floor = cal.boundary_warning("recall.1024", 0.04, None)
    assert floor is not None and "at most 4 points can be lost" in floor


def _math_run(role: str, ids: list[str]) -> SuiteRun:
    items = [
        ItemRecord(id=i, prompt_sha256="0" * 64, output="1", answer="1", expected="1", correct=True)
        for i in ids
    ]
    return SuiteRun(suite="math.short", role=role, data_sha256="0" * 64, items=items)  # type: ignore[arg-type]


def test_a_stored_calibration_is_checked_against_the_profile_and_the_items(tmp_path: Path) -> None:
    path = _write(tmp_path, _simulated(STRONG, FLIPS))
    spec = MathSuite(calibration=Calibration(records=path))
    stored = cal.math_calibration(spec)
    assert stored is not None
    drawn = [i.id for i in math_items(spec)]
    runs = [_math_run("reference", drawn), _math_run("candidate", drawn)]
    assert cal.check_stored(stored, spec, runs) == []
    assert cal.check_stored(None, MathSuite(), runs) == []
    assert "holds no calibration" in cal.check_stored(None, spec, runs)[0]
    assert "never asked" in cal.check_stored(stored, MathSuite(), runs)[0]
    easy = [_math_run("candidate", ["L2-0001", *drawn])]
    assert "not from the calibrated levels [6, 7, 8]" in cal.check_stored(stored, spec, easy)[0]
    narrower = MathSuite(levels=[6, 7], calibration=Calibration(records=path))
    assert any("offered" in p for p in cal.check_stored(stored, narrower, runs))


def test_verify_draws_the_same_items_from_the_stored_records_without_the_file(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, _simulated(STRONG, FLIPS))
    spec = MathSuite(calibration=Calibration(records=path), detect=Detect(drop=0.05))
    stored = cal.math_calibration(spec)
    drawn = [i.id for i in math_items(spec)]
    path.unlink()
    with pytest.raises(BadInput):
        math_items(spec)
    with cal.stored_records(stored):
        assert [i.id for i in math_items(spec)] == drawn
