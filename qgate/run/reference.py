"""The reference's life: its signed cache, the candidate preflight, its quality and perf.

The reference's quality results come from the cache when nothing that shapes
them changed; otherwise the reference starts, every suite runs on it and, in
the same life, its perf baseline (qgate/run/plan.py). The machine's fingerprint (the
cache key's) comes in as an argument; where the quality came from (`ReferenceSource`) goes
out with it, for the report.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import NamedTuple

from qgate.attest.keys import public_key_from_pem
from qgate.checkpoint.embedded import cache_root
from qgate.core.progress import StageClock
from qgate.core.redact import redact_env
from qgate.errors import BadInput
from qgate.perf.records import ScenarioRun
from qgate.profile import Profile, QualitySpec
from qgate.profile.side import Side, side
from qgate.profile.suites import entry_of_result
from qgate.quality.cache import CachedReference, ReferenceCache
from qgate.quality.cache_auth import ReferenceProvenance
from qgate.quality.stage import QualityOutput, data_digests, reference_key
from qgate.run.candidate import CandidateResult
from qgate.run.context import RunContext, quality_on, save_raw, started
from qgate.run.perf import compares_to_reference, perf_blocks
from qgate.run.plan import make_plan
from qgate.runtime.engine_env import known as known_env
from qgate.runtime.fingerprint import Fingerprint

__all__ = [
    "ReferenceLife",
    "ReferenceSource",
    "complete",
    "preflight_candidate",
    "reference_cached",
    "reference_key_for",
    "reference_life",
    "reference_perf",
    "store_reference",
    "wants_preflight",
]

log = logging.getLogger("qgate")


def reference_key_for(profile: Profile, fingerprint: Fingerprint | None) -> str:
    """The reference cache key of `profile` on the machine `fingerprint` describes (the
    reference engine's own version, as its engine class declares it)."""
    digests = {d.path: d.sha256 for d in fingerprint.checkpoint} if fingerprint else {}
    reference = side(profile, "reference")
    env = redact_env(reference.env, profile.secrets)
    version = reference.engine_version(fingerprint.packages if fingerprint else {})
    return reference_key(profile, digests, version, env, engine_packages(reference, fingerprint))


def engine_packages(reference: Side, fingerprint: Fingerprint | None) -> dict[str, str] | None:
    """The resolved set of the reference's pinned release: this run's environment, else the
    one last built here (`qgate plan`), else just the pin (a key no cached entry has)."""
    package = reference.launch.package
    if package is None:
        return None
    env = (fingerprint.engine_env(package) if fingerprint else None) or known_env(package)
    return env.packages if env is not None else {"requested": package}


def _reference_cache(
    ctx: RunContext, fingerprint: Fingerprint | None
) -> tuple[ReferenceCache, str]:
    """The reference cache and this run's key in it (on the machine `fingerprint`)."""
    cache = ReferenceCache(
        ctx.opts.cache_dir or cache_root(),
        ctx.signer,
        _trusted_keys(ctx.opts.trust_cache_keys),
        strict=ctx.opts.strict_cache,
    )
    return cache, reference_key_for(ctx.profile, fingerprint)


def reference_cached(ctx: RunContext, fingerprint: Fingerprint | None) -> bool:
    """Whether the cache holds an entry under this run's reference key.

    The entry is only looked at, not trusted: this decides the plan (a preflight,
    when the reference starts), never a verdict; `reference_life` authenticates it.
    """
    cache, key = _reference_cache(ctx, fingerprint)
    return cache.entry_dir(key).exists()


def wants_preflight(ctx: RunContext, fingerprint: Fingerprint | None = None) -> str:
    """How to check the candidate before the reference stage: 'dry', 'start' or 'none'.

    'auto' checks it only when the reference stage will really run.
    """
    plan = make_plan(
        [("candidate", ctx.profile)],
        reference_cached=reference_cached(ctx, fingerprint),
        placement="",
        refresh=ctx.opts.refresh_reference,
    )
    return plan.preflight["candidate"]


def preflight_candidate(ctx: RunContext, how: str = "start") -> None:
    """Check the candidate before the reference stage (raises RuntimeFailure on failure).

    'dry': its command line through the engine's own argument parser, nothing started
    (seconds instead of a start); 'start': start it, check its applied configuration, stop.
    """
    runtime = ctx.new_runtime("candidate")
    if how == "dry" and runtime.can_dry_check():
        log.info("preflight: the candidate's command line through the engine's own parser")
        runtime.dry_check()
        return
    log.info("preflight: starting the candidate once before the reference stage")
    with started(ctx, "candidate", purpose="preflight"):
        pass


class ReferenceSource(NamedTuple):
    """Where the reference's quality results came from: the signed cache (`cached`), or
    this run, and the cache entry's provenance either way (None: not stored, nothing ran)."""

    cached: bool = False
    provenance: ReferenceProvenance | None = None


class ReferenceLife(NamedTuple):
    """What the reference's one life produced."""

    quality: QualityOutput
    perf: list[ScenarioRun] | None  # None: not measured in this life (a cached reference)
    source: ReferenceSource = ReferenceSource()


def reference_life(
    ctx: RunContext, fingerprint: Fingerprint | None, with_perf: bool, clock: StageClock
) -> ReferenceLife:
    """The reference's one life: its quality results, and its perf baseline in the same life.

    From the signed cache when nothing that shapes them changed: then nothing starts,
    and the perf baseline (None here) comes from a perf-only life after the candidates.
    Timed as the stages `reference_quality` (start-up included) and `reference_perf`.
    """

    with ExitStack() as life:
        with clock.stage("reference_quality"):
            cache, key = _reference_cache(ctx, fingerprint)
            hit = None
            if ctx.profile.quality.has_suites() and not ctx.opts.refresh_reference:
                hit = cache.load(key)
            if hit is not None:
                entry, provenance = hit
                log.info(
                    "reference cache hit %s (signed by %s)", key[:12], provenance.signer_keyid[:12]
                )
                out = QualityOutput(
                    role="reference",
                    runs=entry.suite_runs,
                    scores=entry.divergence,
                    effective_config=entry.effective_config,
                    cached=True,
                    passes=entry.passes,
                    speculative=entry.speculative,
                    floor=entry.floor,
                )
                save_raw(ctx, "reference-quality.json", out)
                ctx.probing.quality_known("reference", out)
                return ReferenceLife(out, None, ReferenceSource(True, provenance))
            source = ReferenceSource()
            if not ctx.profile.quality.has_suites():  # a dummy-weights preview: perf only
                out = QualityOutput(role="reference")
                if not with_perf:
                    return ReferenceLife(out, None, source)
                runtime = life.enter_context(started(ctx, "reference"))
            else:
                runtime = life.enter_context(started(ctx, "reference"))
                out = quality_on(ctx, runtime, "reference", None)
                source = store_reference(ctx, fingerprint, out)
        perf: list[ScenarioRun] | None = None
        if with_perf:
            with clock.stage("reference_perf"):
                perf = perf_blocks(ctx, runtime, "reference", out)
    return ReferenceLife(out, perf, source)


def store_reference(
    ctx: RunContext, fingerprint: Fingerprint | None, out: QualityOutput
) -> ReferenceSource:
    """Sign the reference's fresh quality results into the cache; where they came from."""
    cache, key = _reference_cache(ctx, fingerprint)
    value = CachedReference(
        key=key,
        suite_runs=out.runs,
        divergence=out.scores,
        effective_config=out.effective_config,
        passes=out.passes,
        speculative=out.speculative,
        floor=out.floor,
    )
    whole = complete(ctx.profile.quality, out)
    if not whole:
        log.info("reference results not cached: its quality stage stopped early (quality.stop)")
    return ReferenceSource(False, cache.store(key, value, keep=whole))


def _paired(result_id: str) -> bool:
    entry = entry_of_result(result_id)
    return entry is not None and entry.paired


def complete(spec: QualitySpec, out: QualityOutput) -> bool:
    """Whether a reference ran every configured suite to its end (only such are cached)."""
    ran = {r.suite for r in out.runs if not r.partial}
    wanted = {k for k in data_digests(spec, None) if not _paired(k)}
    floored = spec.noise_floor is None or out.floor is not None
    return wanted <= ran and (spec.divergence is None or out.scores is not None) and floored


def reference_perf(
    ctx: RunContext, reference: QualityOutput, results: Sequence[CandidateResult]
) -> list[ScenarioRun]:
    """The reference's perf baseline, once, when some candidate's perf ran and compares to it."""
    if not any(r.perf_runs for r in results) or not compares_to_reference(ctx):
        return []
    with started(ctx, "reference") as runtime:
        return perf_blocks(ctx, runtime, "reference", reference)


def _trusted_keys(paths: Sequence[Path]) -> list[str]:
    """PEM text of each --trust-cache-key file, checked to be a usable public key."""
    out: list[str] = []
    for path in paths:
        try:
            pem = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"--trust-cache-key {path}: cannot read ({exc})") from None
        public_key_from_pem(pem, f"--trust-cache-key {path}")
        out.append(pem)
    return out
