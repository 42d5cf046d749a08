"""Adding a suite is one module, one registry entry and its profile model; no other edit.

The toy suite below (not shipped) asks the server's tokenizer how many
tokens each sentence has and counts an item correct when that equals the
sentence's word count (the mock server tokenizes by whitespace). It is
registered for the test only, and then runs through the quality stage, the
gates and the reference cache key without any of them naming it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.mock_server import MockRuntime
from pydantic import Field

from qgate.core.files import sha256_json, sha256_text
from qgate.core.plan import SuitePlan
from qgate.core.yamlload import KeyPath
from qgate.errors import VerificationFailed
from qgate.gates.quality import evaluate_quality, policy_for
from qgate.profile import Profile
from qgate.profile.quality import AccuracyPolicy, MathSuite, QualitySpec
from qgate.profile.suites import (
    SuiteEntry,
    features_needed,
    register,
    registered,
    suite_problems,
    unregister,
)
from qgate.quality import stage
from qgate.quality.cache import generation_view
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.runner import SuiteContext
from qgate.report.verify.rederive import Rederived, rederive_correctness
from qgate.run.plan import make_plan

MOCK = Path(__file__).resolve().parents[2] / "mockserver" / "mock_openai.py"


# What would be the suite's module (its profile model would join qgate/profile/quality.py).
class WordCountSuite(AccuracyPolicy):
    """Token counts of plain sentences, checked against their word counts."""

    sentences: list[str] = Field(min_length=1, description="Sentences to count.")


class WordCountRunner:
    def data_digests(self, setting: WordCountSuite, max_model_len: int | None) -> dict[str, str]:
        return {"word_count": sha256_json({"version": "1", "sentences": setting.sentences})}

    async def run(self, setting: WordCountSuite, ctx: SuiteContext) -> list[SuiteRun]:
        from qgate.quality.client import SuiteClient

        start = time.perf_counter()
        async with SuiteClient(ctx.base_url, ctx.model, headers=ctx.headers) as client:
            counts = [await client.count_tokens(s) for s in setting.sentences]
        items = [
            ItemRecord(
                id=f"s{i}",
                prompt_sha256=sha256_text(s),
                output=str(n),
                answer=str(n),
                expected=str(len(s.split())),
                correct=n == len(s.split()),
            )
            for i, (s, n) in enumerate(zip(setting.sentences, counts, strict=True))
        ]
        digest = self.data_digests(setting, ctx.max_model_len)["word_count"]
        return [
            SuiteRun(
                suite="word_count",
                role=ctx.role,
                data_sha256=digest,
                items=items,
                wall_s=round(time.perf_counter() - start, 3),
            )
        ]


SUITE = WordCountRunner()

# Its registry entry.
ENTRY = SuiteEntry(
    key="word_count",
    model=WordCountSuite,
    runner=f"{__name__}:SUITE",
    needs=frozenset({"tokenize"}),
)


class ToyQualitySpec(QualitySpec):
    """The profile's quality block with the toy suite's field added."""

    word_count: WordCountSuite | None = Field(default=None, description="Word-count toy suite.")


@pytest.fixture
def toy_registered() -> Iterator[SuiteEntry]:
    entry = register(ENTRY)
    try:
        yield entry
    finally:
        unregister(entry.key)
    assert "word_count" not in {e.key for e in registered()}


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    spec = importlib.util.spec_from_file_location("mock_openai", MOCK)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with mod.running(ttft_ms=1.0, itl_ms=1.0) as url:
        yield url


SENTENCES = ["one two three", "a b", "the quick brown fox jumps"]


def _spec(**policy: Any) -> ToyQualitySpec:
    """The point rule: three sentences show no margin under the bound (the default)."""
    policy = {"rule": "point", **policy}
    return ToyQualitySpec(word_count=WordCountSuite(sentences=SENTENCES, **policy))


def _profile(spec: QualitySpec) -> Profile:
    base = Profile.model_validate(
        {"name": "toy", "model": {"embedded": "smollm2"}, "candidate": {}, "quality": {"math": {}}}
    )
    return base.model_copy(update={"quality": spec})


def _key(spec: QualitySpec) -> str:
    return stage.reference_key(_profile(spec), {"model.safetensors": "0" * 64}, "0.0", {})


def test_toy_suite_runs_through_stage_gates_and_cache(
    toy_registered: SuiteEntry, mock_url: str
) -> None:
    spec = _spec(min_accuracy=1.0, max_drop=0.0)
    assert spec.has_suites()
    assert features_needed(spec) == {"word_count": frozenset({"tokenize"})}

    runs: list[SuiteRun] = []
    for role in ("reference", "candidate"):
        runtime = MockRuntime(role, mock_url)
        out = stage.evaluate(runtime, _profile(spec), role, tokenizer_path=None)  # type: ignore[arg-type]
        assert out.scores is None and runtime.alive_checks == 1
        runs += out.runs
    assert [(r.suite, r.role) for r in runs] == [
        ("word_count", "reference"),
        ("word_count", "candidate"),
    ]
    assert all(i.correct for r in runs for i in r.items) and len(runs[0].items) == 3

    verdicts = evaluate_quality(spec, runs, None)
    assert [v.gate for v in verdicts] == [
        "word_count.min_accuracy",
        "word_count.max_drop",
        "word_count.significance",
    ]
    assert all(v.passed for v in verdicts)
    assert policy_for(spec, "word_count") is spec.word_count

    # A lost item fails its gates: the verdicts come from the toy's records, not a stub.
    worse = runs[1].model_copy(
        update={
            "items": [runs[1].items[0].model_copy(update={"correct": False}), *runs[1].items[1:]]
        }
    )
    failed = {v.gate for v in evaluate_quality(spec, [runs[0], worse], None) if not v.passed}
    assert failed == {"word_count.min_accuracy", "word_count.max_drop"}

    # The reference cache keys on the toy's data and settings, not on its gate limits.
    assert stage.data_digests(spec, None) == {"word_count": runs[0].data_sha256}
    assert generation_view(spec)["word_count"] == {"sentences": SENTENCES}
    assert _key(_spec(min_accuracy=0.5)) == _key(spec)
    assert _key(ToyQualitySpec(word_count=WordCountSuite(sentences=["x"]))) != _key(spec)


def test_toy_suite_mixes_with_the_builtin_suites(toy_registered: SuiteEntry) -> None:
    from qgate.gates.quality import configured_suites

    spec = ToyQualitySpec(math=MathSuite(prompts=["short"]), word_count=_spec().word_count)
    assert [sid for sid, _ in configured_suites(spec)] == ["math.short", "word_count"]
    verdicts = evaluate_quality(spec, [], None)
    assert {v.suite for v in verdicts} == {"math.short", "word_count"}
    assert not any(v.passed for v in verdicts)  # no runs: every configured gate fails


def test_without_its_entry_the_field_is_not_a_suite() -> None:
    spec = _spec()
    assert evaluate_quality(spec, [], None) == []
    assert stage.data_digests(spec, None) == {}


# The optional hooks: the plan's rows, `qgate verify`'s re-derivation, validate's problems.
def toy_plan(setting: WordCountSuite) -> list[SuitePlan]:
    return [SuitePlan(suite="word_count", items=len(setting.sentences), detail="sentences")]


def toy_rederive(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    for item in run.items:
        if item.correct != (item.answer == item.expected):
            raise VerificationFailed(f"{run.suite} item {item.id}: correct is not re-derived")
    out.items += len(run.items)


def toy_problems(setting: WordCountSuite, profile: Profile) -> list[tuple[KeyPath, str]]:
    return [
        (("quality", "word_count", "sentences", i), "has no words")
        for i, s in enumerate(setting.sentences)
        if not s.split()
    ]


HOOKED = dataclasses.replace(
    ENTRY,
    planned=f"{__name__}:toy_plan",
    rederive=f"{__name__}:toy_rederive",
    problems=toy_problems,
)


@pytest.fixture
def hooked_registered() -> Iterator[SuiteEntry]:
    entry = register(HOOKED)
    try:
        yield entry
    finally:
        unregister(entry.key)


def _runs() -> list[SuiteRun]:
    item = ItemRecord(
        id="s0", prompt_sha256="0" * 64, output="3", answer="3", expected="3", correct=True
    )
    return [
        SuiteRun(suite="word_count", role=role, data_sha256="0" * 64, items=[item])  # type: ignore[arg-type]
        for role in ("reference", "candidate")
    ]


def test_toy_hooks_reach_plan_verify_and_validate(hooked_registered: SuiteEntry) -> None:
    """The plan, verify's re-derivation and validate's problems take the toy from its entry:
    no module of qgate names it."""
    profile = _profile(ToyQualitySpec(word_count=WordCountSuite(sentences=[*SENTENCES, " "])))
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="x")
    assert [(s.suite, s.items, s.detail) for s in plan.suites] == [("word_count", 4, "sentences")]

    out = Rederived()
    rederive_correctness(_runs(), profile, out)
    assert out.items == 2 and out.not_rederived == []
    forged = _runs()
    forged[1].items[0].correct = False
    with pytest.raises(VerificationFailed, match="word_count item s0"):
        rederive_correctness(forged, profile, Rederived())

    assert suite_problems(profile) == [(("quality", "word_count", "sentences", 3), "has no words")]


def test_without_hooks_the_toy_is_planned_and_listed_as_not_rederived(
    toy_registered: SuiteEntry,
) -> None:
    profile = _profile(_spec())
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="x")
    assert [(s.suite, s.items) for s in plan.suites] == [("word_count", None)]
    out = Rederived()
    rederive_correctness(_runs(), profile, out)
    assert out.items == 0 and len(out.not_rederived) == 2
    assert suite_problems(profile) == []
