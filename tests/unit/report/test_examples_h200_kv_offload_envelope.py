"""The H200 KV-offload run graded across its envelope (examples/h200/kv-offload-envelope/).

precision_profiles/smollm2-h200-kv-offload.yaml on the lent H200, 2026-12-03 (qgate 0ec3abe,
vLLM 0.26.0), with the graded perf probes (issue 44 item 1) at each perf scenario, every life
graded at its start and after a 50 s idle pause (item 2), and the load pass counting the
items' own cached tokens (`enable_prompt_tokens_details`). The key is
examples/h200/signing-key-2026-12-03.pub.pem. On the machine, `qgate verify` stopped at a
missing optional import (jsonschema, not in the payload; now imported only where a structured
answer is checked); here it verifies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.examples import predicate_of, verify_example

ROOT = Path(__file__).resolve().parents[3] / "examples" / "h200"
RUN = ROOT / "kv-offload-envelope"
PUBKEY = ROOT / "signing-key-2026-12-03.pub.pem"


def _predicate() -> dict[str, Any]:
    return predicate_of(RUN / "report.intoto.jsonl")


def test_the_run_verifies_against_its_profile() -> None:
    code, output = verify_example(RUN, PUBKEY)
    assert code == 0, output
    assert "verdict PASS" in output
    assert "2 life verdicts re-derived from 16 probes of 2 lives" in output


def test_each_perf_scenario_carried_graded_probes_and_its_gate_passed() -> None:
    verdicts = {v["gate"]: v for r in _predicate()["perf"]["results"] for v in r["verdicts"]}
    for scenario in ("fixed-256x32@c4", "agent-2"):
        gate = verdicts[f"perf.{scenario}.probes.max_flips"]
        assert gate["passed"] and gate["observed"] == 0, gate
        assert "8 reference and 8 candidate asks" in gate["reason"]


def test_every_life_was_graded_at_its_start_and_after_idle() -> None:
    lives = _predicate()["lives"]
    verdicts = {v["gate"]: v for v in lives["verdicts"]}
    assert sorted(verdicts) == ["lives.candidate.2.idle", "lives.candidate.2.start"]
    assert all(v["passed"] for v in verdicts.values())
    idle = [r for r in lives["records"] if r["kind"] == "idle"]
    assert len(idle) == 2 and all(r["idle_s"] >= 50 for r in idle)
    assert lives["excluded_rounds"] == []


def test_the_load_pass_counted_the_items_own_answers() -> None:
    view = (RUN / "report.md").read_text()
    assert "evidence: the items' own answers (usage.prompt_tokens_details, per request)" in view
    assert "CONTRADICTED" not in view
