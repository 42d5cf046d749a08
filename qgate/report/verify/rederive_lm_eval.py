"""Re-derive lm-eval items in `qgate verify`: lm-eval's `exact_match` on the logged response.

The lm-eval suite's `SuiteEntry.rederive` hook (qgate/profile/suites.py). Its options
(regexes_to_ignore, ignore_case, ignore_punctuation, ignore_numbers) are read from the task's
local YAML when the task is local, its YAML and data still have the digest the run recorded
and its metric is exact_match; other items are listed as not re-derived. Per-item scores are
checked to lie in [0, 1] with `correct` meaning a score of 1. Its `check_items` hook holds the
items to the task's first documents, each once, up to its limit (`check_lm_eval_items`).
"""

from __future__ import annotations

import re
import string
from typing import Any

import yaml

from qgate.errors import VerificationFailed
from qgate.profile import LmEvalTask, Profile
from qgate.quality.lmeval_size import task_documents
from qgate.quality.lmeval_suite import (
    LenientLoader,
    find_task_yaml,
    lm_eval_data_sha256,
    split_metric,
)
from qgate.quality.records import SuiteRun
from qgate.quality.sizing import lmeval_limit
from qgate.report.verify.item_plan import held_to
from qgate.report.verify.rederive import Rederived, check_item, few

__all__ = [
    "check_lm_eval_items",
    "exact_match",
    "lm_eval_exact_match_options",
    "rederive_lm_eval",
]


def _task_of(profile: Profile, name: str) -> LmEvalTask | None:
    return next((t for t in profile.quality.lm_eval if t.task == name), None)


