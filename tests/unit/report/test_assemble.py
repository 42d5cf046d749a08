"""The pipeline path: assemble.build_report -> write_report -> verify (team functions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.report_synthetic import PROFILE, build_report, make_signer

from qgate.errors import VerificationFailed
from qgate.gates.judgement import Evidence
from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.report.assemble import build_report as assemble
from qgate.report.inputs import ReportInputs
from qgate.report.signing import subjects_for
from qgate.report.verify.single import verify_bytes
from qgate.report.writer import write_report


@pytest.mark.parametrize("status", ["ran", "skipped: --skip-perf"])
def test_assembled_report_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    raw = build_report(requests=3)
    profile = Profile.model_validate(PROFILE)
    profile_file = tmp_path / "p.yaml"
    profile_file.write_text(json.dumps(PROFILE))  # JSON is YAML
    verdicts = evaluate_quality(profile.quality, raw.quality.runs, raw.quality.divergence)
    report = assemble(
        ReportInputs(
            profile=profile,
            profile_sha256=subjects_for(profile_file, None)[0].sha256,
            fingerprint=raw.fingerprint,
            evidence=Evidence(
                configs=tuple(raw.effective_configs),
                runs=tuple(raw.quality.runs),
                divergence=raw.quality.divergence,
                status=status,  # type: ignore[arg-type]
                perf_runs=tuple(raw.perf.runs if status == "ran" else []),
                host=raw.fingerprint.hostname if raw.fingerprint is not None else None,
            ),
            verdicts=tuple(verdicts),
            capability_notes=tuple(raw.capability_notes),
            stage_timings={"quality": 1.0},
            reference_provenance=raw.reference_provenance,
        )
    )
    signer = make_signer("ecdsa")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    written = write_report(
        run_dir, report, subjects_for(profile_file, raw.fingerprint), signer, html=False
    )
    result = verify_bytes(written.envelope.read_bytes(), signer.public_pem, profile_file)
    assert result.report.verdict == report.verdict
    assert len(result.report.perf.results) == (1 if status == "ran" else 0)
    assert "hf_secretvalue123" not in written.envelope.read_text()


def test_a_profile_edited_during_the_run_signs_what_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run signs the digest of the profile bytes it loaded: an edit to the file while the
    run is under way does not become the signed profile (verify with the file as it ran
    passes; with the edited file it names the profile), where re-reading the file at write
    time signed the edit and the report failed verify against the profile that ran."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    raw = build_report(requests=3)
    profile = Profile.model_validate(PROFILE)
    profile_file = tmp_path / "p.yaml"
    profile_file.write_text(json.dumps(PROFILE))
    loaded_sha = subjects_for(profile_file, None)[0].sha256
    report = assemble(
        ReportInputs(
            profile=profile,
            profile_sha256=loaded_sha,
            fingerprint=raw.fingerprint,
            evidence=Evidence(
                configs=tuple(raw.effective_configs),
                runs=tuple(raw.quality.runs),
                divergence=raw.quality.divergence,
                status="skipped: --skip-perf",
                host=raw.fingerprint.hostname if raw.fingerprint is not None else None,
            ),
            verdicts=tuple(
                evaluate_quality(profile.quality, raw.quality.runs, raw.quality.divergence)
            ),
            capability_notes=tuple(raw.capability_notes),
            stage_timings={"quality": 1.0},
            reference_provenance=raw.reference_provenance,
        )
    )
    as_ran = tmp_path / "as-ran.yaml"
    as_ran.write_bytes(profile_file.read_bytes())
    profile_file.write_text(json.dumps(PROFILE) + "\n# edited while the run was under way\n")
    signer = make_signer("ecdsa")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    written = write_report(
        run_dir,
        report,
        subjects_for(profile_file, raw.fingerprint, loaded_sha),
        signer,
        html=False,
    )
    ok = verify_bytes(written.envelope.read_bytes(), signer.public_pem, as_ran)
    assert ok.report.profile_sha256 == loaded_sha
    with pytest.raises(VerificationFailed, match="does not match the report's profile subject"):
        verify_bytes(written.envelope.read_bytes(), signer.public_pem, profile_file)
