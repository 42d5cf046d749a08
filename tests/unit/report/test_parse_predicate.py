from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from helpers.report_synthetic import build_report

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.report.model import PREDICATE_TYPE, Report
from qgate.report.signing import build_statement
from qgate.report.verify.envelope import parse_predicate


def _payload(edit: Callable[[dict[str, Any]], object] | None = None) -> bytes:
    report = build_report()
    statement = build_statement(report, [Subject(name="profile/p.yaml", sha256="0" * 64)])
    if edit is not None:
        edit(statement)
    return json.dumps(statement).encode()


def _outcome(payload: bytes, validate: Any) -> str:
    try:
        statement, report = parse_predicate(payload, PREDICATE_TYPE, validate)
    except VerificationFailed as exc:
        return exc.message
    rest = {k: v for k, v in statement.items() if k != "predicate"}
    return repr((rest, report.model_dump()))


def _set(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    def edit(statement: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = statement
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value

    return edit


VALID = _payload()
CASES = {
    "as signed": VALID,
    "type": _payload(_set("_type", "https://in-toto.io/Statement/v0.1")),
    "predicate type": _payload(_set("predicateType", "x")),
    "no subjects": _payload(_set("subject", [])),
    "bad field": _payload(_set("predicate.verdict", 5)),
    "unknown field": _payload(_set("predicate.colour", "red")),
    "no predicate": _payload(_set("predicate", None)),
    "int for a float": _payload(_set("predicate.quality.runs.0.wall_s", 3)),
    "NaN": VALID.replace(b'"wall_s": 1.5', b'"wall_s": NaN', 1),
    "string number": _payload(_set("predicate.quality.runs.0.wall_s", "2.5")),
    "extra key": _payload(_set("note", {"a": [1, 2.5, None]})),
    "not JSON": VALID[:-10],
    "an array": b"[" + VALID + b"]",
    "bad then good predicate": VALID[:-1] + b', "predicate": {"schema_version": 7}}',
    "good predicate last": b'{"predicate": 1, ' + VALID[1:],
}


@pytest.mark.parametrize("payload", CASES.values(), ids=CASES.keys())
def test_one_pass_validation_says_what_the_step_by_step_parse_says(payload: bytes) -> None:
    assert _outcome(payload, Report) == _outcome(payload, Report.model_validate)


def test_the_cases_reach_both_outcomes() -> None:
    assert b"NaN" in CASES["NaN"]
    outcomes = [_outcome(p, Report) for p in CASES.values()]
    assert sum(o.startswith("(") for o in outcomes) >= 5  # validated
    assert sum(not o.startswith("(") for o in outcomes) >= 5  # refused
