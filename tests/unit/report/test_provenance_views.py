"""CI provenance and --metadata in the signed report: shown in every view, verified, and an
edited field rejected (qgate/core/provenance.py, qgate/report/render/parts.py, junit.py)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.report_synthetic import build_report

from qgate.attest.keys import load_signer
from qgate.attest.statement import Subject
from qgate.cli.main import main
from qgate.core.provenance import parse_metadata, run_provenance
from qgate.report.verify.single import default_recompute
from qgate.report.writer import ENVELOPE_NAME, write_report

GITHUB = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SHA": "3f1c2a9e8d7b6a5c4f3e2d1c0b9a8f7e6d5c4b3a",
    "GITHUB_REF": "refs/heads/main",
    "GITHUB_REPOSITORY": "acme/serving",
    "GITHUB_RUN_ID": "9911",
    "GITHUB_RUN_ATTEMPT": "2",
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_JOB": "gate-fp8",
    "GITHUB_WORKFLOW": "rollout",
    "RUNNER_NAME": "mi325x-07",
    "GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
}


@pytest.fixture
def signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert CliRunner().invoke(main, ["keygen", "--out", str(tmp_path / "k")]).exit_code == 0
    report = build_report(items=10, requests=4, fns=default_recompute())
    report.provenance = run_provenance(GITHUB, parse_metadata(["ticket=OPS-12", "api_key=s3cr3t"]))
    out = tmp_path / "run"
    out.mkdir()
    write_report(
        out,
        report,
        [Subject(name="profile/p.yaml", sha256=report.profile_sha256)],
        load_signer(key_path=tmp_path / "k.pem"),
        html=True,
    )
    return out, tmp_path / "k.pub.pem"


def test_every_view_shows_the_ci_job_and_the_metadata(signed: tuple[Path, Path]) -> None:
    out, pub = signed
    envelope = str(out / ENVELOPE_NAME)
    assert CliRunner().invoke(main, ["verify", envelope, "--pubkey", str(pub)]).exit_code == 0
    for fmt in ("md", "html", "junit"):
        text = CliRunner().invoke(main, ["show", envelope, "--format", fmt]).stdout
        assert "3f1c2a9e8d7b6a5c4f3e2d1c0b9a8f7e6d5c4b3a" in text, fmt
        assert "https://github.com/acme/serving/actions/runs/9911" in text, fmt
        assert "OPS-12" in text and "mi325x-07" in text, fmt
        assert "s3cr3t" not in text and "ghp_" not in text, fmt
    assert "CI: github-actions" in (out / "report.md").read_text()


def test_an_edited_metadata_field_does_not_verify(
    signed: tuple[Path, Path], tmp_path: Path
) -> None:
    out, pub = signed
    envelope = json.loads((out / ENVELOPE_NAME).read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    predicate = statement["predicate"]
    report = predicate.get("report", predicate)
    assert report["provenance"]["metadata"]["ticket"] == "OPS-12"
    report["provenance"]["metadata"]["ticket"] = "OPS-13"
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    edited = tmp_path / "edited.jsonl"
    edited.write_text(json.dumps(envelope) + "\n")
    res = CliRunner().invoke(main, ["verify", str(edited), "--pubkey", str(pub)])
    assert res.exit_code == 1 and "signature" in res.output


@pytest.mark.parametrize(
    ("env", "provider", "commit"),
    [
        (GITHUB, "github-actions", GITHUB["GITHUB_SHA"]),
        (
            {"GITLAB_CI": "true", "CI_COMMIT_SHA": "abc123", "CI_JOB_URL": "https://gl/j/1"},
            "gitlab-ci",
            "abc123",
        ),
        ({"CI": "true"}, "ci", None),
    ],
)
def test_ci_provider_from_its_own_variables(
    env: dict[str, str], provider: str, commit: str | None
) -> None:
    p = run_provenance(env, {})
    assert p is not None and p.ci is not None
    assert (p.ci.provider, p.ci.commit) == (provider, commit)
    assert "ghp_" not in p.model_dump_json()  # the job's token is never read


def test_outside_ci_without_metadata_records_nothing() -> None:
    assert run_provenance({"HOME": "/root"}, {}) is None


@pytest.mark.parametrize("bad", ["no-equals", "=v", "sp ace=1", "k=1 k=2"])
def test_metadata_that_is_not_key_value_is_refused_with_the_pair(bad: str) -> None:
    from qgate.errors import BadInput

    with pytest.raises(BadInput, match="--metadata"):
        parse_metadata(bad.split(" ") if bad.startswith("k=") else [bad])
