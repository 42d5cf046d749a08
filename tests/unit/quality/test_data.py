"""Eval data generators: determinism, sizes, recomputed answers, manifest checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from qgate.errors import BadInput
from qgate.quality import data_corpus, data_math, data_recall
from qgate.quality.data import (
    GENERATED,
    MANIFEST_NAME,
    build_evals,
    check_evals,
    evals_root,
    sha256_bytes,
)


def test_math_set_is_deterministic_and_seed_dependent() -> None:
    assert sha256_bytes(data_math.math_jsonl(1)) == sha256_bytes(data_math.math_jsonl(1))
    assert sha256_bytes(data_math.math_jsonl(1)) != sha256_bytes(data_math.math_jsonl(2))


def test_math_set_size_tiers_and_unique_ids() -> None:
    items = data_math.generate_math()
    assert len(items) >= 128
    assert {i["tier"] for i in items} == {"arith", "multi", "word"}
    assert len({i["id"] for i in items}) == len(items)
    assert len({i["question"] for i in items}) == len(items)
    # Any prefix (a profile's `limit`) mixes the tiers.
    assert {i["tier"] for i in items[:6]} == {"arith", "multi", "word"}


def test_math_answers_recompute_from_their_expression() -> None:
    for item in data_math.generate_math():
        assert item["answer"] == data_math.evaluate_expression(str(item["expr"]))
        # The numbers of the expression are the numbers the question shows.
        digits = [t for t in str(item["expr"]).replace("(", " ").replace(")", " ").split()]
        for number in (t for t in digits if t.isdigit()):
            assert number in str(item["question"])


def test_math_set_has_enough_easy_items() -> None:
    items = data_math.generate_math()
    easy = [i for i in items if i["tier"] == "arith" and abs(int(i["answer"])) <= 18]
    assert len(easy) >= 30


@pytest.mark.parametrize("expr", ["2 ** 8", "__import__('os')", "1 / 2", "abs(3)"])
def test_evaluate_expression_refuses_anything_but_arithmetic(expr: str) -> None:
    with pytest.raises(ValueError):
        data_math.evaluate_expression(expr)


def test_preamble_is_long_and_deterministic() -> None:
    text = data_math.preamble_text()
    assert text == data_math.preamble_text()
    assert text != data_math.preamble_text(seed=8)
    assert len(text) > 30_000  # several thousand tokens at ~4 characters a token


def test_corpus_is_varied_and_deterministic() -> None:
    corpus = data_corpus.generate_corpus()
    assert len(corpus) >= 64
    assert len({p["prompt"] for p in corpus}) == len(corpus)
    assert {p["kind"] for p in corpus} == {"instruction", "code", "arithmetic", "prose", "list"}
    assert data_corpus.corpus_jsonl(5) == data_corpus.corpus_jsonl(5)
    assert data_corpus.corpus_jsonl(5) != data_corpus.corpus_jsonl(6)


def test_recall_needles_are_distinct_and_planted_in_order() -> None:
    depths = [0.1, 0.5, 0.9]
    rng = data_recall.haystack_rng(1, 1024, 0, 0.5)
    needles = data_recall.make_needles(rng, depths)
    assert len({n.symbol for n in needles}) == 3
    assert len({n.key for n in needles}) == 3
    vocab = data_recall.load_vocabulary(data_recall.vocabulary_json())
    text = data_recall.assemble(data_recall.filler_sentences(rng, vocab, 100), needles)
    positions = [text.index(n.sentence) / len(text) for n in needles]
    assert positions == sorted(positions)
    for pos, depth in zip(positions, depths, strict=True):
        assert abs(pos - depth) < 0.05


def test_recall_generation_depends_on_seed_length_and_index() -> None:
    def symbols(seed: int, length: int, index: int, depth: float = 0.5) -> list[str]:
        rng = data_recall.haystack_rng(seed, length, index, depth)
        return [n.symbol for n in data_recall.make_needles(rng, [0.2, 0.8])]

    assert symbols(1, 1024, 0) == symbols(1, 1024, 0)
    assert symbols(1, 1024, 0) != symbols(2, 1024, 0)
    assert symbols(1, 1024, 0) != symbols(1, 4096, 0)
    assert symbols(1, 1024, 0) != symbols(1, 1024, 1)
    assert symbols(1, 1024, 0) != symbols(1, 1024, 0, depth=0.1)


def test_recall_chars_set_answers_are_in_their_context() -> None:
    lines = [json.loads(x) for x in data_recall.recall_chars_jsonl().decode().splitlines()]
    assert len(lines) == 20
    for item in lines:
        assert f"is {item['answer']}." in item["context"]
        assert item["context"].count("The access code for") == 1
        assert len(item["context"]) <= data_recall.RECALL_CHARS_LENGTH + 400


def test_committed_evals_match_the_manifest() -> None:
    assert check_evals(evals_root()) == []


def test_check_names_an_edited_file(tmp_path: Path) -> None:
    build_evals(tmp_path)
    assert check_evals(tmp_path) == []
    target = tmp_path / GENERATED[0].path
    target.write_bytes(target.read_bytes() + b"\n")
    problems = check_evals(tmp_path)
    assert len(problems) == 1
    assert str(target) in problems[0]


def test_check_names_a_missing_file_and_a_bad_manifest(tmp_path: Path) -> None:
    build_evals(tmp_path)
    (tmp_path / GENERATED[1].path).unlink()
    assert any(GENERATED[1].path in p and "missing" in p for p in check_evals(tmp_path))
    (tmp_path / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(BadInput):
        check_evals(tmp_path)


def test_check_detects_generator_drift(tmp_path: Path) -> None:
    shutil.copytree(evals_root(), tmp_path / "evals")
    root = tmp_path / "evals"
    manifest = json.loads((root / MANIFEST_NAME).read_text())
    # Pretend the committed file (and its digest) came from an older generator.
    rel = "divergence/corpus.jsonl"
    old = data_corpus.corpus_jsonl(seed=1)
    (root / rel).write_bytes(old)
    manifest["files"][rel]["sha256"] = sha256_bytes(old)
    (root / MANIFEST_NAME).write_text(json.dumps(manifest))
    problems = check_evals(root)
    assert len(problems) == 1 and "generator" in problems[0]
