"""Any lm-eval task, run against a runtime through lm-eval's OpenAI-compatible backends.

lm-eval runs in-process (`simple_evaluate`, `log_samples=True`) and talks to
the server over HTTP like every other suite; each logged sample becomes an
ItemRecord so that flips can be counted per document. lm_eval is imported
only inside `run_lm_eval` (it pulls in torch, datasets and transformers).

Relative `data_files` in task YAMLs are resolved by `datasets` against the
current directory. So that qgate works from any directory, the include
folder is copied to a temporary folder with those paths made absolute
(relative to the current directory if the file exists there, else to the
repository that holds evals/, else to the YAML's folder).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from qgate.core import http
from qgate.core.files import sha256_file, sha256_json
from qgate.core.records import Role
from qgate.errors import BadInput, InfrastructureError
from qgate.profile import LmEvalTask
from qgate.quality.data import evals_root
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.sizing import lmeval_limit

if TYPE_CHECKING:
    from qgate.quality.runner import SuiteContext

__all__ = [
    "SUITE",
    "default_include_path",
    "find_task_yaml",
    "lm_eval_data_sha256",
    "lm_eval_documents",
    "run_lm_eval",
    "samples_to_records",
    "task_data_files",
]

_TASK_LINE = re.compile(r"^task:\s*['\"]?([^'\"\s#]+)", re.MULTILINE)


def default_include_path() -> Path:
    """The shipped task YAMLs (evals/lm_eval)."""
    return evals_root() / "lm_eval"


def _include_paths(task: LmEvalTask) -> list[Path]:
    paths = [default_include_path()]
    if task.include_path is not None and task.include_path.resolve() != paths[0].resolve():
        paths.append(task.include_path)
    return [p for p in paths if p.is_dir()]


def find_task_yaml(task: LmEvalTask) -> Path | None:
    """The YAML that defines `task.task` in the include paths, if it is a local task."""
    for root in _include_paths(task):
        for path in sorted(root.rglob("*.yaml")):
            match = _TASK_LINE.search(path.read_text(encoding="utf-8", errors="replace"))
            if match and match.group(1) == task.task:
                return path
    return None


def _resolve_data_file(value: str, yaml_path: Path) -> Path:
    path = Path(value)
    if path.is_absolute():
        return path
    for base in (Path.cwd(), evals_root().parent, yaml_path.parent):
        if (base / path).is_file():
            return (base / path).resolve()
    return path


def task_data_files(yaml_path: Path) -> dict[str, Path]:
    """Split name -> local data file of a task YAML (empty for hub datasets or odd YAML)."""
    try:
        config = yaml.load(yaml_path.read_text(encoding="utf-8"), Loader=LenientLoader)
    except yaml.YAMLError:
        return {}
    if not isinstance(config, dict):
        return {}
    files = (config.get("dataset_kwargs") or {}).get("data_files")
    if isinstance(files, str):
        files = {"train": files}
    if not isinstance(files, dict):
        return {}
    return {str(k): _resolve_data_file(str(v), yaml_path) for k, v in files.items()}


def _lenient_loader() -> type[Any]:
    class Loader(yaml.SafeLoader):
        """SafeLoader that reads lm-eval's `!function` tags as plain strings."""

    def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> str:
        return str(getattr(node, "value", ""))

    Loader.add_multi_constructor("!", _tag)
    return Loader


LenientLoader = _lenient_loader()


def lm_eval_data_sha256(task: LmEvalTask) -> str:
    """Digest of a task's definition: its YAML and local data files, or its name and lm-eval
    version for a task lm-eval ships (the reference cache keys on it)."""
    view: dict[str, Any] = {
        "task": task.task,
        "limit": lmeval_limit(task),
        "num_fewshot": task.num_fewshot,
        "chat": task.chat,
    }
    yaml_path = find_task_yaml(task)
    if yaml_path is None:
        try:
            view["lm_eval_version"] = version("lm_eval")
        except PackageNotFoundError:
            view["lm_eval_version"] = None
    else:
        view["yaml_sha256"] = sha256_file(yaml_path)
        view["data"] = {
            split: sha256_file(path) if path.is_file() else None
            for split, path in sorted(task_data_files(yaml_path).items())
        }
    return sha256_json(view)


