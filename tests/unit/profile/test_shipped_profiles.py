"""Every shipped profile validates, including those that only run on their own hardware."""

from __future__ import annotations

from pathlib import Path

import pytest

from qgate.profile import Profile
from qgate.profile.load import load_profile
from qgate.profile.load_multi import LoadedMulti, load_any_profile_file

PROFILES = sorted((Path(__file__).resolve().parents[3] / "precision_profiles").glob("*.yaml"))


def test_profiles_are_shipped() -> None:
    names = {p.stem for p in PROFILES}
    shipped = {
        "smollm2-cpu-int8",
        "smollm2-cpu-fp8",
        "smollm2-cpu-fp8kv",
        "minimal",
        "glm-5.2-fp8-aiter-mi325x",
        "kimi-k3-fp8kv-aiter-mi325x",
        "kimi-k3-three-way-mi325x",
    }
    assert shipped <= names


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_shipped_profile_validates(path: Path) -> None:
    # Profiles for other hardware name model folders that exist only there.
    assert all(p.perf is not None for p in _profiles(path, check_files=False))
    loaded = load_any_profile_file(path, check_files=False)
    name = loaded.multi.name if isinstance(loaded, LoadedMulti) else loaded.profile.name
    assert name == path.stem


def _profiles(path: Path, check_files: bool = True) -> list[Profile]:
    """The profile, or each candidate's expansion of a profile with several candidates."""
    loaded = load_any_profile_file(path, check_files)
    if isinstance(loaded, LoadedMulti):
        return [c.profile for c in loaded.multi.candidates]
    return [loaded.profile]


def test_kimi_long_prefill_is_three_lines() -> None:
    # 8192-in / 256-out, 2 warmups + 5 measured: the defaults make it three lines
    kimi = next(p for p in PROFILES if p.stem == "kimi-k3-fp8kv-aiter-mi325x")
    profile = load_profile(kimi, check_files=False)
    assert profile.perf is not None
    (s,) = profile.perf.scenarios
    assert (s.input_tokens, s.output_tokens, s.warmup, s.requests) == (8192, 256, 2, 5)


def test_kimi_three_way_runs_atom_and_a_custom_launcher() -> None:
    from qgate.profile.engine_checks import engine_problems, feature_notes

    path = next(p for p in PROFILES if p.stem == "kimi-k3-three-way-mi325x")
    loaded = load_any_profile_file(path, check_files=False)
    assert isinstance(loaded, LoadedMulti)
    by_name = {c.name: c for c in loaded.multi.candidates}
    assert list(by_name) == ["atom-aiter", "tutel"]
    assert by_name["atom-aiter"].required and not by_name["tutel"].required
    aiter, tutel = by_name["atom-aiter"].profile, by_name["tutel"].profile
    for profile in (aiter, tutel):
        engine = profile.engine_of("reference")
        assert engine.kind == "command" and engine.features is None
        assert engine.command is not None
        assert engine.command[:3] == ["python", "-m", "atom.entrypoints.openai_server"]
        assert {"{model}", "{port}"} <= set(engine.command)
        assert profile.quality.divergence is None and engine_problems(profile) == []
    assert aiter.engine_of("candidate").command == aiter.engine.command
    assert aiter.candidate.args == {"kv_cache_dtype": "fp8"}
    launcher = tutel.engine_of("candidate")
    assert launcher.kind == "command" and launcher.command is not None
    assert launcher.command[:3] == ["python", "-m", "kimi_tutel.serve"]
    assert launcher.args == {"tp": 8}  # nothing of the top-level engine block is inherited
    # ATOM serves no token ids and no prefix-cache counters: said, never passed silently.
    notes = feature_notes(aiter)
    assert sum("not available for command" in n and "stream" in n for n in notes) == 2
    assert sum("prefix-cache" in n for n in notes) == 2
    assert sum("sized from characters" in n for n in notes) == 6  # math, recall, ladder; 2 sides
    assert aiter.perf is not None
    (s,) = aiter.perf.scenarios
    assert s.kind == "fixed"
    assert (s.input_tokens, s.output_tokens, s.warmup, s.requests) == ([512, 8192], 256, 2, 5)


