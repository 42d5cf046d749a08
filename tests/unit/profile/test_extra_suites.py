"""A plug-in suite is configured under `quality.<its key>` like a built-in one; any other key
under `quality:` is refused as before (qgate/profile/extra_suites.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import Field

from qgate.errors import ProfileError
from qgate.profile import Profile
from qgate.profile.load import parse_profile_text
from qgate.profile.quality import AccuracyPolicy
from qgate.profile.suites import SuiteEntry, configured, register, unregister


class Sentences(AccuracyPolicy):
    sentences: list[str] = Field(min_length=1, description="Sentences.")


@pytest.fixture
def plugin_suite() -> Iterator[SuiteEntry]:
    entry = register(SuiteEntry(key="word_count", model=Sentences, runner="x:y"))
    try:
        yield entry
    finally:
        unregister(entry.key)


def _text(block: str) -> str:
    return (
        "name: t\nmodel: {embedded: smollm2}\ncandidate: {args: {kv_cache_dtype: fp8}}\n"
        f"quality:\n{block}"
    )


def _load(block: str) -> Profile:
    return parse_profile_text(_text(block), "p.yaml", Path("."), check_files=False)


def test_its_setting_is_validated_kept_and_dumped(plugin_suite: SuiteEntry) -> None:
    profile = _load("  word_count: {sentences: [a b], max_drop: 0.0}\n")
    setting = profile.quality.word_count  # type: ignore[attr-defined]
    assert isinstance(setting, Sentences) and setting.sentences == ["a b"]
    assert [(e.key, s) for e, s in configured(profile.quality)] == [("word_count", setting)]
    dumped = profile.model_dump(mode="json")
    assert dumped["quality"]["word_count"]["sentences"] == ["a b"]
    assert Profile.model_validate(dumped) == profile  # a report's resolved profile reloads


def test_its_problems_name_the_line_and_key(plugin_suite: SuiteEntry) -> None:
    with pytest.raises(ProfileError) as caught:
        _load("  concurrency: 0\n  word_count: {sentences: [], max_drop: 2}\n  wrod: 1\n")
    details = caught.value.details
    assert details[0].startswith("p.yaml:5 quality.concurrency:")
    assert any(d.startswith("p.yaml:6 quality.word_count.sentences:") for d in details), details
    assert any(d.startswith("p.yaml:6 quality.word_count.max_drop:") for d in details), details
    assert any(d.startswith("p.yaml:7 quality.wrod: unknown key") for d in details), details


def test_without_the_plugin_its_key_is_unknown() -> None:
    with pytest.raises(ProfileError) as caught:
        _load("  math: {}\n  word_count: {sentences: [a]}\n")
    (line,) = caught.value.details
    assert line.startswith("p.yaml:6 quality.word_count: unknown key; expected one of: "), line
