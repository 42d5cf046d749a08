"""sha256 of every checkpoint file, with a cache so a multi-hundred-GB checkpoint is hashed once.

The cache is a JSON file keyed by absolute path; an entry is reused only
while the file's size and mtime_ns are unchanged.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import Field

from qgate.core.files import CHUNK as CHUNK
from qgate.core.files import atomic_write, sha256_file, sha256_text
from qgate.core.records import Record

_CACHE_VERSION = 1


class FileDigest(Record):
    """One checkpoint file."""

    path: str = Field(description="Path relative to the checkpoint folder, with / separators.")
    size: int = Field(description="Size in bytes.")
    sha256: str = Field(description="Hex sha256 of the content.")


def checkpoint_files(model_dir: Path) -> list[Path]:
    """Every regular file under `model_dir`, sorted; hidden folders (.cache, .git) are skipped."""
    files: list[Path] = []
    for root, dirs, names in os.walk(model_dir, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            p = Path(root) / name
            if p.is_file():
                files.append(p)
    return sorted(files, key=lambda p: p.relative_to(model_dir).as_posix())


def _load_cache(cache_path: Path) -> dict[str, Any]:
    try:
        data = json.loads(cache_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != _CACHE_VERSION:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def _save_cache(cache_path: Path, entries: dict[str, Any]) -> None:
    payload = json.dumps({"version": _CACHE_VERSION, "entries": entries}, indent=1, sort_keys=True)
    atomic_write(cache_path, payload.encode("utf-8"))


def checkpoint_digests(model_dir: Path, cache_path: Path) -> list[FileDigest]:
    """Digests of every checkpoint file, reusing cached ones whose size and mtime_ns match."""
    model_dir = Path(model_dir)
    entries = _load_cache(cache_path)
    changed = False
    out: list[FileDigest] = []
    for path in checkpoint_files(model_dir):
        st = path.stat()
        key = str(path.resolve())
        cached = entries.get(key)
        if (
            isinstance(cached, dict)
            and cached.get("size") == st.st_size
            and cached.get("mtime_ns") == st.st_mtime_ns
            and isinstance(cached.get("sha256"), str)
        ):
            digest = str(cached["sha256"])
        else:
            digest = sha256_file(path)
            entries[key] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
            changed = True
        rel = path.relative_to(model_dir).as_posix()
        out.append(FileDigest(path=rel, size=st.st_size, sha256=digest))
    if changed:
        _save_cache(cache_path, entries)
    return out


def tree_digest(files: list[FileDigest]) -> str:
    """One sha256 over the sorted (sha256, path) list: a checkpoint's identity."""
    lines = "".join(f"{f.sha256}  {f.path}\n" for f in sorted(files, key=lambda f: f.path))
    return sha256_text(lines)
