"""Benchmark of the quality stage's own overhead, and of the reference cache's saving.

Prints, for the divergence suite (N sequences x T tokens):

1. generation: qgate's runner (`generate_continuations`, one request per
   prompt at --concurrency) against the engine's own time for the same
   tokens at full batch (one completions request carrying every prompt);
2. scoring: qgate's runner (`score`, one sequence a request, and --batch
   sequences a request) against one batched prompt_logprobs request over
   the same token ids;
3. the reference cache: time to load a stored reference (hit) against
   recomputing it.

Goal: runner / engine <= 1.2x. Starts its own SmolLM2 server unless
--base-url is given.

    .venv/bin/python perf/bench_quality.py [--base-url http://127.0.0.1:8000/v1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from qgate.profile import DivergenceSuite
from qgate.quality.cache import CachedReference, ReferenceCache
from qgate.quality.client import SuiteClient
from qgate.quality.divergence_suite import (
    Continuation,
    generate_continuations,
    load_corpus,
    reference_scores,
    score,
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _server(base_url: str | None) -> Iterator[tuple[str, str]]:
    if base_url:
        models = json.load(urllib.request.urlopen(f"{base_url}/models", timeout=30))
        yield base_url, models["data"][0]["id"]
        return
    from qgate.checkpoint.embedded import checkpoint_path

    port = _free_port()
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="2")
    log_fd, log_name = tempfile.mkstemp(prefix="bench_quality_", suffix=".log")
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(checkpoint_path("smollm2")),
        "--served-model-name",
        "smollm2",
        "--port",
        str(port),
        "--enforce-eager",
        "--gpu-memory-utilization",
        "0.3",
        "--max-model-len",
        "4096",
    ]
    proc = subprocess.Popen(
        cmd, stdout=log_fd, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    os.close(log_fd)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"server exited; log: {log_name}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                time.sleep(1)
        else:
            raise SystemExit(f"server not ready in 300 s; log: {log_name}")
        yield f"http://127.0.0.1:{port}/v1", "smollm2"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


async def _batched(base_url: str, body: dict[str, Any]) -> dict[str, Any]:
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=900)
    async with (
        aiohttp.ClientSession(timeout=timeout) as s,
        s.post(f"{base_url}/completions", json=body) as r,
    ):
        r.raise_for_status()
        data: dict[str, Any] = await r.json()
        return data


async def _on(url: str, model: str, concurrency: int, use: Any) -> Any:
    """`use(client)` with the suites' own HTTP client (qgate/quality/client.py)."""
    async with SuiteClient(url, model, concurrency=concurrency) as client:
        return await use(client)


def _timed(coro: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = asyncio.run(coro)
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", help="Use this running server instead of starting one.")
    ap.add_argument("--sequences", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8, help="Sequences per scoring request.")
    args = ap.parse_args()
    # SIGTERM (e.g. from `timeout`) must still run the server's cleanup
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    n, t, k = args.sequences, args.tokens, args.top_k
    prompts, _ = load_corpus(None, n)

    with _server(args.base_url) as (url, model):
        # warm up the engine so the first measurement is not a cold start
        _timed(_on(url, model, 1, lambda c: generate_continuations(c, prompts[:2], 4)))
        conts: list[Continuation] = []
        gen_runner, gen_engine, sc_runner, sc_engine, sc_batched = [], [], [], [], []
        for rep in range(args.repeats):
            # alternate which side goes first so neither profits from a warmer server
            for side in ("runner", "engine") if rep % 2 == 0 else ("engine", "runner"):
                if side == "runner":
                    dt, conts = _timed(
                        _on(
                            url,
                            model,
                            args.concurrency,
                            lambda c: generate_continuations(c, prompts, t),
                        )
                    )
                    gen_runner.append(dt)
                    dt, _ = _timed(
                        _on(url, model, args.concurrency, lambda c, cs=conts: score(c, cs, k))
                    )
                    sc_runner.append(dt)
                    dt, _ = _timed(
                        _on(
                            url,
                            model,
                            args.concurrency,
                            lambda c, cs=conts: score(c, cs, k, batch=args.batch),
                        )
                    )
                    sc_batched.append(dt)
                    continue
                if not conts:
                    conts = asyncio.run(
                        _on(
                            url,
                            model,
                            args.concurrency,
                            lambda c: generate_continuations(c, prompts, t),
                        )
                    )
                dt, _ = _timed(
                    _batched(
                        url,
                        {
                            "model": model,
                            "prompt": [c.prompt_ids for c in conts],
                            "max_tokens": t,
                            "min_tokens": t,
                            "ignore_eos": True,
                            "temperature": 0.0,
                        },
                    )
                )
                gen_engine.append(dt)
                dt, _ = _timed(
                    _batched(
                        url,
                        {
                            "model": model,
                            "prompt": [c.prompt_ids + c.token_ids for c in conts],
                            "max_tokens": 1,
                            "temperature": 0.0,
                            "prompt_logprobs": k,
                        },
                    )
                )
                sc_engine.append(dt)

        spec = DivergenceSuite(sequences=n, tokens=t, top_k=k)
        recompute, scores = _timed(
            _on(url, model, args.concurrency, lambda c: reference_scores(spec, c))
        )

    with tempfile.TemporaryDirectory() as tmp:
        from qgate.attest.keys import (
            LoadedSigner,
            generate_private_pem,
            public_pem_of,
            signer_from_pem,
        )

        pem = generate_private_pem("ecdsa")
        signer = LoadedSigner(signer_from_pem(pem), public_pem_of(pem), "file")
        cache = ReferenceCache(Path(tmp), signer)
        key = "ab" * 32
        cache.store(key, CachedReference(key=key, divergence=scores))
        hits = []
        for _ in range(max(3, args.repeats)):
            t0 = time.perf_counter()
            assert cache.load(key) is not None
            hits.append(time.perf_counter() - t0)
        size = (cache.entry_dir(key) / "reference.json").stat().st_size

    med = statistics.median
    print(
        f"divergence suite: {n} sequences x {t} tokens, top_k {k}, "
        f"concurrency {args.concurrency}, median of {args.repeats}"
    )
    print(
        f"generation: runner {med(gen_runner):.2f} s, engine batch {med(gen_engine):.2f} s, "
        f"ratio {med(gen_runner) / med(gen_engine):.2f}x"
    )
    print(
        f"scoring:    runner {med(sc_runner):.2f} s, engine batch {med(sc_engine):.2f} s, "
        f"ratio {med(sc_runner) / med(sc_engine):.2f}x"
    )
    print(
        f"scoring, {args.batch} sequences a request: runner {med(sc_batched):.2f} s, "
        f"ratio {med(sc_batched) / med(sc_engine):.2f}x"
    )
    print(
        f"reference cache: hit {1000 * med(hits):.1f} ms ({size / 1e6:.2f} MB), "
        f"recompute {recompute:.2f} s, saving {recompute / med(hits):.0f}x"
    )


if __name__ == "__main__":
    main()
