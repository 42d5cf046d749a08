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


def test_the_profile_the_machine_ran_is_kept_as_it_ran() -> None:
    # engine.cpu_dtype: auto writes the chosen dtype into both sides' args: a profile that
    # validation would refuse as written, kept as the machine ran it (the integration run's
    # report stage crashed on it, exit 3, before this was kept unvalidated)
    from qgate.run.context import select
    from qgate.runtime.capabilities import CpuCaps

    written = Profile.model_validate({**PROFILE, "engine": {"cpu_dtype": "auto"}})
    cpu = CpuCaps(
        model="test", arch="x86_64", flags=frozenset({"avx512f", "avx512_bf16"}), forced=True
    )
    ran, _ = select(written, cpu)
    assert ran.reference.args.get("dtype") == "bfloat16"
    inputs = _inputs("ci-host").model_copy(update={"judged_with": ran})
    again = ReportInputs(**{k: getattr(inputs, k) for k in ReportInputs.model_fields})
    assert again.judged_with is ran
