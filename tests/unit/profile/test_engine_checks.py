"""Engine args a suite needs (tool calls on vLLM): refused at validate time, named in the plan."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from qgate.cli.main import main
from qgate.runtime.vllm_server import VllmServer

PROFILE = """\
name: t
model: {embedded: smollm2}
engine:
  args: {%s}
candidate:
  args: {kv_cache_dtype: auto}
quality:
  tool_calls: {items: 3, choices: [%s]}
"""


def _write(tmp_path: Path, args: str, choices: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent(PROFILE % (args, choices)))
    return path


def test_tool_calls_without_the_parser_args_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "max_model_len: 4096", "named, auto")
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2
    text = result.stderr
    for role in ("reference", "candidate"):
        for arg in ("tool_call_parser", "chat_template", "enable_auto_tool_choice"):
            assert f"{role}.args.{arg}: quality.tool_calls needs engine arg {arg}" in text


@pytest.mark.parametrize("available_gib", [64.0, 1.0], ids=["side-by-side", "in-sequence"])
def test_named_alone_needs_no_auto_tool_choice_and_plan_names_the_args(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, available_gib: float
) -> None:
    """Whichever way the machine places the two servers (its free memory decides: seen failing
    on a loaded machine, whose plan went in sequence and lost the note)."""
    monkeypatch.setattr("qgate.run.placement._available_gib", lambda: available_gib)
    path = _write(
        tmp_path, "tool_call_parser: hermes, chat_template: 'qgate:chatml-tools'", "named"
    )
    assert CliRunner().invoke(main, ["validate", str(path)]).exit_code == 0
    plan = CliRunner().invoke(main, ["plan", str(path)])
    assert plan.exit_code == 0, plan.output
    assert ("in sequence" in plan.output) == (available_gib < 8), plan.output
    assert "quality tool_calls.named: 3 items per side" in plan.output
    assert "quality.tool_calls needs engine args tool_call_parser, chat_template" in plan.output


def test_an_unknown_shipped_template_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "tool_call_parser: hermes, chat_template: 'qgate:nope'", "named")
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2
    assert "qgate ships no chat template 'nope' (it ships: chatml-tools)" in result.stderr


def test_vllm_starts_with_the_shipped_template_file(tmp_path: Path) -> None:
    server = VllmServer(
        role="candidate",
        model_path=tmp_path,
        served_model="m",
        run_dir=tmp_path,
        args={"chat_template": "qgate:chatml-tools"},
        env={},
    )
    assert server.args["chat_template"] == "qgate:chatml-tools"  # as recorded and re-derived
    command = server.build_command(8000)
    path = Path(command[command.index("--chat-template") + 1])
    assert path.name == "chatml-tools.jinja" and path.is_file()


BLOCK = """\
name: t
model: {embedded: smollm2}
engine:
  args: {max_model_len: 1024, enforce_eager: true}
  env: {VLLM_CPU_KVCACHE_SPACE: "1"}
candidate:
  args: {enforce_eager: true}
  engine:
    launcher: [python, launch.py, --]
quality:
  math: {prompts: [short], limit: 8}
"""


def test_a_side_engine_block_that_leaves_out_the_top_level_args_is_noted(tmp_path: Path) -> None:
    """A side's engine block replaces the top-level one (nothing inherited): a side written
    only to swap its launcher serves without the shared args, and the plan says which."""
    from qgate.profile.engine_checks import engine_block_notes
    from qgate.profile.load import load_profile

    path = tmp_path / "p.yaml"
    path.write_text(BLOCK)
    notes = engine_block_notes(load_profile(path))
    assert notes == [
        "candidate: its own engine block replaces the top-level one, which it does not inherit: "
        "args max_model_len; env VLLM_CPU_KVCACHE_SPACE not set on this side (repeat them under "
        "candidate.engine if meant)"
    ]
    result = CliRunner().invoke(main, ["plan", str(path)])
    assert result.exit_code == 0, result.output
    assert "args max_model_len; env VLLM_CPU_KVCACHE_SPACE not set" in result.output
    repeated = BLOCK.replace("launch.py, --]", "launch.py, --]\n    args: {max_model_len: 1024}")
    path.write_text(repeated.replace("  env: {VLLM", "  env: {}\n  #"))
    assert engine_block_notes(load_profile(path)) == []
    # another engine or command takes flags of its own: nothing to inherit, nothing noted
    other = BLOCK.replace(
        "launcher: [python, launch.py, --]",
        'kind: command\n    command: [python, -m, srv, --port, "{port}"]',
    )
    path.write_text(other)
    assert engine_block_notes(load_profile(path)) == []
