"""Sign/verify round trips, tamper rejection and an independent DSSE verifier."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from helpers.report_synthetic import FAKES, PROFILE, build_report, make_signer

from qgate.attest.keys import LoadedSigner
from qgate.attest.statement import (
    PAYLOAD_TYPE,
    Subject,
    checkpoint_subjects,
    profile_subject,
    sign_statement,
)
from qgate.errors import BadInput, VerificationFailed
from qgate.report.model import Report
from qgate.report.signing import build_statement, sign_report, with_signer
from qgate.report.verify.single import verify_bytes

SUBJECTS = [Subject(name="profile/p.yaml", sha256=build_report().profile_sha256)]


def _sign(report: Report, signer: LoadedSigner) -> bytes:
    return sign_report(report, SUBJECTS, signer)


def test_round_trip_both_key_types(report: Report, loaded_signer: LoadedSigner) -> None:
    data = _sign(report, loaded_signer)
    result = verify_bytes(data, loaded_signer.public_pem, recompute=FAKES)
    assert result.report.verdict == report.verdict
    assert result.report.signer is not None
    assert result.report.signer.keyid == loaded_signer.signer.public_key.keyid
    assert result.report.quality.runs == report.quality.runs
    assert data.endswith(b"\n") and data.count(b"\n") == 1  # one JSON line


def test_payload_byte_flip_rejected(report: Report, ecdsa_signer: LoadedSigner) -> None:
    env = json.loads(_sign(report, ecdsa_signer))
    payload = bytearray(base64.b64decode(env["payload"]))
    idx = payload.index(b'"PASS"')
    payload[idx + 1 : idx + 5] = b"FAIL"
    env["payload"] = base64.b64encode(bytes(payload)).decode()
    with pytest.raises(VerificationFailed, match="signature"):
        verify_bytes(json.dumps(env).encode(), ecdsa_signer.public_pem, recompute=FAKES)


def test_signature_from_other_report_rejected(ecdsa_signer: LoadedSigner) -> None:
    a = json.loads(_sign(build_report(), ecdsa_signer))
    b = json.loads(_sign(build_report(cand_wrong=frozenset({1, 2})), ecdsa_signer))
    a["signatures"] = b["signatures"]
    with pytest.raises(VerificationFailed, match="signature"):
        verify_bytes(json.dumps(a).encode(), ecdsa_signer.public_pem, recompute=FAKES)


def test_wrong_public_key_rejected(report: Report, ecdsa_signer: LoadedSigner) -> None:
    other = make_signer("ecdsa")
    with pytest.raises(VerificationFailed, match="signature"):
        verify_bytes(_sign(report, ecdsa_signer), other.public_pem, recompute=FAKES)


def test_edited_record_resigned_is_rejected(ecdsa_signer: LoadedSigner) -> None:
    report = build_report(cand_wrong=frozenset({1, 2, 4}))
    assert report.verdict == "PASS"
    # flip a candidate item from correct to wrong: the drop (now 0.5) breaks max_drop 0.25,
    # but the stored verdict still says passed; signing with the right key must not help
    # (a consistent edit: response, answer and flag together, so only the verdict is stale)
    item = report.quality.runs[1].items[5]
    item.output, item.answer, item.correct = "The answer is 99", "99", False
    with pytest.raises(VerificationFailed, match=r"gate math\.short\.max_drop"):
        verify_bytes(_sign(report, ecdsa_signer), ecdsa_signer.public_pem, recompute=FAKES)


def test_edited_request_record_resigned_is_rejected(ecdsa_signer: LoadedSigner) -> None:
    report = build_report()
    report.perf.runs[1].requests[0].done_ns += 5_000_000_000
    with pytest.raises(VerificationFailed, match="candidate summary"):
        verify_bytes(_sign(report, ecdsa_signer), ecdsa_signer.public_pem, recompute=FAKES)


def test_overall_verdict_must_follow(ecdsa_signer: LoadedSigner) -> None:
    report = build_report(cand_wrong=frozenset({1, 2, 4, 5}), perf_status="skipped: gates failed")
    assert report.verdict == "FAIL"
    report.verdict = "PASS"
    with pytest.raises(VerificationFailed, match="overall verdict"):
        verify_bytes(_sign(report, ecdsa_signer), ecdsa_signer.public_pem, recompute=FAKES)


def test_perf_status_ran_after_failed_gate_rejected(ecdsa_signer: LoadedSigner) -> None:
    report = build_report(cand_wrong=frozenset({1, 2, 4, 5}), perf_status="ran")
    with pytest.raises(VerificationFailed, match="ungated"):
        verify_bytes(_sign(report, ecdsa_signer), ecdsa_signer.public_pem, recompute=FAKES)


def test_unknown_payload_type_rejected(report: Report, ecdsa_signer: LoadedSigner) -> None:
    from securesystemslib.dsse import Envelope

    payload = json.dumps(build_statement(with_signer(report, ecdsa_signer), SUBJECTS)).encode()
    env = Envelope(payload=payload, payload_type="application/json", signatures={})
    env.sign(ecdsa_signer.signer)
    data = json.dumps(env.to_dict()).encode()
    with pytest.raises(VerificationFailed, match="payload type"):
        verify_bytes(data, ecdsa_signer.public_pem, recompute=FAKES)


def test_wrong_predicate_type_rejected(report: Report, ecdsa_signer: LoadedSigner) -> None:
    statement = build_statement(with_signer(report, ecdsa_signer), SUBJECTS)
    statement["predicateType"] = "https://slsa.dev/provenance/v1"
    data = sign_statement(statement, ecdsa_signer)
    with pytest.raises(VerificationFailed, match="predicateType"):
        verify_bytes(data, ecdsa_signer.public_pem, recompute=FAKES)


def test_schema_violation_rejected(report: Report, ecdsa_signer: LoadedSigner) -> None:
    statement = build_statement(with_signer(report, ecdsa_signer), SUBJECTS)
    statement["predicate"]["surprise"] = 1
    data = sign_statement(statement, ecdsa_signer)
    with pytest.raises(VerificationFailed, match="report schema: surprise"):
        verify_bytes(data, ecdsa_signer.public_pem, recompute=FAKES)


@pytest.mark.parametrize("cut", [1, 100, -2])
def test_truncated_file_is_bad_input(report: Report, ecdsa_signer: LoadedSigner, cut: int) -> None:
    data = _sign(report, ecdsa_signer)
    with pytest.raises(BadInput):
        verify_bytes(data[:cut], ecdsa_signer.public_pem, recompute=FAKES)


def test_not_json_is_bad_input(ecdsa_signer: LoadedSigner) -> None:
    with pytest.raises(BadInput):
        verify_bytes(b"\x00\xffnot json", ecdsa_signer.public_pem, recompute=FAKES)
    assert BadInput("x").exit_code == 2
    assert VerificationFailed("x").exit_code == 1


def test_subjects_profile_and_model(tmp_path: Path, ecdsa_signer: LoadedSigner) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(json.dumps(PROFILE))
    model = tmp_path / "ckpt"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "sub" / "w.bin").write_bytes(b"\x01\x02")
    report = build_report()
    report.profile_sha256 = profile_subject(profile).sha256
    subjects = [profile_subject(profile), *checkpoint_subjects(model)]
    assert [s.name for s in subjects] == [
        "profile/p.yaml",
        "checkpoint/config.json",
        "checkpoint/sub/w.bin",
    ]
    data = sign_report(report, subjects, ecdsa_signer)
    result = verify_bytes(data, ecdsa_signer.public_pem, profile, model, recompute=FAKES)
    assert any("2 checkpoint files" in c for c in result.checked)

    (model / "sub" / "w.bin").write_bytes(b"\x01\x03")
    with pytest.raises(VerificationFailed, match="sub/w.bin"):
        verify_bytes(data, ecdsa_signer.public_pem, profile, model, recompute=FAKES)
    (model / "sub" / "w.bin").write_bytes(b"\x01\x02")
    (model / "extra.txt").write_text("x")
    with pytest.raises(VerificationFailed, match="extra.txt"):
        verify_bytes(data, ecdsa_signer.public_pem, profile, model, recompute=FAKES)
    # same resolved profile, other bytes: not the file the run was given
    profile.write_text(json.dumps(PROFILE, indent=2))
    with pytest.raises(VerificationFailed, match="profile subject"):
        verify_bytes(data, ecdsa_signer.public_pem, profile, recompute=FAKES)


def _independent_verify(envelope_bytes: bytes, public_pem: str) -> dict[str, object]:
    """DSSE verification written from the spec on `cryptography` alone."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    env = json.loads(envelope_bytes)
    body = base64.b64decode(env["payload"])
    ptype = env["payloadType"].encode()
    pae = b"DSSEv1 " + str(len(ptype)).encode() + b" " + ptype + b" "
    pae += str(len(body)).encode() + b" " + body
    key = load_pem_public_key(public_pem.encode())
    assert isinstance(key, ec.EllipticCurvePublicKey)
    assert key.curve.name == "secp256r1"
    key.verify(base64.b64decode(env["signatures"][0]["sig"]), pae, ec.ECDSA(hashes.SHA256()))
    statement: dict[str, object] = json.loads(body)
    return statement


