"""perf/bench_detection.py: what a candidate's fault proxy acted on, read from its log and
matched to the candidate's graded records (issue 53: schema-25 passed while its proxy had
dropped nothing, and the table read as a miss)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_detection", ROOT / "perf" / "bench_detection.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_detection"] = bench
    spec.loader.exec_module(bench)
    return bench


bench = _bench()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _run(suite: str, role: str, prompts: list[str]) -> dict[str, Any]:
    items = [{"id": f"i{n}", "prompt_sha256": _sha(p)} for n, p in enumerate(prompts)]
    return {"suite": suite, "role": role, "items": items}


SUM, WORD, MATH = "What is 2 + 3?", "The secret word is piano.", "Q: 1 + 1"
REPORT = {
    "quality": {
        "runs": [
            _run("math.short", "reference", [MATH]),
            _run("math.short", "candidate", [MATH]),
            _run("structured.response_format", "candidate", [SUM, WORD]),
            _run("structured.structured_outputs", "candidate", [SUM, WORD]),
        ]
    }
}


def _line(n: int, prompt: str, **extra: Any) -> dict[str, Any]:
    return {"n": n, "corrupted": "", "prompt_sha256": _sha(prompt), **extra}


def test_a_fault_that_dropped_nothing_says_so() -> None:
    """The committed schema-25 run: every request served, `response_format` carried by
    some, dropped from none."""
    lines = [
        _line(0, MATH),
        _line(1, SUM, carried=["response_format"]),
        _line(2, WORD, carried=["response_format"]),
        _line(3, SUM),
    ]
    acts = bench.fault_acts(lines, REPORT)
    assert acts == {
        "requests": 4,
        "acted": 0,
        "graded": 0,
        "by_suite": {},
        "carried": {"response_format": 2},
    }


def test_drops_and_corruptions_are_counted_on_the_suites_they_fell_on() -> None:
    lines = [
        _line(0, MATH, corrupted="load 3>2"),
        _line(1, SUM, carried=["response_format"], dropped=["response_format"]),
        _line(2, WORD, carried=["response_format"]),
        _line(3, WORD, corrupted="load 4>2"),  # the same prompt in both structured suites
        _line(4, "a perf-stage prompt", corrupted="load 7>6"),  # no graded item
    ]
    acts = bench.fault_acts(lines, REPORT)
    assert acts["requests"] == 5 and acts["acted"] == 4 and acts["graded"] == 3
    assert acts["by_suite"] == {
        "math.short": 1,
        "structured.response_format": 1,  # the dropped field names its suite
        "structured.response_format|structured.structured_outputs": 1,
    }
    assert acts["carried"] == {"response_format": 2}


def test_a_log_without_digests_counts_what_acted_but_not_where() -> None:
    lines = [{"n": 0, "corrupted": "load 3>2"}, {"n": 1, "corrupted": "", "set": {"t": 0}}]
    acts = bench.fault_acts(lines, REPORT)
    assert acts["acted"] == 2 and acts["graded"] is None


def test_the_log_is_read_per_candidate(tmp_path: Path) -> None:
    assert bench.read_log(tmp_path / "none.jsonl") is None
    log = tmp_path / "schema-25.jsonl"
    log.write_text(json.dumps({"n": 0}) + "\n\n" + json.dumps({"n": 1}) + "\n")
    assert bench.read_log(log) == [{"n": 0}, {"n": 1}]
    assert bench.acted({"n": 0, "corrupted": ""}) is False
    assert bench.acted({"n": 0, "corrupted": "", "stream_dropped": ["tool_calls"]}) is True
