"""The dry preflight hands vLLM's parser the model as `--model`, whatever the launcher."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from qgate.errors import RuntimeFailure
from qgate.runtime.vllm_server import VllmServer


def _server(tmp_path: Path, launcher: list[str]) -> VllmServer:
    return VllmServer(
        role="candidate",
        model_path=tmp_path / "model",
        served_model="m",
        run_dir=tmp_path / "run",
        launcher=launcher,
        args={"max_model_len": 2048},
    )


@pytest.mark.parametrize(
    "launcher", [["vllm", "serve"], ["python3", "-m", "vllm.entrypoints.openai.api_server"]]
)
def test_the_model_is_a_flag_for_the_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launcher: list[str]
) -> None:
    seen: dict[str, Any] = {}

    def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        seen["argv"] = argv
        return subprocess.CompletedProcess(argv, 0, "qgate-dry-check: ok\n", "")

    monkeypatch.setattr(subprocess, "run", run)
    _server(tmp_path, launcher).dry_check()
    argv = seen["argv"]
    # after `vllm serve` the model is positional; the API server's parser would drop it and
    # look its default model up on the Hub (seen offline on the H200)
    assert argv[argv.index("--model") + 1] == str(tmp_path / "model")
    assert "--max-model-len" in argv


def test_a_refusal_names_vllms_own_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    err = "usage: vllm ...\nvllm: error: unrecognized arguments: --bogus\n"
    monkeypatch.setattr(
        subprocess, "run", lambda argv, **kw: subprocess.CompletedProcess(argv, 2, "", err)
    )
    with pytest.raises(RuntimeFailure, match="refused the command line: error: unrecognized"):
        _server(tmp_path, ["vllm", "serve"]).dry_check()


def test_a_shipped_chat_template_reaches_the_parser_as_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`chat_template: qgate:chatml-tools` is resolved for the dry check as for the start
    (was: vLLM's parser refused 'qgate:chatml-tools' as a path that does not exist, so a
    multi run of the agent profile in sequence failed its preflight, exit 3)."""
    seen: dict[str, Any] = {}

    def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        seen["argv"] = argv
        return subprocess.CompletedProcess(argv, 0, "qgate-dry-check: ok\n", "")

    monkeypatch.setattr(subprocess, "run", run)
    server = _server(tmp_path, ["vllm", "serve"])
    server.args = {**server.args, "chat_template": "qgate:chatml-tools"}
    server.dry_check()
    template = Path(seen["argv"][seen["argv"].index("--chat-template") + 1])
    assert template.name == "chatml-tools.jinja" and template.is_file()
