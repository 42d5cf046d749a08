"""A side's `chat_template`: a template qgate ships, a file that can be read, or vLLM's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from qgate.errors import ProfileError
from qgate.profile.chat_templates import template_file, template_problem
from qgate.profile.load import parse_profile_text

BASE = """\
name: t
model: {embedded: smollm2}
candidate:
  args: {kv_cache_dtype: auto}
quality:
  math: {max_drop: 0.1}
"""


@pytest.mark.parametrize(
    "value", ["qgate:chatml-tools", "/abs/t.jinja", "template_chatml.jinja", "{{ messages }}"]
)
def test_what_vllm_can_read_has_no_problem_by_its_shape(value: str) -> None:
    assert template_problem(value) is None


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("qgate:../../../etc/passwd", "qgate ships no chat template"),
        ("qgate:nope", "it ships: chatml-tools"),
        ("../../etc/t.jinja", "climbs out of vLLM's templates folder"),
        ("~/t.jinja", "does not expand ~"),
    ],
)
def test_a_name_that_climbs_out_or_is_not_shipped_is_refused(value: str, says: str) -> None:
    problem = template_problem(value)
    assert problem is not None and says in problem


def test_only_a_file_is_checked_as_one() -> None:
    assert template_file("{{ messages }}") is None
    assert template_file("template_chatml.jinja") is None
    assert template_file("/abs/t.jinja") == Path("/abs/t.jinja")
    shipped = template_file("qgate:chatml-tools")
    assert shipped is not None and shipped.name == "chatml-tools.jinja" and shipped.is_file()


def problems_of(text: str, folder: Path, check_files: bool = True) -> list[str]:
    try:
        parse_profile_text(text, "p.yaml", folder, check_files=check_files)
    except ProfileError as exc:
        return exc.details
    return []


def test_a_template_file_is_checked_where_it_is_written(tmp_path: Path) -> None:
    good = tmp_path / "t.jinja"
    good.write_text("{{ messages }}")
    ok = BASE + f"engine: {{args: {{chat_template: '{good}'}}}}\n"
    assert problems_of(ok, tmp_path) == []
    gone = BASE + "reference:\n  engine: {args: {chat-template: /no/such/t.jinja}}\n"
    found = problems_of(gone, tmp_path)
    assert found == ["p.yaml:8 reference.engine.args.chat-template: no such file: /no/such/t.jinja"]
    shared = BASE + f"engine: {{args: {{chat_template: '{tmp_path}'}}}}\n"
    found = problems_of(shared, tmp_path)  # both sides read engine.args: named once
    assert found == [f"p.yaml:7 engine.args.chat_template: is a folder, not a file: {tmp_path}"]
    # --skip-files: a profile meant for another machine names its files there
    assert problems_of(gone, tmp_path, check_files=False) == []
