"""The perf stage of one life: every perf scenario on a started runtime, in blocks.

Correctness under load rides along: math items the reference answered correctly in its
quality stage are asked again between every scenario's requests and graded (`probe_set`;
the gate per scenario is qgate/gates/probes.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from qgate.core.records import Role
from qgate.core.serving import Runtime
from qgate.perf.client import run_loop
from qgate.perf.probes import Probe
from qgate.perf.records import ScenarioRun
from qgate.perf.runner import run_scenarios
from qgate.perf.salts import salt_scope
from qgate.perf.shaped_probes import shape_budgets
from qgate.perf.workloads import BLOCK
from qgate.profile.engine_checks import served
from qgate.profile.probe_count import blocks_of
from qgate.quality.client import SuiteClient
from qgate.quality.data import evals_root, read_eval_file
from qgate.quality.math_set import PREAMBLE, PROBED
from qgate.quality.math_suite import fit_to_tokens
from qgate.quality.stage import QualityOutput, runtime_headers
from qgate.run.context import RunContext, save_raw
from qgate.run.life_probes import math_probes, probe_params
from qgate.runtime.causes import blamed_on

__all__ = ["compares_to_reference", "perf_blocks", "perf_on", "preambles", "probe_set"]

log = logging.getLogger("qgate")


def probe_set(
    ctx: RunContext, quality: QualityOutput, reference: QualityOutput, preamble: str | None = None
) -> list[Probe]:
    """The perf probes of one side: `perf.probes.items` math items (short form, or the long
    form behind `preamble`), the first the reference answered correctly in its quality stage
    (so a lost one can show), with this runtime's quality-stage answers and each item's known
    answer. Both sides get the same items because both read the reference's records."""
    perf = ctx.profile.perf
    if perf is None or not any(r.suite == PROBED for r in reference.runs):
        return []
    return math_probes(ctx.profile, quality, reference, perf.probes.items, preamble)


async def preambles(client: SuiteClient, budgets: Mapping[str, int]) -> dict[int, str]:
    """The preamble cut to each budget, at most that many tokens at a line boundary (repeated
    first where it is shorter: a scenario may serve more than its ~13K tokens). The same on
    both sides: the same tokenizer cuts it."""
    text = read_eval_file(evals_root() / PREAMBLE).decode("utf-8")
    out: dict[int, str] = {}
    for tokens in sorted(set(budgets.values())):
        ids = await client.tokenize(text)
        repeat = max(1, -(-tokens // max(len(ids), 1)))
        whole = "\n".join([text.rstrip()] * repeat) + "\n"
        out[tokens], _ = await fit_to_tokens(client, whole, tokens)
    return out


async def _shaped(
    ctx: RunContext,
    runtime: Runtime,
    headers: dict[str, str],
    quality: QualityOutput,
    reference: QualityOutput,
) -> dict[str, list[Probe]]:
    """The probes of the scenarios that ask them at their prompt length (perf.probes.shaped):
    the same items behind a preamble of each scenario's budget."""
    budgets = shape_budgets(ctx.profile)
    if not budgets:
        return {}
    async with SuiteClient(
        runtime.base_url,
        runtime.served_model,
        headers=headers,
        timeout_s=ctx.profile.engine.request_timeout_s,
    ) as client:
        cut = await preambles(client, budgets)
    return {name: probe_set(ctx, quality, reference, cut[b]) for name, b in budgets.items()}


def perf_on(
    ctx: RunContext,
    runtime: Runtime,
    role: Role,
    quality: QualityOutput,
    save: bool = True,
    block: int = 0,
    reference: QualityOutput | None = None,
) -> list[ScenarioRun]:
    """Every perf scenario on one started runtime; raw records saved at once (unless the
    caller saves them with other blocks'). Block `block` draws its own prompts. The probes
    are picked from `reference`'s quality records (this runtime's own when None: the
    reference side)."""
    spec = ctx.profile.perf
    assert spec is not None
    if quality.effective_config is None:  # a preview's reference starts only for perf
        quality.effective_config = runtime.effective_config()
    # The same event loop (uvloop when installed) as `qgate perf`: the fidelity measured
    # by perf/bench_client_fidelity.py is the fidelity shipped.
    picked = reference or quality
    probes = probe_set(ctx, quality, picked)
    headers = runtime_headers(runtime)
    salts = "cache_salt" in served(ctx.profile.engine_of(role))  # qgate/perf/salts.py

    async def scenarios() -> list[ScenarioRun]:
        shaped = await _shaped(ctx, runtime, headers, quality, picked) if probes else {}
        return await run_scenarios(
            runtime.base_url,
            runtime.served_model,
            spec,
            role,
            gpus=ctx.profile.target.count,
            headers=headers,
            metric_names=runtime.metrics,
            probes=probes,
            probe_params=probe_params(ctx.profile),
            progress=ctx.opts.progress,
            timeout_s=ctx.profile.engine.request_timeout_s,
            shaped=shaped,
            salt=salt_scope(role, ctx.round, block) if salts else None,
        )

    token = BLOCK.set(block)
    try:
        with blamed_on(runtime):
            runs = run_loop(scenarios())
    finally:
        BLOCK.reset(token)
    if block or ctx.round:  # tagged with its block and its perf round (ctx.round)
        runs = [r.model_copy(update={"block": block, "round": ctx.round}) for r in runs]
    if save:
        save_raw(ctx, f"{role}-perf.json", runs)
    return runs


def perf_blocks(
    ctx: RunContext,
    runtime: Runtime,
    role: Role,
    quality: QualityOutput,
    earlier: Sequence[ScenarioRun] = (),
    reference: QualityOutput | None = None,
) -> list[ScenarioRun]:
    """perf.blocks blocks of every scenario on one runtime in one life (in sequence: the
    blocks' spread covers the drift within a life, not between the two lives). The raw file
    keeps the `earlier` rounds' runs of this side before them."""
    runs: list[ScenarioRun] = []
    blocks = blocks_of(ctx.profile, together=False)
    for block in range(blocks):
        if blocks > 1:
            log.info("perf block %d/%d: %s", block + 1, blocks, role)
        runs += perf_on(ctx, runtime, role, quality, save=False, block=block, reference=reference)
        save_raw(ctx, f"{role}-perf.json", [*earlier, *runs])
    return runs


def compares_to_reference(ctx: RunContext) -> bool:
    """The candidate's speed is compared with the reference's (not a published baseline)."""
    return ctx.profile.perf is not None and ctx.profile.perf.compare_to == "reference"
