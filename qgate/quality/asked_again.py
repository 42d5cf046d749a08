"""What a suite declares so that `quality.reuse` can ask it again: its setting split per result,
cut to a pass's limit, and how many items a pass then asks.

Pure functions of the profile (no HTTP client): the quality stage runs the passes with them
(qgate/quality/reuse_pass.py) and `qgate verify` holds the pass records to the items they
plan (qgate/report/verify/pass_plan.py).
"""

from __future__ import annotations

import math
from typing import Any, Protocol, cast

from qgate.core.registry import load_object
from qgate.profile import MathSuite, RecallSuite
from qgate.profile.suites import SuiteEntry, registered, suite_entry
from qgate.quality.sizing import math_limit, recall_cells, recall_haystacks

__all__ = [
    "MATH_AGAIN",
    "RECALL_AGAIN",
    "AskedAgain",
    "pass_items",
    "pass_setting",
    "split_setting",
]


class AskedAgain(Protocol):
    """What a suite declares (`SuiteEntry.asked_again`) so that `quality.reuse` can ask it again."""

    def split(self, setting: Any) -> list[tuple[str, Any]]:
        """The setting as one setting per result id, in the suite's order."""
        ...

    def cut(self, setting: Any, limit: int) -> Any:
        """A one-result setting cut to its first `limit` items."""
        ...

    def asked(self, setting: Any, limit: int, cold: int) -> int:
        """The items a pass asks of a one-result setting cut to `limit`, its whole suite
        planning `cold` items a side."""
        ...


class _MathAgain:
    def split(self, setting: MathSuite) -> list[tuple[str, Any]]:
        return [(f"math.{f}", setting.model_copy(update={"prompts": [f]})) for f in setting.prompts]

    def cut(self, setting: MathSuite, limit: int) -> MathSuite:
        have = math_limit(setting)
        return setting.model_copy(
            update={"limit": limit if have is None else min(limit, have), "detect": None}
        )

    def asked(self, setting: MathSuite, limit: int, cold: int) -> int:
        return min(limit, cold)  # the first `limit` questions of the suite's own


class _RecallAgain:
    def split(self, setting: RecallSuite) -> list[tuple[str, Any]]:
        return [
            (f"recall.{n}", setting.model_copy(update={"context_tokens": [n]}))
            for n in setting.context_tokens
        ]

    def cut(self, setting: RecallSuite, limit: int) -> RecallSuite:
        wanted = math.ceil(limit / len(setting.depths))
        return setting.model_copy(
            update={"haystacks": min(wanted, recall_haystacks(setting)), "detect": None}
        )

    def asked(self, setting: RecallSuite, limit: int, cold: int) -> int:
        cut = self.cut(setting, limit)  # whole haystacks: every cell of each
        return recall_haystacks(cut) * recall_cells(cut)


MATH_AGAIN: AskedAgain = _MathAgain()
RECALL_AGAIN: AskedAgain = _RecallAgain()


def _again(entry: SuiteEntry) -> AskedAgain | None:
    return None if entry.asked_again is None else cast(AskedAgain, load_object(entry.asked_again))


def _owner(setting: Any) -> AskedAgain | None:
    for entry in registered():
        again = _again(entry)
        if again is not None and isinstance(setting, entry.model):
            return again
    return None


def split_setting(key: str, setting: Any) -> list[tuple[str, Any]]:
    """A setting of a suite that can be asked again as one setting per result id, in the
    suite's order (none for a suite that cannot)."""
    again = _again(suite_entry(key))
    return [] if again is None else again.split(setting)


def pass_setting(setting: Any, limit: int | None) -> Any:
    """A one-result setting cut to the pass's first `limit` items (unchanged without one)."""
    again = None if limit is None else _owner(setting)
    return setting if again is None or limit is None else again.cut(setting, limit)


def pass_items(setting: Any, limit: int | None, cold: int) -> int:
    """The items a pass asks of a one-result setting whose whole suite plans `cold` items a
    side: all of them without a limit, else what its cut to `limit` holds."""
    again = None if limit is None else _owner(setting)
    return cold if again is None or limit is None else again.asked(setting, limit, cold)
