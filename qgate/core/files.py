"""File helpers every part of qgate shares: atomic writes, sha256 digests, JSONL bytes.

One home for them, so a run folder, the evals, the reference cache and the
checkpoint-digest cache all write and hash files the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = [
    "CHUNK",
    "atomic_write",
    "sha256_bytes",
    "sha256_file",
    "sha256_file_sized",
    "sha256_json",
    "sha256_text",
]

CHUNK = 1 << 20


def atomic_write(path: str | Path, data: bytes, mode: int = 0o644) -> Path:
    """Write `data` to `path` via a temp file in the same folder, fsync and os.replace."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    # fsync the folder so the rename itself survives a power loss
    try:
        dir_fd = os.open(target.parent, os.O_RDONLY)
    except OSError:
        return target
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
    return target


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """Hex sha256 of text encoded as UTF-8."""
    return sha256_bytes(text.encode("utf-8"))


def sha256_json(value: Any) -> str:
    """Hex sha256 of `json.dumps(value, sort_keys=True)`: the digest of a data view."""
    return sha256_text(json.dumps(value, sort_keys=True))


def sha256_file_sized(path: str | Path) -> tuple[str, int]:
    """Return (hex sha256, size in bytes) of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    return sha256_file_sized(path)[0]