def test_independent_dsse_verifier_accepts(report: Report, ecdsa_signer: LoadedSigner) -> None:
    from cryptography.exceptions import InvalidSignature

    data = _sign(report, ecdsa_signer)
    statement = _independent_verify(data, ecdsa_signer.public_pem)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://qgate.dev/report/v1"
    assert json.loads(data)["payloadType"] == PAYLOAD_TYPE
    # and the independent verifier really checks: a changed byte fails there too
    env = json.loads(data)
    body = bytearray(base64.b64decode(env["payload"]))
    body[-2] ^= 1
    env["payload"] = base64.b64encode(bytes(body)).decode()
    with pytest.raises(InvalidSignature):
        _independent_verify(json.dumps(env).encode(), ecdsa_signer.public_pem)


def test_round_trip_with_the_team_functions(ecdsa_signer: LoadedSigner) -> None:
    from qgate.report.verify.single import default_recompute

    fns = default_recompute()
    report = build_report(items=12, requests=4, fns=fns)
    gates = {v.gate for v in report.all_verdicts()}
    assert any(g.startswith("math.short.") for g in gates)
    data = _sign(report, ecdsa_signer)
    assert verify_bytes(data, ecdsa_signer.public_pem).report.verdict == report.verdict
    # an edited request record changes the real summary: rejected
    report.perf.runs[0].requests[1].first_token_ns = (
        report.perf.runs[0].requests[1].first_token_ns or 0
    ) + 3_000_000
    with pytest.raises(VerificationFailed, match="perf short"):
        verify_bytes(_sign(report, ecdsa_signer), ecdsa_signer.public_pem)


