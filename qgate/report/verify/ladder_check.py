"""Verify's check of the context ladder's items: each is one the profile plants, in its bucket,
and every item the profile plants there is stored (unless the run stopped early, saying so:
then the first it asks, in index order).

Each `context.<centre>` run must be a bucket of the profile's ladder; each item id names its
index (below the bucket's item count), its target length (inside the bucket, or at the
clipped top when the run says it clipped) and its depth (the profile's depths in turn), and
its expected code is the one the seed plants there (qgate/quality/data_context_ladder.py).
Each item's stored logprobs (`generated`), where present, must be usable (one position per
generated token, ids and logprobs paired, the token among its ids, no more than the profile's
top_k plus that token, probabilities summing to at most one). The verdicts of each bucket,
its divergence limits included, are then recomputed from these records like every
exact-answer suite's; the cliff the report names is the first bucket whose recomputed gates
fail.
"""

from __future__ import annotations

from qgate.errors import VerificationFailed
from qgate.profile import ContextLadder
from qgate.profile.context_ladder import bucket_of_suite, buckets, parse_item_id
from qgate.quality.data_context_ladder import ladder_codes
from qgate.quality.ladder_divergence import generated_problem
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.sizing import ladder_items

__all__ = ["check_ladder_items"]


def check_ladder_items(run: SuiteRun, spec: ContextLadder) -> None:
    """Raise VerificationFailed naming the item whose id or code the profile does not give."""
    centre = bucket_of_suite(run.suite)
    found = {b.centre: b for b in buckets(spec.start, spec.up_to)}
    if centre is None or centre not in found:
        raise VerificationFailed(
            f"{run.suite} ({run.role}): not a bucket of the profile's context ladder "
            f"(buckets {sorted(found)})"
        )
    bucket = found[centre]
    count = ladder_items(spec)
    codes = ladder_codes(spec, centre, count)
    clipped = bool(run.params.get("clip_reason"))
    seen: set[str] = set()
    indices: set[int] = set()
    for record in run.items:
        where = f"{run.suite} {run.role} item {record.id}"
        if record.id in seen:
            raise VerificationFailed(f"{where}: stored twice")
        seen.add(record.id)
        parsed = parse_item_id(record.id)
        if parsed is None or parsed[0] != centre or parsed[1] not in codes:
            raise VerificationFailed(
                f"{where}: id names no item the profile plants in bucket {centre} ({count} items)"
            )
        _, index, target, depth_pct = parsed
        if index in indices:
            raise VerificationFailed(f"{where}: index {index} stored twice")
        indices.add(index)
        depth, code = codes[index]
        if depth_pct != round(depth * 100):
            raise VerificationFailed(
                f"{where}: depth {depth_pct}% stored, {round(depth * 100)}% re-derived"
            )
        inside = bucket.lo <= target < bucket.hi
        if not inside and not (clipped and target < bucket.hi):
            raise VerificationFailed(
                f"{where}: target {target} tokens lies outside the bucket {bucket.label()}"
            )
        if record.expected != code:
            raise VerificationFailed(
                f"{where}.expected: {record.expected!r} stored, {code!r} re-derived "
                "(the code planted at its depth)"
            )
        _check_generated(where, record, spec.top_k)
    if len(seen) != count and not (run.partial and run.planned == count and run.stopped):
        raise VerificationFailed(
            f"{run.suite} ({run.role}): {len(seen)} items stored, {count} planned in the bucket "
            "by the profile: a planned item is missing"
        )
    # a bucket that stopped early asked its items in index order: it holds the first of them
    if indices != set(range(len(indices))):
        gone = sorted(set(range(len(indices))) - indices)
        shown = ", ".join(str(i) for i in gone[:3]) + (f", ... ({len(gone)})" if gone[3:] else "")
        raise VerificationFailed(
            f"{run.suite} ({run.role}): stopped at {len(indices)} of {count} items, not the "
            f"first {len(indices)} it asks (in index order): missing index {shown}"
        )


def _check_generated(where: str, record: ItemRecord, top_k: int) -> None:
    g = record.generated
    if g is None:
        return
    if top_k == 0:
        raise VerificationFailed(f"{where}.generated: logprobs stored, the profile's top_k is 0")
    problem = generated_problem(g)
    if problem is None and any(len(ids) > top_k + 1 for ids in g.top_ids):
        problem = f"more ids at a position than top_k {top_k} and the generated token"
    if problem is not None:
        raise VerificationFailed(f"{where}.generated: {problem}")
