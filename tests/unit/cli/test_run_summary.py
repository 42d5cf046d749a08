"""The lines `qgate run` ends with: an INCONCLUSIVE pooled envelope gate says when the perf
stage did not run, so that its pool held the lives' probe answers alone (issue 53)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from qgate.cli.run import text_summary
from qgate.core.verdict import Verdict
from qgate.errors import ExitCode
from qgate.gates.judgement import PerfStatus
from qgate.gates.pooled import GATE
from qgate.run.options import RunOutcome


def _summary(tmp_path: Path, status: PerfStatus) -> str:
    envelope = Verdict(
        gate=GATE,
        suite="envelope",
        observed=0.31,
        limit=0.1,
        passed=False,
        inconclusive=True,
        reason=f"{GATE}: INCONCLUSIVE: at most 31.2% broken (95% upper bound; 0 broken of 8)",
    )
    outcome = RunOutcome(
        run_dir=tmp_path,
        envelope=tmp_path / "report.json",
        verdict="INCONCLUSIVE",
        exit_code=ExitCode.INCONCLUSIVE,
        perf_status=status,
        verdicts=[envelope],
    )
    return CliRunner().invoke(click.command()(lambda: text_summary(outcome))).output


@pytest.mark.parametrize("status", ["skipped: --skip-perf", "skipped: gates inconclusive"])
def test_an_envelope_without_perf_says_why_its_pool_is_the_lives_alone(
    tmp_path: Path, status: PerfStatus
) -> None:
    line = next(x for x in _summary(tmp_path, status).splitlines() if "INCONCLUSIVE " in x)
    assert line.endswith(
        f"(perf {status}: the pool holds the lives' probe answers alone, no perf probe)"
    ), line


def test_an_envelope_after_perf_ran_adds_nothing(tmp_path: Path) -> None:
    line = next(x for x in _summary(tmp_path, "ran").splitlines() if "INCONCLUSIVE " in x)
    assert line.endswith("0 broken of 8)"), line
