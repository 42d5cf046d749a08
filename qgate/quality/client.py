"""The one async HTTP client every suite uses to talk to an OpenAI-compatible server.

One aiohttp session per suite run, the runtime's request headers (an endpoint's
API key) on every request, a semaphore of `concurrency` requests in flight
(enough to keep a continuous-batching engine busy), greedy decoding.
HTTP errors become InfrastructureError with the status and a body snippet;
only connection errors are retried (a few times, briefly), because a 4xx/5xx
answer is a real result about the server and retrying would hide it.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import aiohttp

from qgate.core import progress
from qgate.core.http import root_url as server_root
from qgate.core.http_errors import TransportError, map_exceptions
from qgate.core.sse import assembled_chat, parse_sse
from qgate.errors import InfrastructureError

__all__ = [
    "CONNECT_RETRIES",
    "Completion",
    "HttpError",
    "RETRY_DELAY_S",
    "SuiteClient",
    "USAGE",
    "UsageTally",
]

CONNECT_RETRIES = 3
RETRY_DELAY_S = 1.0


class HttpError(InfrastructureError):
    """The server answered with an HTTP error status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Completion:
    """The parts of a chat completion the suites record."""

    text: str
    finish_reason: str | None
    completion_tokens: int | None
    answer: dict[str, Any] | None = None
    """The server's whole answer, kept only when the request asked more than text (`extra`)."""


@dataclass
class UsageTally:
    """The usage the server reported for the answers of one suite: prompt tokens, and of them
    the ones it served from cache (`usage.prompt_tokens_details.cached_tokens`: vLLM returns it
    with `--enable-prompt-tokens-details`), so a pass can count its own items, not the traffic
    around them."""

    requests: int = 0
    prompt_tokens: int = 0
    detailed: int = 0  # answers that carried cached_tokens
    cached_tokens: int = 0

    def add(self, usage: object) -> None:
        """Count one answer's `usage` object."""
        self.requests += 1
        if not isinstance(usage, dict):
            return
        prompt = usage.get("prompt_tokens")
        if isinstance(prompt, int) and prompt >= 0:
            self.prompt_tokens += prompt
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        if isinstance(cached, int) and cached >= 0:
            self.detailed += 1
            self.cached_tokens += cached

    def as_record(self) -> dict[str, float]:
        """The tally as a pass records it (PassSuite.usage)."""
        return {
            "requests": float(self.requests),
            "prompt_tokens": float(self.prompt_tokens),
            "detailed": float(self.detailed),
            "cached_tokens": float(self.cached_tokens),
        }


USAGE: contextvars.ContextVar[UsageTally | None] = contextvars.ContextVar("usage", default=None)
"""Set around a suite to tally its answers' usage; tasks started before it (filler traffic)
do not see it, so they are never counted."""


def _assembled(text: str) -> dict[str, Any]:
    parsed = parse_sse([(0, text.encode())], keep_events=True)
    if parsed.error is not None:
        raise HttpError(f"stream: {parsed.error}", 200)
    return assembled_chat(parsed)


def _first_leaf(error: BaseExceptionGroup[BaseException]) -> BaseException:
    first = error.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


