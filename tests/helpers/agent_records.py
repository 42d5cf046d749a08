"""Agent-suite records for the gate and verify tests: one graded item, one structured result as
a side answered it, and the synthetic report (tests/helpers/report_synthetic.py) with a
structured result, its verdicts made again by the one judge at a given quality derivation."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable

from helpers.report_synthetic import PROFILE, build_report

from qgate.gates.judge import judge
from qgate.gates.judgement import Derivation
from qgate.profile import Profile
from qgate.quality.agent_data import Graded, StructuredItem, grade_structured, structured_items
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.report.model import Report
from qgate.report.verify.recompute import Recompute, evidence_of

__all__ = ["STRUCTURED", "graded_item", "rejudged", "structured_profile", "structured_run"]

STRUCTURED = "structured.response_format"
"""The one structured result these tests ask."""

Answer = Callable[[int, StructuredItem, str], tuple[str, str]]
"""(index, item, the right JSON) -> (output, finish reason) of one structured item."""


def graded_item(item_id: str, expected: str, output: str, finish: str, grade: Graded) -> ItemRecord:
    """One agent item's record as its suite writes it."""
    return ItemRecord(
        id=item_id,
        prompt_sha256="0" * 64,
        output=output,
        answer=grade.answer,
        expected=expected,
        correct=grade.correct,
        finish_reason=finish,
        failure=grade.failure,
    )


def structured_profile(items: int) -> dict[str, object]:
    """The synthetic profile with `items` structured items through `response_format`."""
    data = copy.deepcopy(PROFILE)
    data["quality"]["structured"] = {  # type: ignore[index]
        "items": items,
        "params": ["response_format"],
        "streamed": False,
        "rule": "point",
    }
    return data


def right_json(item: StructuredItem, wrong: bool = False) -> str:
    """The item's answer as schema-valid JSON (a wrong value where `wrong`)."""
    key = "answer" if item.id.startswith("sum") else "word"
    value: object = int(item.expected) if key == "answer" else item.expected
    if wrong:
        value = -1 if key == "answer" else "nothing"
    return json.dumps({key: value})


def structured_run(role: str, items: int, answer: Answer, prefixes: bool = True) -> SuiteRun:
    """`role`'s structured result over the first `items` items, each answered by `answer` and
    graded as the suite grades (`prefixes`: quality derivation 8's rule for a cut output); the
    reference's read from its cache, as build_report's is."""
    records = []
    for n, item in enumerate(structured_items(items, 4343)):
        output, finish = answer(n, item, right_json(item))
        grade = grade_structured(item.id, output, finish, item.expected, prefixes=prefixes)
        records.append(graded_item(item.id, item.expected, output, finish, grade))
    cached = role == "reference"
    return SuiteRun(suite=STRUCTURED, role=role, data_sha256="0" * 64, items=records, cached=cached)  # type: ignore[arg-type]


def rejudged(report: Report, quality: int, fns: Recompute, items: int) -> Report:
    """`report` at quality derivation `quality`, every verdict and warning made again by the
    one judge from its records; where it then FAILs with perf run, its perf stage skipped as a
    failed quality gate skips it, and judged again."""
    report.quality.derivation = quality
    judged = judge(
        Profile.model_validate(report.profile),
        evidence_of(report),
        Derivation(quality=quality, perf=report.perf.derivation),
        resamples=report.perf.bootstrap_resamples,
        seed=report.perf.bootstrap_seed,
        fns=fns,
    )
    report.quality.verdicts, report.warnings = judged.quality, judged.warnings
    report.perf.results, report.perf.gates = judged.scenarios, judged.speed
    report.verdict = judged.verdict
    if report.verdict == "FAIL" and report.perf.status == "ran":
        report.perf = build_report(
            profile_json=structured_profile(items), perf_status="skipped: gates failed", fns=fns
        ).perf
        return rejudged(report, quality, fns, items)
    return report
