"""The insider sweep (issue 54): over every committed example report, every derived field an
insider edits alone (signed again with a fresh key, nothing re-derived with it) is rejected,
naming the field and both the stored and the re-derived value; every raw observation a report
holds is in what `qgate verify` lists as signed only.

Each single report under examples/ joins by itself (its profile.yaml beside it, its key a
`signing-key*.pub.pem` in its folder or one above, found by the key id that signed it); a multi
report (https://qgate.dev/multi-report/v1, examples/h200/draft/) is left out: its candidates'
reports are embedded and verified by verify/multi.py, not re-signed alone by helpers/resign.py.

`qgate verify` of one example takes ~0.3-2 s (the judge draws the bootstrap again), so every
edit of every field runs on one example (FULL, the one holding lives and probes) and one edit
per held field on the others, turned by the example's place so that the examples between them
try the edits in turn: ~130 edits and 14 verifications, ~45 s of one core (2026-12-07, 2-core
AMD EPYC; two FULL examples took ~60 s, CI time). A verdict group's edits change its first
verdict (verify compares every verdict whole).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.examples import predicate_of
from helpers.resign import example_report, resigned_verify

from qgate.attest.dsse import keyid_of
from qgate.core.verdict import Verdict
from qgate.errors import VerificationFailed
from qgate.gates.judgement import PERF_DERIVATION, QUALITY_DERIVATION, ScenarioResult
from qgate.perf.counters import source_key
from qgate.report.model import Report
from qgate.report.verify import single
from qgate.report.verify.record_kinds import DERIVED, METADATA, RAW
from qgate.report.verify.single import verify_file

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SINGLE = "https://qgate.dev/report/v1"
FULL = ("h200/kv-offload-envelope",)
"""The examples every edit of every field runs on (the CPU demo's rounds; lives and probes)."""


def _statement(folder: Path) -> dict[str, Any]:
    line = (folder / "report.intoto.jsonl").read_text().splitlines()[0]
    out: dict[str, Any] = json.loads(base64.b64decode(json.loads(line)["payload"]))
    return out


def _singles() -> list[Path]:
    found = sorted(p.parent for p in EXAMPLES.rglob("report.intoto.jsonl"))
    return [f for f in found if _statement(f)["predicateType"] == SINGLE]


RUNS = _singles()


def _name(folder: Path) -> str:
    return folder.relative_to(EXAMPLES).as_posix()


def _key(folder: Path) -> Path:
    """The committed public key that signed the report in `folder` (by key id)."""
    line = (folder / "report.intoto.jsonl").read_text().splitlines()[0]
    keyid = json.loads(line)["signatures"][0]["keyid"]
    for where in [folder, *folder.parents]:
        for pem in sorted(where.glob("signing-key*.pub.pem")):
            if keyid_of(pem.read_bytes()) == keyid:
                return pem
        if where == EXAMPLES:
            break
    raise AssertionError(f"{_name(folder)}: no signing-key*.pub.pem with key id {keyid}")


@dataclass(frozen=True)
class Expect:
    """What the rejection must name: the field (every token) and both values."""

    names: tuple[str, ...]
    stored: Any
    rederived: Any


Edit = Callable[[Report], Expect]


def _shows(message: str, value: Any) -> bool:
    """Whether `message` shows `value` in one of the forms verify prints values in."""
    if value is None:
        return any(s in message for s in ("None", "null", "nothing"))
    if isinstance(value, bool):
        return str(value) in message or json.dumps(value) in message
    if isinstance(value, int):
        return str(value) in message
    if isinstance(value, float):
        return any(s in message for s in (f"{value:.4g}", repr(value), f"{value:g}"))
    if isinstance(value, str):
        return value[:25] in message
    if isinstance(value, list):
        return "[]" in message if not value else _shows(message, value[0])
    raise TypeError(type(value))


def _bumped(value: float | None) -> float:
    if value is None:
        return 0.5
    return value * 2 if abs(value) >= 1 else value + 0.1


def _verdict_edits(where: str, get: Callable[[Report], list[Verdict]]) -> dict[str, Edit]:
    """The first verdict's observed, limit, passed and reason, each changed alone."""

    def number(key: str) -> Edit:
        def edit(report: Report) -> Expect:
            v = get(report)[0]
            was = getattr(v, key)
            setattr(v, key, _bumped(was))
            return Expect((v.gate, key), getattr(v, key), was)

        return edit

    def passed(report: Report) -> Expect:
        v = get(report)[0]
        v.passed = not v.passed
        return Expect((v.gate, "passed"), v.passed, not v.passed)

    def reason(report: Report) -> Expect:
        v = get(report)[0]
        was, v.reason = v.reason, "edited by an insider"
        return Expect((v.gate, "reason"), v.reason, was)

    edits = {"observed": number("observed"), "limit": number("limit")}
    return {f"{where}:{k}": e for k, e in {**edits, "passed": passed, "reason": reason}.items()}


def _number_edit(section: str, key: str, change: Callable[[int], int]) -> Edit:
    def edit(report: Report) -> Expect:
        owner = getattr(report, section)
        was = getattr(owner, key)
        setattr(owner, key, change(was))
        return Expect((f"{section}.{key}",), getattr(owner, key), was)

    return edit


def _derivation_edits(section: str, newest: int) -> dict[str, Edit]:
    return {
        "lower": _number_edit(section, "derivation", lambda d: d - 1 if d > 1 else d + 1),
        "higher": _number_edit(section, "derivation", lambda d: d + 1),
        "newer-than-this-qgate": _number_edit(section, "derivation", lambda d: newest + 1),
    }


def _list_edits(path: str, added: Any) -> dict[str, Edit]:
    """One entry added to a derived list, and (where it holds one) its first dropped."""
    *owner_path, key = path.split(".")

    def owner(report: Report) -> Any:
        out: Any = report
        for part in owner_path:
            out = getattr(out, part)
        return out

    def add(report: Report) -> Expect:
        held = getattr(owner(report), key)
        was = list(held)
        held.append(added)
        return Expect((path,), [added], was[len(was) :])

    def drop(report: Report) -> Expect:
        held = getattr(owner(report), key)
        was = list(held)
        del held[0]
        return Expect((path,), held[:1] if held else [], was[:1])

    return {"added": add, "dropped": drop}


def _summary_edit(role: str, last: bool) -> Edit:
    """A side's TTFT median doubled, in the first (or last) scenario that holds one."""

    def edit(report: Report) -> Expect:
        results = report.perf.results[::-1] if last else report.perf.results
        result = next(r for r in results if _median(getattr(r, role)) is not None)
        summary = getattr(result, role)
        was = summary["ttft_ms"]["p50"]
        summary["ttft_ms"]["p50"] = was * 2
        return Expect((f"perf {result.scenario}", role, "ttft_ms.p50"), was * 2, was)

    return edit


def _median(summary: dict[str, Any] | None) -> Any:
    return ((summary or {}).get("ttft_ms") or {}).get("p50")


def _row_edit(key: str) -> Edit:
    """The first comparison row's `key` (its ratio, its interval's upper end) doubled."""

    def edit(report: Report) -> Expect:
        result, row = next(
            (r, c) for r in report.perf.results for c in r.comparisons if c.get(key) is not None
        )
        was = row[key]
        row[key] = was * 2
        return Expect((f"perf {result.scenario}", "comparisons", row["metric"], key), was * 2, was)

    return edit


def _check_edit(report: Report) -> Expect:
    result = next(r for r in report.perf.results if r.verdicts)
    v = result.verdicts[0]
    v.passed = not v.passed
    return Expect((f"perf {result.scenario}", v.gate, "passed"), v.passed, not v.passed)


PERF_RESULTS: dict[str, Edit] = {
    "candidate-median": _summary_edit("candidate", last=False),
    "reference-median-last": _summary_edit("reference", last=True),
    "ratio": _row_edit("ratio"),
    "ci-high": _row_edit("ci_high"),
    "scenario-check-passed": _check_edit,
}


def _perf_result_applies(results: list[ScenarioResult], edit: str) -> bool:
    rows = [c for r in results for c in r.comparisons]
    return {
        "candidate-median": any(_median(r.candidate) is not None for r in results),
        "reference-median-last": any(_median(r.reference) is not None for r in results),
        "ratio": any(c.get("ratio") is not None for c in rows),
        "ci-high": any(c.get("ci_high") is not None for c in rows),
        "scenario-check-passed": any(r.verdicts for r in results),
    }[edit]


def _status_edit(to: str) -> Edit:
    def edit(report: Report) -> Expect:
        was = report.perf.status
        report.perf.status = to  # type: ignore[assignment]
        return Expect(("perf.status",), to, was)

    return edit


def _overall_edit(to: str) -> Edit:
    def edit(report: Report) -> Expect:
        was = report.verdict
        report.verdict = to  # type: ignore[assignment]
        return Expect(("verdict",), to, was)

    return edit


def _lives(report: Report) -> Any:
    assert report.lives is not None
    return report.lives


STATUSES = {
    "ran": "ran",
    "ungated": "ungated",
    "skipped-flag": "skipped: --skip-perf",
    "skipped-gates-failed": "skipped: gates failed",
}

EDITS: dict[str, dict[str, Edit]] = {
    "quality.verdicts": _verdict_edits("first", lambda r: r.quality.verdicts),
    "quality.derivation": _derivation_edits("quality", QUALITY_DERIVATION),
    "perf.results": PERF_RESULTS,
    "perf.gates": _verdict_edits("first", lambda r: r.perf.gates),
    "perf.status": {name: _status_edit(to) for name, to in STATUSES.items()},
    "perf.derivation": _derivation_edits("perf", PERF_DERIVATION),
    "perf.bootstrap_resamples": {
        "halved": _number_edit("perf", "bootstrap_resamples", lambda n: n // 2 if n > 1 else 100)
    },
    "perf.bootstrap_seed": {"other": _number_edit("perf", "bootstrap_seed", (1).__add__)},
    "verdict": {
        v: _overall_edit(v) for v in ("PASS", "FAIL", "INCONCLUSIVE", "UNGATED", "PREVIEW")
    },
    "warnings": _list_edits("warnings", "an insider's warning"),
    "target_mismatches": _list_edits("target_mismatches", "gpu: an insider's mismatch"),
    "emulated": _list_edits("emulated", "weights fp4 (an insider's)"),
    "capability_notes": _list_edits("capability_notes", "an insider's capability note"),
    "lives.verdicts": _verdict_edits("first", lambda r: _lives(r).verdicts),
    "lives.excluded_rounds": _list_edits("lives.excluded_rounds", 7),
    "envelope": _verdict_edits("first", lambda r: r.envelope),
    "items_root": {"other-root": lambda r: _root_edit(r)},
    "preregistration": {"other-lock": lambda r: _lock_edit(r)},
}


def _root_edit(report: Report) -> Expect:
    assert report.items_root is not None
    was = report.items_root.sha256
    report.items_root.sha256 = "0" * 64
    return Expect(("items_root",), "0" * 64, was)


def _lock_edit(report: Report) -> Expect:
    assert report.preregistration is not None
    was = report.preregistration.lock_sha256
    report.preregistration.lock_sha256 = "0" * 64
    return Expect(("preregistration.lock_sha256",), "0" * 64, was)


def _held(predicate: dict[str, Any], path: str) -> Any:
    value: Any = predicate
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _value(report: Report, path: str) -> Any:
    value: Any = report
    for part in path.split("."):
        value = getattr(value, part, None)
    return value


def _applies(report: Report, field: str, edit: str, full: bool) -> bool:
    if field.startswith("lives.") and report.lives is None:
        return False
    if edit == "added":
        return full  # the lists held empty are tried on the FULL examples only
    value = _value(report, field)  # the validated model's: a schema-1 report's derivation is 1
    if value in (None, [], ""):
        return False
    if field == "perf.results":
        return _perf_result_applies(value, edit)
    if field in ("perf.status", "verdict"):
        return STATUSES.get(edit, edit) != value
    return True


def _cases() -> list[Any]:
    out = []
    for place, folder in enumerate(RUNS):
        name = _name(folder)
        report = example_report(folder)
        full = name in FULL
        for field, edits in EDITS.items():
            names = [e for e in edits if _applies(report, field, e, full)]
            if not full and names:
                names = [names[place % len(names)]]
            out += [pytest.param(folder, field, e, id=f"{name}|{field}|{e}") for e in names]
    return out


def test_every_derived_field_has_insider_edits() -> None:
    assert set(EDITS) == set(DERIVED)
    assert all(EDITS.values())


def test_the_full_examples_are_committed() -> None:
    assert {_name(f) for f in RUNS} >= set(FULL)


@pytest.mark.parametrize(("folder", "field", "edit"), _cases())
def test_an_insider_edit_of_a_derived_field_is_rejected_naming_both_values(
    folder: Path, field: str, edit: str
) -> None:
    expect: list[Expect] = []

    def apply(report: Report) -> None:
        expect.append(EDITS[field][edit](report))

    with pytest.raises(VerificationFailed) as info:
        resigned_verify(folder, apply)
    message = info.value.message
    (want,) = expect
    for token in want.names:
        assert token in message, (token, message)
    assert _shows(message, want.stored), ("stored", want.stored, message)
    assert _shows(message, want.rederived), ("re-derived", want.rederived, message)


def _any_request(predicate: dict[str, Any], key: str) -> bool:
    runs = _held(predicate, "perf.runs") or []
    return any(q.get(key) is not None for run in runs for q in run["requests"])


def _any_series(predicate: dict[str, Any]) -> bool:
    results = _held(predicate, "perf.results") or []
    return any(
        (s or {}).get("time_series") is not None
        for r in results
        for s in (r.get("reference"), r.get("candidate"))
    )


HELD: dict[str, Callable[[dict[str, Any]], bool]] = {
    "quality.divergence.cross_check": lambda p: bool(_held(p, "quality.divergence.cross_check")),
    "perf.runs.block": lambda p: any(r.get("block", 0) > 0 for r in _held(p, "perf.runs") or []),
    "perf.runs.round": lambda p: any(r.get("round", 0) > 0 for r in _held(p, "perf.runs") or []),
    "perf.results.time_series": _any_series,
    "perf.runs.probes": lambda p: _any_request(p, "probe_truth"),
    "perf.runs.cache": lambda p: any(
        "cache_salt" in r["params"] or source_key("local_compute") in r["counters_after"]
        for r in _held(p, "perf.runs") or []
    ),
    "perf.runs.graded_turns": lambda p: _any_request(p, "graded_turn"),
    "provenance": lambda p: _held(p, "provenance.cluster") is not None,
    "effective_configs.speculative_config": lambda p: any(
        c.get("speculative_config") is not None for c in p.get("effective_configs") or []
    ),
}
"""Whether a report holds a raw kind, read from its JSON (the kinds of a record inside a
field; any other kind is held when its field is not empty)."""


def _holds(predicate: dict[str, Any], kind: str) -> bool:
    if kind in HELD:
        return HELD[kind](predicate)
    return _held(predicate, kind) not in (None, [], {}, "")


@pytest.mark.parametrize("folder", RUNS, ids=_name)
def test_the_committed_report_verifies_and_lists_every_raw_observation_as_signed_only(
    folder: Path,
) -> None:
    predicate = predicate_of(folder / "report.intoto.jsonl")
    result = verify_file(folder / "report.intoto.jsonl", _key(folder), folder / "profile.yaml")
    listed = result.signed_only
    held = [k for k in RAW if _holds(predicate, k.name)]
    assert held, _name(folder)
    for kind in held:
        assert kind.signed in listed, (kind.name, listed)
    assert [k.signed for k in RAW if k.signed in listed] == [k.signed for k in held]
    # every field the report fills that is neither derived nor metadata is a raw kind listed
    sections = ("quality", "perf", "lives")
    fields = [k for k in predicate if k not in sections] + [
        f"{s}.{k}" for s in sections for k in (predicate.get(s) or {})
    ]
    for field in fields:
        if field in DERIVED or field in METADATA or field == "provenance":
            continue  # provenance without a cluster: run metadata (METADATA_LINE)
        if _held(predicate, field) not in (None, [], {}, ""):
            assert any(line.startswith(f"{field}:") for line in listed), (field, listed)


def test_the_bootstrap_is_held_to_the_profile_before_the_draw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # an insider's 10**9 resamples would keep verify drawing for hours before it compared them
    def drawn(*_: Any, **__: Any) -> None:
        pytest.fail("verify drew the bootstrap before holding its size to the profile")

    monkeypatch.setattr(single, "judged_of", drawn)
    with pytest.raises(
        VerificationFailed, match=r"^perf\.bootstrap_resamples: 1000000000 stored, "
    ):
        resigned_verify(EXAMPLES / FULL[0], lambda r: setattr(r.perf, "bootstrap_resamples", 10**9))
