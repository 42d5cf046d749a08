"""What the quality stage asks of the board (`quality.stop`), and its blocks.

The run makes one board per reference-candidate pair (qgate/gates/board.py: its decisions
are the gates') and hands it to the quality stage; the suites answer their items a block at
a time (`in_blocks`), posting after each, until the board says the suite is settled or
halted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from qgate.core.records import Role
from qgate.profile import DivergenceSuite
from qgate.quality.records import DivergenceRun, ItemRecord

__all__ = ["Board", "block_name", "in_blocks"]


def block_name(suite: str, lo: int, hi: int, count: int) -> str:
    """What a block's progress line calls it ('math.short' when it is the whole suite)."""
    return suite if (lo, hi) == (0, count) else f"{suite} {lo + 1}-{hi} of {count}"


class Board(Protocol):
    """What the quality stage asks of the board the run hands it (the one board is
    qgate/gates/board.py `SettleBoard`, whose decisions are the gates')."""

    @property
    def enabled(self) -> bool:
        """Whether suites may stop early at all (`quality.stop` is not off)."""
        ...

    @property
    def block(self) -> int:
        """Items per block between two posts."""
        ...

    def halted(self, role: Role) -> str | None:
        """Why `role`'s whole quality stage stops (`stop: verdict`), or None."""
        ...

    @property
    def order_seed(self) -> int | None:
        """The seed the suites shuffle their items by before asking them (`stop: looks`:
        qgate/gates/looks.py `look_order`), else None: in their own order."""
        ...

    def post(self, role: Role, suite: str, items: Sequence[ItemRecord], planned: int) -> str | None:
        """Record a side's items so far; why the suite stops now, or None to go on."""
        ...

    def post_divergence(self, setting: DivergenceSuite, run: DivergenceRun) -> None:
        """The candidate's finished divergence suite, for the board to gate."""
        ...


async def in_blocks(
    board: Board | None,
    role: Role,
    suite: str,
    count: int,
    answer: Callable[[int, int], Awaitable[list[ItemRecord]]],
) -> tuple[list[ItemRecord], int | None, str | None]:
    """Items [0, count) answered by `answer(lo, hi)`: (records, planned, why it stopped).

    Without an enabled board, one call for all; with one, a block at a time,
    posted after each, until the board says the suite is settled or halted.
    `planned` is set only when the suite stopped before its end.
    """
    if board is None or not board.enabled:
        return await answer(0, count), None, None
    records: list[ItemRecord] = []
    for lo in range(0, count, board.block):
        if lo and (why := board.halted(role)):
            return records, count, why
        records += await answer(lo, min(count, lo + board.block))
        why = board.post(role, suite, records, count)
        if why is not None and len(records) < count:
            return records, count, why
    return records, None, None
