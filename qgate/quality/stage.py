"""The quality stage on one runtime: every configured suite, and the reference cache around it.

The suites are those of the registry (qgate/profile/suites.py), run in its
order. The reference runs every suite and, for divergence (the one paired
step, which it runs first), generates and scores the continuations; the
candidate runs the same suites and scores the reference's continuations. Reference results are
cached under a key of everything that shapes them (see qgate/quality/cache.py),
so an unchanged reference is not recomputed when only the candidate changes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from qgate.core import progress
from qgate.core.records import Record, Role
from qgate.core.serving import EffectiveConfig, Runtime
from qgate.profile import DivergenceSuite, Profile, QualitySpec
from qgate.profile.reuse_plan import reuse_suites
from qgate.profile.side import side
from qgate.profile.spec_plan import cross_checked, speculates, speculative_policy
from qgate.profile.suites import SuiteEntry, configured
from qgate.quality.agent_data import PREFIX_FROM
from qgate.quality.asked_again import split_setting
from qgate.quality.board import Board
from qgate.quality.cache import reference_cache_key
from qgate.quality.divergence_data import ScoreSet
from qgate.quality.divergence_suite import build_divergence_run
from qgate.quality.floor_run import ask_again
from qgate.quality.noise_floor import FloorRecords
from qgate.quality.records import SuiteRun
from qgate.quality.reuse_pass import run_passes, suite_with_counters
from qgate.quality.reuse_records import PassRun, PassSuite
from qgate.quality.runner import PairedRunner, SuiteContext, SuiteRunner
from qgate.quality.spec_counters import SpecSnapshot, snapshot
from qgate.runtime.causes import blamed_on

log = logging.getLogger("qgate")

__all__ = [
    "QualityOutput",
    "data_digests",
    "evaluate",
    "max_model_len_of",
    "reference_key",
    "runtime_headers",
]


class QualityOutput(Record):
    """What one runtime produced in the quality stage."""

    role: Role = Field(description="Which runtime.")
    runs: list[SuiteRun] = Field(default_factory=list, description="Exact-answer suite runs.")
    scores: ScoreSet | None = Field(default=None, description="Divergence scores, if configured.")
    effective_config: EffectiveConfig | None = Field(
        default=None, description="What the runtime reported about itself."
    )
    cached: bool = Field(default=False, description="Served from the reference cache.")
    passes: list[PassRun] = Field(
        default_factory=list,
        description="quality.reuse: the cold pass's counters, then each pass's records.",
    )
    speculative: list[SpecSnapshot] = Field(
        default_factory=list,
        description="Speculative-decoding counters before the first suite and after each "
        "(a profile with an acceptance gate or a speculating side; else empty).",
    )
    floor: FloorRecords | None = Field(
        default=None,
        description="quality.noise_floor: the reference's second asks of its own items "
        "(the reference only).",
    )


def runtime_headers(runtime: Runtime) -> dict[str, str]:
    """Auth headers of an endpoint (API key from its env var); none for a started server."""
    return dict(runtime.headers())


def max_model_len_of(profile: Profile, role: Role) -> int | None:
    """The context length the profile asks for (shared args, then the role's override)."""
    return side(profile, role).max_model_len


def data_digests(spec: QualitySpec, max_model_len: int | None) -> dict[str, str]:
    """Result id -> sha256 of what defines its prompts (the reference cache keys on these)."""
    out: dict[str, str] = {}
    for entry, setting in configured(spec):
        out.update(entry.load().data_digests(setting, max_model_len))
    return out


# The reference's divergence scores, or a call that waits for them (the candidate's quality
# running beside the reference's: qgate/run/together.py).
ReferenceScores = ScoreSet | Callable[[], ScoreSet | None] | None


def asking_order(spec: QualitySpec, role: Role) -> list[tuple[SuiteEntry, Any]]:
    """The configured suites in the order `role` asks them.

    The suites whose items the reuse passes ask again run last, right before the passes: a
    suite in between (the context ladder's long prompts) would evict their cold pass's KV
    from the device cache and the host tier before the warm pass asks for it (the KV-offload
    profile on an H100, 2026-12-07: the candidate's warm pass found 0.0% in its host tier).
    The reference runs the paired step first, so that a candidate beside it never waits
    long; with `stop: verdict` the candidate does too: divergence is the cheapest suite to
    settle a FAIL, and everything after it is then skipped.
    """
    again_of = [suite for suite, _ in reuse_suites(spec)]
    suites = sorted(configured(spec), key=lambda pair: any(map(pair[0].owns, again_of)))
    if role == "reference" or spec.stop == "verdict":
        suites = sorted(suites, key=lambda pair: not pair[0].paired)
    return suites


async def _paired(
    runner: PairedRunner, setting: object, ctx: SuiteContext, reference: ReferenceScores
) -> ScoreSet:
    if ctx.role == "reference":
        return await runner.reference(setting, ctx)
    if callable(reference):
        reference = await asyncio.to_thread(reference)
    if reference is None:
        raise ValueError("the candidate's divergence needs the reference's scores")
    scores = await runner.candidate(reference, ctx)
    if ctx.board is not None and ctx.board.enabled and isinstance(setting, DivergenceSuite):
        run = build_divergence_run(reference, scores)
        ctx.board.post_divergence(setting, run)
    return scores


async def _evaluate(
    runtime: Runtime,
    spec: QualitySpec,
    role: Role,
    *,
    max_model_len: int | None,
    timeout_s: float,
    reference_scores: ReferenceScores,
    tokenizer_path: Path | None,
    on_scores: Callable[[ScoreSet], None] | None,
    board: Board | None,
    spec_snaps: list[SpecSnapshot] | None = None,
    cross_check: bool = False,
) -> tuple[list[SuiteRun], ScoreSet | None, list[PassRun], FloorRecords | None]:
    ctx = SuiteContext(
        role=role,
        base_url=runtime.base_url,
        model=runtime.served_model,
        headers=runtime_headers(runtime),
        concurrency=spec.concurrency,
        seed=spec.seed,
        max_model_len=max_model_len,
        timeout_s=timeout_s,
        tokenizer_path=tokenizer_path,
        check_alive=runtime.check_alive,
        board=board,
        cross_check=cross_check and role == "candidate",
    )
    runs: list[SuiteRun] = []
    scores: ScoreSet | None = None
    passes: list[PassRun] = []
    cold: list[PassSuite] = []
    again: list[tuple[str, object, SuiteRunner]] = []  # what the reuse passes ask again
    suites = asking_order(spec, role)
    t0 = time.monotonic()
    if spec_snaps is not None:
        spec_snaps.append(await snapshot(role, "start", ctx.base_url, ctx.headers))
    for entry, setting in suites:
        if board is not None and (why := board.halted(role)):
            log.info("%s: %s not run: %s", role, entry.key, why)
            continue
        with progress.suite(role, entry.key):
            if entry.paired:  # divergence: the one step that needs the reference's results
                scores = await _paired(entry.load(), setting, ctx, reference_scores)
                if on_scores is not None and role == "reference":
                    on_scores(scores)
            else:
                runner: SuiteRunner = entry.load()
                if spec.reuse is None:
                    runs += await runner.run(setting, ctx)
                else:  # each result on its own, counters around it: the cold pass
                    runs += await _cold(runner, entry.key, setting, ctx, spec, cold, again)
        if spec_snaps is not None:
            spec_snaps.append(
                await snapshot(role, f"after {entry.key}", ctx.base_url, ctx.headers, t0)
            )
        runtime.check_alive()
    if spec.reuse is not None and again and not (board is not None and board.halted(role)):
        passes.append(PassRun(name="cold", role=role, prepare="the quality stage", suites=cold))
        with progress.suite(role, "reuse passes"):
            passes += await run_passes(spec, ctx, again)
        if spec_snaps is not None:
            spec_snaps.append(
                await snapshot(role, "after reuse passes", ctx.base_url, ctx.headers, t0)
            )
        runtime.check_alive()
    floor = None
    halted = board is not None and bool(board.halted(role))
    if role == "reference" and spec.noise_floor is not None and not halted:
        floor = await ask_again(spec, ctx, scores)
    return runs, scores, passes, floor


async def _cold(
    runner: SuiteRunner,
    key: str,
    setting: object,
    ctx: SuiteContext,
    spec: QualitySpec,
    cold: list[PassSuite],
    again: list[tuple[str, object, SuiteRunner]],
) -> list[SuiteRun]:
    """A suite under quality.reuse: result by result, the chosen ones with their counters."""
    parts = split_setting(key, setting)
    if not parts:
        return await runner.run(setting, ctx)
    chosen = {suite for suite, _ in reuse_suites(spec)}
    out: list[SuiteRun] = []
    for suite, part in parts:
        if suite not in chosen:
            out += await runner.run(part, ctx)
            continue
        got, before, after, usage = await suite_with_counters(runner, part, ctx)
        out += got
        cold.append(PassSuite(suite=suite, before=before, after=after, usage=usage))
        again.append((suite, part, runner))
    return out


def evaluate(
    runtime: Runtime,
    profile: Profile,
    role: Role,
    *,
    tokenizer_path: Path | None,
    reference_scores: ReferenceScores = None,
    on_scores: Callable[[ScoreSet], None] | None = None,
    board: Board | None = None,
) -> QualityOutput:
    """Run every configured suite against a started runtime.

    The reference runs the paired divergence step first and hands its scores to
    `on_scores` at once, so a candidate's quality running beside it gets them early.
    """
    effective = runtime.effective_config()
    max_len = effective.max_model_len or max_model_len_of(profile, role)
    spec_snaps: list[SpecSnapshot] | None = None
    if speculative_policy(profile) is not None or speculates(profile, role):
        spec_snaps = []
    with blamed_on(runtime):
        runs, scores, passes, floor = asyncio.run(
            _evaluate(
                runtime,
                profile.quality,
                role,
                max_model_len=max_len,
                timeout_s=profile.engine.request_timeout_s,
                reference_scores=reference_scores,
                tokenizer_path=tokenizer_path,
                on_scores=on_scores,
                board=board,
                spec_snaps=spec_snaps,
                cross_check=cross_checked(profile),
            )
        )
    return QualityOutput(
        role=role,
        runs=runs,
        scores=scores,
        effective_config=effective,
        passes=passes,
        speculative=spec_snaps or [],
        floor=floor,
    )


def reference_key(
    profile: Profile,
    checkpoint_digests: Mapping[str, str],
    engine_version: str | None,
    redacted_env: Mapping[str, str],
    engine_packages: Mapping[str, str] | None = None,
) -> str:
    """The reference cache key: checkpoint, engine args/env/version, data, generation.

    `engine_version` is the reference engine's own (`Side.engine_version`); `engine_packages`
    the resolved set of its pinned release's environment (`engine.package`), if any."""
    spec = profile.quality
    reference = side(profile, "reference")
    generation: dict[str, Any] = {
        "temperature": 0.0,
        "seed": spec.seed,
        "endpoint": profile.reference.endpoint.base_url if profile.reference.endpoint else None,
        "emulate_weights": (
            profile.reference.emulate_weights.model_dump(mode="json")
            if profile.reference.emulate_weights
            else None
        ),
    }
    if spec.structured is not None:
        # a cut structured output is graded by PREFIX_FROM's rule (agent_data.py): an entry
        # graded before it is not reused, as verify re-grades its records by that rule
        generation["structured_grading"] = PREFIX_FROM
    return reference_cache_key(
        checkpoint_digests=checkpoint_digests,
        engine_args={"kind": reference.kind, **reference.launch_args},
        engine_env=redacted_env,
        engine_version=engine_version,
        data_digests=data_digests(spec, max_model_len_of(profile, "reference")),
        generation=generation,
        quality=spec,
        engine_packages=engine_packages,
    )
