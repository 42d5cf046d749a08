"""The H200 KV-offload run (examples/h200/kv-offload/) verifies here, and its passes ran the path.

precision_profiles/smollm2-h200-kv-offload.yaml on the lent H200, 2026-12-02 (qgate bfbcf8c, vLLM
0.26.0): the candidate adds vLLM's native KV offloading (4 GiB host tier) to the same bf16
SmolLM2; both sides have a 1024-block GPU KV cache. The reuse passes ask recall again warm,
restored (device prefix cache reset, host tier kept) and under load. The key is
examples/h200/signing-key-2026-12-02.pub.pem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.examples import predicate_of, verify_example

from qgate.quality.reuse_records import shares

ROOT = Path(__file__).resolve().parents[3] / "examples" / "h200"
RUN = ROOT / "kv-offload"
PUBKEY = ROOT / "signing-key-2026-12-02.pub.pem"


def _predicate() -> dict[str, Any]:
    return predicate_of(RUN / "report.intoto.jsonl")


def test_the_run_verifies_against_its_profile() -> None:
    code, output = verify_example(RUN, PUBKEY)
    assert code == 0, output
    assert "verdict PASS" in output


def test_every_pass_was_exercised_by_its_gate() -> None:
    verdicts = _predicate()["quality"]["verdicts"]
    exercised = {v["gate"]: v for v in verdicts if v["gate"].endswith(".exercised")}
    assert set(exercised) == {f"recall.1024@{p}.exercised" for p in ("warm", "restored", "load")}
    assert all(v["passed"] and v["exercised"] for v in exercised.values())


def test_the_candidate_restored_from_host_memory_and_the_reference_could_not() -> None:
    """Re-derived from the recorded /metrics scrapes, not read from a stored share."""
    passes = _predicate()["quality"]["passes"]
    by = {(p["name"], p["role"]): p["suites"][0] for p in passes}
    cand = by[("restored", "candidate")]
    ref = by[("restored", "reference")]
    c, r = shares(cand["before"], cand["after"]), shares(ref["before"], ref["after"])
    assert c.external is not None and c.external > 0.5  # external_kv_transfer
    assert r.external == 0.0  # no host tier on the reference
    load = by[("load", "candidate")]
    preempted = shares(load["before"], load["after"]).preemptions
    assert preempted is not None and preempted >= 1


def test_the_offload_change_is_confirmed_by_the_server() -> None:
    view = (RUN / "report.md").read_text()
    assert "| args.kv_offloading_size | 4 | CONFIRMED |" in view
    assert "CONTRADICTED" not in view
