"""The perf stage against one runtime: every scenario (and sweep level) in order.

    runs = await run_scenarios(base_url, model, spec, "candidate", gpus=1)

For each scenario: warmup requests (not recorded), a /metrics scrape, the
measured requests (with quality probes mixed in), a second scrape, and the
stream checks. While requests are measured, the event loop only sends and
stamps reads: /metrics is scraped outside the measured window, the progress
line only counts, and streams are parsed into records after the scenario.
The pipeline decides whether the stage runs at all (only when every quality
gate passed); this module only measures.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import aiohttp

from qgate.core.http import root_url
from qgate.core.serving import MetricNames
from qgate.errors import InfrastructureError
from qgate.perf.client import make_session, post_json
from qgate.perf.expand import expand_inputs
from qgate.perf.loadgen import Exchange, RequestSpec, Sender
from qgate.perf.probes import Probe
from qgate.perf.progress import ScenarioProgress
from qgate.perf.rawhttp import RawClient
from qgate.perf.records import PerfRole, ScenarioRun, is_workload
from qgate.perf.salts import SALT, salted
from qgate.perf.scrape import scrape
from qgate.perf.series import DEFAULT_BUCKET_S, PARAM
from qgate.perf.workloads import (
    Mark,
    Tokenize,
    run_fixed,
    run_multi_turn,
    run_trace,
)
from qgate.profile import FixedScenario, MultiTurnScenario, PerfSpec, TraceScenario
from qgate.profile.probe_count import measured_count, probe_points
from qgate.profile.quality import ANSWER_MAX_TOKENS

AnyScenario = FixedScenario | MultiTurnScenario | TraceScenario
Role = PerfRole

DEFAULT_PROBE_PARAMS: dict[str, Any] = {
    "temperature": 0.0,
    "max_tokens": ANSWER_MAX_TOKENS,
    "seed": 0,
}


def levels(s: AnyScenario) -> list[tuple[str, int | None]]:
    """(run name, concurrency) per run: a sweep gives one run per level named name@cN."""
    if isinstance(s, FixedScenario):
        if isinstance(s.concurrency, list):
            return [(f"{s.name}@c{c}", c) for c in s.concurrency]
        return [(s.name, s.concurrency)]
    return [(s.name, None)]


def series_bucket_s(s: AnyScenario) -> float | None:
    """Time-series bucket width: the profile's, else 60 s for a duration-bound scenario."""
    if s.series_bucket_s is not None:
        return s.series_bucket_s
    return DEFAULT_BUCKET_S if s.duration_s else None


