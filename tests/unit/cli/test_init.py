"""`qgate init`: the profiles it prints validate as printed; the CPU one is shipped."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from qgate.cli.init import CPU_PROFILE, GPU_PROFILE
from qgate.cli.main import main
from qgate.profile.load import parse_profile_text

ROOT = Path(__file__).resolve().parents[3]


def test_cpu_profile_validates_and_runs_the_embedded_model() -> None:
    profile = parse_profile_text(CPU_PROFILE, "minimal.yaml", ROOT, check_files=False)
    assert profile.model.embedded == "smollm2" and profile.engine.cpu_dtype == "auto"
    assert profile.candidate.emulate_weights is not None and profile.perf is not None
    assert len(CPU_PROFILE.splitlines()) <= 25


def test_gpu_profile_validates_once_its_checkpoint_is_named() -> None:
    profile = parse_profile_text(GPU_PROFILE, "gpu.yaml", ROOT, check_files=False)
    assert profile.candidate.args == {"quantization": "fp8", "kv_cache_dtype": "fp8"}
    assert str(profile.model.path) == "/models/CHECKPOINT"


def test_the_shipped_minimal_profile_is_what_init_prints() -> None:
    assert (ROOT / "precision_profiles" / "minimal.yaml").read_text() == CPU_PROFILE


def test_init_prints_or_writes_and_never_overwrites(tmp_path: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(main, ["init", "--gpu"])
    assert shown.exit_code == 0 and shown.output == GPU_PROFILE
    out = tmp_path / "p.yaml"
    wrote = runner.invoke(main, ["init", "--out", str(out)])
    assert wrote.exit_code == 0 and out.read_text() == CPU_PROFILE
    again = runner.invoke(main, ["init", "--out", str(out)])
    assert again.exit_code == 2 and "does not overwrite" in again.output
    assert out.read_text() == CPU_PROFILE


def test_both_profiles_plan_a_pooled_envelope_gate_that_can_show_its_margin() -> None:
    """Issue 53: the profiles `init` writes can PASS their pooled envelope gate: each plans the
    clean probe answers its margin needs in one perf block (`qgate plan`)."""
    from qgate.run.plan import describe, make_plan

    for text, name in ((CPU_PROFILE, "minimal.yaml"), (GPU_PROFILE, "gpu.yaml")):
        profile = parse_profile_text(text, name, ROOT, check_files=False)
        plan = make_plan([("candidate", profile)], reference_cached=False, placement="cores 0-1")
        pooled = next(line for line in describe(plan) if "pooled envelope gate:" in line)
        assert "CANNOT SHOW" not in pooled and "clean answers show" in pooled, (name, pooled)
