"""RFC 6962 (RFC 9162 section 2.1) Merkle tree hashes and inclusion proofs, SHA-256.

A leaf hashes as SHA-256(0x00 || bytes), a node as SHA-256(0x01 || left || right), and a
tree of n leaves splits at the largest power of two below n: the tree Certificate
Transparency logs use, so any RFC 6962 verifier checks a qgate proof. Written here rather
than taken from a package because it is forty lines of hashing that the report, verify and
the spot check must agree on byte for byte, and no Merkle library is in the lock; the test
holds it to the RFC's published roots and proofs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = ["inclusion_proof", "leaf_hash", "node_hash", "root_of", "root_from_proof"]


def leaf_hash(data: bytes) -> bytes:
    """The hash of one leaf: SHA-256(0x00 || data)."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The hash of an inner node: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly below n (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def root_of(leaves: Sequence[bytes]) -> bytes:
    """The tree head over leaf hashes, in order (the empty tree: SHA-256 of nothing)."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    level = list(leaves)
    if len(level) == 1:
        return level[0]
    k = _split(len(level))
    return node_hash(root_of(level[:k]), root_of(level[k:]))


def inclusion_proof(leaves: Sequence[bytes], index: int) -> list[bytes]:
    """The audit path of leaf `index` (0-based) in the tree over `leaves`, leaf side first."""
    if not 0 <= index < len(leaves):
        raise ValueError(f"leaf {index} is not in a tree of {len(leaves)}")
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*inclusion_proof(leaves[:k], index), root_of(leaves[k:])]
    return [*inclusion_proof(leaves[k:], index - k), root_of(leaves[:k])]


def root_from_proof(leaf: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes | None:
    """The root that leaf hash `leaf` at `index` of a tree of `size` proves through `proof`
    (RFC 9162 2.1.3.2); None when the proof cannot belong to that position and size."""
    if not 0 <= index < size:
        return None
    fn, sn = index, size - 1
    r = leaf
    for p in proof:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return r if sn == 0 else None
