"""The CPU demo with its speed in two rounds of fresh lives (examples/cpu/smollm2-cpu-rounds/).

`qgate run precision_profiles/smollm2-cpu-rounds.yaml` on a 2-core AMD EPYC (AVX-512, bf16,
no AMX), 2026-12-03, with other work on the machine, at perf derivation 7: both sides side by
side, then both again in fresh lives with the candidate's blocks first (ABBA). Each round is
the unit: every ratio row holds its two round ratios, its ratio is their geometric mean and
its interval Student's t over them (t(0.975, 1) = 12.7: two rounds bound nothing, so the
profile has no speed gates), never narrower than the noise within one life. The key is
examples/cpu/signing-key-2026-12-03.pub.pem (made for this run; the first run of this
example, perf derivation 6, commit 3acf0d1, was signed by another key).
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
    code, output = verify_example(RUN, ROOT / "signing-key-2026-12-03.pub.pem")
    assert code == 0, output
    assert "3 perf scenarios recomputed" in output and "(verdict PASS)" in output
    assert "derivations quality 3, perf 7 applied" in output


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
        logs = [math.log(r) for r in c["round_ratios"]]
        centre = sum(logs) / 2
        # the ratio is the round ratios' geometric mean, the centre of its own interval
        assert math.isclose(c["ratio"], math.exp(centre), rel_tol=1e-9), c["metric"]
        half = 12.706204736 * abs(logs[0] - logs[1]) / 2  # t(0.975, 1) * s / sqrt(2)
        assert math.isclose(c["round_ci_low"], math.exp(centre - half), rel_tol=1e-9)
        assert math.isclose(c["round_ci_high"], math.exp(centre + half), rel_tol=1e-9)
        # the reported interval is the across-round one, or the within-life noise where wider
        assert c["ci_low"] <= c["round_ci_low"] * (1 + 1e-12)
        assert c["ci_high"] >= c["round_ci_high"] * (1 - 1e-12)
        assert c["ci_low"] <= c["ratio"] <= c["ci_high"]
    view = (RUN / "report.md").read_text()
    assert "Speed design: rounds: 2 fresh lives per side, ABBA (side by side" in view
    assert "| Across rounds (95%) | Round ratios |" in view
