"""qgate/attest/merkle.py against RFC 6962's published tree heads and audit paths (the
Certificate Transparency test vectors), and every proof of every small tree both ways."""

from __future__ import annotations

import pytest

from qgate.attest.merkle import inclusion_proof, leaf_hash, root_from_proof, root_of

LEAVES = [
    bytes.fromhex(h)
    for h in ["", "00", "10", "2021", "3031", "40414243", "5051525354555657"]
    + ["606162636465666768696a6b6c6d6e6f"]
]
ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
HASHES = [leaf_hash(x) for x in LEAVES]


@pytest.mark.parametrize("size", range(len(ROOTS)))
def test_tree_heads_are_the_rfcs(size: int) -> None:
    assert root_of(HASHES[:size]).hex() == ROOTS[size]


@pytest.mark.parametrize(
    ("index", "path"),
    [
        (
            0,
            [
                "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
            ],
        ),
        (
            5,
            [
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            ],
        ),
    ],
)
def test_audit_paths_are_the_rfcs(index: int, path: list[str]) -> None:
    assert [p.hex() for p in inclusion_proof(HASHES, index)] == path
    proof = [bytes.fromhex(p) for p in path]
    assert root_from_proof(HASHES[index], index, 8, proof) == bytes.fromhex(ROOTS[8])


@pytest.mark.parametrize("size", range(1, 34))
def test_every_proof_proves_its_leaf_and_no_other(size: int) -> None:
    leaves = [leaf_hash(i.to_bytes(2, "big")) for i in range(size)]
    root = root_of(leaves)
    for index in range(size):
        proof = inclusion_proof(leaves, index)
        assert root_from_proof(leaves[index], index, size, proof) == root
        other = leaves[(index + 1) % size] if size > 1 else leaf_hash(b"other")
        assert root_from_proof(other, index, size, proof) != root
        if size > 1:  # the same path read for another position proves another tree
            assert root_from_proof(leaves[index], (index + 1) % size, size, proof) != root


def test_a_position_outside_the_tree_proves_nothing() -> None:
    assert root_from_proof(HASHES[0], 8, 8, []) is None
    with pytest.raises(ValueError, match="not in a tree of 8"):
        inclusion_proof(HASHES, 8)
