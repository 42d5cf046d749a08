"""perf.gates, perf.published and dummy-weight previews in profiles: valid forms and errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from qgate.cli.main import main
from qgate.profile.load import load_profile
from qgate.profile.perf import COMPARED, GateMetric, is_preview, run_names

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
    - {name: chat, input_tokens: 16, output_tokens: 4, concurrency: [1, 4]}
    - {name: long, input_tokens: 64, output_tokens: 4}
"""

PREVIEW = """\
name: p
model:
  path: /models/llama3-8b-shape
engine:
  args: {load_format: dummy}
candidate:
  args: {quantization: fp8}
perf:
  scenarios:
    - {name: s, input_tokens: 16, output_tokens: 4}
"""

CASES: list[tuple[str, str, str, str]] = [
    (
        "unknown-metric",
        BASE + "  gates:\n    - {metric: output_throughput_pergpu, min_ratio: 1.2}\n",
        ":13 perf.gates[0].metric:",
        "did you mean 'output_throughput_per_gpu'?",
    ),
    (
        "unknown-scenario",
        BASE + "  gates:\n    - {metric: tpot_ms.p50, scenario: chta, max_ratio: 1.1}\n",
        ":13 perf.gates[0].scenario:",
        "unknown scenario 'chta'; did you mean 'chat'?",
    ),
    (
        "unknown-sweep-level",
        BASE + "  gates:\n    - {metric: tpot_ms.p50, scenario: chat@c8, max_ratio: 1.1}\n",
        ":13 perf.gates[0].scenario:",
        "unknown scenario 'chat@c8'",
    ),
    (
        "floor-on-latency",
        BASE + "  gates:\n    - {metric: ttft_ms.p99, min_ratio: 1.1}\n",
        ":13 perf.gates[0].min_ratio:",
        "use max_ratio",
    ),
    (
        "ceiling-on-throughput",
        BASE + "  gates:\n    - {metric: output_throughput, max_ratio: 2}\n",
        ":13 perf.gates[0].max_ratio:",
        "use min_ratio",
    ),
    (
        "no-limit",
        BASE + "  gates:\n    - {metric: output_throughput}\n",
        ":13 perf.gates[0]:",
        "give min_ratio",
    ),
    (
        "gates-without-reference",
        BASE + "  compare_to: none\n  gates:\n    - {metric: output_throughput, min_ratio: 1}\n",
        ":13 perf.gates:",
        "compare_to: reference",
    ),
    (
        "rounds-without-reference",
        BASE + "  compare_to: none\n  rounds: 2\n",
        ":13 perf.rounds:",
        "needs compare_to: reference",
    ),
    (
        "too-many-rounds",
        BASE + "  rounds: 11\n",
        ":12 perf.rounds:",
        "10",
    ),
    (
        "gates-on-two-rounds",
        BASE + "  rounds: 2\n  gates:\n    - {metric: output_throughput, min_ratio: 1}\n",
        ":12 perf.rounds:",
        "2 rounds cannot bound a speed gate",
    ),
    (
        "published-unknown-scenario",
        BASE
        + "  published:\n    - {source: x, date: 2026-01-01, hardware: 8xMI325X,"
        + " metric: output_throughput_per_gpu, value: 4.14, scenario: agent}\n",
        ":13 perf.published[0].scenario:",
        "unknown scenario 'agent'",
    ),
    (
        "published-bad-date",
        BASE
        + "  published:\n    - {source: x, date: soon, hardware: h,"
        + " metric: output_throughput, value: 1}\n",
        ":13 perf.published[0].date:",
        "date",
    ),
    (
        "preview-with-quality",
        PREVIEW + "quality:\n  math: {max_drop: 0.1}\n",
        ":11 quality:",
        "quality suites are refused with dummy weights",
    ),
    (
        "dummy-on-one-side",
        PREVIEW.replace("engine:\n  args: {load_format: dummy}\n", "").replace(
            "{quantization: fp8}", "{quantization: fp8, load_format: dummy}"
        ),
        ":5 candidate.args.load_format:",
        "dummy weights on one runtime only",
    ),
    (
        "preview-without-perf",
        PREVIEW.split("perf:")[0],
        ":1 perf:",
        "a dummy-weights preview measures speed only",
    ),
    (
        "no-suite-without-dummy",
        PREVIEW.replace("engine:\n  args: {load_format: dummy}\n", ""),
        ":1 quality:",
        "configure at least one suite",
    ),
]


