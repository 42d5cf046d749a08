"""Write the config-only model folders used by dummy-weights previews (no weights at all).

    python precision_profiles/models/make_shapes.py [SMOLLM2_DIR]

Each folder holds a config.json of a real architecture's shape (layer count,
widths, heads, experts) with SmolLM2's 49,152-token vocabulary, and symlinks to
SmolLM2's tokenizer files in smollm2-tokenizer/ (copied from the embedded
checkpoint, `qgate models prepare smollm2`), so every sampled id decodes. vLLM
serves them with `load_format: dummy` (random weights): speed only.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
COMMON = {"vocab_size": 49152, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2,
          "tie_word_embeddings": False, "dtype": "bfloat16"}  # fmt: skip

SHAPES = {
    # Llama-3-8B: 32 layers, hidden 4096, MLP 14336, 32 heads / 8 KV heads, rope 500000
    "llama3-8b-shape": (
        "LlamaConfig",
        {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
         "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 8192,
         "rms_norm_eps": 1e-5, "rope_theta": 500000.0},
    ),
    # Qwen3-30B-A3B: 48 layers, hidden 2048, 128 experts (8 active, 768 wide), 32 / 4 KV heads
    "qwen3-moe-30b-a3b-shape": (
        "Qwen3MoeConfig",
        {"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, "intermediate_size": 6144,
         "moe_intermediate_size": 768,
         "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
         "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": True,
         "decoder_sparse_step": 1, "mlp_only_layers": [], "max_position_embeddings": 40960,
         "rms_norm_eps": 1e-6, "rope_theta": 1000000.0},
    ),
}  # fmt: skip


def main(smollm2: Path) -> None:
    import transformers

    tok = HERE / "smollm2-tokenizer"
    tok.mkdir(exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copy(smollm2 / name, tok / name)
    for folder, (cls, shape) in SHAPES.items():
        out = HERE / folder
        out.mkdir(exist_ok=True)
        config = getattr(transformers, cls)(**COMMON, **shape)
        data = json.loads(config.to_json_string())
        data.pop("transformers_version", None)
        (out / "config.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        for name in TOKENIZER_FILES:
            link = out / name
            link.unlink(missing_ok=True)
            link.symlink_to(Path("..") / "smollm2-tokenizer" / name)
        print(folder, sorted(p.name for p in out.iterdir()))


if __name__ == "__main__":
    default = Path.home() / ".cache/qgate/models/smollm2-135m-instruct"
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
