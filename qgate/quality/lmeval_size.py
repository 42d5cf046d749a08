"""How many documents a local lm-eval task evaluates, counted from its own data file: the
size `qgate verify` holds an lm-eval task's planned documents to (issue 54: a task that lost
its last documents on both sides verified).

lm-eval evaluates a task's test split, else its validation split (`ConfigurableTask.eval_docs`),
after the task's `process_docs`, and then its first `limit` documents. A task qgate can count
offline is a local YAML (evals/lm_eval or the task's include_path) that reads local JSON
(`dataset_path: json`) with no `process_docs` and no `include`. A task lm-eval ships reads a
Hugging Face dataset whose revision the run does not record, so its size is not pinned by
anything verify can read: `task_documents` says why instead of a count.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from qgate.profile import LmEvalTask
from qgate.quality.lmeval_suite import LenientLoader, find_task_yaml, task_data_files

__all__ = ["count_json_documents", "task_documents"]


def task_documents(task: LmEvalTask) -> int | str:
    """The documents of the evaluation split lm-eval reads for `task` (before its limit),
    counted from the local data file at hand; or why they cannot be counted here."""
    yaml_path = find_task_yaml(task)
    if yaml_path is None:
        return (
            "a task lm-eval ships: its documents come from a Hugging Face dataset whose "
            "revision the run does not record"
        )
    try:
        config = yaml.load(yaml_path.read_text(encoding="utf-8"), Loader=LenientLoader)
    except (OSError, yaml.YAMLError) as exc:
        return f"{yaml_path.name} cannot be read ({exc})"
    if not isinstance(config, dict):
        return f"{yaml_path.name} is not a mapping"
    for key in ("include", "process_docs"):
        if config.get(key):
            return f"{yaml_path.name} uses {key}, which may change its documents"
    if config.get("dataset_path") != "json":
        return f"{yaml_path.name} reads {config.get('dataset_path')!r}, not local JSON"
    split = config.get("test_split") or config.get("validation_split")
    path = task_data_files(yaml_path).get(str(split))
    if path is None or not path.is_file():
        return f"{yaml_path.name}: no local data file for its evaluation split {split!r}"
    return count_json_documents(path)


def count_json_documents(path: Path) -> int | str:
    """Documents in a JSON Lines file (one per non-blank line) or a JSON array, as the
    `datasets` json builder reads them; or why not."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path.name} cannot be read ({exc})"
    if path.suffix != ".json":
        return sum(1 for line in text.splitlines() if line.strip())
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return sum(1 for line in text.splitlines() if line.strip())
    return len(value) if isinstance(value, list) else f"{path.name} is not a JSON array"
