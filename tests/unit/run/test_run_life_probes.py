"""Asking a life's probes: which items, when (at its start; after its work and an idle pause,
never after a failure), what is recorded, and what the plan says it costs."""

from __future__ import annotations

import importlib.util
import json
import tempfile
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from qgate.core.serving import EffectiveConfig
from qgate.core.verdict import Verdict
from qgate.perf.client import run_loop
from qgate.perf.life_probes import LifeProbes, probe_salt
from qgate.perf.loadgen import RequestSpec
from qgate.perf.probes import Probe, graded
from qgate.perf.records import RequestRecord
from qgate.perf.salts import life_scope
from qgate.profile import LivesSpec
from qgate.profile.load import load_profile_file
from qgate.quality.math_set import math_items
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.stage import QualityOutput
from qgate.run import life_probes, together
from qgate.run.candidate import CandidateResult, settled_fail
from qgate.run.context import started
from qgate.run.life_probes import LifeProbing, lives_note, math_probes
from qgate.run.plan import describe, make_plan

DEMO = Path(__file__).resolve().parents[3] / "precision_profiles" / "smollm2-cpu-int8.yaml"
PROFILE = load_profile_file(DEMO).profile.model_copy(update={"lives": LivesSpec()})  # defaults
MOCK = Path(__file__).resolve().parents[2] / "mockserver" / "mock_openai.py"


def _reference(right: set[int]) -> QualityOutput:
    assert PROFILE.quality.math is not None
    items = math_items(PROFILE.quality.math)[:8]
    return QualityOutput(
        role="reference",
        runs=[
            SuiteRun(
                suite="math.short",
                role="reference",
                data_sha256="",
                items=[
                    ItemRecord(
                        id=it.id,
                        prompt_sha256="",
                        output="",
                        answer=str(it.answer),
                        expected=str(it.answer),
                        correct=k in right,
                        output_tokens=None,
                    )
                    for k, it in enumerate(items)
                ],
            )
        ],
    )


def test_the_items_are_the_reference_right_ones_once_known_else_the_first() -> None:
    assert PROFILE.quality.math is not None
    ids = [i.id for i in math_items(PROFILE.quality.math)]
    assert [p.id for p in math_probes(PROFILE, None, None, 3)] == ids[:3]
    picked = math_probes(PROFILE, None, _reference({1, 4, 6}), 4)
    assert [p.id for p in picked] == [ids[1], ids[4], ids[6], ids[0]]  # then the others
    assert picked[0].truth == str(math_items(PROFILE.quality.math)[1].answer)
    assert math_probes(PROFILE, None, None, 0) == []


