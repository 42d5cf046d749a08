"""A third-party suite, engine and executor, installed as a throw-away distribution and run
by `qgate` with no edit to qgate (issue 40: entry points).

The distribution is what pip would leave in site-packages: the plug-in's module
(tests/unit/core/plugin/qgate_toy_plugin.py), the server its engine starts (the mock
OpenAI server, as module `qgate_toy_server`) and a `*.dist-info` folder whose
entry_points.txt names the three objects under `qgate.suites`, `qgate.engines` and
`qgate.executors`, as docs/extending.md declares them (the page includes the module and the
profile, and the test reads the page's entry points: neither can drift from the other).
importlib.metadata finds it on the `PYTHONPATH` of a fresh `qgate` process, which runs
it (both sides started by the plug-in's engine, made by its executor, graded by its suite)
and verifies the signed report.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from qgate.core.registry import PluginError, Registry

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PLUGIN = HERE / "plugin" / "qgate_toy_plugin.py"
MOCK = ROOT / "tests" / "mockserver" / "mock_openai.py"

PAGE = ROOT / "docs" / "extending.md"
PROFILE = (HERE / "plugin" / "profile.yaml").read_text()
"""The profile docs/extending.md shows: the plug-in's suite and engine."""


def entry_points_txt() -> str:
    """The entry points docs/extending.md declares (its pyproject.toml block), as an installer
    writes them into the distribution's entry_points.txt."""
    block = re.search(r"```toml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert block is not None, "docs/extending.md lost its pyproject.toml block"
    groups = tomllib.loads(block.group(1))["project"]["entry-points"]
    return "\n".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items())
        for group, points in groups.items()
    )


def install(site: Path, entry_points: str) -> None:
    """The distribution `qgate-toy-plugin` 0.1 as an installer leaves it in `site`."""
    info = site / "qgate_toy_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: qgate-toy-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    shutil.copy(PLUGIN, site / PLUGIN.name)
    shutil.copy(MOCK, site / "qgate_toy_server.py")


def qgate(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m qgate.cli ARGS` in `tmp`, the distribution in tmp/site on its path."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp / "site")]),
        "XDG_CONFIG_HOME": str(tmp / "config"),  # the run's development key
        "XDG_CACHE_HOME": str(tmp / "cache"),
    }
    env.pop("RAY_ADDRESS", None)
    return subprocess.run(
        [sys.executable, "-m", "qgate.cli", *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[Path]:
    install(tmp_path / "site", entry_points_txt())
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text('{"model_type": "toy"}\n')
    (tmp_path / "profile.yaml").write_text(PROFILE)
    (tmp_path / "lives").mkdir()
    yield tmp_path


def test_a_plugin_suite_engine_and_executor_run_and_verify(installed: Path) -> None:
    ran = qgate(
        installed,
        "run",
        "profile.yaml",
        "--executor",
        "logged",
        "--cluster",
        str(installed / "lives"),
        "--out",
        "out",
        "--cache-dir",
        "qgate-cache",
        "--skip-perf",
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "PASS: 2/2 gates passed" in ran.stdout
    # the executor made every life, each one the plug-in's engine
    lives = [
        json.loads(line) for line in (installed / "lives" / "lives.jsonl").read_text().splitlines()
    ]
    assert {life["role"] for life in lives} == {"reference", "candidate"}
    assert {life["engine"] for life in lives} == {"toy_server"}

    (report,) = (installed / "out").glob("*/report.intoto.jsonl")
    shown = qgate(installed, "show", str(report)).stdout  # what the executor reported
    assert f"Executor logged at {installed / 'lives'}: candidate on this machine; " in shown
    pubkey = installed / "config" / "qgate" / "dev-key.pub.pem"
    verified = qgate(installed, "verify", str(report), "--pubkey", str(pubkey))
    assert verified.returncode == 0, verified.stderr[-3000:]
    assert "VERIFIED" in verified.stdout + verified.stderr
    assert "(verdict PASS)" in verified.stdout + verified.stderr


def test_a_plugin_that_fails_to_import_is_one_line_for_people(tmp_path: Path) -> None:
    broken = "[qgate.suites]\nword_count = qgate_no_such_module:WORD_COUNT\n"
    install(tmp_path / "site", broken)
    (tmp_path / "profile.yaml").write_text(PROFILE)
    out = qgate(tmp_path, "validate", "profile.yaml")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    line = (
        "plug-in qgate.suites 'word_count' (qgate_no_such_module:WORD_COUNT): "
        "ModuleNotFoundError: No module named 'qgate_no_such_module'"
    )
    assert line in out.stderr.splitlines()[0], out.stderr


class _Point:
    """An installed entry point, as importlib.metadata hands it."""

    def __init__(self, name: str, value: str, group: str = "qgate.test") -> None:
        self.name, self.value, self.group = name, value, group
        self.module, _, self.attr = value.partition(":")


def _registry(monkeypatch: pytest.MonkeyPatch, points: list[_Point]) -> Registry[object]:
    calls: list[str] = []

    def entry_points(*, group: str) -> list[_Point]:
        calls.append(group)
        return [p for p in points if p.group == group]

    monkeypatch.setattr("qgate.core.registry.entry_points", entry_points)
    registry: Registry[object] = Registry("thing", lambda o: o, name_of=lambda o: str(o))
    registry.register("builtin", "builtin")
    registry.open_to("qgate.test")
    registry.calls = calls  # type: ignore[attr-defined]
    return registry


def test_the_group_is_read_once_on_first_look_up_and_loaded_on_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry = _registry(monkeypatch, [_Point("sep", "os.path:sep")])
    assert registry.calls == []  # type: ignore[attr-defined]
    assert registry.names() == ["builtin", "sep"]
    assert "sep" in registry and registry.plugin("sep") and not registry.plugin("builtin")
    assert registry.calls == ["qgate.test"]  # type: ignore[attr-defined]
    # os.path.sep names itself '/', not 'sep': refused with the entry point named
    with pytest.raises(PluginError, match=r"plug-in qgate.test 'sep' \(os.path:sep\): it names"):
        registry.get("sep")
    assert registry.calls == ["qgate.test"]  # type: ignore[attr-defined]


def test_a_plugin_may_not_take_a_builtin_name(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = _registry(monkeypatch, [_Point("builtin", "os:sep")])
    with pytest.raises(PluginError, match="thing 'builtin' is already registered"):
        registry.names()
