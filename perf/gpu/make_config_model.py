"""Write a config-only model folder (no weights) for vLLM's `--load-format dummy`.

Usage: python3 make_config_model.py OUT [TOKENIZER_DIR] [SHAPE]
SHAPE 'llama3-8b' (default): Llama-3-8B's shape (32 layers, hidden 4096, MLP 14336, 32 heads /
8 KV heads, rope theta 500000) with SmolLM2's 49152-token vocabulary, so that the tokenizer
carried to the machine matches (7.38 B parameters; Llama-3-8B's own 128256-token vocabulary
would add 0.8 B). precision_profiles/models/llama3-8b-shape/ holds the same shape.
The tokenizer files are copied from TOKENIZER_DIR (default /tmp/tok).
"""

from __future__ import annotations

import json
import os
import shutil
import sys

SHAPES = {
    "llama3-8b": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": 49152,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "pad_token_id": 2,
        "torch_dtype": "bfloat16",
    },
}


def main() -> None:
    out = sys.argv[1]
    tok = sys.argv[2] if len(sys.argv) > 2 else "/tmp/tok"
    shape = sys.argv[3] if len(sys.argv) > 3 else "llama3-8b"
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(SHAPES[shape], f, indent=1)
    for name in (
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "chat_template.jinja",
        "generation_config.json",
    ):
        if os.path.exists(os.path.join(tok, name)):
            shutil.copy(os.path.join(tok, name), out)
    print("config-only model:", out, sorted(os.listdir(out)))


if __name__ == "__main__":
    main()