class _Runtime:
    role = "candidate"
    base_url = "http://127.0.0.1:9/v1"
    served_model = "m"
    node_name = "10.0.0.7 (ffffffffffff)"  # the Runtime protocol's member: a placed life

    def headers(self) -> dict[str, str]:  # the Runtime protocol's member: none here
        return {}

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def __enter__(self) -> _Runtime:
        self.events.append("ready")
        return self

    def __exit__(self, *exc: object) -> None:
        self.events.append("stopped")

    def effective_config(self) -> EffectiveConfig:
        return EffectiveConfig(role="candidate", kind="stand-in", base_url="-", served_model="m")

    def paused(self) -> AbstractContextManager[None]:  # the Runtime protocol's member
        return nullcontext()


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The order of what happens to a life; asking is recorded, sleeping takes no time."""
    out: list[str] = []

    async def ask(base_url: str, model: str, probes: list[Any], *a: Any) -> list[RequestRecord]:
        out.append(f"ask {len(probes)}")
        return [
            RequestRecord(
                index=k,
                probe_id=p.id,
                scheduled_ns=0,
                sent_ns=0,
                first_token_ns=1,
                done_ns=2,
                text=f"The answer is {p.truth}.",
                probe_truth=p.truth,
            )
            for k, p in enumerate(probes)
        ]

    monkeypatch.setattr(life_probes, "ask", ask)
    monkeypatch.setattr(life_probes.time, "sleep", lambda s: out.append(f"sleep {s:g}"))
    return out


def _ctx(events: list[str], lives: LivesSpec) -> Any:
    profile = PROFILE.model_copy(update={"lives": lives})
    return SimpleNamespace(
        profile=profile,
        side="int8",
        round=1,
        starts=[],
        probing=LifeProbing(),
        new_runtime=lambda role: _Runtime(events),
        run_dir=Path(tempfile.mkdtemp(prefix="qgate-lives-")),
    )


def test_a_life_is_probed_at_its_start_and_after_its_work_and_pause(events: list[str]) -> None:
    ctx = _ctx(events, LivesSpec(probes=3, idle_s=30))
    with started(ctx, "candidate"):
        events.append("work")
    assert events == ["ready", "ask 3", "work", "sleep 30", "ask 3", "stopped"]
    start, idle = ctx.probing.records
    assert (start.side, start.kind, start.round, start.life) == ("int8", "start", 1, 0)
    assert idle.kind == "idle" and start.node == "10.0.0.7 (ffffffffffff)"
    assert [r.probe_id for r in idle.requests] == [r.probe_id for r in start.requests]
    saved = json.loads((ctx.run_dir / "raw" / "life-probes.json").read_text())
    assert [p["kind"] for p in saved] == ["start", "idle"]  # on disk as soon as asked
    # each probe set salted apart: it reads no KV its quality stage or start probes wrote
    assert start.cache_salt == life_scope("int8", 0, 1, "life", "start")
    assert idle.cache_salt == life_scope("int8", 0, 1, "life", "idle")


def test_a_failed_life_and_a_preflight_ask_no_idle_probes(events: list[str]) -> None:
    ctx = _ctx(events, LivesSpec(probes=2, idle_s=30))
    with pytest.raises(RuntimeError), started(ctx, "candidate"):
        raise RuntimeError("the work failed")
    assert events == ["ready", "ask 2", "stopped"]
    events.clear()
    with started(ctx, "candidate", purpose="preflight"):
        pass
    assert events == ["ready", "stopped"]


def test_idle_0_asks_only_at_the_start_and_probes_0_nothing(events: list[str]) -> None:
    with started(_ctx(events, LivesSpec(probes=2, idle_s=0)), "candidate"):
        pass
    assert events == ["ready", "ask 2", "stopped"]
    events.clear()
    with started(_ctx(events, LivesSpec(probes=0)), "candidate"):
        pass
    assert events == ["ready", "stopped"]


def test_the_plan_states_the_probes_and_their_idle_cost() -> None:
    plan = make_plan(
        [("candidate", PROFILE)], reference_cached=False, placement="", side_by_side=("a", "b")
    )
    line = next(x for x in describe(plan) if "note: lives:" in x)
    assert "every life asks 4 math probe(s) one at a time at its start" in line
    assert "50 s idle then the same 4 again (side by side, the second side of a block" in line
    assert "for the 2 lives planned at most ~50 s of idle in all (1 pause(s)" in line
    assert "less the other side's last perf block, which each side's pause overlaps" in line
    seq = make_plan([("candidate", PROFILE)], reference_cached=False, placement="")
    assert "at most ~100 s of idle in all (2 pause(s), one per life)" in " ".join(describe(seq))
    off = PROFILE.model_copy(update={"lives": LivesSpec(probes=0)})
    assert lives_note(off, 2, together=True) is None


def test_lives_side_by_side_pause_once_and_are_asked_at_once(events: list[str]) -> None:
    ctx = _ctx(events, LivesSpec(probes=2, idle_s=30))
    both = [
        (ctx.profile, _Runtime(events), "reference", "reference", 0, 0, "life"),
        (ctx.profile, _Runtime(events), "candidate", "int8", 1, 0, "life"),
    ]
    ctx.probing.at_start_of(both)
    ctx.probing.at_end_of(both)
    assert events == ["ask 2", "ask 2", "sleep 30", "ask 2", "ask 2"]
    got = sorted((p.side, p.kind) for p in ctx.probing.records)
    assert got == [
        ("int8", "idle"),
        ("int8", "start"),
        ("reference", "idle"),
        ("reference", "start"),
    ]


def test_ask_sends_the_probes_one_after_another_and_records_their_text() -> None:
    spec = importlib.util.spec_from_file_location("mock_openai", MOCK)
    assert spec is not None and spec.loader is not None
    mock = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mock)
    probes = [
        Probe("a", [{"role": "user", "content": "6 + 6?"}], None, "12"),
        Probe("b", [{"role": "user", "content": "3 + 4?"}], None, "7"),
    ]
    params = {"temperature": 0.0, "max_tokens": 8, "mock": {"text": "The answer is 12 ."}}
    with mock.running(ttft_ms=5.0, itl_ms=1.0) as url:
        got = run_loop(life_probes.ask(url, "m", probes, params, None, 30.0))
    assert [r.probe_id for r in got] == ["a", "b"]
    assert [graded(r) for r in got] == [True, False]
    assert got[0].text is not None and "12" in got[0].text and got[1].probe_answer == "12"
    assert got[1].sent_ns >= got[0].done_ns  # the second only once the first is answered


class _Capture:
    """A sender that keeps each request it is given and answers none."""

    specs: list[RequestSpec] = []

    def __init__(self, *a: Any, **k: Any) -> None:
        self.t0 = 0

    def start(self) -> None:
        return None

    async def run(self, spec: RequestSpec, at: int) -> None:
        _Capture.specs.append(spec)

    def records(self) -> list[RequestRecord]:
        return []


def test_ask_salts_each_probe_apart_within_its_sets_scope(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(life_probes, "Sender", _Capture)
    monkeypatch.setattr(_Capture, "specs", [])
    probes = math_probes(PROFILE, None, None, 3)
    scope = life_scope("reference", 2, 1, "life", "idle")
    run_loop(life_probes.ask("https://127.0.0.1:9/v1", "m", probes, {}, None, 5.0, scope))
    run_loop(life_probes.ask("https://127.0.0.1:9/v1", "m", probes[:1], {}, None, 5.0))
    got = [s.payload.get("cache_salt") for s in _Capture.specs]
    assert got == [f"{scope}-p0", f"{scope}-p1", f"{scope}-p2", None]


def test_a_side_whose_engine_serves_no_cache_salt_is_not_salted() -> None:
    assert probe_salt(PROFILE, "candidate", "int8", 0, 0, "life", "start") is not None
    sglang = PROFILE.model_copy(
        update={"engine": PROFILE.engine.model_copy(update={"kind": "sglang"})}
    )
    assert probe_salt(sglang, "candidate", "int8", 0, 0, "life", "start") is None


def test_items_the_reference_lives_answered_right_are_asked_first(events: list[str]) -> None:
    ctx = _ctx(events, LivesSpec(probes=3, idle_s=0))
    probes = math_probes(ctx.profile, None, None, 3)
    ids = [p.id for p in probes]

    def rec(item: str, right: bool) -> RequestRecord:
        truth = next(p.truth for p in probes if p.id == item)
        text = f"The answer is {truth if right else '999'}."
        return RequestRecord(
            index=0,
            probe_id=item,
            scheduled_ns=0,
            sent_ns=0,
            first_token_ns=1,
            done_ns=2,
            text=text,
            probe_truth=truth,
        )

    ctx.probing.records.append(
        LifeProbes(
            side="reference",
            role="reference",
            life=0,
            kind="start",
            idle_s=0,
            requests=[rec(ids[0], False), rec(ids[2], True)],
        )
    )
    order = [p.id for p in ctx.probing._steady_first(probes)]
    # right in the reference's own life first, unknown next, its own miss last
    assert order == [ids[2], ids[1], ids[0]]


def test_an_item_the_side_lost_in_its_quality_stage_is_asked_last(events: list[str]) -> None:
    ctx = _ctx(events, LivesSpec(probes=3, idle_s=0))
    probes = math_probes(ctx.profile, None, None, 3)
    ids = [p.id for p in probes]
    ref = _reference({1, 2})
    ctx.probing.quality_known("int8", ref.model_copy(update={"role": "candidate"}))
    assert [p.id for p in ctx.probing._steady_first(probes, "int8")] == [ids[1], ids[2], ids[0]]


def test_side_by_side_the_pause_overlaps_the_other_sides_last_perf_block(
    events: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Perf blocks of 30 s and a 50 s pause: the candidate (second in the block pair) is
    asked its idle probes before its last block, after the reference's block and 20 s more;
    the reference's own pause runs on through them and the candidate's block, so its end
    sleeps nothing: 20 s of the run are spent pausing, not 50."""
    clock = [1000.0]
    monkeypatch.setattr(life_probes.time, "monotonic", lambda: clock[0])

    def sleep(s: float) -> None:
        events.append(f"sleep {s:g}")
        clock[0] += s

    monkeypatch.setattr(life_probes.time, "sleep", sleep)

    def perf_on(side: Any, runtime: Any, role: str, *a: Any, **k: Any) -> list[Any]:
        events.append(f"perf {role}")
        clock[0] += 30
        return []

    monkeypatch.setattr(together, "perf_on", perf_on)
    monkeypatch.setattr(together, "save_raw", lambda *a: None)
    ctx = _ctx(events, LivesSpec(probes=2, idle_s=50))
    ctx.round = 0  # the reference's block first
    ref_rt, cand_rt = _Runtime(events), _Runtime(events)
    both = [
        (ctx.profile, ref_rt, "reference", "reference", 0, 0, "life"),
        (ctx.profile, cand_rt, "candidate", "int8", 1, 0, "life"),
    ]
    ctx.probing.at_start_of(both)
    events.clear()
    quality = QualityOutput(role="reference")
    together.interleaved(ctx, ctx, ref_rt, cand_rt, quality, quality, blocks=2)
    ctx.probing.at_end_of(both)  # the lives' end: only the reference's probes are left
    assert events == [
        "perf reference",
        "perf candidate",
        "perf reference",
        "sleep 20",  # 30 s of the reference's block, 20 more: 50 s quiet
        "ask 2",  # the candidate's idle probes, the first requests after its pause
        "perf candidate",
        "ask 2",  # the reference: quiet 50 s since its last block, no sleep of its own
    ]
    idle = {p.side: p.idle_s for p in ctx.probing.records if p.kind == "idle"}
    assert idle == {"int8": 50.0, "reference": 50.0}