def probe_spec(
    probe: Probe, model: str, params: dict[str, Any], scenario: str = "", ask: int = 0
) -> RequestSpec:
    """A probe as a streaming chat (messages) or completions (prompt string) request, salted
    apart from every other request (its `ask`-th in `scenario`) where the side salts."""
    item_id, body, expected = probe[0], probe[1], probe[2]
    truth = probe[3] if len(probe) > 3 else None
    payload: dict[str, Any] = {
        "model": model,
        **params,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if isinstance(body, str):
        payload["prompt"] = body
        path = "/completions"
    else:
        payload["messages"] = body
        path = "/chat/completions"
    salted(payload, scenario, f"p{ask}")
    return RequestSpec(path, payload, probe_id=item_id, probe_expected=expected, probe_truth=truth)


async def run_scenarios(
    base_url: str,
    model: str,
    spec: PerfSpec,
    role: Role,
    *,
    gpus: int = 1,
    headers: dict[str, str] | None = None,
    probes: list[Probe] | None = None,
    probe_params: dict[str, Any] | None = None,
    progress: bool = False,
    timeout_s: float = 600.0,
    tokenize: Tokenize | None = None,
    metric_names: MetricNames | None = None,
    shaped: Mapping[str, list[Probe]] | None = None,
    salt: str | None = None,
) -> list[ScenarioRun]:
    """Run every scenario of `spec` against one server; one ScenarioRun per run/level.

    base_url ends in /v1. Probes are (item id, chat messages or prompt, the
    quality stage's answer[, the item's known answer]); a scenario asks every probe at least
    once and more when `probe_share` of its requests is more, spread through its load
    (`probe_points`), with `probe_params` (default greedy, ANSWER_MAX_TOKENS tokens).
    Prompts are tokenized by the server's /tokenize unless `tokenize` is
    given (a local tokenizer, see qgate.perf.tokenizer). Failures of single
    requests are recorded, never raised. `metric_names` are the serving engine's counter
    names (its class's `metrics`), recorded with every run for the metrics to read.
    `shaped` gives a scenario (by its expanded name) probes of its own: the same items at its
    prompt length (qgate/perf/shaped_probes.py). `salt`: the cache-salt scope of every
    request (qgate/perf/salts.py; None: unsalted).
    """
    out: list[ScenarioRun] = []
    token = SALT.set(salt)
    try:
        for s in (e for scenario in spec.scenarios for e in expand_inputs(scenario)):
            for name, level in levels(s):
                out.append(
                    await _run_one(
                        base_url,
                        model,
                        s,
                        name,
                        level,
                        role,
                        gpus,
                        headers,
                        (shaped or {}).get(s.name, probes or []),
                        {**DEFAULT_PROBE_PARAMS, **(probe_params or {})},
                        spec.probe_share,
                        progress,
                        timeout_s,
                        tokenize,
                    )
                )
                out[-1].metric_names = metric_names
    finally:
        SALT.reset(token)
    return out


async def _run_one(
    base_url: str,
    model: str,
    s: AnyScenario,
    name: str,
    level: int | None,
    role: Role,
    gpus: int,
    headers: dict[str, str] | None,
    probes: list[Probe],
    probe_params: dict[str, Any],
    probe_share: float,
    progress: bool,
    timeout_s: float,
    local_tokenize: Tokenize | None,
) -> ScenarioRun:
    width = level or (s.conversations if isinstance(s, MultiTurnScenario) else 256)
    root = root_url(base_url)
    async with make_session(width + 8, timeout_s) as session:

        async def tokenize(text: str) -> list[int]:
            try:
                got = await post_json(
                    session,
                    root + "/tokenize",
                    {"model": model, "prompt": text, "add_special_tokens": False},
                    headers,
                )
                return [int(t) for t in got["tokens"]]
            except (aiohttp.ClientError, TimeoutError, KeyError, TypeError, ValueError) as e:
                raise InfrastructureError(
                    f"POST {root}/tokenize failed ({type(e).__name__}: {str(e)[:120]}); "
                    "exact-length prompts need the served model's tokenizer: a server "
                    "with /tokenize (vLLM), or a local one (`qgate perf --tokenizer DIR`)"
                ) from e

        # The protocol-level client for plain http (lowest timing error, see rawhttp);
        # aiohttp for https.
        raw = RawClient(base_url, timeout_s) if base_url.startswith("http://") else None
        sender = Sender(session, base_url.rstrip("/"), headers, t0=0, raw=raw)
        warm = Sender(session, base_url.rstrip("/"), headers, t0=0, raw=raw)
        # the workers that keep the load up: the level, or the conversations in flight
        workers = level or (s.conversations if isinstance(s, MultiTurnScenario) else 1)
        points = probe_points(measured_count(s), len(probes), probe_share, workers)
        gap = max(1, round(1 / probe_share)) if points is None else 0
        probe_tasks: list[asyncio.Task[Any]] = []
        done = sent = 0
        before: dict[str, float] = {}

        with ScenarioProgress(f"{role} {name}", measured_count(s), progress, s.duration_s) as bar:
            # Runs on the event loop after every response: counting only (no parsing, no
            # drawing: the display redraws from its own timer).
            def on_done(ex: Exchange) -> None:
                if ex.spec.probe_id is not None or ex.spec.graded_turn is not None:
                    return
                nonlocal done, sent
                bar.advance(ex.failed)
                done += 1
                due = sum(1 for p in points if p <= done) if points is not None else done // gap
                while sent < due:
                    sp = probe_spec(probes[sent % len(probes)], model, probe_params, name, sent)
                    probe_tasks.append(asyncio.create_task(sender.run(sp, _now())))
                    sent += 1

            sender.on_done = on_done

            async def scrape_before() -> None:
                nonlocal before
                before = await scrape(base_url, headers)

            params = await _dispatch(
                s, level, model, local_tokenize or tokenize, sender, warm, scrape_before
            )
            if probe_tasks:
                await asyncio.gather(*probe_tasks)
        if raw is not None:
            await raw.close()
        after = await scrape(base_url, headers)

    # Parsed and checked only now that nothing is in flight.
    reqs = sender.records()
    work = [r for r in reqs if is_workload(r)] or reqs
    duration = max((r.done_ns for r in work), default=0) - min((r.sent_ns for r in work), default=0)
    run = ScenarioRun(
        scenario=name,
        role=role,
        kind=s.kind,
        params={
            "warmup": s.warmup,
            "requests": measured_count(s) if isinstance(s, MultiTurnScenario) else s.requests,
            "duration_s": s.duration_s,
            PARAM: series_bucket_s(s),
            **params,
        },
        gpus=gpus,
        duration_ns=max(duration, 0),
        requests=reqs,
        counters_before=before,
        counters_after=after,
        t0_unix_ns=sender.t0_unix_ns,
    )
    return run


async def _dispatch(
    s: AnyScenario,
    level: int | None,
    model: str,
    tokenize: Tokenize,
    sender: Sender,
    warm: Sender,
    mark: Mark,
) -> dict[str, Any]:
    if isinstance(s, FixedScenario):
        return await run_fixed(s, level or 1, model, tokenize, sender, warm, mark)
    if isinstance(s, MultiTurnScenario):
        return await run_multi_turn(s, model, tokenize, sender, warm, mark)
    return await run_trace(s, model, tokenize, sender, warm, mark)


def _now() -> int:
    return time.perf_counter_ns()
