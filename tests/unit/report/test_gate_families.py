"""Every gate qgate writes belongs to a family of the gate catalogue (docs/reference/gates.md,
generated from qgate/report/gate_families.py)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from qgate.report.gate_families import FAMILIES, family_of

ROOT = Path(__file__).resolve().parents[3]


def _gates(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["gate"]} if isinstance(node.get("gate"), str) and "passed" in node else set()
        return found.union(*(_gates(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_gates(v) for v in node))
    return set()


def _example_gates() -> set[str]:
    out: set[str] = set()
    for report in sorted(ROOT.glob("examples/**/report.intoto.jsonl")):
        envelope = json.loads(report.read_text().splitlines()[0])
        out |= _gates(json.loads(base64.b64decode(envelope["payload"])))
    return out


def test_every_gate_of_the_committed_examples_has_a_family() -> None:
    gates = _example_gates()
    assert len(gates) > 20
    assert sorted(g for g in gates if family_of(g) is None) == []


@pytest.mark.parametrize(
    ("gate", "family"),
    [
        ("math.short.max_drop", "Exact answers"),
        ("lm_eval.gsm8k.significance", "Exact answers"),
        ("context.2048.max_flips", "Exact answers"),
        ("recall.4096@warm.exercised", "Reuse passes"),
        ("recall.4096@restored.max_drop", "Reuse passes"),
        ("divergence.max_p99_kld", "Divergence"),
        ("context.2048.min_top1_agreement", "Divergence"),
        ("structured.response_format.constrained", "Constrained output"),
        ("tool_calls.named.served", "Requests served"),
        ("structured.guided_json.streamed.served", "Requests served"),
        ("speculative.acceptance_length", "Speculative decoding"),
        ("candidate.no_effect", "No effect"),
        ("candidate.kv_scales_calibrated", "KV-cache scales"),
        ("changes.args.kv_cache_dtype.applied", "Changes applied"),
        ("perf.c4.mismatches", "Stream checks"),
        ("perf.agent-2.probes.max_flips", "Graded probes"),
        ("lives.candidate.2.idle", "Life probes"),
        ("lives.reference.3.start", "Reference lives"),
        ("perf.agent-2.turns.significance", "Graded turns"),
        ("perf.c4.ttft_ms.p50.max_ratio", "Speed"),
    ],
)
def test_each_kind_of_gate_id_finds_its_family(gate: str, family: str) -> None:
    found = family_of(gate)
    assert found is not None and found.name == family


def test_an_unknown_gate_has_no_family() -> None:
    assert family_of("latency.vibes") is None
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)
