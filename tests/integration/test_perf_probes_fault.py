"""A candidate right when lightly loaded, wrong under concurrency, FAILed by the perf probes.

Issue 44's first "done when", on real vLLM (CPU, SmolLM2), with no server of its own: the
candidate is the session's `reference_server` seen through the fault proxy (conftest.py's
`fault_proxy`, `load:6`: answers corrupted, digits and letters rotated, only when more than
6 requests are in flight), the reference the same server seen directly; both `endpoint`
sides of one `qgate run`. The quality stage asks 4 at a time, below the threshold, so every
quality gate passes; the perf scenario's c12 level runs above it, so its graded probes come
back wrong and its probe gate fails, while its c1 level's pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.integration

BODY = """
quality:
  concurrency: 4             # below the fault's threshold: the quality stage never trips it
  math: {prompts: [short], limit: 24, max_drop: 0.2}
perf:
  blocks: 1
  probes: {items: 6}         # the defaults otherwise: max_flips 1, exact McNemar at 0.05
  scenarios:
    - {name: chat, input_tokens: 32, output_tokens: 8, concurrency: [1, 12], warmup: 0,
       requests: 24}
"""


@pytest.fixture(scope="module")
def fault_run(fault_proxy: Callable[[str], Any], endpoint_run: Callable[..., Any]) -> Any:
    proxy = fault_proxy("load:6")
    return proxy, endpoint_run("load-fault", proxy.url, BODY)


def test_quality_passes_and_the_loaded_scenario_probes_fail(fault_run: Any) -> None:
    proxy, run = fault_run
    done, pred = run.done, run.predicate
    assert done.returncode == 1, done.stdout + done.stderr
    assert pred["verdict"] == "FAIL"
    quality = pred["quality"]["verdicts"]
    assert quality and all(v["passed"] for v in quality), quality
    assert pred["perf"]["status"] == "ran"
    gates = {
        v["gate"]: v
        for r in pred["perf"]["results"]
        for v in r["verdicts"]
        if ".probes." in v["gate"]
    }
    assert not gates["perf.chat@c12.probes.max_flips"]["passed"], gates
    assert gates["perf.chat@c12.probes.max_flips"]["observed"] >= 2
    assert gates["perf.chat@c1.probes.max_flips"]["passed"], gates
    failed = [v["gate"] for v in [*quality, *gates.values()] if not v["passed"]]
    assert all(g.startswith("perf.chat@c12.probes.") for g in failed), failed
    # every corrupted answer fell in the perf stage (the quality stage never had 6 in flight)
    entries = proxy.entries()
    assert any(e["corrupted"] for e in entries)
    assert all(e["in_flight"] > 6 for e in entries if e["corrupted"])
    md = (run.report.parent / "report.md").read_text()
    assert "PROBES FAILED in chat@c12" in md and "Graded probes under load" in md
    assert "chat@c12: ratios withheld (its graded probes failed)" in done.stdout
