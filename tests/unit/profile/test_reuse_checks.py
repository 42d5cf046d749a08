"""`quality.reuse` refused at validate (file:line:key, exit 2) where NOT EXERCISED could never
be reached or no pass would run: a floor that zero meets, a selection of no configured suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.profiles import problems_of

from qgate.cli.main import main

BASE = """\
name: t
model: {embedded: smollm2}
candidate:
  args: {enable_prefix_caching: true}
quality:
  math: {prompts: [short, long], max_drop: 0.1}
  recall: {context_tokens: [1024], haystacks: 8, max_drop: 0.1}
  reuse:
"""


@pytest.mark.parametrize(
    ("lines", "key", "says"),
    [
        ("    min_exercised_share: 0", "quality.reuse.min_exercised_share", "greater than 0"),
        ("    load: {min_preemptions: 0}", "quality.reuse.load.min_preemptions", "greater than"),
        ("    suites: [math.lnog]", "quality.reuse.suites[0]", "'math.lnog' selects no"),
        ("    suites: [recall.4096]", "quality.reuse.suites[0]", "configured: math.short"),
        ("    suites: [math, recall.2048]", "quality.reuse.suites[1]", "'recall.2048' selects"),
        ("    suites: [divergence]", "quality.reuse.suites[0]", "only math and recall results"),
        ("    suites: [lm_eval.gsm8k]", "quality.reuse.suites[0]", "prompt_logprobs"),
    ],
)
def test_reuse_settings_that_switch_the_proof_off_name_their_line_and_key(
    lines: str, key: str, says: str
) -> None:
    found = problems_of(BASE + lines + "\n")
    assert len(found) == 1, found
    assert found[0].startswith(f"p.yaml:9 {key}: "), found
    assert says in found[0]


def test_a_reuse_block_over_only_divergence_or_lm_eval_suites_is_refused() -> None:
    text = """\
name: t
model: {embedded: smollm2}
candidate: {args: {enable_prefix_caching: true}}
quality:
  divergence: {sequences: 4}
  reuse: {passes: [warm]}
"""
    found = problems_of(text)
    assert len(found) == 1 and found[0].startswith("p.yaml:6 quality.reuse: "), found
    assert "selects no configured suite" in found[0]


def test_selections_of_configured_results_load() -> None:
    assert problems_of(BASE + "    suites: [math.long, recall.1024]\n") == []
    assert problems_of(BASE + "    suites: [recall]\n    min_exercised_share: 0.01\n") == []


def test_validate_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(BASE + "    min_exercised_share: 0.0\n")
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:9 quality.reuse.min_exercised_share: " in result.output
