"""Profiles with several candidates: expansion, the JSON form, and errors with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from qgate.errors import ProfileError
from qgate.profile import Profile
from qgate.profile.load import load_profile_file
from qgate.profile.load_multi import (
    LoadedMulti,
    load_any_profile_file,
    load_multi_file,
)
from qgate.profile.load_multi import LoadedProfile as Single
from qgate.profile.multi import expand_json, multi_from_json

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "precision_profiles" / "smollm2-cpu-multi.yaml"

HEAD = """name: multi
model: {embedded: smollm2}
engine:
  args: {dtype: bfloat16}
reference:
  args: {kv_cache_dtype: auto}
"""
QUALITY = "quality:\n  math: {prompts: [short], limit: 16, max_drop: 0.2}\n"


def _write(tmp_path: Path, candidates: str, quality: str = QUALITY) -> Path:
    path = tmp_path / "multi.yaml"
    path.write_text(HEAD + candidates + quality)
    return path


def _problems(path: Path) -> list[str]:
    with pytest.raises(ProfileError) as info:
        load_any_profile_file(path, check_files=False)
    return info.value.details


def test_shipped_profile_expands_into_one_profile_per_candidate() -> None:
    loaded = load_multi_file(SHIPPED)
    multi = loaded.multi
    names = ["fp8-weights", "prefix-cache", "max-seqs-2", "api-server"]
    assert [c.name for c in multi.candidates] == names
    assert [c.required for c in multi.candidates] == [True, True, False, True]
    profiles = [c.profile for c in multi.candidates]
    assert [p.name for p in profiles] == [f"smollm2-cpu-multi.{c.name}" for c in multi.candidates]
    assert profiles[0].candidate.emulate_weights is not None
    assert profiles[1].candidate.args == {"enable_prefix_caching": True}
    assert profiles[2].candidate.args["max_num_seqs"] == 2
    # a different launcher: its own engine block, the reference keeps the top-level one
    launcher = profiles[3].engine_of("candidate")
    assert launcher.kind == "command" and launcher.command is not None
    assert launcher.command[:3] == ["{python}", "-m", "vllm.entrypoints.openai.api_server"]
    assert profiles[3].engine_of("reference") is profiles[3].engine
    # the shared part is the same in every expansion: one reference for all
    assert len({p.reference.model_dump_json() for p in profiles}) == 1
    assert len({p.quality.model_dump_json() for p in profiles}) == 1


def test_json_form_round_trips() -> None:
    multi = load_multi_file(SHIPPED).multi
    data = multi.to_json()
    assert "candidate" not in data and list(data["candidates"]) == [
        c.name for c in multi.candidates
    ]
    assert list(data).index("candidates") == list(Profile.model_fields).index("candidate")
    for cand, sub in zip(multi.candidates, expand_json(data).values(), strict=True):
        assert sub == cand.profile.model_dump(mode="json")
    again = multi_from_json(data)
    assert again.to_json() == data


def test_single_candidate_profiles_load_as_before() -> None:
    path = ROOT / "precision_profiles" / "smollm2-cpu-int8.yaml"
    loaded = load_any_profile_file(path)
    assert isinstance(loaded, Single)
    assert loaded.profile == load_profile_file(path).profile
    with pytest.raises(ProfileError):
        load_multi_file(path)


def test_single_loader_refuses_several_candidates() -> None:
    with pytest.raises(ProfileError) as info:
        load_profile_file(SHIPPED)
    assert any("candidates: unknown key" in d for d in info.value.details)


def test_candidate_and_candidates_together(tmp_path: Path) -> None:
    path = _write(tmp_path, "candidate: {}\ncandidates:\n  a: {}\n")
    assert _problems(path) == [
        f"{path}:8 candidates: give only one of 'candidate' and 'candidates'"
    ]


def test_problems_in_a_candidate_name_its_key_and_line(tmp_path: Path) -> None:
    text = (
        "candidates:\n"
        "  good: {args: {kv_cache_dtype: fp8}}\n"
        "  typo:\n"
        "    argz: {x: 1}\n"
        "  bad name: {}\n"
        "  flag: {required: maybe}\n"
    )
    problems = _problems(_write(tmp_path, text))
    assert any(
        p.endswith(":10 candidates.typo.argz: unknown key; did you mean 'args'?") for p in problems
    ), problems
    assert any(":11 candidates.bad name: candidate names" in p for p in problems), problems
    assert any(":12 candidates.flag.required: must be bool" in p for p in problems), problems


def test_shared_problem_reported_once(tmp_path: Path) -> None:
    quality = "quality:\n  math: {prompts: [short], limit: 4, max_drop: 7}\n"
    problems = _problems(_write(tmp_path, "candidates:\n  a: {}\n  b: {}\n", quality))
    assert len(problems) == 1 and "quality.math.max_drop" in problems[0], problems


def test_empty_or_all_optional(tmp_path: Path) -> None:
    assert "must map at least one candidate" in _problems(_write(tmp_path, "candidates: {}\n"))[0]
    text = "candidates:\n  a: {required: false}\n"
    assert "at least one candidate must be required" in _problems(_write(tmp_path, text))[0]


def test_required_and_description_are_kept(tmp_path: Path) -> None:
    text = "candidates:\n  a: {description: one}\n  b: {required: false, args: {x: 1}}\n"
    loaded = load_any_profile_file(_write(tmp_path, text), check_files=False)
    assert isinstance(loaded, LoadedMulti)
    a, b = loaded.multi.candidates
    assert (a.required, a.description, b.required) == (True, "one", False)
    assert b.profile.candidate.args == {"x": 1} and b.profile.name == "multi.b"


PERF = (
    "perf:\n"
    "  scenarios:\n"
    "    - {name: chat, input_tokens: 16, output_tokens: 4}\n"
    "  gates:\n"
    "    - {metric: output_throughput, min_ratio: 0.9}\n"
)


def test_a_candidate_can_have_its_own_speed_gates(tmp_path: Path) -> None:
    text = (
        "candidates:\n"
        "  precision: {args: {kv_cache_dtype: fp8}}\n"
        "  policy:\n"
        "    args: {enable_prefix_caching: true}\n"
        "    perf_gates:\n"
        "      - {metric: ttft_ms.p90, max_ratio: 0.5}\n"
    )
    loaded = load_any_profile_file(_write(tmp_path, text, QUALITY + PERF), check_files=False)
    assert isinstance(loaded, LoadedMulti)
    precision, policy = loaded.multi.candidates
    assert precision.profile.perf is not None and policy.profile.perf is not None
    assert [g.metric for g in precision.profile.perf.gates] == ["output_throughput"]
    assert [g.metric for g in policy.profile.perf.gates] == ["ttft_ms.p90"]
    assert precision.perf_gates is None and policy.perf_gates is not None
    # the JSON form keeps the shared gates shared and the own ones with their candidate
    data = loaded.multi.to_json()
    assert [g["metric"] for g in data["perf"]["gates"]] == ["output_throughput"]
    assert "perf_gates" not in data["candidates"]["precision"]
    assert [g["metric"] for g in data["candidates"]["policy"]["perf_gates"]] == ["ttft_ms.p90"]
    again = multi_from_json(data)
    assert again.to_json() == data
    assert [c.profile for c in again.candidates] == [precision.profile, policy.profile]


def test_a_candidates_bad_speed_gate_names_its_own_key_and_line(tmp_path: Path) -> None:
    text = (
        "candidates:\n"
        "  a: {}\n"
        "  b:\n"
        "    perf_gates:\n"
        "      - {metric: ttft_ms.p91, max_ratio: 0.5}\n"
    )
    problems = _problems(_write(tmp_path, text, QUALITY + PERF))
    assert len(problems) == 1, problems
    assert ":11 candidates.b.perf_gates[0].metric:" in problems[0], problems
    without_perf = "candidates:\n  a:\n    perf_gates: []\n"
    problems = _problems(_write(tmp_path, without_perf))
    assert any(
        ":9 candidates.a.perf_gates: speed gates need a perf section" in p for p in problems
    ), problems