@contextmanager
def _resolved_include_dir(task: LmEvalTask) -> Iterator[list[str]]:
    """Copies of the include folders with absolute `data_files`, removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="qgate-lmeval-"))
    try:
        out: list[str] = []
        for n, root in enumerate(_include_paths(task)):
            dest = tmp / str(n)
            shutil.copytree(root, dest)
            for copy in dest.rglob("*.yaml"):
                original = root / copy.relative_to(dest)
                files = task_data_files(original)
                if not files:
                    continue
                text = copy.read_text(encoding="utf-8")
                try:
                    config = yaml.safe_load(text)
                except yaml.YAMLError:
                    continue  # `!function` YAMLs are left as they are
                config["dataset_kwargs"]["data_files"] = {k: str(v) for k, v in files.items()}
                copy.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
            out.append(str(dest))
        yield out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def split_metric(metric: str) -> tuple[str, str | None]:
    name, _, filt = metric.partition(",")
    return name.strip(), (filt.strip() or None)


def _first(value: Any) -> Any:
    while isinstance(value, list | tuple) and value:
        value = value[0]
    return value


def samples_to_records(
    samples: list[dict[str, Any]], metric: str, task_name: str
) -> list[ItemRecord]:
    """Per-document records from lm-eval's logged samples for one metric (and filter).

    Pure, so that tests (and a reader) can check the mapping without lm-eval.
    """
    name, wanted = split_metric(metric)
    filters = sorted({str(s.get("filter")) for s in samples})
    if wanted is None:
        if len(filters) > 1:
            raise BadInput(
                f"lm_eval.{task_name}: metric '{metric}' must name a filter, "
                f"one of: {', '.join(filters)} (e.g. '{name},{filters[0]}')"
            )
        wanted = filters[0] if filters else None
    chosen = [s for s in samples if str(s.get("filter")) == wanted]
    if not chosen or name not in chosen[0]:
        have = sorted({k for s in samples for k in s.get("metrics", [])})
        raise BadInput(
            f"lm_eval.{task_name}: no samples for metric '{metric}' "
            f"(filters: {', '.join(filters) or 'none'}; metrics: {', '.join(have) or 'none'})"
        )
    records: list[ItemRecord] = []
    for s in sorted(chosen, key=lambda x: int(x["doc_id"])):
        output = _first(s.get("resps"))
        answer = _first(s.get("filtered_resps"))
        prompt = _first(s.get("arguments"))
        records.append(
            ItemRecord(
                id=f"doc-{int(s['doc_id']):05d}",
                prompt_sha256=hashlib.sha256(
                    json.dumps(prompt, sort_keys=True, default=str).encode()
                ).hexdigest(),
                output="" if output is None else str(output),
                answer=None if answer is None else str(answer),
                expected=str(s.get("target")),
                correct=float(s[name]) == 1.0,
                score=float(s[name]),
            )
        )
    return records


# One lm-eval evaluation at a time in this process: two sides side by side run their suites in
# two threads, and lm-eval is not thread-safe (concurrent first imports of transformers' lazy
# module fail with "no attribute 'AutoTokenizer'"; simple_evaluate reseeds the global random,
# numpy and torch generators). The other side's server waits meanwhile; nothing else does.
_LM_EVAL_LOCK = threading.Lock()


def run_lm_eval(
    base_url: str,
    model: str,
    task: LmEvalTask,
    role: Role,
    *,
    tokenizer_path: Path | None,
    concurrency: int,
    headers: dict[str, str] | None = None,
    seed: int = 0,
    timeout_s: float = 600.0,
) -> SuiteRun:
    """Run one lm-eval task against a runtime; one record per document (`lm_eval.<task>`)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import lm_eval
    from lm_eval.tasks import TaskManager

    start = time.perf_counter()
    endpoint = "chat/completions" if task.chat else "completions"
    model_args: dict[str, Any] = {
        "model": model,
        "base_url": f"{base_url.rstrip('/')}/{endpoint}",
        "num_concurrent": concurrency,
        "max_retries": 2,
        "seed": seed,
        "timeout": int(timeout_s),
    }
    auth = (headers or {}).get("Authorization", "")
    if auth.startswith("Bearer "):
        model_args["auth_token"] = auth[len("Bearer ") :]
    if task.chat:
        model_args["tokenizer_backend"] = "none"
    elif tokenizer_path is not None:
        model_args["tokenizer"] = str(tokenizer_path)
        model_args["tokenizer_backend"] = "huggingface"
        model_args["tokenized_requests"] = False
    else:
        model_args["tokenizer_backend"] = "none"
    # lm-eval's one-at-a-time client (`requests`) reads HTTP_PROXY: a local server is direct
    with (
        _LM_EVAL_LOCK,
        _resolved_include_dir(task) as include,
        http.direct_to_loopback(base_url),
    ):
        try:
            results = lm_eval.simple_evaluate(
                model="local-chat-completions" if task.chat else "local-completions",
                model_args=model_args,
                tasks=[task.task],
                num_fewshot=task.num_fewshot,
                limit=lmeval_limit(task),
                log_samples=True,
                apply_chat_template=task.chat,
                task_manager=TaskManager(include_path=include),
                random_seed=seed,
                fewshot_random_seed=seed,
                bootstrap_iters=0,
            )
        except KeyError as exc:
            raise BadInput(f"lm_eval: unknown task {task.task!r} ({exc})") from exc
        except (ConnectionError, TimeoutError) as exc:
            raise InfrastructureError(f"lm_eval.{task.task}: {exc}") from exc
    if not results or task.task not in (results.get("samples") or {}):
        raise InfrastructureError(f"lm_eval.{task.task}: lm-eval returned no samples")
    records = samples_to_records(results["samples"][task.task], task.metric, task.task)
    return SuiteRun(
        suite=f"lm_eval.{task.task}",
        role=role,
        data_sha256=lm_eval_data_sha256(task),
        params={
            "backend": "local-chat-completions" if task.chat else "local-completions",
            "metric": task.metric,
            "limit": lmeval_limit(task),
            "documents": lm_eval_documents(results, task.task),
            "num_fewshot": task.num_fewshot,
            "seed": seed,
            "concurrency": concurrency,
            "temperature": 0.0,
        },
        items=records,
        wall_s=round(time.perf_counter() - start, 3),
    )


