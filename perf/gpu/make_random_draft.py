"""Write an untrained draft model for vLLM's `draft_model` speculation (run THERE, after setup).

Usage: python3 make_random_draft.py [OUT] [CHECKPOINT]
OUT (default /tmp/qgate-draft-random): a one-layer Llama with CHECKPOINT's vocabulary, tokenizer
and config (default: the prepared SmolLM2, $QGATE_CACHE_DIR/models/smollm2-135m-instruct) and
seeded random weights; tests/integration/test_speculative_vllm.py builds the same draft on the
CPU with `random_draft` below. The target rejects nearly every token it drafts:
precision_profiles/smollm2-h200-draft.yaml serves it as `random-draft`, the candidate its
acceptance gate must fail. (vLLM's `draft_load_config: {load_format: dummy}` would not do: the
draft_model proposer loads the draft with the target's load config.) Needs numpy and safetensors
(the machine's own).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

HIDDEN, INNER, HEADS, KV_HEADS, HEAD_DIM = 64, 128, 2, 1, 32


def random_draft(folder: Path, checkpoint: Path) -> Path:
    """A one-layer Llama with `checkpoint`'s vocabulary and tokenizer and seeded random weights."""
    folder.mkdir(parents=True, exist_ok=True)
    config = json.loads((checkpoint / "config.json").read_text())
    config.update(
        hidden_size=HIDDEN,
        intermediate_size=INNER,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        head_dim=HEAD_DIM,
        num_hidden_layers=1,
        dtype="float32",
    )
    config.pop("_model_name_or_path", None)
    (folder / "config.json").write_text(json.dumps(config))
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(checkpoint / name, folder / name)
    rng = np.random.default_rng(0)
    shapes = {
        "model.embed_tokens.weight": (config["vocab_size"], HIDDEN),
        "model.layers.0.self_attn.q_proj.weight": (HEADS * HEAD_DIM, HIDDEN),
        "model.layers.0.self_attn.k_proj.weight": (KV_HEADS * HEAD_DIM, HIDDEN),
        "model.layers.0.self_attn.v_proj.weight": (KV_HEADS * HEAD_DIM, HIDDEN),
        "model.layers.0.self_attn.o_proj.weight": (HIDDEN, HEADS * HEAD_DIM),
        "model.layers.0.mlp.gate_proj.weight": (INNER, HIDDEN),
        "model.layers.0.mlp.up_proj.weight": (INNER, HIDDEN),
        "model.layers.0.mlp.down_proj.weight": (HIDDEN, INNER),
    }
    tensors = {k: rng.normal(0.0, 0.02, v).astype(np.float32) for k, v in shapes.items()}
    for norm in ("model.layers.0.input_layernorm", "model.layers.0.post_attention_layernorm"):
        tensors[f"{norm}.weight"] = np.ones(HIDDEN, np.float32)
    tensors["model.norm.weight"] = np.ones(HIDDEN, np.float32)
    save_file(tensors, str(folder / "model.safetensors"))
    return folder


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/qgate-draft-random")
    cache = os.environ.get("QGATE_CACHE_DIR", "/tmp/qcache")
    ckpt = Path(sys.argv[2] if len(sys.argv) > 2 else f"{cache}/models/smollm2-135m-instruct")
    random_draft(out, ckpt)
    print("random draft:", out, sorted(os.listdir(out)))


if __name__ == "__main__":
    main()
