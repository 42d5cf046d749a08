"""Duration-bound scenarios: absurd or contradictory settings exit 2 with file:line key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from qgate.cli.main import main
from qgate.perf.runner import series_bucket_s
from qgate.profile.load import load_profile

BASE = """\
name: t
model:
  embedded: smollm2
candidate:
  args: {kv_cache_dtype: fp8}
quality:
  math: {max_drop: 0.1}
perf:
  scenarios:
    - {name: agent, kind: multi_turn, conversations: 4, shared_prefix_tokens: 64, SETTINGS}
"""


def _validate(tmp_path: Path, settings: str) -> tuple[int, str]:
    path = tmp_path / "profile.yaml"
    path.write_text(BASE.replace("SETTINGS", settings))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stderr.replace(str(path), "P")


@pytest.mark.parametrize(
    ("settings", "where", "message"),
    [
        (
            "duration_s: 100000000",
            "P:10 perf.scenarios[0].duration_s:",
            "must be at most 604,800 s, a week (got 100,000,000)",
        ),
        (
            "duration_s: 60, requests: 10",
            "P:10 perf.scenarios[0].requests:",
            "not together with duration_s",
        ),
        (
            "duration_s: 60, series_bucket_s: 0.5",
            "P:10 perf.scenarios[0].series_bucket_s:",
            "greater than or equal to 1",
        ),
        (
            "duration_s: 604800, series_bucket_s: 10",
            "P:10 perf.scenarios[0].series_bucket_s:",
            "more than 20,000 time-series buckets; set series_bucket_s to at least 31",
        ),
        ("duration_s: 0", "P:10 perf.scenarios[0].duration_s:", "greater than 0"),
        ("duration_s: .inf", "P:10 perf.scenarios[0].duration_s:", "must be a finite number"),
        (
            "duration_s: 60, series_bucket_s: .inf",
            "P:10 perf.scenarios[0].series_bucket_s:",
            "must be a finite number",
        ),
    ],
)
def test_absurd_durations_are_refused(
    tmp_path: Path, settings: str, where: str, message: str
) -> None:
    code, err = _validate(tmp_path, settings)
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line.strip() for line in err.splitlines() if line.strip().startswith(where)]
    assert any(message in line for line in lines), err


def test_an_hour_long_agent_scenario_validates_with_a_minute_series(tmp_path: Path) -> None:
    code, err = _validate(tmp_path, "duration_s: 3600, warmup: 1")
    assert code == 0, err
    path = tmp_path / "profile.yaml"
    profile = load_profile(path)
    assert profile.perf is not None
    (s,) = profile.perf.scenarios
    assert (s.duration_s, s.requests, series_bucket_s(s)) == (3600, None, 60.0)


def test_a_counted_scenario_has_a_series_only_when_asked(tmp_path: Path) -> None:
    assert _validate(tmp_path, "turns: 2, series_bucket_s: 5")[0] == 0
    profile = load_profile(tmp_path / "profile.yaml")
    assert profile.perf is not None
    (s,) = profile.perf.scenarios
    assert series_bucket_s(s) == 5
    assert series_bucket_s(s.model_copy(update={"series_bucket_s": None})) is None


def test_glm_kv_offload_profile_runs_its_agent_workload_for_an_hour() -> None:
    from qgate.profile import MultiTurnScenario

    root = Path(__file__).resolve().parents[3]
    profile = load_profile(
        root / "precision_profiles/glm-5.2-kv-offload-mi325x.yaml", check_files=False
    )
    assert profile.perf is not None
    (agent,) = [s for s in profile.perf.scenarios if s.name == "agent-4"]
    assert isinstance(agent, MultiTurnScenario)
    assert (agent.conversations, agent.duration_s, agent.requests) == (4, 3600, None)
    assert agent.shared_prefix_tokens >= 32768 and series_bucket_s(agent) == 60
    # the policy change, flags as the installed vLLM names them (perf/check_engine_flags.py)
    assert profile.reference.args == {"enable_prefix_caching": False}
    assert set(profile.candidate.args) == {
        "enable_prefix_caching",
        "kv_offloading_backend",
        "kv_offloading_size",
        "max_num_seqs",
        "max_num_batched_tokens",
    }


def test_progress_of_a_duration_run_counts_down_the_time() -> None:
    from qgate.perf.progress import ScenarioProgress

    bar = ScenarioProgress("candidate agent", None, enabled=False, duration_s=3600)
    line = bar._render()
    assert re.search(r"remaining +3[56]\d\ds \(then in-flight finish\)", line), line
    assert "/" not in line.split("requests")[0]  # no total: the count is not known in advance
