"""The agent-shaped suites of a profile: tool calls and structured output, asked as is and
streamed (qgate/quality/agent_suites.py runs them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from qgate.profile.detect import AccuracyPolicy

__all__ = [
    "STRUCTURED_PARAMS",
    "TOOL_CHOICES",
    "AgentSuite",
    "StructuredSuite",
    "ToolCallsSuite",
    "streamed_as_run",
]

TOOL_CHOICES = ("named", "auto")
"""How a tool-call item is asked: `tool_choice` naming the expected function, or `auto`."""
STRUCTURED_PARAMS = ("response_format", "structured_outputs", "guided_json")
"""Request parameters that ask a server for output constrained by a JSON schema."""


def _both_tool_choices() -> list[Literal["named", "auto"]]:
    return ["named", "auto"]


def _schema_params() -> list[Literal["response_format", "structured_outputs", "guided_json"]]:
    return ["response_format", "structured_outputs"]


class AgentSuite(AccuracyPolicy):
    """What the two agent-shaped suites share: whether each way of asking is also streamed."""

    streamed: bool = Field(
        default=True,
        description="Also ask every item streamed (`stream: true`, the deltas reassembled, "
        "tool-call argument fragments included): one more result per way of asking, "
        "`<result>.streamed`, paired with the reference's streamed answers, its streamed-only "
        "losses (right as is, wrong streamed) named in the warnings. Doubles the suite's "
        "requests; `qgate plan` lists the streamed results.",
    )


class ToolCallsSuite(AgentSuite):
    """Generated requests that call for one exact tool call, asked with `tools`."""

    items: int = Field(default=24, ge=1, description="Generated items per tool choice.")
    seed: int = Field(default=4242, description="Seed of the generated items.")
    choices: list[Literal["named", "auto"]] = Field(
        default_factory=_both_tool_choices,
        min_length=1,
        description="Tool choices to ask each item with, one result each: `named` "
        "(`tool_choice` names the expected function; vLLM needs `tool_call_parser`) and "
        "`auto` (the model decides; vLLM also needs `enable_auto_tool_choice`, and the chat "
        "template must render `tools`: qgate ships `qgate:chatml-tools` for ChatML models).",
    )
    max_tokens: int = Field(default=96, ge=1, description="Generation budget per answer.")


class StructuredSuite(AgentSuite):
    """Generated questions answered as JSON constrained by a schema; validity, then the answer."""

    items: int = Field(default=24, ge=1, description="Generated items per parameter.")
    seed: int = Field(default=4343, description="Seed of the generated items.")
    params: list[Literal["response_format", "structured_outputs", "guided_json"]] = Field(
        default_factory=_schema_params,
        min_length=1,
        description="Request parameters to constrain the output with, one result each: "
        "`response_format` (json_schema, the OpenAI API), `structured_outputs` (vLLM's "
        "extra body, `{json: schema}`), `guided_json` (the legacy extra body field that vLLM "
        ">= 0.12 ignores with HTTP 200: the suite names that as unconstrained output).",
    )
    max_tokens: int = Field(default=48, ge=1, description="Generation budget per answer.")


def streamed_as_run(profile: Any) -> Any:
    """A stored profile (a report's JSON form) with `streamed` filled in as it ran: an agent
    suite stored without the key ran before it existed, asked as is only; without this an
    older report would be held to streamed results it never had."""
    quality = profile.get("quality") if isinstance(profile, dict) else None
    if not isinstance(quality, dict):
        return profile
    filled = {
        key: {**suite, "streamed": False}
        for key in ("tool_calls", "structured")
        if isinstance(suite := quality.get(key), dict) and "streamed" not in suite
    }
    return {**profile, "quality": {**quality, **filled}} if filled else profile
