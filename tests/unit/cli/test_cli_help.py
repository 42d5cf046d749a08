"""Every command's --help describes every option and argument, and the CLI speaks one
vocabulary: --out, --format text|json, --progress/--no-progress."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from qgate.cli.main import main
from qgate.cli.util import TEXT_OR_JSON


def walk(group: click.Group, ctx: click.Context, path: str) -> Iterator[tuple[str, click.Command]]:
    """Every command under `group`, hidden ones too (lazy ones are imported)."""
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield f"{path} {name}", command
        if isinstance(command, click.Group):
            yield from walk(command, click.Context(command, parent=ctx), f"{path} {name}")


COMMANDS = dict(walk(main, click.Context(main), "qgate"))


def test_the_walk_sees_every_command() -> None:
    assert {"qgate run", "qgate perf", "qgate evals build", "qgate models prepare"} <= set(COMMANDS)


def undescribed(command: click.Command) -> list[str]:
    """Options without help text, and arguments the command's help does not name."""
    problems = []
    doc = command.help or ""
    for param in command.params:
        if isinstance(param, click.Option):
            if not (param.help or "").strip():
                problems.append(f"option {param.opts[0]} has no help")
        elif isinstance(param, click.Argument):
            metavar = param.make_metavar(click.Context(command)).rstrip(".").strip("[]")
            if not re.search(rf"\b{re.escape(metavar)}\b", doc):
                problems.append(f"argument {metavar} is not named in the command's help")
    if not doc.strip():
        problems.append("no help text")
    return problems


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_option_and_argument_is_described(path: str) -> None:
    assert undescribed(COMMANDS[path]) == []


def test_the_check_fails_on_an_undescribed_option_or_argument() -> None:
    @click.command()
    @click.argument("thing")
    @click.option("--bare")
    def bare(thing: str, bare: str) -> None:
        """Does something."""

    assert undescribed(bare) == [
        "argument THING is not named in the command's help",
        "option --bare has no help",
    ]


def options_named(name: str) -> dict[str, click.Option]:
    found = {}
    for path, command in COMMANDS.items():
        for param in command.params:
            if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
                found[path] = param
    return found


def test_format_is_text_or_json_wherever_a_command_has_both() -> None:
    formats = options_named("--format")
    assert {"qgate run", "qgate plan", "qgate perf", "qgate verify", "qgate validate"} <= set(
        formats
    )
    for path, option in formats.items():
        if path != "qgate show":  # renders a report: md, html, json, junit
            assert option.type is TEXT_OR_JSON, path
            assert option.default == "text", path


def test_one_progress_flag() -> None:
    spelled = {
        path: (tuple(option.opts), tuple(option.secondary_opts))
        for path, option in {
            **options_named("--progress"),
            **options_named("--no-progress"),
        }.items()
    }
    assert set(spelled) == {"qgate run", "qgate perf"}
    assert set(spelled.values()) == {(("--progress",), ("--no-progress",))}


def test_out_is_a_file_except_for_run() -> None:
    outs = options_named("--out")
    assert set(outs) == {
        "qgate run",
        "qgate init",
        "qgate keygen",
        "qgate show",
        "qgate perf",
        "qgate calibrate",
        "qgate proof",
    }
    for path, option in outs.items():
        assert isinstance(option.type, click.Path), path
        help_text = option.help or ""
        assert ("Folder" in help_text) == (path == "qgate run"), path
    assert not options_named("--json-out")


def test_developer_commands_are_hidden() -> None:
    assert COMMANDS["qgate evals build"].hidden
    shown = CliRunner().invoke(main, ["evals", "--help"])
    assert shown.exit_code == 0 and "check" in shown.output and "build" not in shown.output


def test_keygen_out_names_the_private_key_file(tmp_path: Path) -> None:
    with_suffix = CliRunner().invoke(main, ["keygen", "--out", str(tmp_path / "a.pem")])
    assert with_suffix.exit_code == 0, with_suffix.output
    without = CliRunner().invoke(main, ["keygen", "--out", str(tmp_path / "b")])
    assert without.exit_code == 0, without.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a.pem",
        "a.pub.pem",
        "b.pem",
        "b.pub.pem",
    ]


def test_schema_names_every_json_output() -> None:
    from qgate.cli.outputs import OUTPUTS

    (name,) = COMMANDS["qgate schema"].params
    assert isinstance(name.type, click.Choice)
    assert set(name.type.choices) == set(OUTPUTS)
