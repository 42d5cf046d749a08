"""Emulated weight precision: a quantized-then-dequantized copy of a checkpoint.

The CPU engine cannot run FP8 or INT4 weights (`quantization=fp8` needs CUDA
kernels), but the accuracy effect of a number format comes from rounding the
weights, not from the kernel. So the weights are rounded to the format with
the profile's scale granularity and stored back in the serving dtype (bf16, or
float32 where the CPU serves float32, `engine.cpu_dtype: auto`): the engine then
computes with exactly the values a real FP8/INT kernel would see (up to the
kernel's own accumulation order). Reports must label such a candidate as
emulated; `emulated_label` gives the wording.

Which tensors: the 2-D `.weight` matrices of Linear layers inside attention
and MLP blocks (q/k/v/o, gate/up/down projections, experts). Embeddings,
norms, `lm_head` and MoE routers stay unchanged, as in the FP8 checkpoints
that serving stacks ship (they keep those in high precision), so the
emulation matches what would really be deployed.

The copy is cached under a digest of the source files (name, size, mtime)
and the spec, built in a temporary folder and renamed into place at the end,
so an interrupted build never leaves a half-written checkpoint behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from qgate import __version__
from qgate.checkpoint.formats import (
    STORED_DTYPES,
    fake_quantize,
    is_emulated_weight,
    selection_rule,
    tensor_errors,
)
from qgate.core.files import sha256_json
from qgate.core.records import Record
from qgate.errors import BadInput
from qgate.profile import WeightEmulation

if TYPE_CHECKING:
    import torch

MANIFEST_FILE = "qgate-emulation.json"
# Bookkeeping of the source folder that would be wrong for the copy (stale digests).
NOT_COPIED = frozenset({MANIFEST_FILE, "qgate-digests.json"})
# Part of the cache key: bump it whenever the numerics below change.
ALGORITHM_VERSION = 1
# The work is elementwise and memory-bound. On the shared 2-core machines,
# OpenMP threads of an oversubscribed CPU spin against each other: measured 8x
# slower with 2 threads than with 1 (a 576x1536 matrix: 186 ms vs 23 ms).
THREADS_ENV = "QGATE_EMULATE_THREADS"


class TensorEmulation(Record):
    """One weight matrix that was rounded to the target format."""

    name: str = Field(description="Tensor name in the checkpoint.")
    file: str = Field(description="Safetensors file that holds it.")
    shape: list[int] = Field(description="Tensor shape [out_features, in_features].")
    source_dtype: str = Field(description="dtype in the source checkpoint.")
    mean_rel_error: float = Field(
        description="mean |emulated - source| / mean |source| (0 when the source is all zero)."
    )
    max_rel_error: float = Field(description="max |emulated - source| / max |source|.")
    rel_l2_error: float = Field(description="||emulated - source||_2 / ||source||_2.")


class EmulationManifest(Record):
    """What `emulate_checkpoint` did, written next to the weights as qgate-emulation.json."""

    schema_version: Literal[1] = Field(default=1, description="Version of this file's format.")
    qgate_version: str = Field(description="qgate version that built the copy.")
    algorithm_version: int = Field(description="Version of the rounding code (cache key).")
    cache_key: str = Field(description="sha256 of source fingerprint, spec and algorithm.")
    source: str = Field(description="Absolute path of the source checkpoint.")
    source_files: dict[str, list[int]] = Field(
        description="Source files as relative path -> [size, mtime_ns] (the cache fingerprint)."
    )
    format: str = Field(description="Target number format (WeightEmulation.format).")
    granularity: str = Field(description="Scale granularity (WeightEmulation.granularity).")
    group_size: int | None = Field(description="Group size along the input dim, for 'group'.")
    scale: str = Field(description="How scales are computed and stored.")
    output_dtype: str = Field(default="bfloat16", description="dtype of the rewritten tensors.")
    selection_rule: str = Field(description="Which tensors are rounded, in words.")
    quantized: list[TensorEmulation] = Field(description="Rounded tensors with their errors.")
    kept: list[str] = Field(description="Tensors copied bit for bit.")


def _source_files(src: Path) -> dict[str, list[int]]:
    files: dict[str, list[int]] = {}
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        rel = path.relative_to(src).as_posix()
        if rel in NOT_COPIED:
            continue
        stat = path.stat()
        files[rel] = [stat.st_size, stat.st_mtime_ns]
    return files


def _spec_key(spec: WeightEmulation) -> dict[str, Any]:
    # group_size only matters for 'group'; leaving it out elsewhere shares the cache, and
    # the default modules keep the key copies had before modules were choosable.
    key: dict[str, Any] = {"format": spec.format, "granularity": spec.granularity}
    if spec.granularity == "group":
        key["group_size"] = spec.group_size
    if not spec.all_blocks:
        key["modules"] = sorted(spec.modules)
    return key


def cache_key(src: Path, spec: WeightEmulation, dtype: str = "bfloat16") -> str:
    """The digest that names a cached copy: source fingerprint, spec, dtype, algorithm version."""
    payload: dict[str, Any] = {
        "algorithm": ALGORITHM_VERSION,
        "source": str(src.resolve()),
        "files": _source_files(src),
        "spec": _spec_key(spec),
    }
    if dtype != "bfloat16":  # bf16 copies keep the key they had before dtypes were choosable
        payload["dtype"] = dtype
    return sha256_json(payload)


def output_folder(
    src: Path, spec: WeightEmulation, cache_root: Path, dtype: str = "bfloat16"
) -> Path:
    """Where the emulated copy of `src` for `spec`, stored in `dtype`, lives (built or not)."""
    grain = f"group{spec.group_size}" if spec.granularity == "group" else spec.granularity
    key = cache_key(src, spec, dtype)
    tail = "" if dtype == "bfloat16" else f"-{dtype}"
    if not spec.all_blocks:
        tail = f"-{'-'.join(sorted(spec.modules))}{tail}"
    return cache_root / f"{src.resolve().name}.{spec.format}-{grain}{tail}.{key[:16]}"


def read_manifest(folder: Path) -> EmulationManifest:
    """The manifest of an emulated checkpoint folder."""
    try:
        return EmulationManifest.model_validate_json((folder / MANIFEST_FILE).read_text())
    except (OSError, ValueError) as exc:
        raise BadInput(f"not an emulated checkpoint: {folder} ({exc})") from None


@contextlib.contextmanager
def _torch_threads(count: int) -> Iterator[None]:
    """Run with `count` torch intra-op threads, then restore the caller's setting."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(max(1, count))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rewrite_shard(
    src_file: Path, dst_file: Path, spec: WeightEmulation, rel: str, dtype: str
) -> tuple[list[TensorEmulation], list[str]]:
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    quantized: list[TensorEmulation] = []
    kept: list[str] = []
    tensors: dict[str, torch.Tensor] = {}
    target = getattr(torch, dtype)
    with safe_open(str(src_file), framework="pt") as f:
        metadata = dict(f.metadata() or {})
        for name in f.keys():  # noqa: SIM118 (safe_open is not a mapping)
            tensor = f.get_tensor(name)
            chosen = is_emulated_weight(name, tensor.ndim, spec.modules)
            if not (chosen and tensor.is_floating_point()):
                tensors[name] = tensor
                kept.append(name)
                continue
            restored = fake_quantize(tensor, spec.format, spec.granularity, spec.group_size)
            out = restored.to(target).contiguous()
            mean_rel, max_rel, rel_l2 = tensor_errors(tensor, out)
            quantized.append(
                TensorEmulation(
                    name=name,
                    file=rel,
                    shape=list(tensor.shape),
                    source_dtype=str(tensor.dtype).removeprefix("torch."),
                    mean_rel_error=mean_rel,
                    max_rel_error=max_rel,
                    rel_l2_error=rel_l2,
                )
            )
            tensors[name] = out
    metadata["qgate_emulation"] = spec.format
    save_file(tensors, str(dst_file), metadata=metadata)
    return quantized, kept


