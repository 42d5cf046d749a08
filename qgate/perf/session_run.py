"""Graded sessions asked among a multi-turn scenario's load (qgate/perf/sessions.py).

    await asyncio.gather(*workers, *(graded_session(s, model, sender, k) for k in ...))

Each graded session runs beside the scenario's conversations, on the same sender, so its
turns are recorded with the workload's (marked `graded_turn`, left out of the figures).
"""

from __future__ import annotations

import asyncio
import time

from qgate.perf.loadgen import RequestSpec, Sender
from qgate.perf.salts import salted
from qgate.perf.sessions import SYSTEM, TURN_MAX_TOKENS, session_turns
from qgate.profile import MultiTurnScenario

__all__ = ["graded_session"]


async def graded_session(s: MultiTurnScenario, model: str, sender: Sender, k: int) -> None:
    """Graded session `k` of `s` (qgate/perf/sessions.py), turn after turn among the load.

    A chat whose messages grow by each turn and its reply (the server's prefix cache serves
    the history again), greedy, with the scenario's think time between turns. A failed turn
    is recorded (and graded wrong) and the session goes on with an empty reply, so every
    session asks all its turns and verify can count them.
    """
    assert s.graded is not None
    history: list[dict[str, str]] = [{"role": "system", "content": SYSTEM}]
    for turn in session_turns(s.graded.seed, k, s.graded.turns):
        history.append({"role": "user", "content": turn.message})
        payload = {
            "model": model,
            "messages": list(history),
            "temperature": 0.0,
            "seed": 0,
            "max_tokens": TURN_MAX_TOKENS,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        salted(payload, s.name, f"g{k}")
        spec = RequestSpec(
            "/chat/completions",
            payload,
            turn=turn.index,
            concurrency=s.conversations,
            probe_truth=turn.truth,
            graded_turn=turn.id,
        )
        ex = await sender.run(spec, time.perf_counter_ns())
        reply = "" if ex.error() is not None else ex.parsed().text
        history.append({"role": "assistant", "content": reply})
        if s.think_time_s:
            await asyncio.sleep(s.think_time_s)
