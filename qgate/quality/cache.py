"""The reference cache: reuse the reference's quality results when nothing it depends on changed.

An entry lives in `<cache_dir>/reference/<key>/` as `reference.json` (the
payload) and `reference.json.dsse` (a DSSE envelope of an in-toto Statement
whose subject is the payload's sha256 and whose predicate names the cache key
and when the entry was made), signed by the run's signer, the same one that
signs the report. The key is a sha256 over a
canonical JSON of everything that can change the reference's answers:
checkpoint file digests, reference engine arguments and environment, engine
version, suite data digests, generation parameters, and the parts of the
quality spec that shape generation. Gate limits are left out on purpose:
tightening a limit must not force the reference to be recomputed.

Before use an entry is authenticated: its envelope must verify with a trusted
key (the run's own signing key, plus any given with `qgate run
--trust-cache-key`), cover exactly the payload's bytes and name this key. An
entry that fails (unsigned, foreign key, rewritten payload) is logged,
removed and recomputed; with `strict` it is refused instead (BadInput, exit
2: retrying cannot help, a person must remove the entry or trust its signer).
An authenticated entry that does not parse (another format) is recomputed.
Where the results came from is returned as a `ReferenceProvenance` for the
report.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError

from qgate.core.files import atomic_write, sha256_bytes
from qgate.core.records import Record
from qgate.core.serving import EffectiveConfig
from qgate.errors import BadInput, VerificationFailed
from qgate.profile import QualitySpec
from qgate.profile.suites import gate_fields
from qgate.quality.cache_auth import (
    CACHE_FORMAT,
    ENVELOPE,
    PAYLOAD,
    EntryStatement,
    ReferenceProvenance,
    entry_statement,
    provenance_of,
    record_provenance,
    sign_entry,
)
from qgate.quality.divergence_data import ScoreSet
from qgate.quality.noise_floor import FloorRecords
from qgate.quality.records import SuiteRun
from qgate.quality.reuse_records import PassRun
from qgate.quality.spec_counters import SpecSnapshot

if TYPE_CHECKING:
    from qgate.attest.keys import LoadedSigner

__all__ = [
    "CachedReference",
    "ReferenceCache",
    "canonical_json",
    "generation_view",
    "reference_cache_key",
    "reference_key_inputs",
]

log = logging.getLogger(__name__)


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
    passes: list[PassRun] = Field(
        default_factory=list, description="quality.reuse: the reference's passes and counters."
    )
    speculative: list[SpecSnapshot] = Field(
        default_factory=list,
        description="The reference's speculative-decoding counter snapshots (when it speculates).",
    )
    floor: FloorRecords | None = Field(
        default=None,
        description="quality.noise_floor: the reference's second asks of its own items.",
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
    # Every suite's policy fields: they decide verdicts, never what the reference generates.
    view: dict[str, Any] = _strip(spec.model_dump(mode="json"), gate_fields())
    # Stopping early decides how much runs, not what: a partial reference is never cached.
    for key in ("stop", "stop_block", "speculative"):  # speculative: the acceptance gate's limits
        view.pop(key, None)
    if view.get("noise_floor") is None:  # keys made before the floor existed stay the same
        view.pop("noise_floor", None)
    return view


def _strip(node: Any, gates: frozenset[str]) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v, gates) for k, v in node.items() if k not in gates}
    if isinstance(node, list):
        return [_strip(v, gates) for v in node]
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
    engine_packages: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The canonical inputs of the reference cache key (kept in the entry to explain misses).

    `engine_args`/`engine_env` are the reference's effective arguments and
    environment (redacted values are fine: redaction is deterministic);
    `data_digests` maps suite id to its data sha256; `generation` holds
    request parameters not in the spec (e.g. temperature, max_tokens); `engine_packages` is
    the resolved package set of a reference that pins its release (`engine.package`), absent
    otherwise (so keys of other references stay as they were).
    """
    extra = {"engine_packages": dict(sorted(engine_packages.items()))} if engine_packages else {}
    return {
        "format": CACHE_FORMAT,
        "checkpoint": dict(checkpoint_digests),
        "engine_args": dict(engine_args),
        "engine_env": dict(engine_env),
        "engine_version": engine_version,
        "data": dict(data_digests),
        "generation": dict(generation),
        "quality": generation_view(quality),
        **extra,
    }


def reference_cache_key(**inputs: Any) -> str:
    """sha256 hex of the canonical JSON of `reference_key_inputs(**inputs)`."""
    return sha256_bytes(canonical_json(reference_key_inputs(**inputs)))


