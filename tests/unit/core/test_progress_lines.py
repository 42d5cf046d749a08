"""Progress lines for CI logs: stage and suite lines, throttled item counts, one handler."""

from __future__ import annotations

import asyncio
import logging

import pytest
from click.testing import CliRunner

from qgate.core import progress


@pytest.fixture
def lines(capsys: pytest.CaptureFixture[str]) -> object:
    progress.configure("info")
    yield lambda: [ln.split(" qgate: ", 1)[1] for ln in capsys.readouterr().err.splitlines()]
    progress.configure("warning")


def test_stage_clock_logs_start_and_end_and_keeps_timings(lines: object) -> None:
    clock = progress.StageClock()
    with clock.stage("load"):
        pass
    with clock.stage("reference_quality"):
        pass
    with pytest.raises(RuntimeError), clock.stage("candidate"):
        raise RuntimeError("boom")
    assert lines() == [  # type: ignore[operator]
        "stage load: done in 0 s",  # not announced: a bad profile's error comes alone
        "stage reference_quality: started",
        "stage reference_quality: done in 0 s",
        "stage candidate: started",  # an error leaves no line of its own
    ]
    assert set(clock.timings) == {"load", "reference_quality", "candidate"}


def test_items_name_the_role_of_their_suite_inside_tasks(
    lines: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])

    async def suite() -> None:
        counter = progress.items("math.short", 4)

        async def one(step: float) -> None:
            now[0] += step
            counter.advance()

        await asyncio.gather(one(1), one(30), one(1), one(1))

    with progress.suite("candidate", "math"):
        asyncio.run(suite())
    assert lines() == [  # type: ignore[operator]
        "candidate math: started",
        "candidate math.short: 2/4 answers, 31 s",  # the first line after EVERY_S
        "candidate math.short: 4/4 answers, 33 s",  # and the last item
        "candidate math: done in 33 s",
    ]


def test_configure_installs_one_handler_and_sets_the_level() -> None:
    progress.configure("info")
    progress.configure("debug")
    log = logging.getLogger("qgate")
    ours = [h for h in log.handlers if h.get_name() == "qgate-cli"]
    assert len(ours) == 1 and log.level == logging.DEBUG and not log.propagate
    progress.configure("warning")
    assert log.level == logging.WARNING


def test_quiet_and_verbose_set_the_level_and_contradict_each_other() -> None:
    from qgate.cli.main import main

    runner = CliRunner()
    assert runner.invoke(main, ["-q", "init"]).exit_code == 0
    assert logging.getLogger("qgate").level == logging.WARNING
    assert runner.invoke(main, ["-v", "init"]).exit_code == 0
    assert logging.getLogger("qgate").level == logging.DEBUG
    both = runner.invoke(main, ["-q", "-v", "init"])
    assert both.exit_code == 2 and "contradict" in both.output
    progress.configure("warning")
