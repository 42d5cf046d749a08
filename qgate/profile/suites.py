"""The quality suites a profile can configure: one lazy entry per suite key under `quality:`.

An entry declares what is known without running anything: the profile key
and model, the result ids and gate policies a configuration produces, the
policy fields that decide verdicts (left out of the reference cache key), and
the engine features the suite needs (a suite whose engine lacks one is refused
at validate time) or uses when the engine has them. How a suite runs on one
runtime, and the digest of its data, live in the suite's own module, named by
a "module:attribute" string and imported on first use, so `qgate validate`
and `qgate verify` never import a suite's HTTP client.

Adding a suite is one module (a `SuiteRunner`) plus one `register(SuiteEntry(...))`,
plus its profile model as a field of `QualitySpec`. Divergence is the one
paired suite (the reference generates and scores, the candidate scores the
reference's tokens): its entry declares its features and data digest, and the
quality stage runs it as an explicit step (`PairedRunner`).

What a suite does differently anywhere else is a hook on its entry (its plan rows, how
`qgate verify` re-derives and checks its items, its profile problems, whether the reuse
passes ask it again), declared here beside it: no module outside qgate/quality compares a
suite's name (tests/unit/test_suite_names.py).
"""

from __future__ import annotations

from typing import Any, get_origin

from pydantic import BaseModel

from qgate.core.features import Feature
from qgate.core.yamlload import KeyPath
from qgate.profile.extra_suites import look_up_with
from qgate.profile.model import Profile
from qgate.profile.quality import (
    QualitySpec,
)
from qgate.profile.suite_entry import (
    ACCURACY_GATE_FIELDS,
    SUITES,
    SuiteEntry,
    register,
    registered,
    suite_entry,
    unregister,
)
from qgate.profile.suite_results import (
    Results,
)

__all__ = [
    "askable",
    "asked_again",
    "ACCURACY_GATE_FIELDS",
    "Results",
    "SuiteEntry",
    "configured",
    "engine_args_needed",
    "entry_of_result",
    "exact_results",
    "features_needed",
    "features_used",
    "gate_fields",
    "profile_key",
    "profile_sections",
    "register",
    "registered",
    "suite_entry",
    "suite_problems",
    "unregister",
]


def entry_of_result(result_id: str) -> SuiteEntry | None:
    """The suite whose results include `result_id` ('context.2048' -> the ladder); None: none."""
    return next((e for e in SUITES.values() if e.owns(result_id)), None)


def profile_key(result_id: str) -> str:
    """The profile key that configures `result_id` ('lm_eval[]' for a list), for messages."""
    entry = entry_of_result(result_id)
    if entry is None:
        return result_id.partition(".")[0]
    field = QualitySpec.model_fields.get(entry.key)
    listed = field is not None and get_origin(field.annotation) is list
    return entry.key + ("[]" if listed else "")


def configured(spec: QualitySpec) -> list[tuple[SuiteEntry, Any]]:
    """The suites a profile configures (field set and not empty), each with its setting."""
    out = []
    for entry in SUITES.values():
        setting = getattr(spec, entry.key, None)
        if setting:
            out.append((entry, setting))
    return out


def exact_results(spec: QualitySpec) -> Results:
    """Every exact-answer result id the profile asks for, with its policy, in a stable order."""
    return [pair for entry, setting in configured(spec) for pair in entry.results_of(setting)]


def gate_fields() -> frozenset[str]:
    """Every registered suite's policy fields (what the reference cache key leaves out)."""
    return frozenset().union(*(e.gate_fields for e in SUITES.values()))


def profile_sections() -> list[tuple[str, type[BaseModel]]]:
    """(key path, model) of every suite, for the generated profile reference."""
    fields = QualitySpec.model_fields
    return [
        (
            f"quality.{e.key}" + ("[]" if get_origin(fields[e.key].annotation) is list else ""),
            e.model,
        )
        for e in SUITES.values()
        if e.key in fields
    ]


def suite_problems(profile: Profile) -> list[tuple[KeyPath, str]]:
    """What each configured suite's `problems` hook finds in the profile."""
    return [
        found
        for entry, setting in configured(profile.quality)
        if entry.problems is not None
        for found in entry.problems(setting, profile)
    ]


def asked_again(result_id: str) -> bool:
    """Whether `quality.reuse` can ask `result_id` again (its suite declares `asked_again`)."""
    entry = entry_of_result(result_id)
    return entry is not None and entry.asked_again is not None


def askable() -> list[str]:
    """The result-id heads of the suites `quality.reuse` can ask again ('math', 'recall')."""
    return [e.prefix for e in SUITES.values() if e.asked_again is not None]


def features_needed(spec: QualitySpec) -> dict[str, frozenset[Feature]]:
    """Suite key -> the engine features it cannot run without, for every configured suite."""
    return {entry.key: entry.needs for entry, _ in configured(spec)}


def engine_args_needed(spec: QualitySpec) -> dict[str, list[tuple[str, str]]]:
    """Suite key -> the vLLM engine args (arg, why) it cannot run without."""
    return {
        entry.key: entry.engine_args(setting)
        for entry, setting in configured(spec)
        if entry.engine_args is not None
    }


def features_used(spec: QualitySpec) -> dict[str, frozenset[Feature]]:
    """Suite key -> the engine features it uses when present (it falls back without them)."""
    return {entry.key: entry.uses for entry, _ in configured(spec)}


# The built-in suites, in the order they run (the module registers them on import).
from qgate.profile import builtin_suites  # noqa: E402, F401

SUITES.open_to("qgate.suites")


def _plugin_model(key: str) -> type[BaseModel] | None:
    """The model of a plug-in suite's `quality.<key>` (a registered suite without a field)."""
    if key in QualitySpec.model_fields or key not in SUITES:
        return None
    return SUITES.get(key).model


look_up_with(_plugin_model)
