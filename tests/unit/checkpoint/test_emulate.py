"""Emulated weight precision on a tiny generated safetensors checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

from qgate.checkpoint import emulate, formats  # noqa: E402
from qgate.checkpoint.emulate import (  # noqa: E402
    MANIFEST_FILE,
    emulate_checkpoint,
    output_folder,
    read_manifest,
)
from qgate.checkpoint.formats import fake_quantize, is_emulated_weight  # noqa: E402
from qgate.errors import BadInput  # noqa: E402
from qgate.profile import WeightEmulation  # noqa: E402

Q = "model.layers.0.self_attn.q_proj.weight"
DOWN = "model.layers.0.mlp.down_proj.weight"
KEPT = [
    "model.embed_tokens.weight",
    "model.layers.0.input_layernorm.weight",
    "model.layers.0.mlp.gate.weight",
    "lm_head.weight",
]


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    gen = torch.Generator().manual_seed(0)
    src = tmp_path / "tiny"
    src.mkdir()
    tensors = {
        "model.embed_tokens.weight": torch.randn(32, 64, generator=gen),
        Q: torch.randn(48, 64, generator=gen) * 0.05,
        # 200 inputs: not a multiple of the group size, exercises padding.
        DOWN: torch.randn(64, 200, generator=gen) * 0.02,
        "model.layers.0.input_layernorm.weight": 1 + 0.1 * torch.randn(64, generator=gen),
        "model.layers.0.mlp.gate.weight": torch.randn(4, 64, generator=gen),
        "lm_head.weight": torch.randn(32, 64, generator=gen),
    }
    tensors = {k: v.to(torch.bfloat16).contiguous() for k, v in tensors.items()}
    safetensors_torch.save_file(tensors, str(src / "model.safetensors"), metadata={"format": "pt"})
    (src / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    (src / "tokenizer.json").write_text("{}")
    return src


def _load(folder: Path) -> dict[str, torch.Tensor]:
    return dict(safetensors_torch.load_file(str(folder / "model.safetensors")))


def _rel_l2(spec: WeightEmulation, checkpoint: Path, cache: Path, name: str = DOWN) -> float:
    out = emulate_checkpoint(checkpoint, spec, cache)
    by_name = {t.name: t for t in read_manifest(out).quantized}
    return by_name[name].rel_l2_error


def test_selection_rule() -> None:
    assert is_emulated_weight(Q, 2)
    assert is_emulated_weight("model.layers.3.mlp.experts.7.up_proj.weight", 2)
    assert not is_emulated_weight("model.layers.0.self_attn.q_proj.bias", 1)
    assert not is_emulated_weight("model.layers.0.self_attn.q_norm.weight", 1)
    for name in KEPT:
        assert not is_emulated_weight(name, 2), name


def test_error_ordering_between_formats(checkpoint: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    err = {
        fmt: _rel_l2(
            WeightEmulation(format=fmt, granularity="group", group_size=64), checkpoint, cache
        )
        for fmt in ("fp8_e4m3", "fp8_e5m2", "int8", "int4")
    }
    assert all(e > 0 for e in err.values()), err
    assert err["int4"] > err["int8"]
    assert err["int4"] > err["fp8_e4m3"]
    assert err["fp8_e5m2"] > err["fp8_e4m3"]
    # int8 with small groups is finer than e4m3's 3 mantissa bits on Gaussian weights.
    assert err["fp8_e4m3"] > err["int8"]


def test_finer_scales_do_not_hurt(checkpoint: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    coarse = _rel_l2(WeightEmulation(format="int4", granularity="per_tensor"), checkpoint, cache)
    fine = _rel_l2(
        WeightEmulation(format="int4", granularity="group", group_size=16), checkpoint, cache
    )
    assert fine < coarse


@pytest.mark.parametrize("fmt", ["int8", "int4"])
def test_int_error_is_at_most_half_a_step(fmt: str) -> None:
    w = torch.randn(8, 96, generator=torch.Generator().manual_seed(1))
    out = fake_quantize(w, fmt, "group", 32)
    step = w.reshape(8, 3, 32).abs().amax(dim=2, keepdim=True) / formats.QMAX[fmt]
    err = (out - w).reshape(8, 3, 32).abs()
    assert bool((err <= step / 2 + 1e-6).all())
    levels = (out.reshape(8, 3, 32) / step).round()
    assert int(levels.abs().max()) == int(formats.QMAX[fmt])


@pytest.mark.parametrize(("fmt", "mantissa_bits"), [("fp8_e4m3", 3), ("fp8_e5m2", 2)])
def test_fp8_relative_error_within_half_ulp(fmt: str, mantissa_bits: int) -> None:
    w = torch.randn(16, 64, generator=torch.Generator().manual_seed(2))
    out = fake_quantize(w, fmt, "per_channel")
    scale = w.abs().amax(dim=1, keepdim=True) / formats.QMAX[fmt]
    normal = (w / scale).abs() >= 2.0**-6  # subnormals have absolute, not relative, error
    rel = ((out - w).abs() / w.abs())[normal]
    assert float(rel.max()) <= 2.0 ** -(mantissa_bits + 1) + 1e-6
    assert float(rel.max()) > 0


def test_untouched_tensors_are_bit_identical(checkpoint: Path, tmp_path: Path) -> None:
    spec = WeightEmulation(format="fp8_e4m3", granularity="per_channel")
    out = emulate_checkpoint(checkpoint, spec, tmp_path / "cache")
    before, after = _load(checkpoint), _load(out)
    assert set(before) == set(after)
    for name in KEPT:
        assert after[name].dtype == before[name].dtype
        assert torch.equal(after[name].view(torch.int16), before[name].view(torch.int16)), name
    for name in (Q, DOWN):
        assert after[name].dtype == torch.bfloat16
        assert not torch.equal(after[name], before[name]), name
    assert (out / "config.json").read_text() == (checkpoint / "config.json").read_text()
    assert (out / "tokenizer.json").is_file()


def test_manifest_describes_what_was_done(checkpoint: Path, tmp_path: Path) -> None:
    spec = WeightEmulation(format="int4", granularity="group", group_size=32)
    out = emulate_checkpoint(checkpoint, spec, tmp_path / "cache")
    raw = json.loads((out / MANIFEST_FILE).read_text())
    manifest = read_manifest(out)
    assert raw["format"] == "int4" and raw["group_size"] == 32
    assert sorted(t.name for t in manifest.quantized) == sorted([Q, DOWN])
    assert sorted(manifest.kept) == sorted(KEPT)
    for tensor in manifest.quantized:
        assert 0 < tensor.mean_rel_error < 1
        assert 0 < tensor.max_rel_error < 1
        assert tensor.source_dtype == "bfloat16"
    assert set(manifest.source_files) == {"model.safetensors", "config.json", "tokenizer.json"}


def test_cache_hit_returns_same_folder_without_rewriting(
    checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = WeightEmulation(format="fp8_e5m2", granularity="per_tensor")
    first = emulate_checkpoint(checkpoint, spec, tmp_path / "cache")
    stamp = (first / "model.safetensors").stat().st_mtime_ns

    def no_rewrite(*args: object, **kwargs: object) -> None:
        raise AssertionError("rewrote a cached checkpoint")

    monkeypatch.setattr(emulate, "_build", no_rewrite)
    again = emulate_checkpoint(checkpoint, spec, tmp_path / "cache")
    assert again == first
    assert (again / "model.safetensors").stat().st_mtime_ns == stamp


def test_cache_key_follows_spec_and_source(checkpoint: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    a = output_folder(checkpoint, WeightEmulation(format="int8", granularity="group"), cache)
    b = output_folder(
        checkpoint, WeightEmulation(format="int8", granularity="group", group_size=64), cache
    )
    c = output_folder(
        checkpoint, WeightEmulation(format="int8", granularity="per_channel", group_size=64), cache
    )
    d = output_folder(checkpoint, WeightEmulation(format="int8", granularity="per_channel"), cache)
    assert a != b
    assert c == d  # group_size does not matter without groups
    (checkpoint / "config.json").write_text('{"changed": true}')
    assert output_folder(checkpoint, WeightEmulation(format="int8"), cache) != d


def test_interrupted_build_leaves_no_folder(
    checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    spec = WeightEmulation(format="int8", granularity="per_channel")
    real = emulate.fake_quantize
    calls = []

    def fail_on_second(*args: object, **kwargs: object) -> torch.Tensor:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(emulate, "fake_quantize", fail_on_second)
    with pytest.raises(KeyboardInterrupt):
        emulate_checkpoint(checkpoint, spec, cache)
    assert len(calls) == 2
    assert list(cache.iterdir()) == []
    monkeypatch.setattr(emulate, "fake_quantize", real)
    out = emulate_checkpoint(checkpoint, spec, cache)
    assert [p.name for p in cache.iterdir()] == [out.name]


def test_bad_sources(tmp_path: Path) -> None:
    spec = WeightEmulation(format="int8")
    with pytest.raises(BadInput, match="not found"):
        emulate_checkpoint(tmp_path / "missing", spec, tmp_path / "cache")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.json").write_text("{}")
    with pytest.raises(BadInput, match="no .safetensors"):
        emulate_checkpoint(empty, spec, tmp_path / "cache")
    assert [p for p in (tmp_path / "cache").iterdir()] == []


def test_caller_thread_setting_is_restored(checkpoint: Path, tmp_path: Path) -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        emulate_checkpoint(checkpoint, WeightEmulation(format="int8"), tmp_path / "cache")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_float32_copy_holds_the_rounded_values_exactly(checkpoint: Path, tmp_path: Path) -> None:
    spec = WeightEmulation(format="fp8_e4m3", granularity="per_channel")
    config = {"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16"}
    (checkpoint / "config.json").write_text(json.dumps(config))
    bf16 = emulate_checkpoint(checkpoint, spec, tmp_path / "cache")
    fp32 = emulate_checkpoint(checkpoint, spec, tmp_path / "cache", "float32")
    assert bf16 != fp32 and fp32.name.split(".")[-2].endswith("-float32")
    source = _load(checkpoint)
    out = _load(fp32)
    assert out[Q].dtype == torch.float32
    assert torch.equal(out[Q], fake_quantize(source[Q], "fp8_e4m3", "per_channel"))
    assert torch.equal(out[KEPT[0]], source[KEPT[0]])  # kept tensors bit for bit
    assert read_manifest(fp32).output_dtype == "float32"
    assert read_manifest(bf16).output_dtype == "bfloat16"
    assert json.loads((fp32 / "config.json").read_text())["torch_dtype"] == "float32"
    assert json.loads((bf16 / "config.json").read_text()) == config


def test_stored_dtype_follows_the_serving_dtype() -> None:
    given = ("float32", "float", "half", "bf16", "auto", None)
    assert [formats.stored_dtype(d) for d in given] == [
        "float32",
        "float32",
        "float16",
        "bfloat16",
        "bfloat16",
        "bfloat16",
    ]
    with pytest.raises(BadInput, match="cannot be stored as 'int8'"):
        emulate_checkpoint(Path("."), WeightEmulation(format="int8"), Path("/nonexistent"), "int8")


def test_mlp_only_rounds_the_mlp_and_keeps_attention(checkpoint: Path, tmp_path: Path) -> None:
    every = WeightEmulation(format="int8")
    mlp = WeightEmulation(format="int8", modules=["mlp"])
    assert every.all_blocks and not mlp.all_blocks
    assert "modules" not in emulate._spec_key(every)  # the default keeps older cache keys
    out = emulate_checkpoint(checkpoint, mlp, tmp_path / "cache")
    assert out != output_folder(checkpoint, every, tmp_path / "cache") and "-mlp." in out.name
    source, got = _load(checkpoint), _load(out)
    assert torch.equal(got[Q], source[Q])  # attention untouched
    assert not torch.equal(got[DOWN], source[DOWN])
    manifest = read_manifest(out)
    assert [t.name for t in manifest.quantized] == [DOWN]
    assert "inside mlp blocks only" in manifest.selection_rule
    assert "(mlp only)" in formats.emulated_label(mlp)
