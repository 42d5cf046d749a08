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

from qgate.errors import BadInput, InfrastructureError


async def _first_model(base_url: str, headers: dict[str, str] | None) -> str:
    import aiohttp

    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as s,
            s.get(base_url.rstrip("/") + "/models", headers=headers) as r,
        ):
            r.raise_for_status()
            data = await r.json()
        return str(data["data"][0]["id"])
    except (aiohttp.ClientError, TimeoutError, KeyError, IndexError, ValueError) as e:
        raise InfrastructureError(f"cannot list models at {base_url}/models: {e}") from e


@click.command("perf")
@click.argument("profile", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--base-url", required=True, help="OpenAI-compatible base URL ending in /v1.")
@click.option("--model", default=None, help="Model name; the first of /v1/models if omitted.")
@click.option("--api-key-env", default=None, help="Env var holding the API key (never the key).")
@click.option("--input-tokens", type=int, default=1024, show_default=True, help="No profile.")
@click.option("--output-tokens", type=int, default=128, show_default=True, help="No profile.")
@click.option("--concurrency", type=int, multiple=True, help="No profile; repeat to sweep.")
@click.option("--requests", type=int, default=5, show_default=True, help="No profile.")
@click.option("--warmup", type=int, default=2, show_default=True, help="No profile.")
@click.option("--gpus", type=int, default=1, show_default=True, help="For tokens/s per GPU.")
@click.option("--json-out", type=click.Path(path_type=Path), help="Write runs and metrics here.")
@click.option("--progress/--no-progress", default=True, help="Live progress on a terminal.")
def perf(
    profile: Path | None,
    base_url: str,
    model: str | None,
    api_key_env: str | None,
    input_tokens: int,
    output_tokens: int,
    concurrency: tuple[int, ...],
    requests: int,
    warmup: int,
    gpus: int,
    json_out: Path | None,
    progress: bool,
) -> None:
    """Run perf scenarios against an endpoint and print the metrics (UNGATED)."""
    from qgate.outpaths import check_out_file
    from qgate.perf.checks import scenario_verdicts
    from qgate.perf.client import run_loop
    from qgate.perf.metrics import summarize
    from qgate.perf.runner import run_scenarios
    from qgate.perf.table import metrics_table
    from qgate.profile import PerfSpec
    from qgate.profile_checks import key_env_problem

    if json_out is not None:
        check_out_file(json_out, "--json-out")
    if api_key_env is not None and key_env_problem(api_key_env):
        raise BadInput(f"--api-key-env: {key_env_problem(api_key_env)}")
    if profile is not None:
        from qgate.profile_loader import load_profile

        # Only the perf section's files matter here; the model may live on the server's machine.
        loaded = load_profile(profile, check_files=False)
        if loaded.perf is None:
            raise BadInput(f"{profile}: the profile has no perf section")
        from qgate.profile_checks import file_problems
        from qgate.profile_loader import format_path

        for path, message in file_problems(loaded):
            if path[0] == "perf":
                raise BadInput(f"{profile} {format_path(path)}: {message}")
        spec = loaded.perf
    else:
        levels: int | list[int] = (
            list(concurrency) if len(concurrency) > 1 else (concurrency[0] if concurrency else 1)
        )
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
        name = model or await _first_model(base_url, headers)
        return await run_scenarios(
            base_url, name, spec, "candidate", gpus=gpus, headers=headers, progress=progress
        )

    runs = run_loop(go())
    metrics = [summarize(r, spec.slo) for r in runs]
    click.echo("UNGATED: perf stage run alone; no quality gate was checked.")
    click.echo(metrics_table(metrics))
    failed = [v for r in runs for v in scenario_verdicts(spec, r) if not v.passed]
    for v in failed:
        click.echo(f"FAIL {v.gate}: {v.reason}")
    if json_out is not None:
        doc = {
            "ungated": True,
            "runs": [r.model_dump(mode="json") for r in runs],
            "metrics": [m.model_dump(mode="json") for m in metrics],
        }
        from qgate.files import atomic_write

        atomic_write(json_out, json.dumps(doc).encode())
    if failed:
        raise click.exceptions.Exit(1)
