"""One candidate's report is built from one frozen value (qgate/report/inputs.py, issue 54
item 1): its Evidence and the run's facts; the evidence's host is the fingerprint's."""

from __future__ import annotations

import pytest
from helpers.report_synthetic import PROFILE, build_report
from pydantic import ValidationError

from qgate.gates.judgement import Evidence
from qgate.profile import Profile
from qgate.report.assemble import build_report as assemble
from qgate.report.inputs import ReportInputs


def _inputs(host: str | None) -> ReportInputs:
    raw = build_report(requests=3)
    assert raw.fingerprint is not None
    return ReportInputs(
        profile=Profile.model_validate(PROFILE),
        profile_sha256="0" * 64,
        fingerprint=raw.fingerprint,
        evidence=Evidence(runs=tuple(raw.quality.runs), status="skipped: --skip-perf", host=host),
        verdicts=tuple(raw.quality.verdicts),
    )


def test_the_inputs_are_one_frozen_value_the_report_is_built_from() -> None:
    inputs = _inputs("ci-host")
    with pytest.raises(ValidationError, match="frozen"):
        inputs.profile_sha256 = "1" * 64  # type: ignore[misc]
    report = assemble(inputs)
    assert report.quality.runs == list(inputs.evidence.runs)
    assert report.perf.status == "skipped: --skip-perf"


def test_evidence_of_another_host_than_the_fingerprints_is_refused() -> None:
    with pytest.raises(ValidationError, match="evidence.host: 'elsewhere', the fingerprint's"):
        _inputs("elsewhere")
