"""A candidate wrong only past a prompt length: the context ladder FAILs the buckets past it,
names the first as the cliff, and the shorter buckets pass (issue 44 item 3, third done-when).

No server of its own: the candidate is the session's `reference_server` seen through the
fault proxy (perf/faults/proxy.py, `length:2048`: every answer to a prompt of more than 2,048
tokens, counted by the server's /tokenize, has its digits and letters rotated), and the
reference is the same server seen directly; both are `endpoint` sides of one `qgate run`, so
the run starts nothing. The server's max_model_len is 4,096, so the ladder climbs to 4,096:
buckets 1024 [724, 1447], 2048 [1448, 2895] (the fault's length lies inside it) and 4096
[2896, 3936: clipped to max_model_len less the answer budget and the question].

A bucket's gate is max_flips 0 without the significance test, so it fails exactly when the
reference answered right an item the proxy corrupted (or noise flipped one): the test reads
that from the records and the fault log rather than assuming SmolLM2's recall rate.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
QGATE = [sys.executable, "-m", "qgate.cli"]
LENGTH = 2048

PROXY = """
import asyncio, sys
sys.path.insert(0, {faults!r})
from proxy import Faults, Rule, serve
log = open({log!r}, "a", buffering=1)
asyncio.run(serve("127.0.0.1", {port}, {upstream!r}, Faults([Rule.parse("length:{length}")]), log))
"""

PROFILE = """
name: it-context-ladder-fault
model: {{embedded: smollm2}}
target: {{accelerator: cpu}}
engine: {{kind: endpoint}}
reference:
  endpoint: {{base_url: '{reference}'}}
candidate:
  endpoint: {{base_url: '{candidate}'}}
quality:
  concurrency: 4
  context_ladder: {{up_to: 4096, per_bucket: 6, depths: [0.9], max_flips: 0, significance: false}}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def proxy(
    reference_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """The fault proxy in front of the session's server: (its /v1 URL, its request log)."""
    work = tmp_path_factory.mktemp("ladder-proxy")
    log = work / "fault.jsonl"
    port = _free_port()
    upstream = reference_server.base_url.removesuffix("/v1")
    code = PROXY.format(
        faults=str(ROOT / "perf" / "faults"),
        log=str(log),
        port=port,
        upstream=upstream,
        length=LENGTH,
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/models", timeout=2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield url, log
    finally:
        proc.terminate()
        proc.wait(10)


def _statement(path: Path) -> dict[str, Any]:
    envelope = json.loads(path.read_text().splitlines()[0])
    payload: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return payload["predicate"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def ladder_run(
    reference_server: Any, proxy: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[subprocess.CompletedProcess[str], Path, float]:
    work = tmp_path_factory.mktemp("ladder-fault")
    profile = work / "ladder-fault.yaml"
    profile.write_text(PROFILE.format(reference=reference_server.base_url, candidate=proxy[0]))
    env = dict(os.environ, XDG_CONFIG_HOME=str(work / "config"))
    env.pop("GITHUB_STEP_SUMMARY", None)
    done = subprocess.run(
        [*QGATE, "keygen", "--out", str(work / "k")], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    args = ["--out", str(work / "runs"), "--key", str(work / "k.pem"), "--no-progress"]
    start = time.perf_counter()
    done = subprocess.run(
        [*QGATE, "run", str(profile), *args, "--cache-dir", str(work / "cache")],
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    wall = time.perf_counter() - start
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("report: ")), None)
    assert line is not None, done.stdout + done.stderr
    report = Path(line.split(": ", 1)[1].strip())
    verified = subprocess.run(
        [*QGATE, "verify", str(report), "--pubkey", str(work / "k.pub.pem")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "recall items (context ladder included)" in verified.stdout
    return done, report, wall


def test_the_buckets_past_the_length_fail_and_the_first_is_named(
    ladder_run: tuple[subprocess.CompletedProcess[str], Path, float], proxy: tuple[str, Path]
) -> None:
    done, report, wall = ladder_run
    pred = _statement(report)
    runs = {(r["suite"], r["role"]): r for r in pred["quality"]["runs"]}
    verdicts = {v["suite"]: v for v in pred["quality"]["verdicts"]}
    assert sorted(verdicts) == ["context.1024", "context.2048", "context.4096"]
    seconds = {
        s: round(runs[(s, "reference")]["wall_s"] + runs[(s, "candidate")]["wall_s"], 1)
        for s in verdicts
    }
    acc = {
        s: tuple(
            f"{sum(i['correct'] for i in runs[(s, r)]['items'])}/{len(runs[(s, r)]['items'])}"
            for r in ("reference", "candidate")
        )
        for s in verdicts
    }
    print(  # noqa: T201  (the figures the test measured, for the record)
        f"ladder wall per bucket (both sides) {seconds}; qgate run {wall:.0f} s; "
        f"right (reference, candidate) {acc}; "
        f"passed { ({s: v['passed'] for s, v in verdicts.items()}) }"
    )
    # the proxy corrupted only prompts past the length, and only the candidate's
    log = [json.loads(x) for x in proxy[1].read_text().splitlines()]
    corrupted = [e for e in log if e["corrupted"]]
    assert corrupted and all(e["prompt_tokens"] > LENGTH for e in corrupted)
    assert all(e["prompt_tokens"] <= LENGTH for e in log if not e["corrupted"])
    # the shortest bucket lies wholly below the length: nothing corrupted there, it passes
    assert verdicts["context.1024"]["passed"], verdicts["context.1024"]
    assert runs[("context.1024", "reference")]["params"]["haystack_tokens_max"] < LENGTH
    # every bucket holding corrupted answers to items the reference got right fails
    expected_fail = {}
    for suite in verdicts:
        ref = {i["id"]: i["correct"] for i in runs[(suite, "reference")]["items"]}
        cand = {i["id"]: i["correct"] for i in runs[(suite, "candidate")]["items"]}
        lost = [k for k, ok in ref.items() if ok and not cand[k]]
        expected_fail[suite] = bool(lost)
        assert (not verdicts[suite]["passed"]) == bool(lost), (suite, verdicts[suite])
    failing = sorted((int(s.split(".")[1]) for s, f in expected_fail.items() if f))
    assert failing, "the reference recalled no code past the length: nothing to lose"
    assert failing[0] >= 2048  # the cliff lies in a bucket that reaches past the length
    assert done.returncode == 1 and pred["verdict"] == "FAIL"
    md = (report.parent / "report.md").read_text()
    assert f"CLIFF: the candidate first departs from the reference at context.{failing[0]} " in md
    assert "## Context-length ladder" in md
    assert f"cliff: the candidate first departs from the reference at context.{failing[0]} " in (
        done.stdout
    )
