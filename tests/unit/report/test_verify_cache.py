"""The cache records of perf runs held by verify (qgate/report/verify/cache_check.py): salts
re-derived from the side's engine, round and block from perf derivation 14 on, the prompt
tokens by source adding up, cached tokens within the prompt. Each case edits the committed CPU
rounds run as a derivation-14 report would hold it."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.resign import example_report

from qgate.errors import VerificationFailed
from qgate.perf.cache_sources import CACHE_FROM
from qgate.perf.counters import BY_SOURCE, source_key
from qgate.perf.salts import salt_scope
from qgate.profile import Profile
from qgate.report.model import Report
from qgate.report.verify.cache_check import check_cache

RUN = Path(__file__).resolve().parents[3] / "examples" / "cpu" / "smollm2-cpu-rounds"


def salted() -> tuple[Report, Profile]:
    report = example_report(RUN)
    report.perf.derivation = CACHE_FROM
    for run in report.perf.runs:
        run.params["cache_salt"] = salt_scope(run.role, run.round, run.block)
        for counters, hit in ((run.counters_before, 10.0), (run.counters_after, 90.0)):
            counters[source_key("local_cache_hit")] = hit
            counters[source_key("local_compute")] = 2 * hit
            counters[BY_SOURCE] = 3 * hit
    return report, Profile.model_validate(report.profile)


def test_salted_runs_whose_sources_add_up_are_accepted() -> None:
    report, profile = salted()
    line = check_cache(report, profile)
    assert f"{len(report.perf.runs)} salted" in line


def test_an_older_report_without_salts_is_not_held_to_them() -> None:
    report = example_report(RUN)
    assert check_cache(report, Profile.model_validate(report.profile)).endswith(
        "0 salted as their side and block ask"
    )


def test_a_deleted_salt_is_rejected() -> None:
    report, profile = salted()
    del report.perf.runs[3].params["cache_salt"]
    with pytest.raises(VerificationFailed, match=r"cache_salt None stored, 'qgate-.*' re-derived"):
        check_cache(report, profile)


def test_a_run_moved_to_another_block_is_rejected_by_its_salt() -> None:
    report, profile = salted()
    run = report.perf.runs[0]
    run.block += 1
    with pytest.raises(VerificationFailed, match=rf"block {run.block}\): cache_salt"):
        check_cache(report, profile)


def test_sources_that_do_not_add_up_or_go_back_are_rejected() -> None:
    report, profile = salted()
    report.perf.runs[1].counters_after[source_key("local_cache_hit")] = 500.0
    with pytest.raises(VerificationFailed, match="sources add up to 680 after, the total says 270"):
        check_cache(report, profile)
    report, profile = salted()
    report.perf.runs[1].counters_after[source_key("local_cache_hit")] = 5.0
    with pytest.raises(VerificationFailed, match="goes back from 10 to 5"):
        check_cache(report, profile)


def test_more_cached_than_prompt_tokens_is_rejected() -> None:
    report, profile = salted()
    request = report.perf.runs[2].requests[0]
    request.cached_prompt_tokens = (request.prompt_tokens or 0) + 1
    with pytest.raises(VerificationFailed, match="cached of"):
        check_cache(report, profile)
