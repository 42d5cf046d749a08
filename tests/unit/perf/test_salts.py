"""Cache salts: every request of a workload that shares no context apart, a multi-turn
scenario's conversations together, warm-ups and probes apart; nothing salted when off."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

from qgate.perf.loadgen import RequestSpec
from qgate.perf.runner import probe_spec
from qgate.perf.salts import SALT, life_salt, life_scope, salt_scope, salted
from qgate.perf.workloads import run_fixed, run_multi_turn
from qgate.profile import FixedScenario, MultiTurnScenario


class Capture:
    """A sender that answers every request at once with two tokens and keeps its body."""

    def __init__(self) -> None:
        self.t0 = 0
        self.specs: list[RequestSpec] = []

    def start(self) -> None:
        self.t0 = time.perf_counter_ns()

    async def run(self, spec: RequestSpec, at: int) -> Any:
        self.specs.append(spec)
        parsed = SimpleNamespace(token_ids=[7, 8], text="ab")
        return SimpleNamespace(error=lambda: None, parsed=lambda: parsed)


async def tokenize(text: str) -> list[int]:
    return [len(w) for w in text.split()]


async def mark() -> None:
    return None


def salts(specs: list[RequestSpec]) -> list[Any]:
    return [s.payload.get("cache_salt") for s in specs]


def run(go: Any, scope: str | None) -> tuple[Capture, Capture, dict[str, Any]]:
    sender, warm = Capture(), Capture()

    async def main() -> dict[str, Any]:
        token = SALT.set(scope)
        try:
            return dict(await go(sender, warm))
        finally:
            SALT.reset(token)

    return sender, warm, asyncio.run(main())


def test_a_fixed_workload_salts_every_request_and_warmup_apart() -> None:
    s = FixedScenario(
        name="f", input_tokens=8, output_tokens=2, concurrency=2, requests=6, warmup=2
    )
    scope = salt_scope("candidate", 1, 2)
    sender, warm, params = run(lambda snd, w: run_fixed(s, 2, "m", tokenize, snd, w, mark), scope)
    measured, warmups = salts(sender.specs), salts(warm.specs)
    assert len(set(measured)) == 6 and len(set(warmups)) == 2
    assert not set(measured) & set(warmups)
    assert all(x.startswith("qgate-candidate-r1-b2-") for x in measured + warmups)
    assert params["cache_salt"] == scope


def test_multi_turn_conversations_share_one_salt_and_warmups_have_their_own() -> None:
    s = MultiTurnScenario(
        name="agent",
        kind="multi_turn",
        conversations=2,
        turns=3,
        shared_prefix_tokens=16,
        turn_input_tokens=4,
        output_tokens=2,
        warmup=1,
    )
    sender, warm, params = run(
        lambda snd, w: run_multi_turn(s, "m", tokenize, snd, w, mark), salt_scope("reference", 0, 0)
    )
    assert len(sender.specs) == 6 and len(set(salts(sender.specs))) == 1
    assert salts(warm.specs)[0] not in salts(sender.specs)
    assert params["cache_salt"] == "qgate-reference-r0-b0"


def test_nothing_is_salted_when_the_side_cannot_salt() -> None:
    s = FixedScenario(name="f", input_tokens=8, output_tokens=2, requests=3, warmup=1)
    sender, warm, params = run(lambda snd, w: run_fixed(s, 1, "m", tokenize, snd, w, mark), None)
    assert salts(sender.specs + warm.specs) == [None] * 4
    assert "cache_salt" not in params


def test_probe_asks_are_salted_apart_and_scopes_carry_no_character_vllm_refuses() -> None:
    token = SALT.set(salt_scope("cand/a@b", 0, 1))
    try:
        a = probe_spec(("q1", "2+2=", "4"), "m", {}, "s@c2", 0)
        b = probe_spec(("q1", "2+2=", "4"), "m", {}, "s@c2", 1)
        body = salted({}, "x/y", "w0")
    finally:
        SALT.reset(token)
    assert a.payload["cache_salt"] != b.payload["cache_salt"]
    for salt in (a.payload["cache_salt"], body["cache_salt"]):
        assert not set("@/\\\x00") & set(salt) and len(salt) <= 128
    assert probe_spec(("q1", "2+2=", "4"), "m", {}).payload.get("cache_salt") is None


def test_life_scopes_part_every_side_life_round_purpose_and_moment() -> None:
    base = ("reference", 0, 0, "life", "start")
    scopes = {
        life_scope(*base),
        life_scope("candidate", 0, 0, "life", "start"),
        life_scope("reference", 1, 0, "life", "start"),
        life_scope("reference", 0, 1, "life", "start"),
        life_scope("reference", 0, 0, "trial:kv-cache", "start"),
        life_scope("reference", 0, 0, "life", "idle"),
    }
    assert len(scopes) == 6 and life_scope(*base) == "qgate-life-reference-l0-r0-start"
    assert life_salt(life_scope(*base), 0) != life_salt(life_scope(*base), 1)
    assert life_scope(*base) not in {salt_scope(r, 0, 0) for r in ("reference", "candidate")}
    odd = life_salt(life_scope("c/a@b" * 20, 12, 3, "trial:a/b@c" * 9, "idle"), 99)
    assert not set("@/\\\x00") & set(odd) and len(odd) <= 128
