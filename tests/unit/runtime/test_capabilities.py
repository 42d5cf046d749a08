"""The capability table and the fallback choice, with the CPU's answer forced both ways."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qgate.errors import BadInput
from qgate.profile import Profile
from qgate.profile_loader import load_profile
from qgate.runtime import capabilities
from qgate.runtime.capabilities import CpuCaps, probe_cpu, select_runtimes

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "precision_profiles" / "smollm2-cpu-fp8kv.yaml"  # FP8 KV with its fallback
AVX2 = CpuCaps("AMD EPYC 7B13", "x86_64", frozenset({"avx2", "fma"}))
AVX512 = CpuCaps("Intel Xeon", "x86_64", frozenset({"avx2", "avx512f", "amx_bf16"}))
ARM = CpuCaps("Neoverse-V2", "aarch64", frozenset())


def _profile(**candidate: object) -> Profile:
    return Profile.model_validate({
        "name": "t", "model": {"embedded": "smollm2"}, "target": {"accelerator": "cpu"},
        "candidate": candidate, "quality": {"math": {}},
    })  # fmt: skip


def test_forced_flags_replace_the_probe() -> None:
    cpu = probe_cpu({"QGATE_CPU_FLAGS": "AVX2, fma"})
    assert cpu.flags == frozenset({"avx2", "fma"})
    assert cpu.forced and "forced by QGATE_CPU_FLAGS" in cpu.describe()


def test_unforced_probe_reads_this_machine() -> None:
    cpu = probe_cpu({})
    assert not cpu.forced and cpu.model


def test_demo_runs_native_fp8_kv_on_avx512() -> None:
    sel = select_runtimes(load_profile(DEMO), AVX512)
    assert sel.candidate.args == {"kv_cache_dtype": "fp8"}
    assert sel.candidate.emulate_weights is None
    assert any(n.startswith("candidate: native") and "kv_cache_dtype=fp8" in n for n in sel.notes)


def test_demo_falls_back_to_emulated_fp8_weights_without_avx512() -> None:
    sel = select_runtimes(load_profile(DEMO), AVX2)
    assert sel.candidate.args == {"kv_cache_dtype": "auto"}
    assert sel.candidate.emulate_weights is not None
    assert sel.candidate.emulate_weights.format == "fp8_e4m3"
    (note,) = sel.notes
    assert note.startswith("candidate: ran its fallback")
    assert "emulated" in note and "AVX-512 or AMX" in note and "AMD EPYC 7B13" in note
    assert "way out" not in note
    assert sel.reference.args == {"kv_cache_dtype": "auto"}


def test_fp8_kv_without_fallback_names_setting_cpu_and_way_out() -> None:
    with pytest.raises(BadInput) as err:
        select_runtimes(_profile(args={"kv_cache_dtype": "fp8"}), AVX2)
    line = err.value.message
    assert line.startswith("candidate.args.kv_cache_dtype: fp8 cannot run here")
    assert "AVX-512 or AMX" in line and "AMD EPYC 7B13" in line and "way out:" in line


def test_fp8_kv_is_refused_on_arm_too() -> None:
    with pytest.raises(BadInput, match="x86 CPU with AVX-512 or AMX"):
        select_runtimes(_profile(args={"kv_cache_dtype": "fp8_e5m2"}), ARM)


def test_fp8_weights_have_no_cpu_kernels_anywhere() -> None:
    with pytest.raises(BadInput, match="candidate.args.quantization: fp8 .*emulate_weights"):
        select_runtimes(_profile(args={"quantization": "fp8"}), AVX512)


def test_a_fallback_that_cannot_run_either_is_refused() -> None:
    profile = _profile(args={"kv_cache_dtype": "fp8"}, fallback={"args": {"quantization": "fp8"}})
    with pytest.raises(BadInput, match="quantization"):
        select_runtimes(profile, AVX2)


def test_shared_engine_args_are_named_as_such() -> None:
    profile = Profile.model_validate({
        "name": "t", "model": {"embedded": "smollm2"},
        "engine": {"args": {"kv_cache_dtype": "fp8"}}, "candidate": {}, "quality": {"math": {}},
    })  # fmt: skip
    with pytest.raises(BadInput) as err:
        select_runtimes(profile, AVX2)
    assert err.value.message.startswith("engine.args.kv_cache_dtype: fp8 cannot run here")
    assert err.value.details and err.value.details[0].startswith("engine.args.kv_cache_dtype")


def test_gpu_targets_are_not_judged_by_the_cpu_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capabilities, "_installed", lambda dist: dist == "vllm")
    profile = Profile.model_validate({
        "name": "t", "model": {"path": "/m"}, "target": {"accelerator": "H200"},
        "candidate": {"args": {"quantization": "fp8", "kv_cache_dtype": "fp8"}},
        "quality": {"math": {}},
    })  # fmt: skip
    sel = select_runtimes(profile, AVX2)
    assert sel.candidate.args["quantization"] == "fp8" and sel.notes == []


def test_run_fails_fast_with_exit_2_before_anything_starts(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "name: fp8kv\nmodel: {embedded: smollm2}\ntarget: {accelerator: cpu}\n"
        "candidate: {args: {kv_cache_dtype: fp8}}\nquality: {math: {limit: 4}}\n"
    )
    env = {**os.environ, "QGATE_CPU_FLAGS": "avx2,fma"}
    done = subprocess.run(
        [sys.executable, "-m", "qgate.cli", "run", str(profile), "--out", str(tmp_path / "runs")],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, done.stderr
    assert "candidate.args.kv_cache_dtype: fp8 cannot run here" in lines[0]
    assert "forced by QGATE_CPU_FLAGS" in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()
