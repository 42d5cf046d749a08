"""The quality stage on one runtime: every configured suite, and the reference cache around it.

The reference runs every suite and, for divergence, generates and scores the
continuations; the candidate runs the same suites and scores the reference's
continuations. Reference results are cached under a key of everything that
shapes them (see qgate/quality/cache.py), so an unchanged reference is not
recomputed when only the candidate changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from qgate.models import Record, Role
from qgate.profile import Profile, QualitySpec
from qgate.quality.divergence_data import ScoreSet
from qgate.quality.records import SuiteRun
from qgate.runtime.base import EffectiveConfig, Runtime

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


def runtime_headers(runtime: Runtime) -> dict[str, str]:
    """Auth headers of an endpoint (API key from its env var); none for a started server."""
    headers = getattr(runtime, "headers", None)
    return dict(headers()) if callable(headers) else {}


def max_model_len_of(profile: Profile, role: Role) -> int | None:
    """The context length the profile asks for (shared args, then the role's override)."""
    value = {**profile.engine_of(role).args, **getattr(profile, role).args}.get("max_model_len")
    return int(value) if isinstance(value, int | float | str) and str(value).isdigit() else None


def data_digests(spec: QualitySpec, max_model_len: int | None) -> dict[str, str]:
    """Suite id -> sha256 of what defines its prompts (the reference cache keys on these)."""
    from qgate.quality.divergence_data import load_corpus
    from qgate.quality.lmeval_suite import lm_eval_data_sha256
    from qgate.quality.math_suite import math_data_sha256
    from qgate.quality.recall_suite import recall_data_sha256

    out: dict[str, str] = {}
    if spec.math is not None:
        for form in spec.math.prompts:
            out[f"math.{form}"] = math_data_sha256(spec.math, form, max_model_len=max_model_len)
    if spec.recall is not None:
        for n in spec.recall.context_tokens:
            out[f"recall.{n}"] = recall_data_sha256(spec.recall, n, max_model_len=max_model_len)
    if spec.divergence is not None:
        out["divergence"] = load_corpus(spec.divergence.corpus, spec.divergence.sequences)[1]
    for task in spec.lm_eval:
        out[f"lm_eval.{task.task}"] = lm_eval_data_sha256(task)
    return out


async def _evaluate(
    runtime: Runtime,
    spec: QualitySpec,
    role: Role,
    *,
    max_model_len: int | None,
    timeout_s: float,
    reference_scores: ScoreSet | None,
    tokenizer_path: Path | None,
) -> tuple[list[SuiteRun], ScoreSet | None]:
    from qgate.quality import divergence_suite
    from qgate.quality.lmeval_suite import run_lm_eval
    from qgate.quality.math_suite import run_math
    from qgate.quality.recall_suite import run_recall

    url, model, headers = runtime.base_url, runtime.served_model, runtime_headers(runtime)
    common: dict[str, Any] = {
        "concurrency": spec.concurrency,
        "seed": spec.seed,
        "max_model_len": max_model_len,
        "headers": headers,
        "timeout_s": timeout_s,
    }
    runs: list[SuiteRun] = []
    if spec.math is not None:
        runs += await run_math(url, model, spec.math, role, **common)
        runtime.check_alive()
    if spec.recall is not None:
        runs += await run_recall(url, model, spec.recall, role, **common)
        runtime.check_alive()
    scores: ScoreSet | None = None
    if spec.divergence is not None:
        if role == "reference":
            scores = await divergence_suite.reference_scores(
                spec.divergence, url, model,
                concurrency=spec.concurrency, seed=spec.seed, timeout_s=timeout_s,
            )  # fmt: skip
        else:
            if reference_scores is None:
                raise ValueError("the candidate's divergence needs the reference's scores")
            scores = await divergence_suite.candidate_scores(
                reference_scores, url, model, concurrency=spec.concurrency, timeout_s=timeout_s
            )
        runtime.check_alive()
    for task in spec.lm_eval:
        runs.append(
            await asyncio.to_thread(
                run_lm_eval, url, model, task, role,
                tokenizer_path=tokenizer_path, concurrency=spec.concurrency,
                headers=headers, seed=spec.seed, timeout_s=timeout_s,
            )  # fmt: skip
        )
        runtime.check_alive()
    return runs, scores


def evaluate(
    runtime: Runtime,
    profile: Profile,
    role: Role,
    *,
    tokenizer_path: Path | None,
    reference_scores: ScoreSet | None = None,
) -> QualityOutput:
    """Run every configured suite against a started runtime."""
    effective = runtime.effective_config()
    max_len = effective.max_model_len or max_model_len_of(profile, role)
    from qgate.runtime.causes import blamed_on

    with blamed_on(runtime):
        runs, scores = asyncio.run(
            _evaluate(
                runtime,
                profile.quality,
                role,
                max_model_len=max_len,
                timeout_s=profile.engine.request_timeout_s,
                reference_scores=reference_scores,
                tokenizer_path=tokenizer_path,
            )
        )
    return QualityOutput(role=role, runs=runs, scores=scores, effective_config=effective)


def reference_key(
    profile: Profile,
    checkpoint_digests: Mapping[str, str],
    engine_version: str | None,
    redacted_env: Mapping[str, str],
) -> str:
    """The reference cache key: checkpoint, engine args/env/version, data, generation."""
    from qgate.quality.cache import reference_cache_key

    spec = profile.quality
    engine = profile.engine_of("reference")
    args = {**engine.args, **profile.reference.args}
    return reference_cache_key(
        checkpoint_digests=checkpoint_digests,
        engine_args={"kind": engine.kind, **args},
        engine_env=redacted_env,
        engine_version=engine_version,
        data_digests=data_digests(spec, max_model_len_of(profile, "reference")),
        generation={
            "temperature": 0.0,
            "seed": spec.seed,
            "endpoint": profile.reference.endpoint.base_url if profile.reference.endpoint else None,
            "emulate_weights": (
                profile.reference.emulate_weights.model_dump(mode="json")
                if profile.reference.emulate_weights
                else None
            ),
        },
        quality=spec,
    )