def rederive_lm_eval(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """lm-eval items: exact_match on the logged response, where the task's YAML allows."""
    _rederive_lm_eval(run, _task_of(profile, run.suite.partition(".")[2]), out)


def exact_match(prediction: str, reference: str, options: dict[str, Any]) -> bool:
    """lm-eval's exact_match (lm_eval/api/metrics.py exact_match_hf_evaluate) on one pair."""
    pred, ref = prediction, reference
    for pattern in options.get("regexes_to_ignore") or []:
        pred, ref = re.sub(pattern, "", pred), re.sub(pattern, "", ref)
    if options.get("ignore_case"):
        pred, ref = pred.lower(), ref.lower()
    if options.get("ignore_punctuation"):
        table = str.maketrans("", "", string.punctuation)
        pred, ref = pred.translate(table), ref.translate(table)
    if options.get("ignore_numbers"):
        table = str.maketrans("", "", string.digits)
        pred, ref = pred.translate(table), ref.translate(table)
    # numpy string arrays, which lm-eval compares, ignore trailing NUL characters
    return pred.rstrip("\x00") == ref.rstrip("\x00")


_EXACT_MATCH_OPTIONS = frozenset(
    {
        "metric",
        "aggregation",
        "higher_is_better",
        "regexes_to_ignore",
        "ignore_case",
        "ignore_punctuation",
        "ignore_numbers",
    }
)


def lm_eval_exact_match_options(task: LmEvalTask, data_sha256: str) -> dict[str, Any] | str:
    """exact_match options of a local task whose definition has the recorded digest, or why not."""
    metric = split_metric(task.metric)[0]
    if metric != "exact_match":
        return f"metric {metric} is not exact_match"
    yaml_path = find_task_yaml(task)
    if yaml_path is None:
        return "not a local task YAML (a task lm-eval ships)"
    if lm_eval_data_sha256(task) != data_sha256:
        return f"{yaml_path.name} or its data differ from what the run used"
    config = yaml.load(yaml_path.read_text(encoding="utf-8"), Loader=LenientLoader)
    if not isinstance(config, dict):
        return f"{yaml_path.name} is not a mapping"
    odd = sorted(
        k
        for k in ("include", "process_results", "doc_to_choice", "multiple_target")
        if config.get(k)
    )
    if odd or config.get("output_type", "generate_until") != "generate_until":
        return f"{yaml_path.name} uses {', '.join(odd) or 'a non-generate_until output type'}"
    entries = [m for m in config.get("metric_list") or [] if isinstance(m, dict)]
    entry = next((m for m in entries if m.get("metric") == "exact_match"), None)
    if entry is None or set(entry) - _EXACT_MATCH_OPTIONS:
        return f"{yaml_path.name}: exact_match has options qgate does not re-implement"
    return dict(entry)


def _check_scores(run: SuiteRun) -> None:
    """An item's score is a metric value in [0, 1] and its `correct` flag is `score == 1`."""
    for item in run.items:
        if item.score is None:
            continue
        where = f"{run.suite} {run.role} item {item.id}"
        if not 0.0 <= item.score <= 1.0:
            raise VerificationFailed(f"{where}.score: {item.score} stored, outside [0, 1]")
        if item.correct != (item.score == 1.0):
            raise VerificationFailed(
                f"{where}.correct: {item.correct} stored, {item.score == 1.0} re-derived from "
                f"its score {item.score}"
            )


def _rederive_lm_eval(run: SuiteRun, task: LmEvalTask | None, out: Rederived) -> None:
    ids = [i.id for i in run.items]
    if not ids:
        return
    _check_scores(run)
    if task is None:
        out.not_rederived.append(f"{run.suite} ({run.role}): task not in the profile; {few(ids)}")
        return
    options = lm_eval_exact_match_options(task, run.data_sha256)
    if isinstance(options, str):
        out.not_rederived.append(f"{run.suite} ({run.role}): {options}; items {few(ids)}")
        return
    skipped: list[str] = []
    for item in run.items:
        if item.answer is None:
            skipped.append(item.id)
            continue
        correct = exact_match(item.answer, item.expected, options)
        check_item(run, item, item.answer, correct)
        out.items += 1
    if skipped:
        out.not_rederived.append(
            f"{run.suite} ({run.role}): no filtered response logged; items {few(skipped)}"
        )


def check_lm_eval_items(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """The items are the task's first documents (lm-eval numbers them from 0), each once: its
    first min(limit, size), where `size` is the task's documents counted from its local data
    file when the task at hand has the run's digest (qgate/quality/lmeval_size.py), else the
    size the run recorded (`params.documents`, from lm-eval's `n-samples`). A recorded size
    must be the counted one. Where neither is known, no more than the limit, and a note says
    why the size is not re-derived."""
    task = _task_of(profile, run.suite.partition(".")[2])
    if task is None:
        return
    where = f"quality.runs {run.suite} ({run.role})"
    limit = lmeval_limit(task)
    ids = [i.id for i in run.items]
    counted = task_documents(task)
    if isinstance(counted, int) and lm_eval_data_sha256(task) != run.data_sha256:
        counted = "the task's YAML or data at hand differ from the digest the run recorded"
    size = _recorded_size(run, where, counted)
    if size is None:
        n = len(ids) if limit is None else min(len(ids), limit)
        planned = "planned (the task's first documents" + (f", limit {limit})" if limit else ")")
    else:
        n = size if limit is None else min(limit, size)
        how = "counted from its data file" if isinstance(counted, int) else "as recorded"
        planned = f"planned (the task's first {n} of its {size} documents {how}" + (
            f", limit {limit})" if limit else ")"
        )
    held_to(where, ids, [f"doc-{k:05d}" for k in range(n)], planned)
    if not isinstance(counted, int) and (limit is None or len(ids) < limit):
        recorded = "" if size is None else f", {size} as recorded"
        out.not_rederived.append(
            f"{run.suite} ({run.role}): {len(ids)} documents"
            + (f" of limit {limit}" if limit else "")
            + f"; the task's size is not re-derived{recorded} ({counted})"
        )


def _recorded_size(run: SuiteRun, where: str, counted: int | str) -> int | None:
    """The task's size: the counted one, else the one the run recorded (None: neither)."""
    recorded = run.params.get("documents")
    if recorded is not None and (
        not isinstance(recorded, int) or isinstance(recorded, bool) or recorded < 0
    ):
        raise VerificationFailed(f"{where}.params.documents: {recorded!r} stored, not a count")
    if isinstance(counted, int):
        if recorded is not None and recorded != counted:
            raise VerificationFailed(
                f"{where}.params.documents: {recorded} stored, {counted} counted from the "
                "task's data file"
            )
        return counted
    return recorded
