"""The signed KV-offload report measured on a lent H100 (examples/h100/kv-offload/) verifies
here, without a GPU, and shows where each side's prompt tokens came from.

The report is stored gzipped (11 MB of records, 2.7 MB compressed); the test unpacks it beside
its profile and runs `qgate verify` with the committed public key (its private half never left
the machine that signed).
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers.examples import predicate_of, verify_example

H100 = Path(__file__).resolve().parents[3] / "examples" / "h100"
PUBKEY = H100 / "signing-key-2026-12-07.pub.pem"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kv-offload")
    src = H100 / "kv-offload"
    shutil.copy(src / "profile.yaml", out / "profile.yaml")
    with gzip.open(src / "report.intoto.jsonl.gz", "rb") as packed:
        (out / "report.intoto.jsonl").write_bytes(packed.read())
    return out


def test_the_kv_offload_report_verifies_with_its_cache_records(folder: Path) -> None:
    code, out = verify_example(folder, PUBKEY)
    assert code == 0, out
    assert "embedded profile equals profile.yaml" in out
    assert "cache records of 8 perf runs checked" in out and "8 salted" in out
    assert "reuse passes hold the plan: 4 a side" in out
    assert "(verdict PASS)" in out


def _cache(rep: dict[str, Any], scenario: str) -> dict[str, Any]:
    (result,) = [r for r in rep["perf"]["results"] if r["scenario"] == scenario]
    out: dict[str, Any] = result["cache"]
    return out


def test_the_agent_scenario_reuses_only_within_its_own_workload(folder: Path) -> None:
    rep = predicate_of(folder / "report.intoto.jsonl")
    for role in ("reference", "candidate"):
        agent = _cache(rep, "agent-2")[role]
        assert agent["unexplained"] == 0 and agent["salted"]
        assert agent["within_conversation"] + agent["across_conversations"] > 0
        fixed = _cache(rep, "fixed-256x32@c4")[role]
        assert fixed["within_conversation"] == fixed["across_conversations"] == 0
