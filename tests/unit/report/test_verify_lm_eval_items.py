"""An lm-eval task holds its first min(limit, size) documents, its size counted from its data
file where the task at hand has the run's digest, else as the run recorded it
(qgate/report/verify/rederive_lm_eval.py `check_lm_eval_items`, issue 54): a task that lost its
last documents on both sides, re-derived and re-signed, is refused."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from helpers.report_synthetic import PROFILE

from qgate.errors import VerificationFailed
from qgate.profile import Profile
from qgate.quality.lmeval_suite import lm_eval_data_sha256
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.report.verify.rederive import Rederived
from qgate.report.verify.rederive_lm_eval import check_lm_eval_items

ROOT = Path(__file__).resolve().parents[3]
MATH = sum(1 for line in (ROOT / "evals/math/core.jsonl").read_text().splitlines() if line.strip())


def _profile(task: dict[str, Any]) -> Profile:
    data = copy.deepcopy(PROFILE)
    data["quality"] = {"lm_eval": [task]}
    return Profile.model_validate(data)


def _run(name: str, docs: int | list[int], digest: str = "", **params: Any) -> SuiteRun:
    ids = range(docs) if isinstance(docs, int) else docs
    items = [
        ItemRecord(
            id=f"doc-{d:05d}",
            prompt_sha256="0" * 64,
            output="",
            answer=None,
            expected="",
            correct=False,
        )
        for d in ids
    ]
    return SuiteRun(
        suite=f"lm_eval.{name}", role="candidate", data_sha256=digest, params=params, items=items
    )


def _math(limit: int | None = None) -> tuple[Profile, str]:
    profile = _profile({"task": "qgate_math", "limit": limit})
    return profile, lm_eval_data_sha256(profile.quality.lm_eval[0])


def test_a_local_task_holds_every_document_its_data_file_has() -> None:
    profile, digest = _math()
    out = Rederived()
    check_lm_eval_items(_run("qgate_math", MATH, digest), profile, out)
    assert out.not_rederived == []
    with pytest.raises(
        VerificationFailed,
        match=rf"^quality\.runs lm_eval\.qgate_math \(candidate\): {MATH - 1} items stored, "
        rf"{MATH} planned \(the task's first {MATH} of its {MATH} documents counted from its "
        rf"data file\); missing doc-{MATH - 1:05d}$",
    ):
        check_lm_eval_items(_run("qgate_math", MATH - 1, digest), profile, out)


def test_a_local_task_holds_the_smaller_of_its_limit_and_its_size() -> None:
    profile, digest = _math(limit=10)
    check_lm_eval_items(_run("qgate_math", 10, digest), profile, Rederived())
    with pytest.raises(VerificationFailed, match=r": 9 items stored, 10 planned .*limit 10\)"):
        check_lm_eval_items(_run("qgate_math", 9, digest), profile, Rederived())
    profile, digest = _math(limit=MATH + 50)
    check_lm_eval_items(_run("qgate_math", MATH, digest), profile, Rederived())
    with pytest.raises(VerificationFailed, match=rf"{MATH - 3} items stored, {MATH} planned"):
        check_lm_eval_items(_run("qgate_math", MATH - 3, digest), profile, Rederived())


def test_a_recorded_size_is_the_counted_one() -> None:
    profile, digest = _math()
    check_lm_eval_items(_run("qgate_math", MATH, digest, documents=MATH), profile, Rederived())
    with pytest.raises(
        VerificationFailed,
        match=rf"^quality\.runs lm_eval\.qgate_math \(candidate\)\.params\.documents: "
        rf"{MATH - 1} stored, {MATH} counted from the task's data file$",
    ):
        check_lm_eval_items(
            _run("qgate_math", MATH - 1, digest, documents=MATH - 1), profile, Rederived()
        )
    with pytest.raises(VerificationFailed, match=r"params\.documents: '7' stored, not a count$"):
        check_lm_eval_items(_run("qgate_math", 7, digest, documents="7"), profile, Rederived())


def test_a_shipped_task_holds_its_recorded_size_and_says_it_is_not_re_derived() -> None:
    profile = _profile({"task": "gsm8k", "limit": 4})
    out = Rederived()
    check_lm_eval_items(_run("gsm8k", 3, documents=3), profile, out)
    assert out.not_rederived == [
        "lm_eval.gsm8k (candidate): 3 documents of limit 4; the task's size is not re-derived, "
        "3 as recorded (a task lm-eval ships: its documents come from a Hugging Face dataset "
        "whose revision the run does not record)"
    ]
    with pytest.raises(
        VerificationFailed,
        match=r"^quality\.runs lm_eval\.gsm8k \(candidate\): 2 items stored, 3 planned \(the "
        r"task's first 3 of its 3 documents as recorded, limit 4\); missing doc-00002$",
    ):
        check_lm_eval_items(_run("gsm8k", 2, documents=3), profile, Rederived())


def test_a_local_task_whose_digest_is_not_the_runs_is_not_counted() -> None:
    profile, _ = _math(limit=10)
    out = Rederived()
    check_lm_eval_items(_run("qgate_math", 9, "0" * 64), profile, out)
    assert out.not_rederived == [
        "lm_eval.qgate_math (candidate): 9 documents of limit 10; the task's size is not "
        "re-derived (the task's YAML or data at hand differ from the digest the run recorded)"
    ]
