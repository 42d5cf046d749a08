"""Weight number formats, emulated: which tensors are rounded, and how.

The rounding itself (`fake_quantize`: symmetric absmax scales per tensor, per
output channel or per group of inputs; FP8 through torch's float8 dtypes, INT
formats to integers), the rule that picks the Linear weights of attention and
MLP blocks, and the dtype an emulated copy is stored in. Building the copy of a
checkpoint lives in emulate.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from qgate.errors import BadInput
from qgate.profile import WeightEmulation

if TYPE_CHECKING:
    import torch

__all__ = [
    "BLOCK_PARENTS",
    "QMAX",
    "SELECTION_RULE",
    "STORED_DTYPES",
    "emulated_label",
    "fake_quantize",
    "is_emulated_weight",
    "selection_rule",
    "stored_dtype",
    "tensor_errors",
]

QMAX: dict[str, float] = {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0, "int8": 127.0, "int4": 7.0}

ATTENTION_PARENTS = frozenset({"self_attn", "attn", "attention", "self_attention", "cross_attn"})
MLP_PARENTS = frozenset(
    {"mlp", "feed_forward", "ffn", "block_sparse_moe", "experts", "shared_experts", "shared_expert"}
)
BLOCK_PARENTS = ATTENTION_PARENTS | MLP_PARENTS
PARENTS_OF = {"attention": ATTENTION_PARENTS, "mlp": MLP_PARENTS}
KEPT_MODULES = frozenset({"gate", "router"})
KEPT_FRAGMENTS = ("norm", "embed", "lm_head")


def selection_rule(modules: Sequence[str] = ("attention", "mlp")) -> str:
    """Which tensors are rounded, in words (recorded in the manifest)."""
    if sorted(modules) == ["attention", "mlp"]:
        return SELECTION_RULE
    parents = sorted(frozenset().union(*(PARENTS_OF[m] for m in modules)))
    return (
        f"2-D '.weight' tensors of Linear layers inside {' and '.join(sorted(modules))} "
        f"blocks only (parents {', '.join(parents)}); everything else unchanged"
    )


SELECTION_RULE = (
    "2-D '.weight' tensors of Linear layers inside attention/MLP blocks "
    f"(parents {', '.join(sorted(BLOCK_PARENTS))}); embeddings, norms, lm_head "
    "and MoE routers ('gate', 'router') unchanged"
)


def is_emulated_weight(name: str, ndim: int, modules: Sequence[str] = ("attention", "mlp")) -> bool:
    """Whether a tensor is a Linear weight of an attention/MLP block (see the module doc).

    `modules` narrows it to those blocks (e.g. `["mlp"]`: the MLP/expert weights only, as
    checkpoints that quantize experts and keep attention in high precision do).
    """
    parts = name.split(".")
    if ndim != 2 or len(parts) < 3 or parts[-1] != "weight":
        return False
    if parts[-2] in KEPT_MODULES or any(f in name for f in KEPT_FRAGMENTS):
        return False
    parents = frozenset().union(*(PARENTS_OF[m] for m in modules))
    return any(p in parents for p in parts[:-2])


STORED_DTYPES = ("bfloat16", "float16", "float32")
_DTYPE_ALIASES = {
    "bf16": "bfloat16",
    "half": "float16",
    "fp16": "float16",
    "float": "float32",
    "fp32": "float32",
}


def stored_dtype(serving_dtype: object) -> str:
    """The dtype an emulated copy is stored in for an engine `dtype` arg (bf16 by default)."""
    if not isinstance(serving_dtype, str):
        return "bfloat16"
    name = _DTYPE_ALIASES.get(serving_dtype.lower(), serving_dtype.lower())
    return name if name in STORED_DTYPES else "bfloat16"


def emulated_label(spec: WeightEmulation, dtype: str | None = "bfloat16") -> str:
    """How a report names an emulated weight format, e.g. 'weights fp8_e4m3/per_channel'.

    `dtype` is what the copy is stored in; None when not yet known (the serving dtype).
    """
    grain = f"group{spec.group_size}" if spec.granularity == "group" else spec.granularity
    only = "" if spec.all_blocks else f" ({'/'.join(spec.modules)} only)"
    stored = dtype or "the serving dtype"
    return f"weights {spec.format}/{grain}{only} (emulated: rounded and stored as {stored})"


def fake_quantize(
    weight: torch.Tensor, fmt: str, granularity: str, group_size: int = 128
) -> torch.Tensor:
    """Round a 2-D weight to `fmt` with symmetric absmax scales; return float32 values.

    Scales are float32: one for the tensor, one per output row, or one per
    `group_size` run of inputs within a row. FP8 rounds through torch's
    float8 dtypes (round to nearest even, saturating at the format's max);
    INT formats round to the nearest integer in [-qmax, qmax].
    """
    import torch

    if fmt not in QMAX:
        raise BadInput(f"unknown weight format {fmt!r}")
    w = weight.detach().to(torch.float32)
    rows, cols = w.shape
    if granularity == "per_tensor":
        blocks = w.reshape(1, -1)
    elif granularity == "per_channel":
        blocks = w
    elif granularity == "group":
        pad = (-cols) % group_size
        # Zero padding never raises a group's absmax, so it does not change any scale.
        blocks = torch.nn.functional.pad(w, (0, pad)).reshape(-1, group_size)
    else:
        raise BadInput(f"unknown scale granularity {granularity!r}")
    qmax = QMAX[fmt]
    absmax = blocks.abs().amax(dim=1, keepdim=True)
    scale = torch.where(absmax > 0, absmax / qmax, torch.ones_like(absmax))
    scaled = blocks / scale
    if fmt == "fp8_e4m3":
        rounded = scaled.clamp(-qmax, qmax).to(torch.float8_e4m3fn).to(torch.float32)
    elif fmt == "fp8_e5m2":
        rounded = scaled.clamp(-qmax, qmax).to(torch.float8_e5m2).to(torch.float32)
    else:
        rounded = scaled.round().clamp(-qmax, qmax)
    restored = rounded * scale
    if granularity == "group":
        return restored.reshape(rows, -1)[:, :cols]
    return restored.reshape(rows, cols)


def tensor_errors(source: torch.Tensor, emulated: torch.Tensor) -> tuple[float, float, float]:
    """(mean relative, max relative, relative L2) error of `emulated` against `source`."""
    import torch

    src = source.to(torch.float32)
    diff = (emulated.to(torch.float32) - src).abs()
    mean_ref = float(src.abs().mean())
    max_ref = float(src.abs().max())
    l2_ref = float(src.norm())
    return (
        float(diff.mean()) / mean_ref if mean_ref else 0.0,
        float(diff.max()) / max_ref if max_ref else 0.0,
        float(diff.norm()) / l2_ref if l2_ref else 0.0,
    )
