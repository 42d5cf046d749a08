"""Keys that only mean something for runtimes qgate starts are refused on endpoints, and
attribution groups that name none of the candidate's changes are refused with a hint."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.profiles import problems_of

from qgate.cli.main import main
from qgate.profile.load import parse_profile_text
from qgate.profile.started_checks import attribution_refused

ROOT = Path(__file__).resolve().parents[3]
ENDPOINT = "{base_url: 'http://127.0.0.1:9/v1'}"

BOTH = f"""\
name: t
model: {{embedded: smollm2}}
engine: {{kind: endpoint}}
reference:
  endpoint: {ENDPOINT}
candidate:
  endpoint: {ENDPOINT}
quality:
  math: {{max_drop: 0.1}}
"""
# a started (vLLM) reference, an endpoint candidate
CANDIDATE_ONLY = f"""\
name: t
model: {{embedded: smollm2}}
candidate:
  engine: {{kind: endpoint}}
  endpoint: {ENDPOINT}
quality:
  math: {{max_drop: 0.1}}
"""
REFERENCE_ONLY = f"""\
name: t
model: {{embedded: smollm2}}
reference:
  engine: {{kind: endpoint}}
  endpoint: {ENDPOINT}
candidate:
  args: {{kv_cache_dtype: fp8}}
quality:
  math: {{max_drop: 0.1}}
"""
STARTED = """\
name: t
model: {embedded: smollm2}
candidate:
  args: {kv_cache_dtype: fp8, quantization: fp8}
  env: {VLLM_ROCM_USE_AITER: "1", VLLM_ROCM_USE_AITER_MHA: "0"}
quality:
  math: {max_drop: 0.1}
