"""A Merkle root over the report's per-item records, and the proof of one item.

Each leaf is one exact-answer item as one side answered it: the canonical JSON (sorted keys,
no spaces, UTF-8) of its suite, side and record, in the report's order. The tree is RFC 6962's
(qgate/attest/merkle.py). The report stores the root (`items_root`, re-derived by verify);
the signed result statement beside it (qgate/report/result_statement.py) carries the same
root, so an auditor holding that small statement checks one item with its audit path
(`qgate proof`, `qgate check-proof`) without the whole record set.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from qgate.attest.merkle import inclusion_proof, leaf_hash, root_from_proof, root_of
from qgate.core.records import Record
from qgate.errors import BadInput
from qgate.quality.records import ItemRecord, SuiteRun

__all__ = ["SCHEME", "ItemProof", "ItemsRoot", "check_proof", "items_root", "prove"]

Scheme = Literal["rfc6962-sha256/qgate-item-v1"]
SCHEME: Scheme = "rfc6962-sha256/qgate-item-v1"


class ItemsRoot(Record):
    """The tree head over every per-item record of the quality suites."""

    scheme: Scheme = Field(
        default=SCHEME,
        description="RFC 6962 SHA-256 tree; a leaf is the canonical JSON of {suite, role, item}.",
    )
    sha256: str = Field(description="The root, hex.")
    leaves: int = Field(description="Items in the tree (both sides, every suite).")


class ItemProof(Record):
    """One item's leaf and audit path: what `qgate check-proof` needs besides the root."""

    scheme: Scheme = Field(default=SCHEME, description="Tree.")
    suite: str = Field(description="The item's suite.")
    role: str = Field(description="The side that answered.")
    id: str = Field(description="The item id.")
    leaf: str = Field(description="The leaf's exact text (canonical JSON), as hashed.")
    index: int = Field(description="The leaf's position, 0-based.")
    size: int = Field(description="Leaves in the tree.")
    path: list[str] = Field(description="The audit path, leaf side first (hex).")
    root: str = Field(description="The root it proves (hex); check it against a signed one.")


def _leaf_text(run: SuiteRun, item: ItemRecord) -> str:
    body = {"suite": run.suite, "role": run.role, "item": item.model_dump(mode="json")}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _leaves(runs: Sequence[SuiteRun]) -> list[tuple[SuiteRun, ItemRecord, bytes]]:
    return [
        (run, item, leaf_hash(_leaf_text(run, item).encode())) for run in runs for item in run.items
    ]


def items_root(runs: Sequence[SuiteRun]) -> ItemsRoot:
    """The root over every item of `runs` (the report's `quality.runs`), in their order."""
    hashes = [h for _, _, h in _leaves(runs)]
    return ItemsRoot(sha256=root_of(hashes).hex(), leaves=len(hashes))


def prove(runs: Sequence[SuiteRun], suite: str, role: str, item_id: str) -> ItemProof:
    """The proof of item `item_id` of `suite` as `role` answered it; BadInput when absent."""
    leaves = _leaves(runs)
    hashes = [h for _, _, h in leaves]
    for index, (run, item, _) in enumerate(leaves):
        if (run.suite, str(run.role), item.id) == (suite, role, item_id):
            return ItemProof(
                suite=suite,
                role=role,
                id=item_id,
                leaf=_leaf_text(run, item),
                index=index,
                size=len(hashes),
                path=[p.hex() for p in inclusion_proof(hashes, index)],
                root=root_of(hashes).hex(),
            )
    suites = sorted({r.suite for r in runs})
    raise BadInput(
        f"no item {item_id!r} of suite {suite!r} answered by {role!r} (suites: {suites})"
    )


def check_proof(proof: ItemProof, signed: ItemsRoot) -> str | None:
    """Why `proof` does not prove its item under the signed root (None: it does)."""
    if proof.size != signed.leaves:
        return (
            f"the proof is for a tree of {proof.size} items, the signed root's has {signed.leaves}"
        )
    try:
        body = json.loads(proof.leaf)
        named = (body["suite"], body["role"], body["item"]["id"])
    except (ValueError, KeyError, TypeError):
        return "the leaf is not an item record"
    if named != (proof.suite, proof.role, proof.id):
        return f"the leaf holds item {named}, the proof names {(proof.suite, proof.role, proof.id)}"
    try:
        path = [bytes.fromhex(p) for p in proof.path]
    except ValueError:
        return "the audit path is not hex"
    got = root_from_proof(leaf_hash(proof.leaf.encode()), proof.index, proof.size, path)
    if got is None or got.hex() != signed.sha256:
        return "the leaf and its path do not lead to the signed root"
    return None
