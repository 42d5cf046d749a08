"""Which tokenizer builds the exact-length prompts of `qgate perf` against an endpoint.

vLLM serves `POST /tokenize`; other OpenAI-compatible servers do not. Then
prompts are tokenized locally with the served model's Hugging Face
tokenizer: `--tokenizer DIR`, else the model's own folder when the server
reports one that exists on this machine (vLLM's `/v1/models` gives it as
`root`; the model id itself when it is a path).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from qgate.core.http import root_url
from qgate.errors import BadInput, InfrastructureError

Tokenize = Callable[[str], Awaitable[list[int]]]


def local_tokenizer(path: str | Path) -> Tokenize:
    """Tokenize with the Hugging Face tokenizer in a local folder (no special tokens)."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise BadInput(
            f"tokenizer {path}: not a folder; give a local folder with the served model's "
            "Hugging Face tokenizer (tokenizer.json or tokenizer_config.json)"
        )
    from transformers import AutoTokenizer

    try:
        tok: Any = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except (OSError, ValueError) as e:
        raise BadInput(f"tokenizer {folder}: cannot load a tokenizer from it ({e})") from e

    async def tokenize(text: str) -> list[int]:
        return [int(t) for t in tok.encode(text, add_special_tokens=False)]

    return tokenize


async def served_models(base_url: str, headers: dict[str, str] | None) -> list[dict[str, Any]]:
    """The `data` entries of GET {base_url}/models."""
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as s,
            s.get(base_url.rstrip("/") + "/models", headers=headers) as r,
        ):
            r.raise_for_status()
            data = await r.json()
        entries = [e for e in data["data"] if isinstance(e, dict) and "id" in e]
    except (aiohttp.ClientError, TimeoutError, KeyError, TypeError, ValueError) as e:
        raise InfrastructureError(f"cannot list models at {base_url}/models: {e}") from e
    if not entries:
        raise InfrastructureError(f"{base_url}/models lists no model")
    return entries


async def server_tokenizes(base_url: str, model: str, headers: dict[str, str] | None) -> bool:
    """Whether POST {root}/tokenize answers with token ids (vLLM does)."""
    body = {"model": model, "prompt": "hello world", "add_special_tokens": False}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as s,
            s.post(root_url(base_url) + "/tokenize", json=body, headers=headers) as r,
        ):
            if r.status != 200:
                return False
            got = await r.json(content_type=None)
        return isinstance(got, dict) and isinstance(got.get("tokens"), list)
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return False


def choose_tokenizer(
    base_url: str, model: str, root: str | None, tokenizer: str | None, server_has: bool
) -> Tokenize | None:
    """A local tokenizer, or None to use the server's /tokenize; says what is missing."""
    if tokenizer is not None:
        return local_tokenizer(tokenizer)
    if server_has:
        return None
    for cand in (root, model):
        if cand and Path(cand).expanduser().is_dir():
            return local_tokenizer(cand)
    raise InfrastructureError(
        f"{root_url(base_url)}/tokenize is not served, and the served model {model!r} is not "
        "a folder on this machine: exact-length prompts need the model's tokenizer; pass "
        "--tokenizer DIR (a local folder with its Hugging Face tokenizer files)"
    )
