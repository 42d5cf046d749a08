"""`qgate verify --profile FILE` of a report whose run predates `streamed` (issue 55 item 1):
its agent suites ran as is only, and FILE, which writes no `streamed`, is read so too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from qgate.errors import VerificationFailed
from qgate.profile.agent import streamed_as_run
from qgate.profile.load import load_profile
from qgate.report.verify.profile import match_profile

AGENT = Path(__file__).resolve().parents[3] / "precision_profiles" / "smollm2-cpu-agent.yaml"


def _older_report_profile(file: Path) -> dict[str, Any]:
    """The profile a run from before `streamed` embedded, as a report is read today."""
    stored = load_profile(file, check_files=False).model_dump(mode="json")
    for key in ("tool_calls", "structured"):
        stored["quality"][key].pop("streamed")
    return streamed_as_run(stored)  # type: ignore[no-any-return]


def test_a_file_without_streamed_is_read_as_the_older_run_read_it() -> None:
    assert "streamed" not in AGENT.read_text()
    matched = match_profile(_older_report_profile(AGENT), AGENT)
    q = matched.profile.quality
    assert q.tool_calls is not None and q.structured is not None
    assert (q.tool_calls.streamed, q.structured.streamed) == (False, False)
    assert any(
        "quality.tool_calls, quality.structured read as asked as is only" in n
        for n in matched.notes
    )


def test_a_file_that_asks_streamed_does_not_match_a_run_that_did_not(tmp_path: Path) -> None:
    text = AGENT.read_text().replace("  tool_calls:", "  tool_calls:\n    streamed: true", 1)
    assert text != AGENT.read_text()
    file = tmp_path / AGENT.name
    file.write_text(text)
    with pytest.raises(VerificationFailed, match=r"at quality\.tool_calls\.streamed"):
        match_profile(_older_report_profile(AGENT), file)


def test_todays_report_is_held_to_todays_reading() -> None:
    today = load_profile(AGENT, check_files=False).model_dump(mode="json")
    matched = match_profile(today, AGENT)
    assert matched.profile.quality.tool_calls is not None
    assert matched.profile.quality.tool_calls.streamed is True and not matched.notes
