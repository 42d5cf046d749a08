"""An endpoint (a server qgate does not start) is probed like a started life: at qgate's first
contact and after the idle pause; a fault that fires only after idle FAILs it, labelled an
endpoint, and the report verifies (issue 41: the detection benchmark's `idle` class).

Stand-ins only: a server that answers the math set's questions right (streamed or not), and
the fault proxy (perf/faults/proxy.py) in front of it as each candidate: `idle:0.5` corrupts
every answer that follows half a second of quiet, `load:1000` never fires (A/A).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from click.testing import CliRunner
from helpers.mock_server import load_by_path

from qgate.cli.main import main
from qgate.profile import Profile
from qgate.quality.math_set import math_items
from qgate.run.envelope import envelope_lines
from qgate.run.life_probes import lives_note

ROOT = Path(__file__).resolve().parents[3]
PROFILE = """
name: endpoint-lives
model: {{path: {model}}}
target: {{accelerator: cpu}}
engine: {{kind: endpoint}}
reference:
  endpoint: {{base_url: '{oracle}'}}
candidates:
  aa: {{endpoint: {{base_url: '{aa}'}}}}
  idle: {{endpoint: {{base_url: '{idle}'}}}}
quality:
  math: {{prompts: [short], limit: 4}}
lives: {{probes: 2, idle_s: 1}}
envelope: {{max_broken: 0.6}}  # 4 answers a candidate: clean, they bound the rate at 52.7%
"""


proxy = load_by_path("proxy", ROOT / "perf" / "faults" / "proxy.py")


def _oracle(answers: dict[str, str]) -> web.Application:
    """A chat server that answers each math question right ('The answer is N.')."""

    def text_for(body: dict[str, Any]) -> str:
        said = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        return next((f"The answer is {a}." for q, a in answers.items() if q in said), "No idea.")

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "oracle"}]})

    async def chat(req: web.Request) -> web.StreamResponse:
        body = await req.json()
        text = text_for(body)
        words = text.split()
        usage = {
            "prompt_tokens": 9,
            "completion_tokens": len(words),
            "total_tokens": 9 + len(words),
        }
        if not body.get("stream"):
            choice = {"index": 0, "message": {"role": "assistant", "content": text}}
            return web.json_response(
                {"id": "o", "choices": [{**choice, "finish_reason": "stop"}], "usage": usage}
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(req)
        for i, word in enumerate(words):
            delta = {"content": (" " if i else "") + word}
            finish = "stop" if i == len(words) - 1 else None
            chunk = {"id": "o", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        last = {"id": "o", "choices": [], "usage": usage}
        await resp.write(b"data: " + json.dumps(last).encode() + b"\n\ndata: [DONE]\n\n")
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    return app


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The oracle and two fault proxies in front of it, on one event loop in a thread."""
    spec = Profile.model_validate(
        {
            "name": "x",
            "model": {"path": str(tmp_path)},
            "engine": {"kind": "endpoint"},
            "reference": {"endpoint": {"base_url": "http://x/v1"}},
            "candidate": {"endpoint": {"base_url": "http://x/v1"}},
            "quality": {"math": {"prompts": ["short"], "limit": 4}},
        }
    ).quality.math
    assert spec is not None
    answers = {i.question: str(i.answer) for i in math_items(spec)}
    loop = asyncio.new_event_loop()
    ports = {"oracle": _port(), "aa": _port(), "idle": _port()}
    faults = {
        "aa": proxy.Faults([proxy.Rule.parse("load:1000")]),
        "idle": proxy.Faults([proxy.Rule.parse("idle:0.5")]),
    }
    logs = {k: (tmp_path / f"{k}.jsonl").open("w") for k in faults}
    runners: list[web.AppRunner] = []
    up = f"http://127.0.0.1:{ports['oracle']}"
    apps = {"oracle": _oracle(answers)}
    apps |= {k: proxy.make_app(up, f, logs[k]) for k, f in faults.items()}

    async def start() -> None:
        for name, app in apps.items():
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", ports[name]).start()
            runners.append(runner)

    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield {k: f"http://127.0.0.1:{p}/v1" for k, p in ports.items()} | {"logs": tmp_path}
    finally:
        for runner in runners:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        for f in logs.values():
            f.close()


