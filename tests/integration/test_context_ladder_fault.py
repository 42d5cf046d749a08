"""A candidate wrong only past a prompt length: the context ladder FAILs the buckets past it,
names the first as the cliff, and the shorter buckets pass (issue 44 item 3, third done-when).

No server of its own: the candidate is the session's `reference_server` seen through the
fault proxy (conftest.py's `fault_proxy`, `length:256`: every answer to a prompt of more than
256 tokens, counted by the server's /tokenize, has its digits and letters rotated), and the
reference is the same server seen directly; both are `endpoint` sides of one `qgate run`, so
the run starts nothing. The ladder climbs from 128 to 512: buckets 128 [91, 181] (wholly
below the fault's length), 256 [182, 361] (the length lies inside it, items on both sides)
and 512 [362, 512]. Short haystacks keep it quick (CI time: half the prompt tokens of a ladder
from 256 to 1,024, which took 173 s in CI on the AVX2-only kind) and SmolLM2 recalls more codes
there, so a corrupted answer is more likely to be one the reference had right.

A bucket's gate is max_flips 0 without the significance test, so it fails exactly when the
reference answered right an item the proxy corrupted (or noise flipped one): the test reads
that from the records and the fault log rather than assuming SmolLM2's recall rate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from qgate.quality.ladder_divergence import bucket_divergence
from qgate.quality.records import SuiteRun

pytestmark = pytest.mark.integration

LENGTH = 256

BODY = """
quality:
  concurrency: 4
  context_ladder: {start: 128, up_to: 512, per_bucket: 6, depths: [0.9], max_flips: 0,
                   significance: false}
"""


@pytest.fixture(scope="module")
def ladder(fault_proxy: Callable[[str], Any], endpoint_run: Callable[..., Any]) -> Any:
    proxy = fault_proxy(f"length:{LENGTH}")
    run = endpoint_run("ladder-fault", proxy.url, BODY)
    assert "recall items (context ladder included)" in run.verified
    return proxy, run


def test_the_buckets_past_the_length_fail_and_the_first_is_named(ladder: Any) -> None:
    proxy, run = ladder
    done, pred = run.done, run.predicate
    runs = {(r["suite"], r["role"]): r for r in pred["quality"]["runs"]}
    verdicts = {v["suite"]: v for v in pred["quality"]["verdicts"]}
    assert sorted(verdicts, key=lambda s: int(s.split(".")[1])) == [
        "context.128",
        "context.256",
        "context.512",
    ]
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
    # divergence per bucket from the answers' top-k logprobs (top_k 20 by default)
    div = {
        s: bucket_divergence(
            SuiteRun.model_validate(runs[(s, "reference")]),
            SuiteRun.model_validate(runs[(s, "candidate")]),
            20,
        )
        for s in verdicts
    }
    print(  # noqa: T201  (the figures the test measured, for the record)
        f"ladder wall per bucket (both sides) {seconds}; qgate run {run.wall_s:.0f} s; "
        f"right (reference, candidate) {acc}; "
        f"passed { ({s: v['passed'] for s, v in verdicts.items()}) }; divergence "
        + str(
            {
                s: (d.positions, d.items, d.mean_kld, d.max_kld, d.top1_agreement)
                for s, d in div.items()
            }
        )
    )
    # the same server on both sides and a text fault: every item compares at least its first
    # position, and the distributions stay within the CPU's own noise (not the fault's doing)
    for s, d in div.items():
        assert d.items == len(runs[(s, "reference")]["items"]) and d.positions >= d.items, (s, d)
        assert d.mean_kld is not None and d.mean_kld < 0.05, (s, d)
    # the proxy corrupted only prompts past the length, and only the candidate's
    log = proxy.entries()
    corrupted = [e for e in log if e["corrupted"]]
    assert corrupted and all(e["prompt_tokens"] > LENGTH for e in corrupted)
    assert all(e["prompt_tokens"] <= LENGTH for e in log if not e["corrupted"])
    # the shortest bucket lies wholly below the length: nothing corrupted there, it passes
    assert verdicts["context.128"]["passed"], verdicts["context.128"]
    assert runs[("context.128", "reference")]["params"]["haystack_tokens_max"] < LENGTH
    # every bucket holding corrupted answers to items the reference got right fails
    expected_fail = {}
    for suite in verdicts:
        ref = {i["id"]: i["correct"] for i in runs[(suite, "reference")]["items"]}
        cand = {i["id"]: i["correct"] for i in runs[(suite, "candidate")]["items"]}
        lost = [k for k, ok in ref.items() if ok and not cand[k]]
        expected_fail[suite] = bool(lost)
        assert (not verdicts[suite]["passed"]) == bool(lost), (suite, verdicts[suite])
    failing = sorted(int(s.split(".")[1]) for s, f in expected_fail.items() if f)
    assert failing, "the reference recalled no code past the length: nothing to lose"
    assert failing[0] >= LENGTH  # the cliff lies in a bucket that reaches past the length
    assert done.returncode == 1 and pred["verdict"] == "FAIL"
    md = (run.report.parent / "report.md").read_text()
    assert f"CLIFF: the candidate first departs from the reference at context.{failing[0]} " in md
    assert "## Context-length ladder" in md
    assert "| Mean KL | Max KL | Top-1 agree | Positions |" in md
    assert f"cliff: the candidate first departs from the reference at context.{failing[0]} " in (
        done.stdout
    )
