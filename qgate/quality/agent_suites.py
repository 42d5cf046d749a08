"""The agent-shaped suites: tool calls (`tool_calls`) and structured output (`structured`).

Both ask generated items (qgate/quality/agent_data.py) through /v1/chat/completions
with the request fields agents send, one result per way of asking:
`tool_calls.named` / `tool_calls.auto` (`tools` with a `tool_choice` that names the
expected function, or `auto`) and `structured.<param>` (a JSON schema through
`response_format`, vLLM's `structured_outputs` or the legacy `guided_json`), each asked
again streamed where the setting says (`streamed`, the default): `<result>.streamed`, the
stream's deltas put back together (tool-call argument fragments joined by index), so a
server that loses tool calls or the schema only when streaming is seen (vLLM #53246).
An HTTP error answering one item is that item's result (`http_error`), not an
infrastructure failure: a server that refuses `tool_choice` is a finding.

How tools reach the prompt is the chat template's business (the server renders
`tools`); for models whose template has no tool section (SmolLM2) qgate ships a
ChatML template in the Hermes format, named `qgate:chatml-tools` in the engine args
(`chat_template`), which vLLM's `hermes` tool parser reads back.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from qgate.core import progress
from qgate.core.files import sha256_text
from qgate.core.records import Role
from qgate.profile import StructuredSuite, ToolCallsSuite
from qgate.profile.suite_results import agent_ways
from qgate.quality.agent_data import (
    HTTP_ERROR,
    STRUCTURED_VERSION,
    TOOL_CALLS_VERSION,
    TOOLS,
    grade_structured,
    grade_tool_call,
    schema_for,
    structured_data_sha256,
    structured_items,
    tool_data_sha256,
    tool_items,
)
from qgate.quality.board import Board, block_name, in_blocks
from qgate.quality.client import HttpError, SuiteClient
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.runner import SuiteContext
from qgate.quality.sizing import agent_items

__all__ = [
    "STRUCTURED",
    "TOOL_CALLS",
    "structured_body",
    "tool_body",
]

SYSTEM = "You are a helpful assistant."


def tool_body(prompt: str, choice: str, name: str, max_tokens: int, seed: int) -> dict[str, Any]:
    """The request of one tool-call item."""
    tool_choice: Any = (
        {"type": "function", "function": {"name": name}} if choice == "named" else "auto"
    )
    return {
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
        "tools": TOOLS,
        "tool_choice": tool_choice,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "seed": seed,
    }


def structured_body(
    prompt: str, schema: dict[str, Any], param: str, max_tokens: int, seed: int
) -> dict[str, Any]:
    """The request of one structured-output item, the schema sent the way `param` names."""
    body: dict[str, Any] = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "seed": seed,
    }
    if param == "response_format":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema, "strict": True},
        }
    elif param == "structured_outputs":
        body["structured_outputs"] = {"json": schema}
    else:
        body["guided_json"] = schema
    return body


def _message(data: dict[str, Any]) -> tuple[dict[str, Any], str | None, int | None]:
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise HttpError(f"chat completion without choices: {json.dumps(data)[:160]}", 200) from exc
    usage = data.get("usage") or {}
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    finish = choice.get("finish_reason")
    return (
        message if isinstance(message, dict) else {},
        str(finish) if finish is not None else None,
        tokens if isinstance(tokens, int) else None,
    )


async def _ask(
    client: SuiteClient, body: dict[str, Any], streamed: bool
) -> tuple[dict[str, Any] | str, str | None, int | None]:
    """(message, finish reason, completion tokens), or the HTTP error's text; `streamed`: asked
    with `stream: true`, the deltas put back together (a broken stream is an HTTP 200 error)."""
    try:
        data = await (client.chat_stream_body(body) if streamed else client.chat_body(body))
    except HttpError as exc:
        return f"HTTP {exc.status}: {exc.message}", HTTP_ERROR, None
    return _message(data)


def tool_output(message: dict[str, Any]) -> str:
    """What a tool-call record stores: the content and the calls, as canonical JSON."""
    calls = [
        {
            "name": (c.get("function") or {}).get("name"),
            "arguments": (c.get("function") or {}).get("arguments"),
        }
        for c in message.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    return json.dumps(
        {"content": message.get("content"), "tool_calls": calls},
        sort_keys=True,
        ensure_ascii=False,
    )


async def _gather(
    what: str, count: int, one: Callable[[int], Awaitable[ItemRecord]]
) -> list[ItemRecord]:
    counter = progress.items(what, count)

    async def counted(n: int) -> ItemRecord:
        record = await one(n)
        counter.advance()
        return record

    return list(await asyncio.gather(*(counted(n) for n in range(count))))


async def _suite_run(
    suite: str,
    role: Role,
    board: Board | None,
    count: int,
    one: Callable[[int], Awaitable[ItemRecord]],
    data_sha256: str,
    params: dict[str, str | int | float | bool | None],
) -> SuiteRun:
    start = time.perf_counter()

    async def answer(lo: int, hi: int) -> list[ItemRecord]:
        return await _gather(block_name(suite, lo, hi, count), hi - lo, lambda n: one(lo + n))

    records, planned, stopped = await in_blocks(board, role, suite, count, answer)
    return SuiteRun(
        suite=suite,
        role=role,
        data_sha256=data_sha256,
        params=params,
        items=records,
        wall_s=round(time.perf_counter() - start, 3),
        planned=planned,
        stopped=stopped,
    )


class ToolCallsRunner:
    """The tool-call suite in the quality stage (its entry is in qgate/profile/suites.py)."""

    def data_digests(self, setting: ToolCallsSuite, max_model_len: int | None) -> dict[str, str]:
        return {
            rid: tool_data_sha256(agent_items(setting), setting.seed, c)
            for rid, c, _ in agent_ways("tool_calls", setting.choices, setting.streamed)
        }

    async def run(self, setting: ToolCallsSuite, ctx: SuiteContext) -> list[SuiteRun]:
        items = tool_items(agent_items(setting), setting.seed)
        runs: list[SuiteRun] = []
        async with ctx.client() as client:
            for suite, choice, streamed in agent_ways(
                "tool_calls", setting.choices, setting.streamed
            ):

                async def one(
                    n: int, choice: str = choice, streamed: bool = streamed
                ) -> ItemRecord:
                    item = items[n]
                    body = tool_body(item.prompt, choice, item.name, setting.max_tokens, ctx.seed)
                    got, finish, tokens = await _ask(client, body, streamed)
                    output = got if isinstance(got, str) else tool_output(got)
                    grade = grade_tool_call(output, finish, item.expected)
                    return ItemRecord(
                        id=item.id,
                        prompt_sha256=sha256_text(json.dumps(body["messages"], sort_keys=True)),
                        output=output,
                        answer=grade.answer,
                        expected=item.expected,
                        correct=grade.correct,
                        output_tokens=tokens,
                        finish_reason=finish,
                        failure=grade.failure,
                    )

                params: dict[str, str | int | float | bool | None] = {
                    "tool_choice": choice,
                    "stream": streamed,
                    "temperature": 0.0,
                    "seed": ctx.seed,
                    "max_tokens": setting.max_tokens,
                    "concurrency": ctx.concurrency,
                    "version": TOOL_CALLS_VERSION,
                }
                digest = tool_data_sha256(agent_items(setting), setting.seed, choice)
                runs.append(
                    await _suite_run(suite, ctx.role, ctx.board, len(items), one, digest, params)
                )
                if ctx.board is not None and ctx.board.halted(ctx.role):
                    break
        return runs


class StructuredRunner:
    """The structured-output suite in the quality stage (entry in qgate/profile/suites.py)."""

    def data_digests(self, setting: StructuredSuite, max_model_len: int | None) -> dict[str, str]:
        return {
            rid: structured_data_sha256(agent_items(setting), setting.seed, p)
            for rid, p, _ in agent_ways("structured", setting.params, setting.streamed)
        }

    async def run(self, setting: StructuredSuite, ctx: SuiteContext) -> list[SuiteRun]:
        items = structured_items(agent_items(setting), setting.seed)
        runs: list[SuiteRun] = []
        async with ctx.client() as client:
            for suite, param, streamed in agent_ways(
                "structured", setting.params, setting.streamed
            ):

                async def one(n: int, param: str = param, streamed: bool = streamed) -> ItemRecord:
                    item = items[n]
                    body = structured_body(
                        item.prompt, schema_for(item.id), param, setting.max_tokens, ctx.seed
                    )
                    got, finish, tokens = await _ask(client, body, streamed)
                    output = got if isinstance(got, str) else str(got.get("content") or "")
                    grade = grade_structured(item.id, output, finish, item.expected)
                    return ItemRecord(
                        id=item.id,
                        prompt_sha256=sha256_text(item.prompt),
                        output=output,
                        answer=grade.answer,
                        expected=item.expected,
                        correct=grade.correct,
                        output_tokens=tokens,
                        finish_reason=finish,
                        failure=grade.failure,
                    )

                params: dict[str, str | int | float | bool | None] = {
                    "param": param,
                    "stream": streamed,
                    "temperature": 0.0,
                    "seed": ctx.seed,
                    "max_tokens": setting.max_tokens,
                    "concurrency": ctx.concurrency,
                    "version": STRUCTURED_VERSION,
                }
                digest = structured_data_sha256(agent_items(setting), setting.seed, param)
                runs.append(
                    await _suite_run(suite, ctx.role, ctx.board, len(items), one, digest, params)
                )
                if ctx.board is not None and ctx.board.halted(ctx.role):
                    break
        return runs


TOOL_CALLS = ToolCallsRunner()
STRUCTURED = StructuredRunner()
