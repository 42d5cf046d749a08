"""Correctness under load (MLPerf TEST01 idea): quality probes mixed into the perf run.

A probe is a quality-stage item (chat messages, greedy, the quality stage's
generation parameters) sent among the workload's requests. Its extracted
answer is compared with the answer the same runtime gave in the quality
stage; disagreement under load points at batching or scheduling bugs.
"""

from __future__ import annotations

from typing import Any

from qgate.perf.records import ScenarioRun
from qgate.quality.extract import extract_number

# (item id, chat messages or a prompt string, the quality stage's answer)
Probe = tuple[str, list[dict[str, Any]] | str, str | None]


def extract_answer(text: str) -> str | None:
    """The final number of an answer, by the quality stage's own extractor.

    The same function the quality stage used, so a probe agrees exactly when the
    runtime gave the same answer under load.
    """
    got = extract_number(text)
    return None if got is None else str(got)


def probe_agreement(run: ScenarioRun) -> tuple[int, int]:
    """(probes whose answer equals the quality-stage answer, probes sent)."""
    probes = [r for r in run.requests if r.probe_id is not None]
    agree = sum(
        1
        for r in probes
        if r.error is None and r.probe_answer is not None and r.probe_answer == r.probe_expected
    )
    return agree, len(probes)
