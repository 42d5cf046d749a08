"""Every shipped profile validates, including those that only run on their own hardware."""

from __future__ import annotations

from pathlib import Path

import pytest

from qgate.profile import load_profile

PROFILES = sorted((Path(__file__).resolve().parents[2] / "precision_profiles").glob("*.yaml"))


def test_profiles_are_shipped() -> None:
    names = {p.stem for p in PROFILES}
    shipped = {"smollm2-cpu-fp8", "smollm2-cpu-fp8kv", "glm-5.2-fp8-aiter-mi325x",
               "kimi-k3-fp8kv-aiter-mi325x"}  # fmt: skip
    assert shipped <= names


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_shipped_profile_validates(path: Path) -> None:
    # Profiles for other hardware name model folders that exist only there.
    profile = load_profile(path, check_files=False)
    assert profile.name == path.stem
    assert profile.perf is not None


def test_kimi_long_prefill_is_three_lines() -> None:
    # 8192-in / 256-out, 2 warmups + 5 measured: the defaults make it three lines
    kimi = next(p for p in PROFILES if p.stem == "kimi-k3-fp8kv-aiter-mi325x")
    profile = load_profile(kimi, check_files=False)
    assert profile.perf is not None
    (s,) = profile.perf.scenarios
    assert (s.input_tokens, s.output_tokens, s.warmup, s.requests) == (8192, 256, 2, 5)


def test_cpu_profiles_validate_with_their_files() -> None:
    # These run here, so every file they name must exist (the embedded model is not a path).
    cpu = [p for p in PROFILES if "-cpu-" in p.stem]
    assert len(cpu) >= 2
    for path in cpu:
        assert load_profile(path).target.accelerator == "cpu"
