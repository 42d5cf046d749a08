"""verify holds each life probe set to its cache salt (issue 55 item 5): from perf derivation 15
every probe set of a side whose engine serves `cache_salt` carries the scope re-derived from
its side, life, round, purpose and moment. An insider who deletes or edits a salt, or lowers
the derivation, or names an older signer over salted records, and derives every verdict again
and signs with a fresh key, no longer gets a report that verifies. The committed KV-offload
envelope run (vLLM on both sides, perf derivation 9, unsalted) stands in for a run of this
qgate: its revision unnamed, its derivations the newest, its life probes salted as a run
salts them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.resign import example_report, rederived, resigned_verify

from qgate.errors import VerificationFailed
from qgate.gates.judgement import LIFE_SALTS, PERF_DERIVATION, QUALITY_DERIVATION
from qgate.perf.salts import life_scope
from qgate.profile import Profile
from qgate.report.model import Report
from qgate.report.render.lives_view import lives_section
from qgate.report.verify.cache_check import check_life_salts

RUN = Path(__file__).resolve().parents[3] / "examples" / "h200" / "kv-offload-envelope"


def _as_made_now(edit: Callable[[Report], None] | None = None) -> Callable[[Report], None]:
    """The report as this qgate signs it (life probes salted, every verdict derived again),
    then `edit` (a salt is no verdict's input: nothing to derive again after it)."""

    def made(report: Report) -> None:
        assert report.fingerprint is not None
        report.fingerprint.qgate_revision = None  # held to this qgate's derivations
        report.quality.derivation = QUALITY_DERIVATION
        report.perf.derivation = PERF_DERIVATION
        rederived(report)  # salts the perf runs and the life probes as `qgate run` does
        if edit is not None:
            edit(report)

    return made


def test_salted_life_probes_verify_and_are_listed() -> None:
    result = resigned_verify(RUN, _as_made_now())
    records = result.report.lives.records
    assert {p.cache_salt for p in records} == {
        life_scope(p.side, p.life, p.round, p.purpose, p.kind) for p in records
    }
    assert len({p.cache_salt for p in records}) == len(records) == 4
    line = "cache salts of 4 life probe sets re-derived (4 salted by side, life, round"
    assert any(c.startswith(line) for c in result.checked), result.checked
    assert any(s.startswith("life probe cache salts: ") for s in result.signed_only)
    section = lives_section(result.report)
    assert section is not None
    assert any(x.startswith("4 of the 4 probe sets were salted apart") for x in section.lines)


def _idle(report: Report) -> int:
    assert report.lives is not None
    return next(k for k, p in enumerate(report.lives.records) if p.kind == "idle")


def test_a_deleted_life_salt_is_refused() -> None:
    def delete(report: Report) -> None:
        assert report.lives is not None
        report.lives.records[_idle(report)].cache_salt = None

    with pytest.raises(VerificationFailed) as info:
        resigned_verify(RUN, _as_made_now(delete))
    message = info.value.message
    assert message.startswith("lives: ") and " idle probes: cache_salt None stored, " in message
    assert (
        "'qgate-life-" in message and "-idle' re-derived (its engine serves cache_salt)" in message
    )


def test_an_idle_set_salted_as_its_start_set_is_refused() -> None:
    """The salt an insider would want: the idle probes keyed with the start probes' KV."""

    def edit(report: Report) -> None:
        assert report.lives is not None
        p = report.lives.records[_idle(report)]
        p.cache_salt = life_scope(p.side, p.life, p.round, p.purpose, "start")

    with pytest.raises(VerificationFailed, match=r"-start' stored, '.*-idle' re-derived"):
        resigned_verify(RUN, _as_made_now(edit))


def test_salted_life_probes_under_a_lowered_derivation_are_refused() -> None:
    def lower(report: Report) -> None:
        report.perf.derivation = LIFE_SALTS - 1

    with pytest.raises(VerificationFailed) as info:
        resigned_verify(RUN, _as_made_now(lower))
    assert info.value.message.startswith(
        f"perf.derivation: {LIFE_SALTS - 1} stored, at least {LIFE_SALTS} re-derived from the "
        "records"
    ), info.value.message
    assert f"lives.records.cache_salt (perf {LIFE_SALTS})" in info.value.message


def test_an_older_signer_named_over_salted_life_probes_is_refused() -> None:
    def older(report: Report) -> None:
        assert report.fingerprint is not None
        report.fingerprint.qgate_revision = "git archive 9e9065f"  # wrote quality 6, perf 14
        report.quality.derivation, report.perf.derivation = 6, 14

    with pytest.raises(VerificationFailed) as info:
        resigned_verify(RUN, _as_made_now(older))
    assert info.value.message.startswith(
        f"perf.derivation: 14 stored, at least {LIFE_SALTS} re-derived from the records"
    ), info.value.message


def test_unsalted_life_probes_of_an_older_report_are_not_held_to_salts() -> None:
    report = example_report(RUN)
    profile = Profile.model_validate(report.profile)
    assert report.perf.derivation < LIFE_SALTS
    assert check_life_salts(report, profile) == (
        "cache salts of 4 life probe sets re-derived (0 salted by side, life, round and moment)"
    )
    assert report.lives is not None
    report.lives.records[0].cache_salt = "qgate-life-x"  # one an older qgate never wrote
    with pytest.raises(VerificationFailed, match="made before perf derivation 15 salted"):
        check_life_salts(report, profile)
