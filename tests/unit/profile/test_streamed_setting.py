"""The agent-shaped suites' settings: each way of asking is also streamed by default, in a
stable order of results, and a report stored before `streamed` existed reads as it ran."""

from __future__ import annotations

from helpers.report_synthetic import build_report

from qgate.profile import StructuredSuite, ToolCallsSuite
from qgate.profile.agent import streamed_as_run
from qgate.profile.suite_results import agent_ways, structured_results, tool_calls_results
from qgate.report.model import Report


def test_each_way_is_asked_as_is_then_streamed_unless_turned_off() -> None:
    tools = ToolCallsSuite()
    assert tools.streamed and StructuredSuite().streamed
    assert [rid for rid, _ in tool_calls_results(tools)] == [
        "tool_calls.named",
        "tool_calls.named.streamed",
        "tool_calls.auto",
        "tool_calls.auto.streamed",
    ]
    plain = StructuredSuite(params=["guided_json"], streamed=False)
    assert [rid for rid, _ in structured_results(plain)] == ["structured.guided_json"]
    assert agent_ways("x", ["a"], True) == [("x.a", "a", False), ("x.a.streamed", "a", True)]


def test_a_stored_agent_suite_without_the_key_ran_before_it_existed_unstreamed() -> None:
    stored = {
        "name": "n",
        "quality": {"tool_calls": {"items": 6}, "structured": {"items": 6, "streamed": True}},
    }
    shown = streamed_as_run(stored)
    assert shown["quality"]["tool_calls"]["streamed"] is False
    assert shown["quality"]["structured"]["streamed"] is True  # written: kept
    assert "streamed" not in stored["quality"]["tool_calls"]  # a copy
    assert streamed_as_run({"quality": {"math": {}}}) == {"quality": {"math": {}}}
    data = build_report().model_dump(mode="json")
    data["profile"]["quality"]["tool_calls"] = {"items": 6, "choices": ["named"]}
    profile = Report.model_validate(data).profile
    assert profile["quality"]["tool_calls"]["streamed"] is False
