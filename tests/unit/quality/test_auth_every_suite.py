"""Every suite reaches an endpoint through the one HTTP client, its API key on every request.

A fake OpenAI-compatible server refuses any request without `Authorization:
Bearer <key>` (HTTP 401). The quality stage runs math, recall and divergence
(the reference's generation and scoring, then the candidate's scoring) against
it with an endpoint's headers, and against it without them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web

from qgate.core.serving import EffectiveConfig
from qgate.errors import InfrastructureError
from qgate.profile import Profile
from qgate.quality.stage import evaluate

KEY = "sk-test-0123456789"


def _app(seen: list[tuple[str, bool]]) -> web.Application:
    @web.middleware
    async def auth(request: web.Request, handler: Any) -> web.StreamResponse:
        ok = request.headers.get("Authorization") == f"Bearer {KEY}"
        seen.append((request.path, ok))
        if not ok:
            return web.json_response({"error": "missing or bad API key"}, status=401)
        response: web.StreamResponse = await handler(request)
        return response

    def ids(text: str) -> list[int]:
        return [len(word) % 50 + 1 for word in text.split()]

    async def tokenize(request: web.Request) -> web.Response:
        body = await request.json()
        if "messages" in body:
            tokens = ids(" ".join(m["content"] for m in body["messages"]))
        else:
            tokens = ids(body["prompt"])
        return web.json_response({"tokens": tokens, "count": len(tokens)})

    async def detokenize(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({"prompt": " ".join("x" * t for t in body["tokens"])})

    async def chat(request: web.Request) -> web.Response:
        return web.json_response(
            {
                "choices": [{"message": {"content": "The answer is 7."}, "finish_reason": "stop"}],
                "usage": {"completion_tokens": 5},
            }
        )

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        prompt = body["prompt"]
        batch = prompt if prompt and isinstance(prompt[0], list) else [prompt]
        choices: list[dict[str, Any]] = []
        for i, p in enumerate(batch):
            if body.get("prompt_logprobs"):
                plp = [None] + [{str(t): {"logprob": -0.1}} for t in p[1:]]
                choices.append({"index": i, "prompt_logprobs": plp})
            else:
                toks = [f"token_id:{(sum(p) + j) % 50}" for j in range(body["max_tokens"])]
                choices.append({"index": i, "logprobs": {"tokens": toks}})
        return web.json_response({"choices": choices})

    app = web.Application(middlewares=[auth])
    app.router.add_post("/tokenize", tokenize)
    app.router.add_post("/detokenize", detokenize)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/completions", completions)
    return app


class _Endpoint:
    """A runtime as the quality stage sees an `endpoint`: a URL and its auth headers."""

    def __init__(self, base_url: str, headers: dict[str, str]) -> None:
        self.base_url = base_url
        self.served_model = "m"
        self.role = "reference"
        self.log_path = None
        self._headers = headers

    def headers(self) -> dict[str, str]:
        return dict(self._headers)

    def effective_config(self) -> EffectiveConfig:
        return EffectiveConfig(
            role="reference",
            kind="endpoint",
            base_url=self.base_url,
            served_model="m",
            max_model_len=4096,
        )

    def check_alive(self, timeout_s: float = 30.0) -> None:
        return None


PROFILE = Profile.model_validate(
    {
        "name": "auth",
        "model": {"path": "/m"},
        "target": {"accelerator": "cpu"},
        "engine": {"kind": "endpoint"},
        "reference": {"endpoint": {"base_url": "http://x/v1", "api_key_env": "K"}},
        "candidate": {"endpoint": {"base_url": "http://x/v1", "api_key_env": "K"}},
        "quality": {
            "concurrency": 2,
            "math": {"prompts": ["short", "long"], "limit": 2, "long_tokens": 256},
            "recall": {"context_tokens": [128], "haystacks": 1, "depths": [0.5]},
            "divergence": {"sequences": 2, "tokens": 4, "top_k": 2},
        },
    }
)


@pytest.fixture
def server() -> Iterator[tuple[str, list[tuple[str, bool]]]]:
    seen: list[tuple[str, bool]] = []
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(_app(seen))
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    import threading

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}/v1", seen
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def test_every_suite_sends_the_endpoints_key(server: tuple[str, list[tuple[str, bool]]]) -> None:
    url, seen = server
    runtime = _Endpoint(url, {"Authorization": f"Bearer {KEY}"})
    ref = evaluate(runtime, PROFILE, "reference", tokenizer_path=None)  # type: ignore[arg-type]
    cand = evaluate(
        runtime,
        PROFILE,
        "candidate",
        tokenizer_path=None,  # type: ignore[arg-type]
        reference_scores=ref.scores,
    )
    assert {r.suite for r in ref.runs} == {"math.short", "math.long", "recall.128"}
    assert ref.scores is not None and cand.scores is not None
    assert len(cand.scores.sequences) == 2
    paths = {path for path, _ in seen}
    assert paths >= {"/tokenize", "/v1/chat/completions", "/v1/completions"}
    assert seen and all(ok for _, ok in seen), [p for p, ok in seen if not ok]


@pytest.mark.parametrize("suite", ["math", "recall", "divergence"])
def test_without_the_key_each_suite_stops_on_the_401(
    server: tuple[str, list[tuple[str, bool]]], suite: str
) -> None:
    url, _ = server
    quality = {"concurrency": 2, suite: PROFILE.quality.model_dump()[suite]}
    profile = PROFILE.model_copy(update={"quality": type(PROFILE.quality).model_validate(quality)})
    with pytest.raises(InfrastructureError, match="HTTP 401"):
        evaluate(_Endpoint(url, {}), profile, "reference", tokenizer_path=None)  # type: ignore[arg-type]