def test_kimi_three_way_refuses_divergence_on_atom(tmp_path: Path) -> None:
    from qgate.errors import ProfileError

    path = next(p for p in PROFILES if p.stem == "kimi-k3-three-way-mi325x")
    text = path.read_text().replace("quality:\n", "quality:\n  divergence: {sequences: 8}\n")
    edited = tmp_path / path.name
    edited.write_text(text)
    with pytest.raises(ProfileError) as info:
        load_any_profile_file(edited, check_files=False)
    lines = "\n".join(info.value.details)
    assert (
        "engine.kind: command does not serve prompt_logprobs, which quality.divergence needs"
        in lines
    )


def test_cpu_profiles_validate_with_their_files() -> None:
    # These run here, so every file they name must exist (the embedded model is not a path).
    cpu = [p for p in PROFILES if "-cpu-" in p.stem]
    assert len(cpu) >= 2
    for path in cpu:
        assert all(p.target.accelerator == "cpu" for p in _profiles(path))


@pytest.mark.parametrize(
    "stem", ["llama3-8b-shape-h200-preview", "qwen3-moe-30b-a3b-shape-h200-preview"]
)
def test_preview_profiles_use_config_only_models(stem: str) -> None:
    from qgate.profile.perf import is_preview

    profile = load_profile(next(p for p in PROFILES if p.stem == stem))
    assert is_preview(profile) and not profile.quality.has_suites()
    assert profile.perf is not None and profile.perf.gates
    model = profile.model.path
    assert model is not None and (model / "config.json").is_file()
    files = {p.name for p in model.iterdir()}
    assert files == {
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
    }
    assert (model / "tokenizer.json").stat().st_size > 1_000_000  # the link resolves


def test_llama_preview_matches_vllm_bench_serve() -> None:
    profile = load_profile(next(p for p in PROFILES if p.stem == "llama3-8b-shape-h200-preview"))
    assert profile.perf is not None
    got = [
        (s.name, s.input_tokens, s.output_tokens, s.concurrency, s.warmup, s.requests)
        for s in profile.perf.scenarios
    ]  # type: ignore[union-attr]
    assert got == [("c1", 1024, 128, 1, 2, 24), ("c16", 1024, 128, 16, 2, 128)]
    assert profile.candidate.args == {
        "dtype": "bfloat16",
        "quantization": "fp8",
        "kv_cache_dtype": "fp8",
    }


def test_glm_profile_carries_the_inferencex_row() -> None:
    glm = next(p for p in PROFILES if p.stem == "glm-5.2-fp8-aiter-mi325x")
    profile = load_profile(glm, check_files=False)
    assert profile.perf is not None
    (row,) = profile.perf.published
    assert (row.hardware, row.concurrency, row.metric, row.value, row.scenario) == (
        "8xMI325X",
        4,
        "output_throughput_per_gpu",
        4.14,
        "agent-4",
    )


@pytest.mark.parametrize(
    "stem",
    [
        "glm-5.2-kv-offload-mi325x",
        "glm-5.2-kv-offload-h200",
        "smollm2-h200-kv-offload",
        "smollm2-cpu-prefix-cache",
    ],
)
def test_reuse_profiles_run_every_pass_their_candidate_calls_for(stem: str) -> None:
    from qgate.profile.reuse_plan import called_for, reuse_notes

    path = next(p for p in PROFILES if p.stem == stem)
    profile = load_profile(path, check_files=False)
    reuse = profile.quality.reuse
    assert reuse is not None and "warm" in reuse.passes
    wanted = called_for(profile)
    if "restored" in wanted:  # an offload candidate: the restore is forced, not hoped for
        assert "restored" in reuse.passes
        assert profile.engine.env.get("VLLM_SERVER_DEV_MODE") == "1"
        assert {"load", "restored"} <= set(reuse.passes)
        assert not any("not configured but called for" in n for n in reuse_notes(profile))
    assert not any("NOT EXERCISED" in n for n in reuse_notes(profile))
