"""A local lm-eval task's documents are counted from its own data file, and a task whose size
nothing at hand pins says why (qgate/quality/lmeval_size.py, issue 54)."""

from __future__ import annotations

import json
from pathlib import Path

from qgate.profile import LmEvalTask
from qgate.quality.lmeval_size import count_json_documents, task_documents
from qgate.quality.lmeval_suite import lm_eval_documents

ROOT = Path(__file__).resolve().parents[3]


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip())


def test_the_shipped_tasks_are_counted_from_their_data_files() -> None:
    assert task_documents(LmEvalTask(task="qgate_math")) == _lines(ROOT / "evals/math/core.jsonl")
    assert task_documents(LmEvalTask(task="qgate_recall_1k")) == _lines(
        ROOT / "evals/recall/recall_1k_chars.jsonl"
    )


def test_a_task_lm_eval_ships_is_not_counted_and_says_why() -> None:
    why = task_documents(LmEvalTask(task="gsm8k"))
    assert isinstance(why, str)
    assert "Hugging Face dataset whose revision the run does not record" in why


def _task(tmp_path: Path, extra: str, data: str, name: str = "docs.jsonl") -> LmEvalTask:
    (tmp_path / name).write_text(data)
    (tmp_path / "t.yaml").write_text(
        f"task: tiny_local\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
        f"    test: {tmp_path / name}\ntest_split: test\n{extra}"
    )
    return LmEvalTask(task="tiny_local", include_path=tmp_path)


def test_a_local_task_counts_lines_or_an_array_and_not_what_it_filters(tmp_path: Path) -> None:
    assert task_documents(_task(tmp_path, "", '{"a": 1}\n\n{"a": 2}\n{"a": 3}\n')) == 3
    assert task_documents(_task(tmp_path, "", json.dumps([{"a": 1}] * 5), "d.json")) == 5
    why = task_documents(_task(tmp_path, "process_docs: !function utils.keep\n", '{"a": 1}\n'))
    assert why == "t.yaml uses process_docs, which may change its documents"
    assert count_json_documents(tmp_path / "missing.jsonl") != 0


def test_the_run_records_lm_evals_count_before_the_limit() -> None:
    results = {"n-samples": {"t": {"original": 144, "effective": 10}}}
    assert lm_eval_documents(results, "t") == 144
    assert lm_eval_documents({}, "t") is None
    assert lm_eval_documents({"n-samples": {"t": {"original": True}}}, "t") is None
