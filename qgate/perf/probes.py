"""Correctness under load (MLPerf TEST01 idea): quality probes mixed into the perf run.

A probe is a quality-stage item (chat messages, greedy, the quality stage's
generation parameters) sent among the workload's requests. Its answer is graded
against the item's known answer (`grade`: an answer with no number is wrong), and
the graded probes of a scenario are paired with the reference's in the same
scenario by qgate/gates/probes.py. The agreement with the answer the same
runtime gave in the quality stage is kept as a figure (`probe_agreement`). Where the probes
go among a scenario's requests is decided before the run: qgate/profile/probe_count.py.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.quality.extract import answer_matches, extract_number


class Probe(NamedTuple):
    """One probe item; a plain 3-tuple (no known answer: not graded) is accepted too."""

    id: str
    body: list[dict[str, Any]] | str
    """Chat messages, or a prompt string for the completions API."""
    expected: str | None
    """This runtime's answer to the item in its quality stage."""
    truth: str | None = None
    """The item's known correct answer, which grades the probe."""


def grade(text: str, truth: str) -> bool:
    """Whether a probe's output answers `truth`: the math suite's extractor and match."""
    return answer_matches(extract_number(text), truth)


def graded(r: RequestRecord) -> bool:
    """A probe's grade from its record: its text against its known answer (errors: wrong).
    The probe gate's and the life probes' one grading (qgate/gates/probes.py)."""
    assert r.probe_truth is not None
    return r.error is None and r.text is not None and grade(r.text, r.probe_truth)


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