def _validate(tmp_path: Path, text: str) -> tuple[int, str, Path]:
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    # the model folders named here exist only on their own machines
    result = CliRunner().invoke(main, ["validate", "--skip-files", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stderr, path


@pytest.mark.parametrize(
    ("text", "where", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_perf_sections_name_file_line_and_key(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    code, err, path = _validate(tmp_path, text)
    assert code == 2, err
    assert "Traceback" not in err
    matching = [
        line.strip() for line in err.splitlines() if line.strip().startswith(f"{path}{where}")
    ]
    assert matching, f"no line starting with {path}{where!r} in:\n{err}"
    assert any(message in line for line in matching), err


def test_valid_gates_and_published_figures(tmp_path: Path) -> None:
    text = BASE + (
        "  gates:\n"
        "    - {metric: output_throughput, min_ratio: 1.2}\n"
        "    - {metric: ttft_ms.p99, scenario: chat@c4, max_ratio: 1.1}\n"
        "  published:\n"
        "    - {source: 'InferenceX', date: 2026-10-01, hardware: 8xMI325X, concurrency: 4,\n"
        "       metric: output_throughput_per_gpu, value: 4.14}\n"
    )
    code, err, path = _validate(tmp_path, text)
    assert code == 0, err
    perf = load_profile(path).perf
    assert perf is not None
    assert [g.metric for g in perf.gates] == ["output_throughput", "ttft_ms.p99"]
    assert perf.published[0].value == 4.14 and str(perf.published[0].date) == "2026-10-01"


@pytest.mark.parametrize("rounds", [1, 3, 10])
def test_gates_with_one_or_three_rounds_and_more_validate(tmp_path: Path, rounds: int) -> None:
    text = (
        BASE + f"  rounds: {rounds}\n  gates:\n    - {{metric: output_throughput, min_ratio: 1}}\n"
    )
    code, err, _ = _validate(tmp_path, text)
    assert code == 0, err


def test_preview_profile_validates_and_is_a_preview(tmp_path: Path) -> None:
    code, err, path = _validate(tmp_path, PREVIEW)
    assert code == 0, err
    profile = load_profile(path, check_files=False)
    assert is_preview(profile) and not profile.quality.has_suites()
    code, err, path = _validate(tmp_path, BASE)
    assert not is_preview(load_profile(path, check_files=False))


def test_gate_metrics_are_the_compared_metrics() -> None:
    from typing import get_args

    assert list(get_args(GateMetric)) == list(COMPARED)


def test_run_names_match_the_runner() -> None:
    from qgate.perf.expand import expand_inputs
    from qgate.perf.runner import levels
    from qgate.profile import FixedScenario

    s = FixedScenario(name="m", input_tokens=[512, 8192], output_tokens=4, concurrency=[1, 4])
    names = [n for e in expand_inputs(s) for n, _ in levels(e)]
    assert names == run_names(s) == ["m@in512@c1", "m@in512@c4", "m@in8192@c1", "m@in8192@c4"]
    one = FixedScenario(name="o", input_tokens=16, output_tokens=4)
    assert [n for e in expand_inputs(one) for n, _ in levels(e)] == run_names(one) == ["o"]


def test_dummy_weights_in_a_sides_own_engine_block_count(tmp_path: Path) -> None:
    # A side that names its own engine carries its own args; the preview rule reads them.
    both = PREVIEW.replace("engine:\n  args: {load_format: dummy}\n", "").replace(
        "candidate:\n  args: {quantization: fp8}\n",
        "reference:\n  engine: {kind: vllm, args: {load_format: dummy}}\n"
        "candidate:\n  engine: {kind: vllm, args: {load_format: dummy, quantization: fp8}}\n",
    )
    path = tmp_path / "both.yaml"
    path.write_text(both)
    assert is_preview(load_profile(path, check_files=False))
    one = both.replace("args: {load_format: dummy}}", "args: {}}")
    code, err, path = _validate(tmp_path, one)
    assert code == 2
    assert f"{path}:7 candidate.engine.args.load_format:" in err
    assert "dummy weights on one runtime only" in err