def _build(src: Path, spec: WeightEmulation, tmp: Path, key: str, dtype: str) -> None:
    shards = sorted(src.rglob("*.safetensors"))
    if not shards:
        raise BadInput(f"no .safetensors files in {src}; weight emulation needs them")
    quantized: list[TensorEmulation] = []
    kept: list[str] = []
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        rel = path.relative_to(src).as_posix()
        if rel in NOT_COPIED:
            continue
        dst = tmp / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".safetensors":
            q, k = _rewrite_shard(path, dst, spec, rel, dtype)
            quantized += q
            kept += k
        elif rel == "config.json" and dtype != "bfloat16":
            _write_config_dtype(path, dst, dtype)
        else:
            shutil.copy2(path, dst)
    manifest = EmulationManifest(
        qgate_version=__version__,
        algorithm_version=ALGORITHM_VERSION,
        cache_key=key,
        source=str(src.resolve()),
        source_files=_source_files(src),
        format=spec.format,
        granularity=spec.granularity,
        group_size=spec.group_size if spec.granularity == "group" else None,
        scale="symmetric absmax / qmax, float32, "
        + {"per_tensor": "one per tensor", "per_channel": "one per output row"}.get(
            spec.granularity, f"one per {spec.group_size} inputs of a row"
        ),
        output_dtype=dtype,
        selection_rule=selection_rule(spec.modules),
        quantized=quantized,
        kept=kept,
    )
    (tmp / MANIFEST_FILE).write_text(manifest.model_dump_json(indent=2) + "\n")
    for path in tmp.rglob("*"):
        if path.is_file():
            _fsync(path)