"""


@pytest.mark.parametrize(
    "text",
    [BOTH, CANDIDATE_ONLY, REFERENCE_ONLY],
    ids=["both-endpoints", "candidate-endpoint", "reference-endpoint"],
)
def test_attribution_on_an_endpoint_is_bad_input(text: str) -> None:
    with_block = text + "attribution: {max_lives: 4}\n"
    found = problems_of(with_block)
    line = with_block.splitlines().index("attribution: {max_lives: 4}") + 1
    assert len(found) == 1, found
    assert found[0].startswith(f"p.yaml:{line} attribution: needs runtimes qgate starts")
    assert "endpoint" in found[0]
    assert problems_of(text) == []


def test_attribution_with_started_runtimes_is_accepted() -> None:
    assert problems_of(STARTED + "attribution: {max_lives: 4}\n") == []


def test_run_attribute_flag_on_an_endpoint_is_bad_input(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(CANDIDATE_ONLY)
    out = tmp_path / "runs"
    result = CliRunner().invoke(
        main, ["run", str(profile), "--out", str(out), "--attribute", "--skip-perf"]
    )
    assert result.exit_code == 2, result.output
    assert "--attribute needs runtimes qgate starts" in result.output
    assert "the candidate is an endpoint" in result.output
    assert attribution_refused(parse_profile_text(STARTED, "p", ROOT, False)) is None


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("engine: {kind: endpoint, preflight: always}", "engine.preflight"),
        ("engine: {kind: endpoint, placement: together}", "engine.placement"),
        ("engine: {kind: endpoint, cpu_dtype: auto}", "engine.cpu_dtype"),
        ("engine: {kind: endpoint, uncalibrated_kv_scales: fail}", "engine.uncalibrated_kv_scales"),
        ("engine: {kind: endpoint, port: 8000}", "engine.port"),
        ("engine: {kind: endpoint, launcher: [vllm, serve]}", "engine.launcher"),
        ("engine: {kind: endpoint, startup_timeout_s: 60}", "engine.startup_timeout_s"),
        ("engine: {kind: endpoint, args: {dtype: bfloat16}}", "engine.args"),
        ("engine: {kind: endpoint, env: {VLLM_X: '1'}}", "engine.env"),
    ],
)
def test_engine_keys_for_started_servers_are_refused_on_endpoints(extra: str, key: str) -> None:
    text = BOTH.replace("engine: {kind: endpoint}", extra)
    found = problems_of(text)
    assert len(found) == 1 and f"p.yaml:3 {key}: " in found[0], found
    assert "endpoint" in found[0] and "already running" in found[0]


@pytest.mark.parametrize(
    ("block", "key"),
    [
        ("  args: {kv_cache_dtype: fp8}", "candidate.args"),
        ("  env: {VLLM_X: '1'}", "candidate.env"),
        ("  fallback: {args: {kv_cache_dtype: auto}}", "candidate.fallback"),
    ],
)
def test_an_endpoint_sides_settings_are_refused_not_ignored(block: str, key: str) -> None:
    text = CANDIDATE_ONLY.replace("  endpoint:", block + "\n  endpoint:")
    found = problems_of(text)
    assert len(found) == 1 and f"p.yaml:5 {key}: " in found[0], found
    assert "the candidate is an endpoint" in found[0]


def test_one_sided_endpoint_keys_are_judged_per_side() -> None:
    """A vLLM reference keeps its settings; what only the endpoint side ignores is refused."""
    assert problems_of(CANDIDATE_ONLY.replace("name: t", "name: t\nengine: {port: 8000}")) == []
    assert problems_of(
        CANDIDATE_ONLY.replace("name: t", "name: t\nengine: {preflight: always}")
    ) == [
        "p.yaml:2 engine.preflight: 'always' starts the candidate early; the candidate is an "
        "endpoint (already running: qgate cannot start or configure it)"
    ]
    together = problems_of(
        REFERENCE_ONLY.replace("name: t", "name: t\nengine: {placement: together}")
    )
    assert len(together) == 1 and "the reference is an endpoint" in together[0]
    # preflight concerns the candidate only
    assert (
        problems_of(REFERENCE_ONLY.replace("name: t", "name: t\nengine: {preflight: always}")) == []
    )


def _groups(groups: str) -> list[str]:
    return problems_of(STARTED + f"attribution:\n  groups: {groups}\n")


def test_a_group_pattern_that_matches_no_change_says_what_was_meant() -> None:
    found = _groups("[[args.kv_cache_dtpe, args.quantization]]")
    assert found == [
        "p.yaml:9 attribution.groups[0][0]: 'args.kv_cache_dtpe' matches none of the "
        "candidate's changes (args.kv_cache_dtype, args.quantization, env.VLLM_ROCM_USE_AITER, "
        "env.VLLM_ROCM_USE_AITER_MHA); did you mean 'args.kv_cache_dtype'?"
    ]


def test_group_patterns_that_match_are_accepted() -> None:
    assert _groups("[['env.VLLM_ROCM_*'], [args.quantization, args.kv_cache_dtype]]") == []


def test_a_pattern_with_nothing_close_lists_the_changes() -> None:
    (found,) = _groups("[['emulate_weights']]")
    assert "'emulate_weights' matches none of the candidate's changes (args." in found
    assert "did you mean" not in found


def test_a_group_whose_changes_an_earlier_group_took_is_refused() -> None:
    (found,) = _groups("[['env.*'], ['env.VLLM_ROCM_USE_AITER']]")
    assert "attribution.groups[1]: every change it names is already in" in found
    assert "attribution.groups[0]" in found


@pytest.mark.parametrize(
    ("block", "key"),
    [
        ("candidate:\n  args: {api_key: abc}", "candidate.args.api_key"),
        ("engine:\n  args: {api-key: abc}\ncandidate: {}", "engine.args.api-key"),
    ],
)
def test_an_api_key_in_a_started_servers_args_is_refused(block: str, key: str) -> None:
    text = f"name: t\nmodel: {{embedded: smollm2}}\n{block}\nquality:\n  math: {{max_drop: 0.1}}\n"
    (found,) = problems_of(text)
    assert f" {key}: a key here is written into the profile and the signed report" in found
    assert "abc" not in found and "VLLM_API_KEY" in found


def test_a_cluster_block_with_both_sides_endpoints_is_refused() -> None:
    text = BOTH + "cluster: {address: auto}\n"
    found = problems_of(text)
    line = text.splitlines().index("cluster: {address: auto}") + 1
    assert len(found) == 1, found
    assert found[0].startswith(f"p.yaml:{line} cluster: a cluster places the servers")
    assert "both sides are endpoints" in found[0]


@pytest.mark.parametrize(
    ("text", "key", "role"),
    [
        (CANDIDATE_ONLY, "candidates", "candidate"),
        (REFERENCE_ONLY, "reference", "reference"),
    ],
)
def test_cluster_resources_for_an_endpoint_side_are_refused(text: str, key: str, role: str) -> None:
    """The other side's life is placed as usual; resources for the endpoint's would be unused."""
    other = "reference" if key == "candidates" else "candidates"
    assert problems_of(text + f"cluster: {{address: auto, {other}: {{x: 1}}}}\n") == []
    block = f"cluster:\n  address: auto\n  {key}: {{x: 1}}\n"
    found = problems_of(text + block)
    line = len(text.splitlines()) + 3
    assert len(found) == 1, found
    assert found[0].startswith(f"p.yaml:{line} cluster.{key}: no life of the {role} is placed")
    assert f"the {role} is an endpoint" in found[0]
