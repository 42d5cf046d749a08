"""Perf records for tests: a scenario run of requests with given TTFTs and a steady ITL."""

from __future__ import annotations

from qgate.perf.records import RequestRecord, ScenarioRun

MS = 1_000_000


def run_of(ttfts: list[float], itl: float, n: int = 8) -> ScenarioRun:
    reqs = []
    for i, t in enumerate(ttfts):
        times = [int((t + k * itl) * MS) for k in range(n)]
        reqs.append(
            RequestRecord(
                index=i,
                scheduled_ns=0,
                sent_ns=0,
                first_token_ns=times[0],
                done_ns=times[-1],
                token_times_ns=times,
                prompt_tokens=4,
                output_tokens=n,
            )
        )
    return ScenarioRun(
        scenario="s",
        role="reference",
        kind="fixed",
        gpus=1,
        duration_ns=10_000 * MS,
        requests=reqs,
    )
