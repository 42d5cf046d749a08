"""The capability table and the fallback choice, with the CPU's answer forced both ways."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qgate.errors import BadInput
from qgate.profile import Profile
from qgate.profile.load import load_profile
from qgate.runtime import capabilities
from qgate.runtime.capabilities import CpuCaps, probe_cpu, select_runtimes

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "precision_profiles" / "smollm2-cpu-fp8kv.yaml"  # FP8 KV with its fallback
AVX2 = CpuCaps("AMD EPYC 7B13", "x86_64", frozenset({"avx2", "fma"}))
AVX512 = CpuCaps("Intel Xeon", "x86_64", frozenset({"avx2", "avx512f", "amx_bf16"}))
ARM = CpuCaps("Neoverse-V2", "aarch64", frozenset())


def _profile(**candidate: object) -> Profile:
    return Profile.model_validate(
        {
            "name": "t",
            "model": {"embedded": "smollm2"},
            "target": {"accelerator": "cpu"},
            "candidate": candidate,
            "quality": {"math": {}},
        }
    )


def test_forced_flags_replace_the_probe() -> None:
    cpu = probe_cpu({"QGATE_CPU_FLAGS": "AVX2, fma"})
    assert cpu.flags == frozenset({"avx2", "fma"})
    assert cpu.forced and "forced by QGATE_CPU_FLAGS" in cpu.describe()


def test_unforced_probe_reads_this_machine() -> None:
    cpu = probe_cpu({})
    assert not cpu.forced and cpu.model


def test_demo_runs_native_fp8_kv_on_avx512() -> None:
    sel = select_runtimes(load_profile(DEMO), AVX512)
    assert sel.candidate.args == {"kv_cache_dtype": "fp8", "dtype": "bfloat16"}
    assert sel.candidate.emulate_weights is None
    assert any(n.startswith("candidate: native") and "kv_cache_dtype=fp8" in n for n in sel.notes)
    assert any(n.startswith("serving dtype: bfloat16") for n in sel.notes)


def test_demo_falls_back_to_emulated_fp8_weights_without_avx512() -> None:
    sel = select_runtimes(load_profile(DEMO), AVX2)
    assert sel.candidate.args == {"kv_cache_dtype": "auto", "dtype": "float32"}
    assert sel.candidate.emulate_weights is not None
    assert sel.candidate.emulate_weights.format == "fp8_e4m3"
    note, dtype_note = sel.notes
    assert note.startswith("candidate: ran its fallback")
    assert "emulated" in note and "AVX-512 or AMX" in note and "AMD EPYC 7B13" in note
    assert "way out" not in note
    assert dtype_note.startswith("serving dtype: float32 on reference and candidate")
    assert sel.reference.args == {"kv_cache_dtype": "auto", "dtype": "float32"}


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
    profile = Profile.model_validate(
        {
            "name": "t",
            "model": {"embedded": "smollm2"},
            "engine": {"args": {"kv_cache_dtype": "fp8"}},
            "candidate": {},
            "quality": {"math": {}},
        }
    )
    with pytest.raises(BadInput) as err:
        select_runtimes(profile, AVX2)
    assert err.value.message.startswith("engine.args.kv_cache_dtype: fp8 cannot run here")
    assert err.value.details and err.value.details[0].startswith("engine.args.kv_cache_dtype")


def test_gpu_targets_are_not_judged_by_the_cpu_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capabilities, "_installed", lambda dist: dist == "vllm")
    profile = Profile.model_validate(
        {
            "name": "t",
            "model": {"path": "/m"},
            "target": {"accelerator": "H200"},
            "candidate": {"args": {"quantization": "fp8", "kv_cache_dtype": "fp8"}},
            "quality": {"math": {}},
        }
    )
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
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, done.stderr
    assert "candidate.args.kv_cache_dtype: fp8 cannot run here" in lines[0]
    assert "forced by QGATE_CPU_FLAGS" in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()


ZEN4 = CpuCaps("AMD EPYC 9B14", "x86_64", frozenset({"avx2", "avx512f", "avx512_bf16"}))
AVX512_NO_BF16 = CpuCaps("Intel Xeon Skylake", "x86_64", frozenset({"avx2", "avx512f"}))
ARM_BF16 = CpuCaps("Neoverse-V2", "aarch64", frozenset({"bf16"}))


def _dtype_profile(cpu_dtype: str, dtype: str = "bfloat16", **candidate: object) -> Profile:
    return Profile.model_validate(
        {
            "name": "t",
            "model": {"embedded": "smollm2"},
            "target": {"accelerator": "cpu"},
            "engine": {"cpu_dtype": cpu_dtype, "args": {"dtype": dtype}},
            "candidate": candidate or {"emulate_weights": {"format": "fp8_e4m3"}},
            "quality": {"math": {}},
        }
    )


@pytest.mark.parametrize(
    ("cpu", "native"),
    [
        (AVX2, False),
        (AVX512_NO_BF16, False),
        (AVX512, True),
        (ZEN4, True),
        (ARM, False),
        (ARM_BF16, True),
    ],
)
def test_bf16_is_native_only_with_bf16_instructions(cpu: CpuCaps, native: bool) -> None:
    assert capabilities.native_bf16(cpu) is native
    assert capabilities.cpu_serving_dtype(cpu).dtype == ("bfloat16" if native else "float32")


def test_auto_dtype_serves_float32_on_both_sides_without_bf16() -> None:
    sel = select_runtimes(_dtype_profile("auto"), AVX2)
    assert sel.reference.args["dtype"] == "float32" and sel.candidate.args["dtype"] == "float32"
    (note,) = sel.notes
    assert note.startswith("serving dtype: float32 on reference and candidate")
    assert "no bf16 instructions" in note and "AMD EPYC 7B13" in note
    assert "emulated weights, if any, are stored in float32" in note


def test_auto_dtype_keeps_bf16_where_the_cpu_has_it() -> None:
    for cpu in (AVX512, ZEN4):
        sel = select_runtimes(_dtype_profile("auto"), cpu)
        assert sel.reference.args["dtype"] == sel.candidate.args["dtype"] == "bfloat16"
        (note,) = sel.notes
        assert "bf16 instructions (" in note


def test_auto_dtype_applies_to_a_fallback_too() -> None:
    profile = _dtype_profile(
        "auto",
        args={"kv_cache_dtype": "fp8"},
        fallback={"args": {"kv_cache_dtype": "auto"}, "emulate_weights": {"format": "fp8_e4m3"}},
    )
    sel = select_runtimes(profile, AVX2)
    assert sel.candidate.args == {"kv_cache_dtype": "auto", "dtype": "float32"}
    assert sel.reference.args == {"dtype": "float32"}
    assert [n.split(":")[0] for n in sel.notes] == ["candidate", "serving dtype"]


def test_bf16_as_written_on_a_cpu_without_it_gets_a_note_per_side() -> None:
    sel = select_runtimes(_dtype_profile("as_written"), AVX2)
    assert "dtype" not in sel.reference.args  # nothing changed: args.dtype stays bfloat16
    assert [n.split(":")[0] for n in sel.notes] == ["reference", "candidate"]
    assert all("dtype bfloat16 runs emulated" in n and "cpu_dtype: auto" in n for n in sel.notes)
    assert select_runtimes(_dtype_profile("as_written"), AVX512).notes == []
    assert select_runtimes(_dtype_profile("as_written", "float32"), AVX2).notes == []


def test_auto_dtype_refuses_a_side_of_its_own() -> None:
    from qgate.profile.load import parse_profile_text

    text = (
        "name: t\nmodel: {embedded: smollm2}\nengine: {cpu_dtype: auto}\n"
        "candidate:\n  args: {dtype: float16}\nquality: {math: {}}\n"
    )
    with pytest.raises(BadInput) as err:
        parse_profile_text(text, "p.yaml", Path("."), check_files=False)
    (detail,) = err.value.details
    assert detail.startswith("p.yaml:5") and "candidate.args.dtype" in detail
    assert "cpu_dtype: auto sets dtype on both sides" in detail
