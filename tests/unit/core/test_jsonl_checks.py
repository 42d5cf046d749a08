"""JSONL read through jsonlines: line numbers count every line, errors keep them."""

from __future__ import annotations

from pathlib import Path

import pytest

from qgate.core.jsonl_checks import JsonlLineError, jsonl_values
from qgate.errors import BadInput

DEEP = "[" * 100_000 + "]" * 100_000


def test_values_carry_their_line_numbers_across_blank_lines() -> None:
    text = '{"a": 1}\n\n   \n[2]\nnull\n"x"\n'
    assert list(jsonl_values(text)) == [(1, {"a": 1}), (4, [2]), (5, None), (6, "x")]


def test_a_bad_line_raises_with_its_number_and_the_decoder_message() -> None:
    with pytest.raises(JsonlLineError) as err:
        list(jsonl_values('{"a": 1}\n\n{oops\n'))
    assert err.value.lineno == 3
    assert err.value.reason == "Expecting property name enclosed in double quotes"
    assert not err.value.too_deep


def test_deep_nesting_is_its_own_reason() -> None:
    with pytest.raises(JsonlLineError) as err:
        list(jsonl_values("1\n" + DEEP + "\n"))
    assert (err.value.lineno, err.value.too_deep) == (2, True)
    assert err.value.reason == "JSON nested too deeply"


def test_reading_stops_where_the_caller_stops() -> None:
    values = jsonl_values('{"a": 1}\n{broken\n')
    assert next(values) == (1, {"a": 1})  # the broken second line is never decoded


def test_math_loader_names_file_and_line(tmp_path: Path) -> None:
    from qgate.quality.math_set import load_math_set

    path = tmp_path / "m.jsonl"
    path.write_text('{"id": "a", "question": "1+1", "answer": 2}\n\n{oops\n')
    with pytest.raises(BadInput, match=rf"^{path}:3: not a math item \(Expecting property"):
        load_math_set(path)
    path.write_text('{"id": "a", "question": "1+1", "answer": 2}\n["x"]\n')
    with pytest.raises(BadInput, match=rf"^{path}:2: not a math item"):
        load_math_set(path)
    path.write_text('\n{"id": "a", "question": "1+1", "answer": 2}\n')
    items, _ = load_math_set(path)
    assert [(i.id, i.answer) for i in items] == [("a", 2)]


def test_corpus_loader_names_file_and_line(tmp_path: Path) -> None:
    from qgate.quality.divergence_data import load_corpus

    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "prompt": "x"}\n' + DEEP + "\n")
    with pytest.raises(
        BadInput, match=rf"^divergence corpus {path}:2: not a \{{id, prompt\}} line"
    ):
        load_corpus(path, 2)
    prompts, _ = load_corpus(path, 1)  # the deep line is past what is read
    assert [p.id for p in prompts] == ["a"]
