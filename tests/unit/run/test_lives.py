"""Where a run's lives go: `--cluster` (or $RAY_ADDRESS) first, then the profile's
`cluster.address`, else this machine (qgate/run/lives.py)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qgate.cli.main import main
from qgate.core.registry import Registry
from qgate.core.serving import Runtime
from qgate.errors import BadInput
from qgate.profile.load import parse_profile_text
from qgate.run.lives import LOCAL, cluster_address, lives_for
from qgate.runtime import lives as runtime_lives
from qgate.runtime.lives import Lives

ROOT = Path(__file__).resolve().parents[3]
TEXT = """\
name: t
model: {embedded: smollm2}
candidate:
  args: {kv_cache_dtype: fp8}
quality:
  math: {max_drop: 0.1}
"""


class _FakeRayLives:
    """Stands for RayLives: records which cluster the run would join, and stops the run."""

    joined: list[tuple[str, str]] = []

    def __init__(self, address: str, named_by: str) -> None:
        type(self).joined.append((address, named_by))
        raise BadInput(f"joined {address} ({named_by})")


def _fake_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """The `ray` executor's entry made the fake's (the registry is where the run looks)."""
    fake: Registry[Any] = Registry("executor", lambda entry: entry)
    fake.register("ray", _FakeRayLives)
    monkeypatch.setattr(runtime_lives, "EXECUTORS", fake)


def _profile(block: str = "") -> Any:
    return parse_profile_text(TEXT + block, "p.yaml", ROOT, check_files=False)


def test_the_command_line_wins_over_the_profile() -> None:
    with_key = _profile("cluster: {address: 'head:6379'}\n")
    assert cluster_address("other:1", with_key) == ("other:1", "--cluster or $RAY_ADDRESS")
    assert cluster_address(None, with_key) == ("head:6379", "the profile's cluster.address")
    assert cluster_address(None, _profile()) is None
    # resources without an address: the block waits for a run that goes to a cluster
    assert cluster_address(None, _profile("cluster: {candidates: {cand: 1}}\n")) is None
    assert lives_for(None, _profile("cluster: {cpus: 2}\n")) is LOCAL


def test_lives_for_joins_the_named_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_ray(monkeypatch)
    _FakeRayLives.joined = []
    with pytest.raises(BadInput):
        lives_for(None, _profile("cluster: {address: auto}\n"))
    assert _FakeRayLives.joined == [("auto", "the profile's cluster.address")]


@pytest.mark.parametrize(
    ("block", "args", "env", "joined"),
    [
        ("cluster: {address: 'head:6379'}\n", [], {}, ("head:6379", "the profile's")),
        ("cluster: {address: 'head:6379'}\n", ["--cluster", "cli:1"], {}, ("cli:1", "--cluster")),
        ("cluster: {address: 'head:6379'}\n", [], {"RAY_ADDRESS": "env:2"}, ("env:2", "--cluster")),
        ("", ["--cluster", "auto"], {}, ("auto", "--cluster")),
    ],
    ids=["profile", "option-over-profile", "env-over-profile", "option-alone"],
)
def test_qgate_run_goes_where_the_option_or_the_profile_says(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    block: str,
    args: list[str],
    env: dict[str, str],
    joined: tuple[str, str],
) -> None:
    _fake_ray(monkeypatch)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    profile = tmp_path / "p.yaml"
    profile.write_text(TEXT + block)
    result = CliRunner().invoke(
        main, ["run", str(profile), "--out", str(tmp_path / "runs"), *args], env=env
    )
    assert result.exit_code == 2, result.output
    address, source = joined
    assert f"joined {address} ({source}" in result.output


def test_without_a_cluster_the_run_stays_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No option, no $RAY_ADDRESS, no address in the profile: RayLives is never made."""
    _fake_ray(monkeypatch)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    _FakeRayLives.joined = []

    def stop(*args: Any) -> Any:
        raise BadInput("prepared here")

    monkeypatch.setattr("qgate.run.pipeline.prepare", stop)
    profile = tmp_path / "p.yaml"
    profile.write_text(TEXT + "cluster: {candidates: {cand: 1}}\n")
    result = CliRunner().invoke(main, ["run", str(profile), "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "prepared here" in result.output, result.output
    assert _FakeRayLives.joined == []


DECLARED = {
    name for cls in (Lives, Runtime) for name in dir(cls) if not name.startswith("__")
} | set(Runtime.__annotations__)
"""Members an executor's `Lives` or a runtime declares (with defaults on Lives, Lifecycle)."""


def _probes(source: str) -> list[tuple[int, str]]:
    """(line, member) of each getattr/hasattr of a declared member of an executor or runtime,
    or of any member of an expression named `lives` or `*.lives`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
        ):
            continue
        target, member = ast.unparse(node.args[0]), node.args[1]
        named = isinstance(member, ast.Constant) and member.value in DECLARED
        if named or target == "lives" or target.endswith(".lives"):
            found.append((node.lineno, ast.unparse(member)))
    return found


def test_the_run_probes_no_member_of_an_executor_or_a_runtime() -> None:
    """Every member qgate uses of an executor's `Lives` or of a runtime is declared
    (qgate/runtime/lives.py, qgate/core/serving.py) with a default: a new one goes there, not
    behind a getattr (anywhere in qgate: the quality stage read an endpoint's headers so)."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {member}"
        for path in sorted((ROOT / "qgate").rglob("*.py"))
        for line, member in _probes(path.read_text(encoding="utf-8"))
    ]
    # a report's `provenance` (a multi report has none), not an executor's member of that name
    assert found == ["qgate/report/render/parts.py:57: 'provenance'"]
    probes = (
        'w = getattr(ctx.lives, "at_once", None)\nhasattr(lives, "x")\n'
        'getattr(runtime, "paused", None)\nhasattr(r, "cores_chosen")\ngetattr(profile, role)\n'
    )
    assert _probes(probes) == [
        (1, "'at_once'"),
        (2, "'x'"),
        (3, "'paused'"),
        (4, "'cores_chosen'"),
    ]


def test_every_member_the_run_uses_has_its_default() -> None:
    class Minimal(Lives):
        def runtime(self, *args: Any, **kwargs: Any) -> Any:
            return None

    lives, profile = Minimal(), _profile()
    assert (lives.places_lives, lives.at_once(profile), lives.side_by_side(profile)) == (
        False,
        1,
        None,
    )
    assert lives.stop_all() is None and lives.provenance() is None