class SuiteClient:
    """Bounded-concurrency client for chat completions and the tokenizer endpoints."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        concurrency: int = 8,
        timeout_s: float = 600.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = timeout_s
        self._headers = dict(headers or {})
        self._semaphore = asyncio.Semaphore(max(1, concurrency))
        self._concurrency = max(1, concurrency)
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Self:
        # Our own semaphore bounds concurrency; the connector limit only must not be lower.
        connector = aiohttp.TCPConnector(limit=self._concurrency + 4)
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers=self._headers,
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _post(
        self, url: str, body: dict[str, Any], read: Callable[[str], Any] = json.loads
    ) -> dict[str, Any]:
        """The answer's JSON object (`read`: how its text becomes one; a stream's events
        put together, for a streamed request)."""
        if self._session is None:
            raise RuntimeError("SuiteClient used outside 'async with'")
        last: Exception | None = None
        for attempt in range(CONNECT_RETRIES + 1):
            try:
                with map_exceptions():
                    async with self._session.post(url, json=body) as resp:
                        text = await resp.text()
                        if resp.status >= 400:
                            snippet = " ".join(text.split())[:200]
                            raise HttpError(
                                f"POST {url}: HTTP {resp.status}: {snippet}", resp.status
                            )
                        try:
                            data = read(text)
                        except ValueError as exc:
                            raise InfrastructureError(
                                f"POST {url}: answer is not JSON: {text[:120]!r}"
                            ) from exc
                        if not isinstance(data, dict):
                            raise InfrastructureError(f"POST {url}: answer is not a JSON object")
                        return data
            except TransportError as exc:
                if exc.kind == "timeout":
                    raise InfrastructureError(
                        f"POST {url}: no answer within {self.timeout_s:g} s"
                    ) from exc.original
                if not exc.retryable:
                    raise exc.original from None
                # Includes a server that closed the connection mid-answer.
                last = exc.original
                if attempt < CONNECT_RETRIES:
                    await asyncio.sleep(RETRY_DELAY_S * (attempt + 1))
        raise InfrastructureError(
            f"POST {url}: connection failed after {CONNECT_RETRIES + 1} attempts: {last}"
        )

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        seed: int,
        temperature: float = 0.0,
        extra: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat completion, greedy by default; waits for a concurrency slot. `extra`:
        further request fields (logprobs), and the Completion keeps the whole answer."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": seed,
            **(extra or {}),
        }
        async with self._semaphore:
            data = await self._post(f"{self.base_url}/chat/completions", body)
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
            finish = choice.get("finish_reason")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise InfrastructureError(
                f"chat completion without choices: {json.dumps(data)[:160]}"
            ) from exc
        usage = data.get("usage") or {}
        tally = USAGE.get()
        if tally is not None:
            tally.add(usage)
        tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        return Completion(
            text=str(text),
            finish_reason=str(finish) if finish is not None else None,
            completion_tokens=int(tokens) if isinstance(tokens, int) else None,
            answer=data if extra else None,
        )

    async def chat_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """One chat completion with a request body the caller built (tools, response_format);
        the server's whole answer. HttpError on an HTTP error status."""
        async with self._semaphore:
            data = await self._post(
                f"{self.base_url}/chat/completions", {"model": self.model, **body}
            )
        tally = USAGE.get()
        if tally is not None:
            tally.add(data.get("usage") or {})
        return data

    async def chat_stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """`chat_body` asked streamed (`stream: true`, usage in the last event): the stream's
        deltas put back together into the unstreamed answer's shape (qgate/core/sse.py).
        A stream that breaks off, or says it failed, is an HttpError with status 200: the
        server answered, and what it streamed is the item's result."""
        ask = {"model": self.model, **body, "stream": True}
        ask["stream_options"] = {"include_usage": True}
        async with self._semaphore:
            data = await self._post(f"{self.base_url}/chat/completions", ask, _assembled)
        tally = USAGE.get()
        if tally is not None:
            tally.add(data.get("usage") or {})
        return data

    async def chat_many(
        self,
        prompts: list[str],
        *,
        max_tokens: int,
        seed: int,
        what: str = "answers",
        extra: dict[str, Any] | None = None,
    ) -> list[Completion]:
        """One single-turn chat completion per user prompt, in prompt order.

        `what` names them in the progress lines (qgate/core/progress.py); `extra` as `chat`.
        """
        counter = progress.items(what, len(prompts))

        async def counted(prompt: str) -> Completion:
            out = await self.chat(
                [{"role": "user", "content": prompt}],
                max_tokens=max_tokens,
                seed=seed,
                extra=extra,
            )
            counter.advance()
            return out

        # A TaskGroup cancels the remaining requests as soon as one fails; the
        # caller gets that first error itself, not an ExceptionGroup.
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(counted(p)) for p in prompts]
        except BaseExceptionGroup as group_error:
            raise _first_leaf(group_error) from None
        return [t.result() for t in tasks]

    async def completions(self, body: dict[str, Any], what: str) -> dict[str, Any]:
        """One (non-streamed) completions request; errors name `what` it was for."""
        async with self._semaphore:
            try:
                return await self._post(f"{self.base_url}/completions", body)
            except InfrastructureError as exc:
                raise InfrastructureError(f"{what}: {exc.message}", exc.details) from exc

    async def tokenize(self, text: str, add_special_tokens: bool | None = False) -> list[int]:
        """Token ids of `text` with the served model's tokenizer.

        No special tokens by default; None leaves the choice to the server (as a plain
        completions request tokenizes its prompt).
        """
        body: dict[str, Any] = {"model": self.model, "prompt": text}
        if add_special_tokens is not None:
            body["add_special_tokens"] = add_special_tokens
        async with self._semaphore:
            data = await self._post(f"{server_root(self.base_url)}/tokenize", body)
        tokens = data.get("tokens")
        if not isinstance(tokens, list):
            raise InfrastructureError("/tokenize answered without 'tokens'")
        return [int(t) for t in tokens]

    async def count_tokens(self, text: str) -> int:
        """Number of tokens of `text` with the served model's tokenizer."""
        return len(await self.tokenize(text))

    async def count_chat_tokens(self, messages: list[dict[str, str]]) -> int:
        """Prompt tokens of a chat request after the server applies the chat template."""
        body = {"model": self.model, "messages": messages, "add_generation_prompt": True}
        async with self._semaphore:
            data = await self._post(f"{server_root(self.base_url)}/tokenize", body)
        count = data.get("count")
        if not isinstance(count, int):
            tokens = data.get("tokens")
            if not isinstance(tokens, list):
                raise InfrastructureError("/tokenize answered without 'count'")
            count = len(tokens)
        return count

    async def detokenize(self, tokens: list[int]) -> str:
        """Text of token ids with the served model's tokenizer."""
        body = {"model": self.model, "tokens": tokens}
        async with self._semaphore:
            data = await self._post(f"{server_root(self.base_url)}/detokenize", body)
        prompt = data.get("prompt")
        if not isinstance(prompt, str):
            raise InfrastructureError("/detokenize answered without 'prompt'")
        return prompt