def test_subjects_for_uses_fingerprint_digests(tmp_path: Path) -> None:
    from qgate.report.signing import subjects_for

    profile = tmp_path / "p.yaml"
    profile.write_text("name: x\n")
    subjects = subjects_for(profile, build_report().fingerprint)
    assert [s.name for s in subjects] == [
        "profile/p.yaml",
        "checkpoint/config.json",
        "checkpoint/model.safetensors",
    ]
    assert subjects[0].sha256 == profile_subject(profile).sha256


def test_edited_item_with_the_team_gates_is_rejected(ecdsa_signer: LoadedSigner) -> None:
    from qgate.report.verify.single import default_recompute

    report = build_report(items=12, requests=4, fns=default_recompute())
    assert verify_bytes(_sign(report, ecdsa_signer), ecdsa_signer.public_pem).report
    # the candidate now gets four more items wrong, yet the stored verdicts say otherwise
    for item in report.quality.runs[1].items[4:8]:
        item.output, item.answer, item.correct = "The answer is 99", "99", False
    with pytest.raises(VerificationFailed, match=r"gate math\.short\."):
        verify_bytes(_sign(report, ecdsa_signer), ecdsa_signer.public_pem)


def test_profile_subject_must_match_profile_sha256(
    report: Report, ecdsa_signer: LoadedSigner
) -> None:
    data = sign_report(report, [Subject(name="profile/p.yaml", sha256="ab" * 32)], ecdsa_signer)
    with pytest.raises(VerificationFailed, match="profile subject"):
        verify_bytes(data, ecdsa_signer.public_pem, recompute=FAKES)


def test_nan_figures_are_null_and_verify(ecdsa_signer: LoadedSigner) -> None:
    import math

    from qgate.report.verify.single import Recompute

    def nan_gates(policy: object, runs: object, div: object, **_: object) -> list:  # type: ignore[type-arg]
        out = FAKES.evaluate_quality(policy, runs, div)  # type: ignore[arg-type]
        return [v.model_copy(update={"observed": math.nan}) for v in out]

    fns = Recompute(nan_gates, FAKES.summarize, FAKES.compare, FAKES.scenario_verdicts)
    report = build_report(fns=fns)
    data = sign_report(report, SUBJECTS, ecdsa_signer)
    payload = base64.b64decode(json.loads(data)["payload"])
    assert b"NaN" not in payload
    json.loads(payload, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert verify_bytes(data, ecdsa_signer.public_pem, recompute=fns).report.verdict == "PASS"


def test_verify_restores_the_garbage_collector_even_when_it_fails() -> None:
    import gc

    assert gc.isenabled()
    with pytest.raises(BadInput):
        verify_bytes(b"not json", "")
    assert gc.isenabled()
    gc.disable()
    try:
        with pytest.raises(BadInput):
            verify_bytes(b"not json", "")
        assert not gc.isenabled()
    finally:
        gc.enable()
