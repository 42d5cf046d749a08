"""`qgate verify` re-derives what a report claims about its machine (report/verify/machine.py).

Re-signed edits of a real report (examples/h200/smollm2-h200-fp8, re-signed with a test key as
someone holding the signing key could) and of the synthetic one served on an AVX2 CPU with
`engine.cpu_dtype: auto`: each edit re-signed is rejected naming the field and both values.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers.report_synthetic import PROFILE, build_report, make_signer

from qgate.attest.statement import Subject
from qgate.cli.main import main
from qgate.gates.changes_applied import change_warnings, contradicted_verdicts
from qgate.profile import Profile
from qgate.profile.changes import changes_of
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verify.machine import requested_args
from qgate.report.verify.single import default_recompute, verify_bytes
from qgate.runtime.capabilities import caps_of, select_machine
from qgate.runtime.fingerprint import CpuInfo

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "h200" / "smollm2-h200-fp8"
SIGNER = make_signer("ecdsa")


def _example() -> tuple[dict[str, Any], list[Subject]]:
    line = (EXAMPLE / "report.intoto.jsonl").read_text()
    statement = json.loads(base64.b64decode(json.loads(line)["payload"]))
    subjects = [Subject(name=s["name"], sha256=s["digest"]["sha256"]) for s in statement["subject"]]
    return statement["predicate"], subjects


def _verify_example(tmp_path: Path, edit: Callable[[dict[str, Any]], None], *extra: str) -> Result:
    predicate, subjects = _example()
    edit(predicate)
    predicate["signer"] = None  # sign_report names the test key
    # its fresh reference cache entry is signed by the example's key: as the test key sees
    # it, an entry from another key's cache
    predicate["reference_provenance"]["source"] = "cache"
    for run in predicate["quality"]["runs"]:
        run["cached"] = run["role"] == "reference"
    forged = tmp_path / "forged.intoto.jsonl"
    forged.write_bytes(sign_report(Report.model_validate(predicate), subjects, SIGNER))
    pubkey = tmp_path / "key.pub.pem"
    pubkey.write_text(SIGNER.public_pem)
    argv = ["verify", str(forged), "--pubkey", str(pubkey), "--profile"]
    return CliRunner().invoke(main, [*argv, str(EXAMPLE / "profile.yaml"), *extra])


def _rejected(res: Result, *parts: str) -> str:
    assert res.exit_code == 1, res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, res.stderr
    for part in parts:
        assert part in errors[0], errors[0]
    return errors[0]


def test_the_example_re_signed_verifies_and_says_what_rests_on_the_signature(
    tmp_path: Path,
) -> None:
    res = _verify_example(tmp_path, lambda p: None)
    assert res.exit_code == 0, res.output
    assert "ok  0 capability notes re-derived from the fingerprint and the profile" in res.output
    assert "ok  target mismatches re-derived from the fingerprint" in res.output
    assert "ok  2 effective configurations agree with the engine arguments" in res.output
    signed = [ln for ln in res.output.splitlines() if ln.startswith("signed but not re-derived: ")]
    assert any("fingerprint: the machine" in ln for ln in signed), res.output
    assert any("perf.runs: per-request timestamps" in ln for ln in signed), res.output
    assert any("stage_timings" in ln for ln in signed), res.output


def test_the_json_output_lists_what_was_re_derived_and_what_was_not(tmp_path: Path) -> None:
    res = _verify_example(tmp_path, lambda p: None, "--format", "json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert any("capability notes re-derived" in line for line in out["checked"])
    assert any(line.startswith("fingerprint: ") for line in out["signed_only"])


def _claim_bf16_notes(p: dict[str, Any]) -> None:
    p["capability_notes"] = [
        "serving dtype: bfloat16 on reference and candidate (engine.cpu_dtype: auto), because "
        "this CPU has bf16 instructions (avx512_bf16)"
    ]


def test_edited_capability_notes_are_rejected(tmp_path: Path) -> None:
    error = _rejected(_verify_example(tmp_path, _claim_bf16_notes))
    assert 'capability_notes[0:]: ["serving dtype: bfloat16' in error
    assert "stored, [] re-derived" in error


def _served_float16(p: dict[str, Any]) -> None:
    p["effective_configs"][1]["dtype"] = "float16"


def _args_edited(p: dict[str, Any]) -> None:
    p["effective_configs"][1]["args"]["kv_cache_dtype"] = "auto"


def _claim_emulated(p: dict[str, Any]) -> None:
    p["effective_configs"][1]["emulated"] = ["fp8_e4m3 weights (emulated)"]
    p["emulated"] = ["fp8_e4m3 weights (emulated)"]


def _claim_mismatch(p: dict[str, Any]) -> None:
    p["target_mismatches"] = ["target is 1 x H200, this machine has 1 x H100"]


def _halve_gpus(p: dict[str, Any]) -> None:
    for run in p["perf"]["runs"]:
        run["gpus"] = 0  # per-GPU throughput as if no accelerator were counted


def _claim_warning(p: dict[str, Any]) -> None:
    p["warnings"] = ["math.short: detect 2.0 pts at power 0.8 needs more than detect.max_items"]


def _claim_power(p: dict[str, Any]) -> None:
    gate = next(v for v in p["quality"]["verdicts"] if v["gate"] == "recall.1024.significance")
    gate["power"], gate["underpowered"] = 0.95, False


@pytest.mark.parametrize(
    ("edit", "parts"),
    [
        (_served_float16, ("effective_configs[1] (candidate).dtype: 'float16' stored", "bfloat16")),
        (_args_edited, ("effective_configs[1] (candidate).args.kv_cache_dtype: 'auto' stored",)),
        (_claim_emulated, ("effective_configs[1] (candidate).emulated", "re-derived")),
        (_claim_mismatch, ("target_mismatches[0:]: ", "stored, [] re-derived")),
        (_claim_warning, ('warnings[0:]: ["math.short: detect 2.0 pts', "stored, [] re-derived")),
        (_halve_gpus, ("perf.runs[0] (fixed-256x32@c1, candidate).gpus: 0 stored, 1 re-derived",)),
        (
            _claim_power,
            (
                "gate recall.1024.significance: ",
                "power: 0.95 stored, 0.1958 re-derived",
                "underpowered: False stored, True re-derived",
            ),
        ),
    ],
    ids=[
        "served dtype",
        "engine args",
        "emulation label",
        "target mismatch",
        "warning",
        "gpus",
        "power",
    ],
)
def test_a_re_signed_claim_that_does_not_follow_names_its_field(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], parts: tuple[str, ...]
) -> None:
    error = _rejected(_verify_example(tmp_path, edit))
    assert all(part in error for part in parts), (error, parts)


def _avx2_auto() -> Report:
    """The synthetic report as run would write it on an AVX2-only CPU with cpu_dtype: auto."""
    report = build_report(items=10, requests=4, fns=default_recompute())
    report.profile["engine"]["cpu_dtype"] = "auto"
    report.profile["candidate"]["args"] = {}  # no FP8 KV cache: it needs AVX-512 on a CPU
    assert report.fingerprint is not None
    report.fingerprint.cpu = CpuInfo(model="AMD EPYC", logical_cores=2, flags=["avx2"])
    selection = select_machine(Profile.model_validate(report.profile), caps_of(report.fingerprint))
    report.capability_notes = selection.notes
    for config in report.effective_configs:
        config.dtype, config.kv_cache_dtype, config.args = "float32", "auto", {"dtype": "float32"}
    return report


def _sign(report: Report) -> bytes:
    return sign_report(report, [Subject(name="profile/p.yaml", sha256="0" * 64)], SIGNER)


def _verify(report: Report) -> None:
    report.profile_sha256 = "0" * 64
    verify_bytes(_sign(report), SIGNER.public_pem)


def test_an_avx2_report_with_auto_dtype_verifies() -> None:
    report = _avx2_auto()
    assert report.capability_notes[0].startswith("serving dtype: float32 on reference and cand")
    _verify(report)


def test_notes_edited_to_say_bfloat16_on_avx2_are_rejected() -> None:
    report = _avx2_auto()
    report.capability_notes = [
        report.capability_notes[0]
        .replace("float32", "bfloat16")
        .replace("has no bf16 instructions", "has bf16 instructions")
    ]
    with pytest.raises(Exception, match=r"capability_notes\[0\]: .*bfloat16.* stored, .*float32"):
        _verify(report)


def test_effective_configs_edited_to_bfloat16_on_avx2_are_rejected() -> None:
    report = _avx2_auto()
    for config in report.effective_configs:
        config.dtype, config.args = "bfloat16", {"dtype": "bfloat16"}
    with pytest.raises(
        Exception,
        match=r"effective_configs\[0\] \(reference\)\.args\.dtype: 'bfloat16' stored, 'float32'",
    ):
        _verify(report)
    report = _avx2_auto()
    report.effective_configs[1].dtype = "bfloat16"  # only what the server reported
    with pytest.raises(Exception, match=r"\(candidate\)\.dtype: 'bfloat16' stored, but .*float32"):
        _verify(report)


def test_notes_follow_the_forced_flags_the_fingerprint_records() -> None:
    report = _avx2_auto()
    assert report.fingerprint is not None
    # the same run on an AVX-512 machine told by QGATE_CPU_FLAGS to assume AVX2 only
    report.fingerprint.cpu = CpuInfo(
        model="AMD EPYC", logical_cores=2, flags=["avx2", "avx512f"], forced_flags=["avx2"]
    )
    selection = select_machine(Profile.model_validate(report.profile), caps_of(report.fingerprint))
    report.capability_notes = selection.notes
    assert "forced by QGATE_CPU_FLAGS" in report.capability_notes[0]
    _verify(report)
    report.fingerprint.cpu.forced_flags = None  # the notes no longer follow
    with pytest.raises(Exception, match=r"capability_notes\[0\]: "):
        _verify(report)


def _launcher_candidate() -> Report:
    """The synthetic report as run writes it for a candidate that is a launcher around vLLM
    (perf/faults/launch.py) beside a shared `engine.args.dtype`, with cpu_dtype: auto: the
    candidate's own engine block holds no dtype, auto sets it on both sides alike."""
    profile = copy.deepcopy(PROFILE)
    profile["perf"]["scenarios"][0]["requests"] = 4
    profile["engine"] = {"cpu_dtype": "auto", "args": {"dtype": "bfloat16", "max_model_len": 4096}}
    launcher = ["/usr/bin/python3", "/opt/qgate/perf/faults/launch.py", "--fault", "drop:tools"]
    profile["reference"] = {"args": {"kv_cache_dtype": "auto"}}
    profile["candidate"] = {
        "args": {"kv_cache_dtype": "auto"},
        "engine": {"launcher": [*launcher, "--"], "args": {"max_model_len": 4096}},
    }
    report = build_report(items=10, requests=4, fns=default_recompute(), profile_json=profile)
    prof = Profile.model_validate(report.profile)
    assert report.fingerprint is not None
    selection = select_machine(prof, caps_of(report.fingerprint))
    chosen = prof.model_copy(
        update={"reference": selection.reference, "candidate": selection.candidate}
    )
    for config in report.effective_configs:  # what each server was started with
        config.kv_cache_dtype = "auto"
        config.args = requested_args(chosen, config.role)
    # run judges over the profile as the machine runs it (qgate/run/candidate.py), and writes
    # the unconfirmed-changes warning from the declared one (qgate/run/report.py)
    report.warnings = change_warnings(prof, report.effective_configs, [], report.perf.runs)
    assert contradicted_verdicts(chosen, report.effective_configs) == []
    return report


def test_a_launcher_candidate_beside_a_shared_dtype_verifies() -> None:
    """The dtype cpu_dtype: auto sets on both sides is no change of the candidate's: verify
    judges the changes over the profile as the fingerprinted machine runs it, as run does
    (was: 'gate changes.args.dtype.applied is missing from the report')."""
    report = _launcher_candidate()
    changes = [c.name for c in changes_of(Profile.model_validate(report.profile))]
    # under cpu_dtype: auto both sides serve the machine's dtype, so the shared top-level dtype
    # the launcher's own engine block lacks is no change (qgate/profile/changes.py)
    assert changes == ["engine.launcher"]
    _verify(report)
