"""The cluster's speed design in a signed report: verify derives it again from the recorded
lives and rejects lives of perf rounds the records do not hold (issue 43, insider edits)."""

from __future__ import annotations

import pytest
from helpers.report_synthetic import build_report, make_signer
from helpers.rounds_synthetic import rounds_report

from qgate.attest.statement import Subject
from qgate.core.provenance import ClusterLife, ClusterProvenance, RunProvenance
from qgate.core.speed_design import speed_design
from qgate.errors import VerificationFailed
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verify.single import default_recompute, verify_bytes

SIGNER = make_signer("ecdsa")
A, B = "a" * 40, "b" * 40


def verify(report: Report) -> list[str]:
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, SIGNER)
    return verify_bytes(envelope, SIGNER.public_pem, recompute=default_recompute()).checked


def _life(side: str, node: str, round: int = 0) -> ClusterLife:
    return ClusterLife(side=side, node_id=node, ip="10.0.0.1", resources={"GPU": 1}, round=round)


def _on_cluster(report: Report, lives: list[ClusterLife], design: str | None = None) -> Report:
    report.provenance = RunProvenance(
        cluster=ClusterProvenance(
            ray_version="2.60.0",
            address="10.0.0.1:6379",
            lives=lives,
            speed_design=speed_design(lives) if design is None else design,
        )
    )
    return report


def _swapped_two_rounds() -> list[ClusterLife]:
    return [
        _life("reference", A),
        _life("candidate", B),
        _life("candidate", A, 1),  # round 2: the candidate first, each on the other's node
        _life("reference", B, 1),
    ]


def test_a_swapped_design_that_follows_from_the_lives_verifies() -> None:
    report = _on_cluster(rounds_report(rounds=2), _swapped_two_rounds())
    assert report.provenance is not None and report.provenance.cluster is not None
    assert report.provenance.cluster.speed_design.startswith("swapped nodes in alternating")
    checked = verify(report)
    assert "cluster speed design re-derived from 4 recorded lives" in checked


def test_an_edited_design_is_rejected_naming_both() -> None:
    lives = [_life("reference", A), _life("candidate", B), _life("reference", A, 1)]
    lives.append(_life("candidate", B, 1))  # round 2 on the first round's nodes: not swapped
    claimed = speed_design(_swapped_two_rounds())
    report = _on_cluster(rounds_report(rounds=2), lives, claimed)
    with pytest.raises(VerificationFailed) as info:
        verify(report)
    message = info.value.message
    assert message.startswith("provenance.cluster.speed_design: 'swapped nodes")
    assert "re-derived from the recorded lives" in message and "each side's perf" in message


def test_lives_of_a_round_the_perf_records_do_not_hold_are_rejected() -> None:
    """One round of perf, two rounds of lives: the invented round makes the design read
    'swapped nodes in alternating rounds'."""
    report = _on_cluster(build_report(fns=default_recompute()), _swapped_two_rounds())
    assert report.provenance is not None and report.provenance.cluster is not None
    assert report.provenance.cluster.speed_design.startswith("swapped nodes")
    with pytest.raises(VerificationFailed) as info:
        verify(report)
    assert info.value.message == (
        "provenance.cluster.lives[2].round: round 2 stored (candidate), the perf records hold "
        "round(s) [1]"
    )


def test_a_held_round_without_its_lives_is_rejected() -> None:
    report = _on_cluster(rounds_report(rounds=2), _swapped_two_rounds()[:3])
    with pytest.raises(VerificationFailed, match="no reference life of perf round 2"):
        verify(report)
