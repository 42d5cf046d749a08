from __future__ import annotations

import pytest

from qgate.perf.progress import ScenarioProgress


def test_silent_when_not_a_tty(capsys: pytest.CaptureFixture[str]) -> None:
    with ScenarioProgress("x", 3, enabled=True) as bar:
        bar.advance(False)
        bar.advance(True)
    assert (bar.done, bar.errors) == (2, 1)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_disabled_never_draws() -> None:
    bar = ScenarioProgress("x", None, enabled=False)
    assert not bar.enabled
    assert "requests" in bar._render()
