"""The CPU demo with its speed in two rounds of fresh lives (examples/cpu/smollm2-cpu-rounds/).

`qgate run precision_profiles/smollm2-cpu-rounds.yaml` on a 2-core AMD EPYC (AVX-512, bf16,
no AMX), 2026-12-02, with other work on the machine: PASS 15/15, both sides side by side,
then both again in fresh lives with the candidate's blocks first (ABBA). Every ratio row
holds its two round ratios and the across-round interval, and its reported interval is at
least that interval's half-width wide on each side of its point (log scale). The key is
examples/cpu/signing-key.pub.pem (that machine's local development key).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from helpers.examples import predicate_of, verify_example

ROOT = Path(__file__).resolve().parents[3] / "examples" / "cpu"
RUN = ROOT / "smollm2-cpu-rounds"


def _report() -> dict[str, Any]:
    return predicate_of(RUN / "report.intoto.jsonl")


def test_the_run_verifies_against_its_profile() -> None:
    code, output = verify_example(RUN, ROOT / "signing-key.pub.pem")
    assert code == 0, output
    assert "3 perf scenarios recomputed" in output and "(verdict PASS)" in output


def test_both_sides_ran_two_rounds_in_fresh_lives() -> None:
    report = _report()
    assert report["plan"]["mode"] == "together" and report["plan"]["rounds"] == 2
    assert [s["side"] for s in report["starts"]] == ["reference", "candidate"] * 2
    held = {(r["role"], r["round"], r["block"]) for r in report["perf"]["runs"]}
    assert held == {
        (role, k, b) for role in ("reference", "candidate") for k in (0, 1) for b in (0, 1)
    }


def test_every_ratio_row_holds_its_round_ratios_and_the_across_round_interval() -> None:
    rows = [
        c
        for r in _report()["perf"]["results"]
        for c in r["comparisons"]
        if c["ratio"] is not None and c["ci_low"] is not None
    ]
    assert len(rows) >= 27  # 3 scenarios, 9 or more ratios each
    for c in rows:
        assert c["rounds"] == 2 and len(c["round_ratios"]) == 2, c["metric"]
        assert c["round_ci_low"] <= min(c["round_ratios"]) <= max(c["round_ratios"])
        assert c["round_ci_high"] >= max(c["round_ratios"])
        # the reported interval (around the pooled ratio) is at least the across-round
        # half-width wide on each side, on the log scale
        half = math.log(c["round_ci_high"] / c["round_ci_low"]) / 2
        assert math.log(c["ratio"] / c["ci_low"]) >= half - 1e-9
        assert math.log(c["ci_high"] / c["ratio"]) >= half - 1e-9
    view = (RUN / "report.md").read_text()
    assert "Speed design: rounds: 2 fresh lives per side, ABBA (side by side" in view
    assert "| Across rounds (95%) | Round ratios |" in view