def _run(tmp_path: Path, urls: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    profile = tmp_path / "p.yaml"
    profile.write_text(PROFILE.format(model=tmp_path / "no-model", **urls))
    runner = CliRunner()
    keys = runner.invoke(main, ["keygen", "--out", str(tmp_path / "k")])
    assert keys.exit_code == 0, keys.output
    args = ["run", str(profile), "--skip-perf", "--no-progress", "--key", str(tmp_path / "k.pem")]
    args += ["--out", str(tmp_path / "runs"), "--cache-dir", str(tmp_path / "cache")]
    done = runner.invoke(main, args)
    assert done.exit_code == 1, done.output  # the idle candidate fails
    line = next(x for x in done.output.splitlines() if x.startswith("report: "))
    return Path(line.split(": ", 1)[1].strip())


def test_an_idle_fault_on_an_endpoint_fails_its_probes_labelled_an_endpoint_and_verifies(
    tmp_path: Path, servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _run(tmp_path, servers, monkeypatch)
    runner = CliRunner()
    shown = runner.invoke(main, ["-q", "show", str(report), "--format", "json"])
    assert shown.exit_code == 0, shown.output
    multi = json.loads(shown.stdout)
    reports = {c["name"]: c["report"] for c in multi["candidates"]}
    assert reports["aa"]["verdict"] == "PASS" and reports["idle"]["verdict"] == "FAIL"
    # the quality gates pass the idle candidate: its life probes alone fail it
    assert all(v["passed"] for v in reports["idle"]["quality"]["verdicts"])
    lives = reports["idle"]["lives"]
    assert {(p["side"], p["kind"], p["endpoint"]) for p in lives["records"]} == {
        (side, kind, True) for side in ("reference", "idle") for kind in ("start", "idle")
    }
    failed = {v["gate"]: v["reason"] for v in lives["verdicts"] if not v["passed"]}
    idle_gate = next(g for g in failed if g.endswith(".idle"))
    reason = failed[idle_gate]
    assert reason.startswith("idle endpoint (round 1; already running, not started by qgate)")
    assert "after 1 s idle: lost" in reason
    start = [v for v in lives["verdicts"] if v["gate"].endswith(".start")]
    assert "at first contact" in start[0]["reason"]  # the proxy was quiet before it, too
    assert all(v["passed"] for v in reports["aa"]["lives"]["verdicts"])  # no wolf cried
    idle_log = [json.loads(x) for x in (servers["logs"] / "idle.jsonl").read_text().splitlines()]
    assert any(e["corrupted"].startswith("idle") for e in idle_log)
    md = (report.parent / "report.md").read_text()
    assert "at qgate's first contact with it and after the idle pause" in md
    assert (
        "| idle endpoint (round 1; already running, not started by qgate) | first contact |" in md
    )
    verified = runner.invoke(main, ["verify", str(report), "--pubkey", str(tmp_path / "k.pub.pem")])
    assert verified.exit_code == 0, verified.output


def test_the_plan_says_endpoints_are_probed_at_first_contact(tmp_path: Path) -> None:
    both = Profile.model_validate(
        {
            "name": "x",
            "model": {"path": str(tmp_path)},
            "engine": {"kind": "endpoint"},
            "reference": {"endpoint": {"base_url": "http://x/v1"}},
            "candidate": {"endpoint": {"base_url": "http://y/v1"}},
            "quality": {"math": {"prompts": ["short"], "limit": 4}},
            "lives": {"probes": 2, "idle_s": 35},
        }
    )
    note = lives_note(both, 2, together=False)
    assert note is not None
    assert note.startswith("lives: every side, though both are endpoints qgate does not start")
    assert "its start is qgate's first contact" in note
    graded = next(x for x in envelope_lines(both, [], [], 1, 1) if x.startswith("lives graded"))
    assert graded.endswith(
        "; both sides are endpoints qgate does not start, graded as found: 2 life probe(s) at "
        "qgate's first contact and after a 35 s idle pause"
    )
    off = both.model_copy(update={"lives": both.lives.model_copy(update={"probes": 0})})
    assert not any("endpoint" in x for x in envelope_lines(off, [], [], 1, 1))