class ReferenceCache:
    """Signed reference results under `<cache_dir>/reference/<key>/`.

    `signer` signs new entries and is trusted; `trusted` adds public keys
    (PEM text) whose entries are accepted too; `strict` refuses an entry that
    fails authentication instead of recomputing it.
    """

    def __init__(
        self,
        cache_dir: str | Path,
        signer: LoadedSigner,
        trusted: Sequence[str] = (),
        *,
        strict: bool = False,
    ) -> None:
        self.root = Path(cache_dir) / "reference"
        self.signer = signer
        self.trusted = [signer.public_pem, *trusted]
        self.strict = strict

    def entry_dir(self, key: str) -> Path:
        if not key or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.root / key

    def _authenticate(self, key: str, folder: Path) -> tuple[bytes, bytes, EntryStatement]:
        try:
            payload = (folder / PAYLOAD).read_bytes()
        except OSError as exc:
            raise VerificationFailed(f"payload unreadable ({exc.strerror or exc})") from None
        try:
            envelope = (folder / ENVELOPE).read_bytes()
        except FileNotFoundError:
            raise VerificationFailed("unsigned (no reference.json.dsse)") from None
        except OSError as exc:
            raise VerificationFailed(f"envelope unreadable ({exc.strerror or exc})") from None
        st = entry_statement(envelope, self.trusted)
        if sha256_bytes(payload) != st.payload_sha256:
            raise VerificationFailed("the payload is not the one its signature covers")
        if st.cache_key != key:
            raise VerificationFailed("the signature is for another cache key")
        return payload, envelope, st

    def load(self, key: str) -> tuple[CachedReference, ReferenceProvenance] | None:
        """The authenticated entry for `key` (suite runs marked cached) and its provenance.

        None on a miss, or after logging and removing an entry that fails
        authentication or does not parse; BadInput instead when strict.
        """
        folder = self.entry_dir(key)
        if not folder.exists():
            return None
        try:
            payload, envelope, st = self._authenticate(key, folder)
        except VerificationFailed as exc:
            if self.strict:
                raise BadInput(
                    f"reference cache entry {key[:12]} failed authentication: {exc.message}; "
                    f"refused (strict). Remove {folder} or trust its signer with "
                    "--trust-cache-key"
                ) from None
            log.warning(
                "reference cache entry %s failed authentication (%s); recomputing",
                key[:12],
                exc.message,
            )
            shutil.rmtree(folder, ignore_errors=True)
            return None
        try:
            entry = CachedReference.model_validate_json(payload)
            problem = None if entry.key == key and entry.format == CACHE_FORMAT else "key/format"
        except ValidationError as exc:
            problem = f"schema mismatch ({exc.error_count()} errors)"
        if problem is not None:
            log.warning("reference cache entry %s is unusable (%s); recomputing", key[:12], problem)
            shutil.rmtree(folder, ignore_errors=True)
            return None
        runs = [r.model_copy(update={"cached": True}) for r in entry.suite_runs]
        return entry.model_copy(update={"suite_runs": runs}), record_provenance(
            "cache", st, envelope
        )

    def store(self, key: str, value: CachedReference, *, keep: bool = True) -> ReferenceProvenance:
        """Write and sign an entry (payload first, signature last); its provenance as 'fresh'.

        `keep=False` signs without writing: results that stopped early are this run's
        provenance but no entry (a later candidate needs every item).
        """
        if value.key != key:
            value = value.model_copy(update={"key": key})
        folder = self.entry_dir(key)
        payload = value.model_dump_json().encode("utf-8")
        envelope = sign_entry(payload, key, self.signer)
        if not keep:
            return provenance_of("fresh", envelope, self.signer.public_pem)
        atomic_write(folder / PAYLOAD, payload)
        # The signature is written last: an entry without it is unsigned, never valid.
        atomic_write(folder / ENVELOPE, envelope)
        return provenance_of("fresh", envelope, self.signer.public_pem)

    def get_or_compute(
        self, key: str, compute: Callable[[], CachedReference], *, refresh: bool = False
    ) -> tuple[CachedReference, ReferenceProvenance]:
        """The authenticated cached entry, or `compute()` signed, stored and returned.

        `refresh=True` ignores any stored entry and recomputes. The
        provenance's `source` says which ('cache' or 'fresh').
        """
        if not refresh:
            hit = self.load(key)
            if hit is not None:
                log.info(
                    "reference cache hit %s (signed by %s)", key[:12], hit[1].signer_keyid[:12]
                )
                return hit
        value = compute()
        provenance = self.store(key, value)
        return value.model_copy(update={"key": key}), provenance