def lm_eval_documents(results: dict[str, Any], name: str) -> int | None:
    """The documents of the task's evaluation split before its limit, as lm-eval counted them
    (`n-samples`; None where this lm-eval does not say): verify's planned count (issue 54)."""
    count = ((results.get("n-samples") or {}).get(name) or {}).get("original")
    return count if isinstance(count, int) and not isinstance(count, bool) else None


class LmEvalRunner:
    """The lm-eval tasks in the quality stage (their entry is in qgate/profile/suites.py)."""

    def data_digests(self, setting: list[LmEvalTask], max_model_len: int | None) -> dict[str, str]:
        return {f"lm_eval.{task.task}": lm_eval_data_sha256(task) for task in setting}

    async def run(self, setting: list[LmEvalTask], ctx: SuiteContext) -> list[SuiteRun]:
        runs = []
        for task in setting:
            run = await asyncio.to_thread(
                run_lm_eval,
                ctx.base_url,
                ctx.model,
                task,
                ctx.role,
                tokenizer_path=ctx.tokenizer_path,
                concurrency=ctx.concurrency,
                headers=ctx.headers,
                seed=ctx.seed,
                timeout_s=ctx.timeout_s,
            )
            runs.append(run)
            ctx.check_alive()
        return runs


SUITE = LmEvalRunner()
