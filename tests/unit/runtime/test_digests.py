from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from qgate.checkpoint import digests
from qgate.checkpoint.digests import checkpoint_digests, tree_digest


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    (d / "sub").mkdir(parents=True)
    (d / ".cache").mkdir()
    (d / "config.json").write_text('{"a": 1}')
    # Larger than one chunk, so the streaming loop runs more than once.
    (d / "sub" / "weights.bin").write_bytes(os.urandom(digests.CHUNK + 123))
    (d / ".cache" / "download.lock").write_text("x")
    return d


@pytest.fixture
def hash_calls(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = digests.sha256_file

    def counting(path: Path) -> str:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(digests, "sha256_file", counting)
    return calls


def test_digests_are_sha256_of_every_file_relative_and_sorted(model_dir: Path) -> None:
    files = checkpoint_digests(model_dir, model_dir.parent / "cache.json")
    assert [f.path for f in files] == ["config.json", "sub/weights.bin"]
    weights = (model_dir / "sub" / "weights.bin").read_bytes()
    assert files[1].sha256 == hashlib.sha256(weights).hexdigest()
    assert files[1].size == len(weights)


def test_cache_hashes_once_and_rehashes_on_mtime_change(
    model_dir: Path, hash_calls: list[Path]
) -> None:
    cache = model_dir.parent / "cache.json"
    first = checkpoint_digests(model_dir, cache)
    assert len(hash_calls) == 2
    assert checkpoint_digests(model_dir, cache) == first
    assert len(hash_calls) == 2, "unchanged files must come from the cache"
    weights = model_dir / "sub" / "weights.bin"
    st = weights.stat()
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    again = checkpoint_digests(model_dir, cache)
    assert hash_calls[2:] == [weights]
    assert again == first


def test_changed_content_with_same_size_is_detected_through_mtime(
    model_dir: Path, hash_calls: list[Path]
) -> None:
    cache = model_dir.parent / "cache.json"
    before = checkpoint_digests(model_dir, cache)
    cfg = model_dir / "config.json"
    old = cfg.stat().st_mtime_ns
    cfg.write_text('{"a": 2}')
    os.utime(cfg, ns=(old + 5_000_000, old + 5_000_000))
    after = checkpoint_digests(model_dir, cache)
    assert before[0].sha256 != after[0].sha256
    assert after[0].sha256 == hashlib.sha256(b'{"a": 2}').hexdigest()


def test_corrupt_cache_is_ignored_and_rewritten(model_dir: Path, hash_calls: list[Path]) -> None:
    cache = model_dir.parent / "cache.json"
    cache.write_text("{not json")
    checkpoint_digests(model_dir, cache)
    assert len(hash_calls) == 2
    data = json.loads(cache.read_text())
    assert data["version"] == 1 and len(data["entries"]) == 2


def test_tree_digest_depends_on_content_and_names(model_dir: Path) -> None:
    files = checkpoint_digests(model_dir, model_dir.parent / "c.json")
    base = tree_digest(files)
    assert tree_digest(list(reversed(files))) == base
    renamed = [files[0].model_copy(update={"path": "other.json"}), files[1]]
    assert tree_digest(renamed) != base
