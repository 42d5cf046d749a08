"""The reference cache: reuse the reference's quality results when nothing it depends on changed.

An entry lives in `<cache_dir>/reference/<key>/` as `reference.json` and
`reference.json.sha256` (the payload's sha256). The key is a sha256 over a
canonical JSON of everything that can change the reference's answers:
checkpoint file digests, reference engine arguments and environment, engine
version, suite data digests, generation parameters, and the parts of the
quality spec that shape generation. Gate limits are left out on purpose:
tightening a limit must not force the reference to be recomputed.

A corrupt entry (unreadable, bad JSON, wrong schema, digest or key mismatch)
is logged, removed and treated as a miss.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from qgate.models import Record
from qgate.profile import QualitySpec
from qgate.quality.divergence_suite import ScoreSet
from qgate.quality.records import SuiteRun
from qgate.report.files import atomic_write
from qgate.runtime.base import EffectiveConfig

log = logging.getLogger(__name__)

CACHE_FORMAT = 1
PAYLOAD = "reference.json"

# Policy fields that decide verdicts but never what the reference generates.
_GATE_FIELDS = frozenset(
    {
        "min_accuracy",
        "max_drop",
        "max_flips",
        "significance",
        "alpha",
        "power",
        "max_mean_kld",
        "max_p99_kld",
        "max_max_kld",
        "min_top1_agreement",
    }
)


class CachedReference(Record):
    """Everything the reference produced for the quality stage."""

    format: int = Field(default=CACHE_FORMAT, description="Cache entry format version.")
    key: str = Field(description="The cache key this entry was stored under.")
    suite_runs: list[SuiteRun] = Field(default_factory=list, description="Reference suite runs.")
    divergence: ScoreSet | None = Field(
        default=None, description="Reference continuations and their top-k scores."
    )
    effective_config: EffectiveConfig | None = Field(
        default=None, description="What the reference server reported about itself."
    )
    key_inputs: dict[str, Any] = Field(
        default_factory=dict, description="The canonical key inputs, to explain a miss."
    )


def canonical_json(value: Any) -> bytes:
    """Deterministic JSON: sorted keys, no whitespace, paths and sets normalized."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default
    ).encode("utf-8")


def _default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"not JSON serializable for a cache key: {type(value).__name__}")


def generation_view(spec: QualitySpec) -> dict[str, Any]:
    """The quality spec without gate limits: only what shapes the reference's outputs."""
    view: dict[str, Any] = _strip(spec.model_dump(mode="json"))
    return view


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k not in _GATE_FIELDS}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def reference_key_inputs(
    *,
    checkpoint_digests: Mapping[str, str],
    engine_args: Mapping[str, Any],
    engine_env: Mapping[str, str],
    engine_version: str | None,
    data_digests: Mapping[str, str],
    generation: Mapping[str, Any],
    quality: QualitySpec,
) -> dict[str, Any]:
    """The canonical inputs of the reference cache key (kept in the entry to explain misses).

    `engine_args`/`engine_env` are the reference's effective arguments and
    environment (redacted values are fine: redaction is deterministic);
    `data_digests` maps suite id to its data sha256; `generation` holds
    request parameters not in the spec (e.g. temperature, max_tokens).
    """
    return {
        "format": CACHE_FORMAT,
        "checkpoint": dict(checkpoint_digests),
        "engine_args": dict(engine_args),
        "engine_env": dict(engine_env),
        "engine_version": engine_version,
        "data": dict(data_digests),
        "generation": dict(generation),
        "quality": generation_view(quality),
    }


def reference_cache_key(**inputs: Any) -> str:
    """sha256 hex of the canonical JSON of `reference_key_inputs(**inputs)`."""
    return hashlib.sha256(canonical_json(reference_key_inputs(**inputs))).hexdigest()


class ReferenceCache:
    """Reference results stored under `<cache_dir>/reference/<key>/`."""

    def __init__(self, cache_dir: str | Path) -> None:
        self.root = Path(cache_dir) / "reference"

    def entry_dir(self, key: str) -> Path:
        if not key or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.root / key

    def load(self, key: str) -> CachedReference | None:
        """The entry for `key`, with its suite runs marked cached; None on a miss or corruption."""
        folder = self.entry_dir(key)
        payload_path = folder / PAYLOAD
        if not folder.exists():
            return None
        problem: str | None = None
        try:
            payload = payload_path.read_bytes()
            stored = (folder / f"{PAYLOAD}.sha256").read_text().strip()
        except OSError as exc:
            problem = f"unreadable ({exc.strerror or exc})"
        else:
            if hashlib.sha256(payload).hexdigest() != stored:
                problem = "payload digest mismatch"
            else:
                try:
                    entry = CachedReference.model_validate_json(payload)
                except ValidationError as exc:
                    problem = f"schema mismatch ({exc.error_count()} errors)"
                else:
                    if entry.key != key or entry.format != CACHE_FORMAT:
                        problem = "key or format mismatch"
                    else:
                        runs = [r.model_copy(update={"cached": True}) for r in entry.suite_runs]
                        return entry.model_copy(update={"suite_runs": runs})
        log.warning("reference cache entry %s is corrupt (%s); recomputing", key[:12], problem)
        shutil.rmtree(folder, ignore_errors=True)
        return None

    def store(self, key: str, value: CachedReference) -> Path:
        """Write an entry atomically (payload first, digest last); returns its folder."""
        if value.key != key:
            value = value.model_copy(update={"key": key})
        folder = self.entry_dir(key)
        payload = value.model_dump_json().encode("utf-8")
        atomic_write(folder / PAYLOAD, payload)
        # The digest is written last: an entry without it reads as corrupt, never as valid.
        atomic_write(folder / f"{PAYLOAD}.sha256", hashlib.sha256(payload).hexdigest().encode())
        return folder

    def get_or_compute(
        self, key: str, compute: Callable[[], CachedReference], *, refresh: bool = False
    ) -> tuple[CachedReference, bool]:
        """The cached entry (and True), or `compute()` stored and returned (and False).

        `refresh=True` ignores any stored entry and recomputes.
        """
        if not refresh:
            hit = self.load(key)
            if hit is not None:
                log.info("reference cache hit %s", key[:12])
                return hit, True
        value = compute()
        self.store(key, value)
        return value.model_copy(update={"key": key}), False
