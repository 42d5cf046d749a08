"""A suite's registry entry (`SuiteEntry`) and the registry itself: what qgate/profile/suites.py
reads to run, plan and verify every suite, and what qgate/profile/builtin_suites.py and the
plug-ins of the `qgate.suites` entry-point group fill."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel

from qgate.core.features import Feature
from qgate.core.plan import SuitePlan
from qgate.core.registry import Registry, load_object
from qgate.core.yamlload import KeyPath
from qgate.profile.quality import AccuracyPolicy
from qgate.profile.suite_results import Results

__all__ = [
    "ACCURACY_GATE_FIELDS",
    "SUITES",
    "SuiteEntry",
    "register",
    "registered",
    "suite_entry",
    "unregister",
]

ACCURACY_GATE_FIELDS = frozenset(AccuracyPolicy.model_fields)
"""Policy fields of every exact-answer suite: they decide verdicts, never what is generated."""


@dataclass(frozen=True)
class SuiteEntry:
    """One suite: the declarations, and where its runner lives ("module:attribute")."""

    key: str
    """Field of `QualitySpec` (the profile's `quality.<key>`) that configures it."""
    model: type[BaseModel]
    """Its profile model (of one item, when the field is a list)."""
    runner: str
    """"module:attribute" of its `SuiteRunner` (or `PairedRunner`), imported on first use."""
    results: Callable[[Any], Results] | None = None
    """Result ids and policies of a configuration; None: the single id `key`, gated by it."""
    gate_fields: frozenset[str] = ACCURACY_GATE_FIELDS
    """Policy fields that decide verdicts only (left out of the reference cache key)."""
    needs: frozenset[Feature] = frozenset()
    """Engine features it cannot run without."""
    uses: frozenset[Feature] = frozenset()
    """Engine features it uses when present (with a fallback when not)."""
    paired: bool = False
    """The divergence step: runs on the reference, then on the candidate with its scores."""
    engine_args: Callable[[Any], list[tuple[str, str]]] | None = None
    """vLLM engine args a configuration cannot run without: (arg, why); checked on each side
    that qgate starts as vLLM (`qgate validate` refuses, `qgate plan` names them)."""
    planned: str | None = None
    """"module:attribute" of a function setting -> [SuitePlan] (result id, items per side, what
    an item is, where items come from), for `qgate plan` and its stated power (imported on
    first use); None: the plan lists the result ids, items unknown."""
    family: str | None = None
    """Head of its result ids ('context' for the ladder's 'context.<centre>'); None: the key."""
    rederive: str | None = None
    """"module:attribute" of a function (run, profile, out) that `qgate verify` calls on each of
    its runs to re-derive every item's correctness from the stored response
    (qgate/report/verify/rederive.py); None: its items are listed as not re-derived."""
    check_items: str | None = None
    """"module:attribute" of a function (run, profile, out) that `qgate verify` calls on each of
    its runs to check the stored items and expected answers against what the profile
    generates; None: only the two sides' expected answers are compared."""
    item_ids: str | None = None
    """"module:attribute" of a function (setting, run) -> the item ids the setting plans for
    the run's result, in the order the suite asks them, or None where they cannot be derived
    (qgate/quality/item_ids.py): `qgate verify` holds each side's records to exactly them, a
    run that stopped early to the first of them (qgate/report/verify/item_plan.py). None: its
    `check_items` holds its items to the plan itself."""
    problems: Callable[[Any, Any], list[tuple[KeyPath, str]]] | None = None
    """(setting, profile) -> (key path, message) of what its schema cannot see (a value the
    sides' settings make impossible, a repeated entry): `qgate validate` refuses them."""
    asked_again: str | None = None
    """"module:attribute" of its `AskedAgain` (one setting per result id, cut to a pass's
    limit): `quality.reuse` can ask its results again; None: it cannot."""
    shuffles: bool = False
    """Its runner asks its items in the seeded look order under `quality.stop: looks`
    (qgate/quality/look_order.py): `qgate verify` holds a stopped candidate to the first of
    that order. False: it asks them in its own order (generated sets are drawn at random)."""
    localise: str | None = None
    """"module:attribute" of its `Localiser` (qgate/report/localise.py): the report's rows by
    prompt length, depth and difficulty, and where a failed gate's damage sits; None: none."""

    def plan_rows(self, setting: Any) -> list[SuitePlan] | None:
        """Its plan, one row per result, when the entry says."""
        if self.planned is None:
            return None
        plan = cast("Callable[[Any], list[SuitePlan]]", load_object(self.planned))
        return plan(setting)

    @property
    def prefix(self) -> str:
        """The head of its result ids."""
        return self.family or self.key

    def owns(self, result_id: str) -> bool:
        """Whether `result_id` ('math.short', 'divergence') is one of its results."""
        return result_id.partition(".")[0] == self.prefix

    def load(self) -> Any:
        """The runner object, imported now."""
        return load_object(self.runner)

    def results_of(self, setting: Any) -> Results:
        """Result ids and gate policies of a configuration (none for the paired suite)."""
        if self.paired:
            return []
        if self.results is not None:
            return self.results(setting)
        return [(self.key, setting)]


def _suite(entry: object) -> SuiteEntry:
    if not isinstance(entry, SuiteEntry):
        raise TypeError(f"{entry!r} is not a SuiteEntry")
    return entry


SUITES: Registry[SuiteEntry] = Registry("suite", _suite, name_of=lambda e: e.key)
"""Suite keys -> their entries, in the order the suites run (plug-ins of the `qgate.suites`
entry-point group last: a distribution declares `word_count = pkg.module:ENTRY`, a
`SuiteEntry` whose key is the entry point's name)."""


def register(entry: SuiteEntry) -> SuiteEntry:
    """Add a suite; suites run in registration order. A taken key is refused (DuplicateName)."""
    if entry.paired and any(e.paired for e in SUITES.values()):
        raise ValueError("divergence is the one paired suite; register exact-answer suites")
    SUITES.register(entry.key, entry)
    return entry


def unregister(key: str) -> None:
    """Remove a suite (tests that register a toy suite)."""
    SUITES.unregister(key)


def registered() -> tuple[SuiteEntry, ...]:
    """Every suite, in the order they run."""
    return tuple(SUITES.values())


def suite_entry(key: str) -> SuiteEntry:
    """The entry of `key`; UnknownName (a BadInput) naming the registered suites otherwise."""
    return SUITES.get(key)
