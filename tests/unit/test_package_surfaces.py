"""Every package's `__all__` resolves, and importing a package loads none of its heavy parts."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = ["qgate", "qgate.gates", "qgate.perf", "qgate.quality", "qgate.report", "qgate.runtime"]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_public_name_resolves(name: str) -> None:
    package = importlib.import_module(name)
    assert package.__all__, name
    for public in package.__all__:
        assert getattr(package, public) is not None, f"{name}.{public}"


@pytest.mark.parametrize("name", ["qgate.gates", "qgate.perf", "qgate.report", "qgate.runtime"])
def test_an_unknown_name_says_which_package(name: str) -> None:
    package = importlib.import_module(name)
    with pytest.raises(AttributeError, match=f"module '{name}' has no attribute 'nope'"):
        package.nope  # noqa: B018


def test_importing_the_packages_imports_no_heavy_module() -> None:
    code = (
        "import sys, qgate.gates, qgate.perf, qgate.report, qgate.runtime\n"
        "heavy = [m for m in ('numpy', 'aiohttp', 'securesystemslib', 'qgate.perf.metrics',"
        " 'qgate.gates.assembly',"
        " 'qgate.report.verify.single', 'qgate.runtime.vllm_server') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_verify_imports_no_http_client() -> None:
    """`qgate verify` reads records and never talks to a server: aiohttp (a fifth of its start)
    and the HTTP clients stay out of what it imports."""
    code = (
        "import sys, qgate.cli.report, qgate.report.verify.multi\n"
        "print([m for m in ('aiohttp', 'qgate.perf.client', 'qgate.quality.client')"
        " if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
