"""The order each side asks its suites in (qgate/quality/stage.py `asking_order`)."""

from __future__ import annotations

from pathlib import Path

from qgate.core.records import Role
from qgate.profile.load import load_profile
from qgate.quality.stage import asking_order

PROFILES = Path(__file__).resolve().parents[3] / "precision_profiles"


def _keys(path: Path, role: Role) -> list[str]:
    spec = load_profile(path, check_files=False).quality
    return [entry.key for entry, _ in asking_order(spec, role)]


def test_the_suites_the_reuse_passes_ask_again_run_right_before_the_passes() -> None:
    # recall is asked again; the context ladder's long prompts must not sit between recall's
    # cold pass and its warm pass (they evicted the host tier on an H100, 2026-12-07)
    keys = _keys(PROFILES / "smollm2-h200-kv-offload.yaml", "candidate")
    assert keys[-1] == "recall"
    assert keys.index("context_ladder") < keys.index("recall")
    assert sorted(keys) == sorted(_keys(PROFILES / "smollm2-h200-kv-offload.yaml", "reference"))


def test_the_reference_asks_the_paired_step_first() -> None:
    keys = _keys(PROFILES / "smollm2-h200-kv-offload.yaml", "reference")
    assert keys[0] == "divergence"
    assert keys[-1] == "recall"


def test_without_reuse_passes_the_profile_order_stands() -> None:
    spec = load_profile(PROFILES / "smollm2-cpu-int8.yaml", check_files=False).quality
    assert spec.reuse is None
    keys = [entry.key for entry, _ in asking_order(spec, "candidate")]
    assert keys.index("math") < keys.index("recall")
