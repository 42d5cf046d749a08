"""The suite registry: each quality field is a suite or a listed setting; entries are lazy."""

from __future__ import annotations

import subprocess
import sys
import typing

import pytest

from qgate.core.features import FEATURES
from qgate.errors import BadInput
from qgate.profile import suites as registry
from qgate.profile.quality import (
    NON_SUITE_SETTINGS,
    DivergenceSuite,
    LmEvalTask,
    MathSuite,
    QualitySpec,
    RecallSuite,
)
from qgate.profile.suites import (
    SuiteEntry,
    features_needed,
    features_used,
    gate_fields,
    register,
    registered,
    suite_entry,
)


def _models_in(annotation: object) -> set[object]:
    args = typing.get_args(annotation)
    return {annotation} | {m for a in args for m in _models_in(a)}


def test_every_quality_field_is_a_registered_suite_or_a_listed_setting() -> None:
    fields = set(QualitySpec.model_fields)
    suites = {e.key for e in registered()}
    unaccounted = fields - suites - NON_SUITE_SETTINGS
    assert not unaccounted, (
        f"quality fields {sorted(unaccounted)} are neither a registered suite "
        "(qgate/profile/suites.py) nor in NON_SUITE_SETTINGS (qgate/profile/quality.py)"
    )
    assert not suites & NON_SUITE_SETTINGS
    assert suites <= fields, f"registered suites without a profile field: {suites - fields}"


def test_each_entry_names_the_model_of_its_profile_field() -> None:
    for entry in registered():
        annotation = QualitySpec.model_fields[entry.key].annotation
        assert entry.model in _models_in(annotation), entry.key


def test_builtin_suites_run_in_the_order_the_stage_always_ran_them() -> None:
    assert [e.key for e in registered()] == [
        "math",
        "recall",
        "divergence",
        "lm_eval",
        "tool_calls",
        "structured",
        "degeneration",
        "sampling",
        "sampled",
        "context_ladder",  # the longest prompts last (issue 44 item 3)
    ]
    assert [e.key for e in registered() if e.paired] == ["divergence"]


def test_unknown_suite_names_the_available_ones() -> None:
    with pytest.raises(BadInput) as err:
        suite_entry("maht")
    # the one registry mechanism: registration order, and a near miss suggested (as engines)
    assert err.value.message == (
        "Unknown suite 'maht' (did you mean 'math'?). Available: math, recall, divergence, "
        "lm_eval, tool_calls, structured, degeneration, sampling, sampled, context_ladder"
    )


def test_gate_fields_are_the_ones_the_cache_key_always_left_out() -> None:
    # A change here changes every reference cache key: entries made before would miss.
    assert gate_fields() == {
        "min_accuracy",
        "max_drop",
        "max_flips",
        "significance",
        "alpha",
        "power",
        "rule",
        "detect",
        "show",
        "max_mean_kld",
        "max_p99_kld",
        "max_max_kld",
        "min_top1_agreement",
        "max_mean_reverse_kld",
        "max_diversity_change",
    }


def test_features_needed_per_configured_suite() -> None:
    spec = QualitySpec(
        math=MathSuite(),
        divergence=DivergenceSuite(),
        lm_eval=[LmEvalTask(task="gsm8k")],
    )
    needed = features_needed(spec)
    assert needed == {
        "math": frozenset(),
        "divergence": frozenset({"prompt_logprobs", "tokenize", "min_tokens"}),
        "lm_eval": frozenset(),
    }
    assert features_used(spec)["math"] == {"tokenize"}
    assert features_needed(QualitySpec(recall=RecallSuite())) == {"recall": frozenset()}
    assert features_needed(QualitySpec()) == {}
    for entry in registered():
        assert entry.needs <= set(FEATURES) and entry.uses <= set(FEATURES), entry.key


def test_register_refuses_a_taken_key_and_a_second_paired_suite() -> None:
    with pytest.raises(ValueError, match="'math' is already registered"):
        register(SuiteEntry(key="math", model=MathSuite, runner="x:y"))
    with pytest.raises(ValueError, match="one paired suite"):
        register(SuiteEntry(key="other", model=DivergenceSuite, runner="x:y", paired=True))
    assert "other" not in {e.key for e in registered()}


def test_every_runner_loads_and_has_the_protocol_methods() -> None:
    for entry in registered():
        runner = entry.load()
        assert callable(runner.data_digests), entry.key
        names = ("reference", "candidate") if entry.paired else ("run",)
        for name in names:
            assert callable(getattr(runner, name)), (entry.key, name)


def test_registry_imports_no_suite_module() -> None:
    # validate and verify read the registry; a suite's HTTP client must stay unimported.
    code = (
        "import sys, qgate.profile.suites, qgate.gates.quality\n"
        "print(sorted(m for m in sys.modules if m.endswith('_suite') or m == 'aiohttp'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_results_and_policies_of_a_configuration() -> None:
    spec = QualitySpec(
        math=MathSuite(prompts=["long"]),
        recall=RecallSuite(context_tokens=[512, 2048]),
        divergence=DivergenceSuite(),
        lm_eval=[LmEvalTask(task="a"), LmEvalTask(task="b", max_drop=0.1)],
    )
    ids = [(sid, policy) for sid, policy in registry.exact_results(spec)]
    assert [sid for sid, _ in ids] == [
        "math.long",
        "recall.512",
        "recall.2048",
        "lm_eval.a",
        "lm_eval.b",
    ]
    assert ids[0][1] is spec.math and ids[4][1] is spec.lm_eval[1]
