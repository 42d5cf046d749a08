"""Two kinds of field and no third (issue 54 item 3): every field of a report is a raw record
kind (with the derivation that introduced it and the verify functions that check it), a
derived field (with the function that makes it again) or run metadata; the signed-only list
names every raw kind a report holds, and a report cannot name a signer older than its records."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from helpers.resign import example_report, resigned_verify

from qgate.errors import VerificationFailed
from qgate.gates.judgement import PERF_DERIVATION, QUALITY_DERIVATION, LivesSection
from qgate.report.model import PerfSection, QualitySection, Report
from qgate.report.verify.derivation import SIGNERS, record_floor
from qgate.report.verify.record_kinds import DERIVED, METADATA, RAW
from qgate.report.verify.single import signed_only

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
ENVELOPE = EXAMPLES / "h200" / "kv-offload-envelope"
SECTIONS = {"quality": QualitySection, "perf": PerfSection, "lives": LivesSection}


def _fields() -> set[str]:
    out = {f for f in Report.model_fields if f not in SECTIONS}
    for name, model in SECTIONS.items():
        out |= {f"{name}.{f}" for f in model.model_fields}
    return out


def test_every_field_is_of_one_kind_and_no_third() -> None:
    raw = {k.name for k in RAW}
    kinds = [raw & _fields(), set(DERIVED), set(METADATA)]
    for a in range(3):
        for b in range(a + 1, 3):
            assert not kinds[a] & kinds[b], (a, b, kinds[a] & kinds[b])
    unclassified = _fields() - set().union(*kinds)
    assert not unclassified, f"fields of no kind (declare them in record_kinds): {unclassified}"
    assert set(DERIVED) | set(METADATA) <= _fields()  # nothing declared that is not a field


def test_every_raw_kind_has_its_derivation_and_a_checker() -> None:
    newest = {"quality": QUALITY_DERIVATION, "perf": PERF_DERIVATION}
    for kind in RAW:
        assert 1 <= kind.introduced <= newest[kind.axis], kind.name
        assert kind.checkers, f"{kind.name} has no checker"
        for check in kind.checkers:
            assert callable(check) and check.__module__.startswith("qgate."), (kind.name, check)
        assert kind.signed.split(":")[0], kind.name
    assert len({k.name for k in RAW}) == len(RAW)


def test_every_derived_field_names_the_function_that_makes_it_again() -> None:
    for field, dotted in DERIVED.items():
        module, _, name = dotted.rpartition(".")
        assert callable(getattr(importlib.import_module(module), name)), (field, dotted)


@pytest.mark.parametrize(
    "folder", sorted(p.parent for p in EXAMPLES.rglob("report.intoto.jsonl")), ids=str
)
def test_every_raw_kind_a_committed_report_holds_is_listed_as_signed_only(folder: Path) -> None:
    try:
        report = example_report(folder)
    except Exception:  # noqa: BLE001  (a multi report: its candidates are checked one by one)
        pytest.skip("not a single report")
    listed = signed_only(report)
    for kind in RAW:
        if kind.present(report):
            assert kind.signed in listed, (folder.name, kind.name)
    # the floor its records need is within what its signer wrote
    floor = record_floor(report)
    signer = SIGNERS.get(report.fingerprint.qgate_revision or "", (99, 99))  # type: ignore[union-attr]
    assert floor.quality <= signer[0] and floor.perf <= signer[1], (folder.name, floor)


def test_the_lives_and_probes_are_named_as_signed_only() -> None:
    report = example_report(ENVELOPE)
    listed = signed_only(report)
    assert any(line.startswith("lives.records: ") for line in listed)
    assert any(line.startswith("perf probes: ") for line in listed)


def test_an_older_signer_named_over_lives_and_probes_is_refused() -> None:
    """Issue 54: an insider who names an older signer revision switches the newer checks off
    (the floor ignored probe records and life probes). The revision of a perf-4 signer over
    records of graded probes and lives (its quality records within what it wrote): refused,
    naming what needs 8. (The engines' logged speculative_config, which no quality-3 signer
    wrote, is cleared as such a signer's reports have it: the next test holds it.)"""

    def older(report: Report) -> None:
        assert report.fingerprint is not None
        report.fingerprint.qgate_revision = "git archive bfbcf8c"  # wrote quality 3, perf 5
        report.quality.derivation, report.perf.derivation = 3, 5
        for c in report.effective_configs:
            c.speculative_config = None
        assert record_floor(report).quality <= 3

    with pytest.raises(VerificationFailed) as info:
        resigned_verify(ENVELOPE, older)
    message = info.value.message
    assert message.startswith("perf.derivation: 5 stored, at least 8 re-derived from the records")
    assert "perf.runs.probes (perf 8)" in message


def test_an_older_signer_named_over_a_logged_speculative_config_is_refused() -> None:
    """Issue 54: a contradicted change is a failed gate from quality derivation 4 on, so an
    insider naming a quality-3 signer turned it into a warning. The engines' logged
    speculative_config (the evidence of a contradicted speculative change) was first written
    at quality 4: a report holding it cannot name a signer that wrote 3."""
    assert record_floor(example_report(ENVELOPE)).quality == 4

    def older(report: Report) -> None:
        assert report.fingerprint is not None
        report.fingerprint.qgate_revision = "git archive bfbcf8c"  # wrote quality 3, perf 5
        report.quality.derivation, report.perf.derivation = 3, 5

    with pytest.raises(VerificationFailed) as info:
        resigned_verify(ENVELOPE, older)
    message = info.value.message
    assert message.startswith("quality.derivation: 3 stored, at least 4 re-derived from the "), (
        message
    )
    assert "effective_configs.speculative_config (quality 4)" in message