def test_a_life_never_marked_at_work_pauses_the_whole_idle_s(events: list[str]) -> None:
    ctx = _ctx(events, LivesSpec(probes=1, idle_s=50))
    life = (ctx.profile, _Runtime(events), "candidate", "int8", 0, 0, "life")
    ctx.probing.at_start_of([life])
    ctx.probing.at_end_of([life])
    ctx.probing.at_end_of([life])  # asked once only
    assert events == ["ask 1", "sleep 50", "ask 1"]


def test_a_fail_settled_under_stop_verdict_ends_its_lives_without_the_idle_pause(
    events: list[str],
) -> None:
    ctx = _ctx(events, LivesSpec(probes=2, idle_s=30))
    with started(ctx, "candidate") as runtime:
        ctx.probing.settled(runtime)
    assert events == ["ready", "ask 2", "stopped"]
    failed = Verdict(
        gate="math.short.max_drop",
        suite="math.short",
        observed=0.3,
        limit=0.15,
        passed=False,
        reason="dropped",
    )
    out = CandidateResult(name="c", verdicts=[failed])
    stop = PROFILE.quality.model_copy(update={"stop": "verdict"})
    assert settled_fail(SimpleNamespace(profile=PROFILE.model_copy(update={"quality": stop})), out)
    off = PROFILE.quality.model_copy(update={"stop": "off"})
    assert not settled_fail(
        SimpleNamespace(profile=PROFILE.model_copy(update={"quality": off})), out
    )
    passed = CandidateResult(name="c", verdicts=[failed.model_copy(update={"passed": True})])
    assert not settled_fail(
        SimpleNamespace(profile=PROFILE.model_copy(update={"quality": stop})), passed
    )