def _write_config_dtype(src: Path, dst: Path, dtype: str) -> None:
    """config.json with the dtype the copy is stored in (so `dtype: auto` loads it as such)."""
    config = json.loads(src.read_text())
    for key in ("torch_dtype", "dtype"):
        if key in config:
            config[key] = dtype
    dst.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def emulate_checkpoint(
    src: Path, spec: WeightEmulation, cache_root: Path, dtype: str = "bfloat16"
) -> Path:
    """Return a folder holding `src` with its Linear weights rounded to `spec`, stored in `dtype`.

    Cached: a second call with an unchanged source and the same spec returns
    the same folder without rewriting it. The copy is built in a temporary
    sibling folder and renamed into place, so a crash or Ctrl-C leaves no
    final folder. Tokenizer, config and every other file are copied as is.
    """
    src = Path(src)
    if not src.is_dir():
        raise BadInput(f"checkpoint folder not found: {src}")
    if dtype not in STORED_DTYPES:
        known = ", ".join(STORED_DTYPES)
        raise BadInput(f"emulated weights cannot be stored as {dtype!r} (known: {known})")
    final = output_folder(src, spec, cache_root, dtype)
    if (final / MANIFEST_FILE).is_file():
        return final
    cache_root.mkdir(parents=True, exist_ok=True)
    tmp = cache_root / f".{final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        with _torch_threads(int(os.environ.get(THREADS_ENV, "1"))):
            _build(src, spec, tmp, cache_key(src, spec, dtype), dtype)
        try:
            os.rename(tmp, final)
        except OSError:
            # Another process finished the same copy first; theirs is as good as ours.
            if not (final / MANIFEST_FILE).is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
        _fsync(cache_root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def remove_stale_builds(cache_root: Path, older_than_s: float = 6 * 3600) -> list[Path]:
    """Delete temporary build folders left by killed processes; return what was removed."""
    removed = []
    cutoff = time.time() - older_than_s
    for path in cache_root.glob(".*.tmp-*") if cache_root.is_dir() else []:
        if path.is_dir() and path.stat().st_mtime < cutoff:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
