"""`qgate perf` against any OpenAI-compatible endpoint (issue 13)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from qgate.cli.main import main
from qgate.cli.perf import THIN_P99, perf
from qgate.errors import BadInput, InfrastructureError
from qgate.perf.tokenizer import choose_tokenizer, local_tokenizer


def tiny_tokenizer(folder: Path) -> Path:
    """A word-level Hugging Face tokenizer folder (no download)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "hello": 1, "world": 2}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(folder)
    return folder


def test_local_tokenizer_encodes_without_special_tokens(tmp_path: Path) -> None:
    tok = local_tokenizer(tiny_tokenizer(tmp_path))
    assert asyncio.run(tok("hello world hello other")) == [1, 2, 1, 0]


def test_tokenizer_choice_and_what_it_says_when_none_fits(tmp_path: Path) -> None:
    folder = str(tiny_tokenizer(tmp_path / "tok"))
    url = "http://127.0.0.1:9/v1"
    assert choose_tokenizer(url, "m", None, None, server_has=True) is None
    # Without /tokenize: the served model's folder (vLLM's /v1/models `root`), or the id.
    assert choose_tokenizer(url, "m", folder, None, server_has=False) is not None
    assert choose_tokenizer(url, folder, None, None, server_has=False) is not None
    # An explicit --tokenizer wins even when the server tokenizes.
    assert choose_tokenizer(url, "m", None, folder, server_has=True) is not None
    with pytest.raises(InfrastructureError, match=r"/tokenize is not served.*--tokenizer DIR"):
        choose_tokenizer(url, "org/model", "org/model", None, server_has=False)
    with pytest.raises(BadInput, match="not a folder"):
        choose_tokenizer(url, "m", None, str(tmp_path / "absent"), server_has=True)


def test_help_describes_every_option() -> None:
    out = CliRunner().invoke(perf, ["--help"]).output
    for param in perf.params:
        if param.param_type_name == "option":
            assert param.help, f"{param.name} has no help"  # type: ignore[attr-defined]
    assert "--tokenizer" in out and "connection" in out


def run_cli(args: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(perf, args, catch_exceptions=False)
    return res.exit_code, res.output


def test_standalone_run_with_a_local_tokenizer_and_a_time_anchor(
    mock_url: str, tmp_path: Path
) -> None:
    folder = tiny_tokenizer(tmp_path / "tok")
    out_json = tmp_path / "perf.json"
    code, out = run_cli(
        [
            "--base-url",
            mock_url,
            "--tokenizer",
            str(folder),
            "--input-tokens",
            "8",
            "--output-tokens",
            "3",
            "--concurrency",
            "2",
            "--requests",
            "6",
            "--warmup",
            "1",
            "--format",
            "json",
            "--out",
            str(out_json),
            "--no-progress",
        ]
    )
    assert code == 0, out
    assert "UNGATED" in out and f"wrote {out_json}" in out
    assert re.search(rf"6 requests; a p99 of fewer than {THIN_P99} values is not meaningful", out)
    doc = json.loads(out_json.read_text())
    (run,) = doc["runs"]
    assert run["role"] == "standalone"
    assert isinstance(run["t0_unix_ns"], int) and run["t0_unix_ns"] > 1_600_000_000 * 10**9
    # Prompts came from the local tokenizer: 8 ids of its 3-word vocabulary.
    assert {r["prompt_tokens"] for r in run["requests"]} == {8}


def test_default_request_count_is_enough_for_p99() -> None:
    opt = next(p for p in perf.params if p.name == "requests")
    assert opt.default is None
    assert str(THIN_P99) in (opt.help or "")  # type: ignore[attr-defined]


def test_format_json_is_one_object_on_stdout_and_text_goes_to_out(
    mock_url: str, tmp_path: Path
) -> None:
    folder = tiny_tokenizer(tmp_path / "tok")
    argv = [
        "--base-url",
        mock_url,
        "--tokenizer",
        str(folder),
        "--input-tokens",
        "8",
        "--output-tokens",
        "3",
        "--requests",
        "2",
        "--warmup",
        "0",
        "--no-progress",
    ]
    res = CliRunner().invoke(perf, [*argv, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["format"] == "qgate.perf/1" and doc["ungated"] is True
    schema = CliRunner().invoke(main, ["schema", "perf"])
    jsonschema.validate(doc, json.loads(schema.stdout))
    assert any("p99 of fewer than" in note for note in doc["notes"])
    assert "UNGATED" in res.stderr and "p99 of fewer than" in res.stderr
    table = tmp_path / "perf.txt"
    res = CliRunner().invoke(perf, [*argv, "--out", str(table)], catch_exceptions=False)
    assert res.exit_code == 0 and res.stdout == "", res.output
    assert table.read_text().startswith("UNGATED") and "p99 of fewer than" in table.read_text()
