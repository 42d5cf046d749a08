"""The demo as `make demo` runs it, its plan signed first (examples/cpu/smollm2-cpu-int8-demo/).

`qgate run precision_profiles/smollm2-cpu-int8.yaml` at commit 3809bf9 on a 2-core AMD EPYC
(AVX2 only: float32 serving), 2026-12-07, with other work on the machine (its times are not
figures), the reference's quality from the cache: PASS 26/26 at derivations quality 5, perf
13. The run signed its pre-registration before its first server started and its result
statement after the report; the key is examples/cpu/signing-key-2026-12-07.pub.pem (the
machine's local development key: the report says so).
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from helpers.examples import predicate_of, verify_example

from qgate.cli.main import main
from qgate.report.preregistration import PREREGISTRATION_NAME

ROOT = Path(__file__).resolve().parents[3] / "examples" / "cpu"
RUN = ROOT / "smollm2-cpu-int8-demo"
KEY = ROOT / "signing-key-2026-12-07.pub.pem"


def test_the_demo_verifies_with_its_pre_registration_and_result_statement() -> None:
    code, output = verify_example(RUN, KEY)
    assert code == 0, output
    assert "(verdict PASS)" in output and "derivations quality 5, perf 13 applied" in output
    assert "ok  pre-registration lock re-derived from the profile's criteria" in output
    assert "signed 2026-12-07T01:35:30+00:00 before the servers started" in output
    assert "ok  result statement result.intoto.jsonl" in output
    assert "ok  items root re-derived over 404 item records" in output


def test_the_statement_registers_the_demos_margins() -> None:
    report = predicate_of(RUN / "report.intoto.jsonl")
    assert report["preregistration"]["signed_at"] == "2026-12-07T01:35:30+00:00"
    statement = json.loads(
        base64.b64decode(json.loads((RUN / PREREGISTRATION_NAME).read_bytes())["payload"])
    )["predicate"]
    bars = {c["gate"]: (c["threshold"], c["rule"]) for c in statement["criteria"]}
    assert bars["quality.math.max_drop"] == (0.15, "bound")
    assert bars["quality.recall.max_drop"] == (0.2, "bound")


def test_one_item_checks_against_the_result_statement_alone(tmp_path: Path) -> None:
    proof = tmp_path / "item.json"
    made = CliRunner().invoke(
        main,
        [
            "proof",
            str(RUN / "report.intoto.jsonl"),
            "math.short/candidate/word-0002",
            "--out",
            str(proof),
        ],
    )
    assert made.exit_code == 0, made.output
    shutil.copy(RUN / "result.intoto.jsonl", tmp_path / "result.intoto.jsonl")
    checked = CliRunner().invoke(
        main,
        [
            "check-proof",
            str(proof),
            "--result",
            str(tmp_path / "result.intoto.jsonl"),
            "--pubkey",
            str(KEY),
        ],
    )
    assert checked.exit_code == 0, checked.output
    assert "leaf 208 of 404 under the signed root: answer '2', expected '8', correct False" in (
        checked.output
    )


def test_another_statement_is_refused_as_the_auditors_copy(tmp_path: Path) -> None:
    forged = tmp_path / "plan.intoto.jsonl"
    data = (RUN / PREREGISTRATION_NAME).read_bytes()
    forged.write_bytes(data.replace(b'"signatures"', b'"signatures" ', 1))  # other bytes
    result = CliRunner().invoke(
        main,
        [
            "verify",
            str(RUN / "report.intoto.jsonl"),
            "--pubkey",
            str(KEY),
            "--profile",
            str(RUN / "profile.yaml"),
            "--preregistration",
            str(forged),
        ],
    )
    assert result.exit_code == 1
    assert "the report binds statement" in result.stderr
