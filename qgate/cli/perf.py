"""`qgate perf`: the perf stage alone against a running endpoint, UNGATED.

    qgate perf --base-url http://127.0.0.1:8000/v1 --input-tokens 1024 --output-tokens 128
    qgate perf profile.yaml --base-url http://127.0.0.1:8000/v1

With a profile, its `perf` section is run; without one, a single fixed
scenario is built from the flags. No quality gate has run, so the output is
marked UNGATED and is never a qgate report.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from qgate.cli.outputs import PerfOutput
from qgate.cli.util import PROGRESS_HELP, TEXT_OR_JSON, emit
from qgate.core.env_names import key_env_problem
from qgate.core.outpaths import check_out_file
from qgate.errors import BadInput, InfrastructureError
from qgate.gates.scenario import scenario_verdicts
from qgate.perf.client import run_loop
from qgate.perf.metrics import summarize
from qgate.perf.runner import run_scenarios
from qgate.perf.table import metrics_table, series_table
from qgate.perf.tokenizer import choose_tokenizer, served_models, server_tokenizes
from qgate.profile import PerfSpec
from qgate.profile.checks import file_problems
from qgate.profile.load import format_path, load_profile

THIN_P99 = 100  # fewer values than this and p99 is about the maximum, not a percentile
UNGATED = "UNGATED: perf stage run alone; no quality gate was checked."


@click.command("perf")
@click.argument("profile", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--base-url",
    required=True,
    help="OpenAI-compatible base URL ending in /v1 (any server with streaming "
    "/v1/completions and /v1/models).",
)
@click.option(
    "--model", default=None, help="Model name to send; default: the first of GET /v1/models."
)
@click.option(
    "--tokenizer",
    default=None,
    help="Local folder with the served model's Hugging Face tokenizer, for exact-length "
    "prompts. Default: the server's POST /tokenize (vLLM), else the served model's folder "
    "when /v1/models names one on this machine.",
)
@click.option(
    "--api-key-env", default=None, help="Name of the env var holding the API key (never the key)."
)
@click.option(
    "--input-tokens",
    type=int,
    default=1024,
    show_default=True,
    help="Prompt length in tokens (without a profile).",
)
@click.option(
    "--output-tokens",
    type=int,
    default=128,
    show_default=True,
    help="Forced output length in tokens (without a profile).",
)
@click.option(
    "--concurrency",
    type=int,
    multiple=True,
    help="Requests in flight, closed loop (without a profile); repeat to sweep levels. Default 1.",
)
@click.option(
    "--requests",
    type=int,
    default=None,
    help=f"Measured requests per level (without a profile). Default: max({THIN_P99}, 2 x the "
    f"largest concurrency), enough for the p99 printed; with fewer than {THIN_P99} the "
    "output notes that p99 is not meaningful.",
)
@click.option(
    "--warmup",
    type=int,
    default=2,
    show_default=True,
    help="Unmeasured requests before each level (without a profile).",
)
@click.option(
    "--gpus",
    type=int,
    default=1,
    show_default=True,
    help="Accelerators serving, for tok/s per GPU.",
)
@click.option(
    "--format",
    "fmt",
    type=TEXT_OR_JSON,
    default="text",
    show_default=True,
    help="A table for people, or one JSON object with every request record and the metrics "
    "(each run carries t0_unix_ns, the wall-clock time of its zero); notes go to stderr then.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the output (in --format) to this file instead of stdout.",
)
@click.option(
    "--progress/--no-progress",
    default=True,
    show_default=True,
    help=PROGRESS_HELP,
)
def perf(
    profile: Path | None,
    base_url: str,
    model: str | None,
    tokenizer: str | None,
    api_key_env: str | None,
    input_tokens: int,
    output_tokens: int,
    concurrency: tuple[int, ...],
    requests: int | None,
    warmup: int,
    gpus: int,
    fmt: str,
    out: Path | None,
    progress: bool,
) -> None:
    """Run perf scenarios against a running endpoint and print the metrics (UNGATED).

    PROFILE (optional): run its `perf` section; without one, a single fixed
    scenario is built from the flags. Prompts are exact-length token ids, so
    the served model's tokenizer is needed (see --tokenizer). TTFT is timed
    from the moment the request is written on an open connection: connection
    set-up is recorded apart (connect_ns) and counts as client queueing.
    """
    if out is not None:
        check_out_file(out, "--out")
    if api_key_env is not None and key_env_problem(api_key_env):
        raise BadInput(f"--api-key-env: {key_env_problem(api_key_env)}")
    if profile is not None:
        # Only the perf section's files matter here; the model may live on the server's machine.
        loaded = load_profile(profile, check_files=False)
        if loaded.perf is None:
            raise BadInput(f"{profile}: the profile has no perf section")
        for path, message in file_problems(loaded):
            if path[0] == "perf":
                raise BadInput(f"{profile} {format_path(path)}: {message}")
        spec = loaded.perf
    else:
        levels: int | list[int] = (
            list(concurrency) if len(concurrency) > 1 else (concurrency[0] if concurrency else 1)
        )
        if requests is None:
            requests = max(THIN_P99, 2 * max(concurrency, default=1))
        spec = PerfSpec.model_validate(
            {
                "scenarios": [
                    {
                        "name": f"fixed-{input_tokens}-{output_tokens}",
                        "input_tokens": input_tokens,
                        "output_tokens": output_tokens,
                        "concurrency": levels,
                        "requests": requests,
                        "warmup": warmup,
                    }
                ],
                "compare_to": "none",
            }
        )
    headers: dict[str, str] | None = None
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise BadInput(f"environment variable {api_key_env} is not set")
        headers = {"Authorization": f"Bearer {key}"}

    async def go() -> list[Any]:
        name, root = model, None
        try:
            entries = await served_models(base_url, headers)
        except InfrastructureError:
            if model is None:
                raise
            entries = []
        if name is None:
            name = str(entries[0]["id"])
        root = next(
            (str(e.get("root")) for e in entries if e["id"] == name and e.get("root")), None
        )
        tok = choose_tokenizer(
            base_url, name, root, tokenizer, await server_tokenizes(base_url, name, headers)
        )
        return await run_scenarios(
            base_url,
            name,
            spec,
            "standalone",
            gpus=gpus,
            headers=headers,
            progress=progress,
            tokenize=tok,
        )

    runs = run_loop(go())
    metrics = [summarize(r, spec.slo) for r in runs]
    notes = []
    for m in metrics:
        if 0 < m.ttft_ms.count < THIN_P99:
            notes.append(
                f"note {m.scenario}: {m.ttft_ms.count} requests; a p99 of fewer than "
                f"{THIN_P99} values is not meaningful (--requests {THIN_P99} or more)"
            )
        if m.check_failed:
            notes.append(
                f"note {m.scenario}: {m.check_failed} completed requests failed their stream "
                "check (column chk, marked *) and are included in the figures above"
            )
    failed = [v for r in runs for v in scenario_verdicts(spec, r) if not v.passed]
    notes.extend(f"FAIL {v.gate}: {v.reason}" for v in failed)
    if fmt == "json":
        doc = PerfOutput(runs=runs, metrics=metrics, notes=notes)
        click.echo(UNGATED, err=True)
        for line in notes:
            click.echo(line, err=True)
        emit(json.dumps(doc.model_dump(mode="json")) + "\n", out)
    else:
        parts = [UNGATED, metrics_table(metrics)]
        parts.extend("\n" + series for series in filter(None, map(series_table, metrics)))
        emit("\n".join([*parts, *notes]) + "\n", out)
    if failed:
        raise click.exceptions.Exit(1)
