from __future__ import annotations

from pathlib import Path

import pytest

from qgate.errors import BadInput
from qgate.profile import Target
from qgate.runtime.fingerprint import (
    Accelerator,
    CpuInfo,
    Fingerprint,
    check_target,
    collect_fingerprint,
    target_mismatches,
)


def _fp(*accs: tuple[str, int]) -> Fingerprint:
    return Fingerprint(
        hostname="h",
        os="Linux",
        python="3.11",
        cpu=CpuInfo(model="Xeon", logical_cores=2),
        accelerators=[
            Accelerator(vendor="amd" if "MI" in m else "nvidia", model=m, count=n, source="test")
            for m, n in accs
        ],
    )


def test_cpu_target_matches_only_a_machine_without_accelerators() -> None:
    assert check_target(Target(accelerator="cpu"), _fp()) == []
    assert target_mismatches(Target(accelerator="cpu"), _fp(("NVIDIA H200", 1))) == [
        "target is cpu, but this machine has 1 x NVIDIA H200"
    ]


def test_accelerator_name_is_matched_inside_the_device_name() -> None:
    fp = _fp(("AMD Instinct MI325X", 8))
    assert check_target(Target(accelerator="MI325X", count=8), fp) == []
    assert check_target(Target(accelerator="mi325x", count=4), fp) == []
    assert check_target(Target(accelerator="H200"), _fp(("NVIDIA H200", 1))) == []


def test_missing_or_too_few_accelerators_are_bad_input() -> None:
    with pytest.raises(BadInput) as info:
        check_target(Target(accelerator="MI325X", count=8), _fp(("NVIDIA H200", 8)))
    assert info.value.details == ["target is 8 x MI325X, this machine has 8 x NVIDIA H200"]
    with pytest.raises(BadInput) as info:
        check_target(Target(accelerator="H200", count=8), _fp(("NVIDIA H200", 1)))
    assert info.value.details == ["target is 8 x H200, only 1 found"]
    with pytest.raises(BadInput, match="allow_mismatch"):
        check_target(Target(accelerator="H200"), _fp())


def test_allow_mismatch_returns_the_lines_instead_of_raising() -> None:
    lines = check_target(Target(accelerator="MI325X", allow_mismatch=True), _fp())
    assert lines == ["target is 1 x MI325X, this machine has no accelerator"]


def test_collect_fingerprint_on_this_machine(tmp_path: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    fp = collect_fingerprint(model, tmp_path / "cache.json")
    assert fp.python.count(".") == 2
    assert fp.cpu.logical_cores >= 1
    assert [f.path for f in fp.checkpoint] == ["config.json"]
    assert fp.checkpoint_sha256 is not None and len(fp.checkpoint_sha256) == 64
    assert "qgate" in fp.packages
    assert (tmp_path / "cache.json").is_file()
    assert collect_fingerprint(None, tmp_path / "cache2.json").checkpoint == []
