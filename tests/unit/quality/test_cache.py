from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from qgate.profile import DivergenceSuite, MathSuite, QualitySpec, RecallSuite
from qgate.quality.cache import CachedReference, ReferenceCache, reference_cache_key
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


def test_store_then_load_round_trip_marks_cached(tmp_path: Path) -> None:
    cache = ReferenceCache(tmp_path)
    key = reference_cache_key(**_inputs())
    assert cache.load(key) is None
    folder = cache.store(key, _entry(key))
    assert folder == tmp_path / "reference" / key
    loaded = cache.load(key)
    assert loaded is not None
    assert loaded.suite_runs[0].cached is True
    assert loaded.divergence == _entry(key).divergence
    assert not list(folder.glob("*.tmp"))


def test_get_or_compute_hits_and_refresh_recomputes(tmp_path: Path) -> None:
    cache = ReferenceCache(tmp_path)
    key = reference_cache_key(**_inputs())
    calls: list[int] = []

    def compute() -> CachedReference:
        calls.append(1)
        return _entry(key)

    _, hit = cache.get_or_compute(key, compute)
    assert not hit and len(calls) == 1
    _, hit = cache.get_or_compute(key, compute)
    assert hit and len(calls) == 1
    _, hit = cache.get_or_compute(key, compute, refresh=True)
    assert not hit and len(calls) == 2


@pytest.mark.parametrize("damage", ["bad_json", "schema", "digest", "missing_digest", "wrong_key"])
def test_corrupt_entry_is_reported_and_recomputed(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    import hashlib

    cache = ReferenceCache(tmp_path)
    key = reference_cache_key(**_inputs())
    folder = cache.store(key, _entry(key))
    payload = folder / "reference.json"
    digest = folder / "reference.json.sha256"

    def rewrite(data: bytes) -> None:
        payload.write_bytes(data)
        digest.write_text(hashlib.sha256(data).hexdigest())

    if damage == "bad_json":
        rewrite(b"{not json")
    elif damage == "schema":
        rewrite(b'{"key": "' + key.encode() + b'", "surprise": 1}')
    elif damage == "digest":
        payload.write_bytes(payload.read_bytes().replace(b'"4"', b'"5"'))
    elif damage == "missing_digest":
        digest.unlink()
    elif damage == "wrong_key":
        other = _entry("0" * 64).model_dump_json().encode()
        rewrite(other)

    with caplog.at_level(logging.WARNING, logger="qgate.quality.cache"):
        assert cache.load(key) is None
    assert "corrupt" in caplog.text
    value, hit = cache.get_or_compute(key, lambda: _entry(key))
    assert not hit
    assert cache.load(key) == value.model_copy(
        update={"suite_runs": [r.model_copy(update={"cached": True}) for r in value.suite_runs]}
    )


def test_rejects_non_hex_keys(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        ReferenceCache(tmp_path).load("../../etc")
