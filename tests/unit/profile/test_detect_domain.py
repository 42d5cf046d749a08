"""Detections outside the sizing model are refused at validation: exit 2, file:line:key."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from qgate.cli import main
from qgate.profile import Detect
from qgate.profile.quality import detect_problem, fewest_rejecting

BASE = """\
name: t
model:
  embedded: smollm2
candidate:
  args: {kv_cache_dtype: fp8}
quality:
"""

CASES = [
    (
        "  math: {detect: {drop: 0.2, discordance: 0.05}}\n",
        ":7 quality.math.detect.discordance:",
        "must be >= detect.drop (0.2): a drop of 20 points needs at least 20% of items to flip",
    ),
    (
        "  recall: {alpha: 0.1, detect: {drop: 0.2, power: 0.1}}\n",
        ":7 quality.recall.detect.power:",
        "must be > alpha (0.1)",
    ),
    (
        "  lm_eval:\n    - {task: t, detect: {drop: 0.5, max_items: 4}}\n",
        ":8 quality.lm_eval[0].detect.max_items:",
        "must be at least 5: at alpha 0.05 the exact test cannot fail with fewer items",
    ),
    (
        "  math: {alpha: 0.03125, detect: {drop: 1.0, max_items: 5}}\n",
        ":7 quality.math.detect.max_items:",
        "must be at least 6",  # 5 lost of 5 is p = 1/32: a tie passes
    ),
    ("  math: {alpha: 0.2, power: 0.2}\n", ":7 quality.math.power:", "must be > alpha (0.2)"),
    (
        "  math: {detect: {drop: 0.2, max_items: 2000000}}\n",
        ":7 quality.math.detect.max_items:",
        "must be at most 1,000,000",
    ),
]


@pytest.mark.parametrize(("quality", "where", "message"), CASES)
def test_a_detection_outside_the_model_is_bad_input(
    tmp_path: Path, quality: str, where: str, message: str
) -> None:
    path = tmp_path / "profile.yaml"
    path.write_text(BASE + quality)
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line.strip() for line in result.stderr.splitlines()]
    assert any(line.startswith(f"{path}{where}") and message in line for line in lines), (
        result.stderr
    )


def test_a_detection_inside_the_model_validates(tmp_path: Path) -> None:
    path = tmp_path / "profile.yaml"
    path.write_text(BASE + "  math: {detect: {drop: 0.2, discordance: 0.2, max_items: 5}}\n")
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("alpha", [0.5, 0.25, 0.03125, 0.05, 0.01, 1e-6, 0.999])
def test_the_fewest_rejecting_items_is_where_every_item_lost_first_rejects(alpha: float) -> None:
    n = fewest_rejecting(alpha)
    assert 2.0**-n < alpha <= 2.0 ** -(n - 1)
    power = (1 + alpha) / 2
    assert detect_problem(Detect(drop=1.0, power=power, max_items=n), alpha) is None
    if n > 1:
        problem = detect_problem(Detect(drop=1.0, power=power, max_items=n - 1), alpha)
        assert problem is not None and problem[0] == "max_items"
