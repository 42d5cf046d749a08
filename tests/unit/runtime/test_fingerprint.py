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
    assert "qgate-llm" in fp.packages
    assert (tmp_path / "cache.json").is_file()
    assert collect_fingerprint(None, tmp_path / "cache2.json").checkpoint == []


# --- CUDA/ROCm facts (pure helpers; the machine's own torch is the CPU build here) ---


def test_arch_names_for_nvidia_and_amd() -> None:
    from types import SimpleNamespace

    from qgate.runtime.accelerators import arch_name

    assert arch_name("nvidia", SimpleNamespace(major=9, minor=0), (9, 0)) == "sm_90"
    amd = SimpleNamespace(gcnArchName="gfx942:sramecc+:xnack-")
    assert arch_name("amd", amd, (9, 4)) == "gfx942"
    assert arch_name("nvidia", SimpleNamespace(), None) is None


def test_version_text_forms() -> None:
    from qgate.runtime.accelerators import _version_text

    assert _version_text((2, 28, 9)) == "2.28.9"
    assert _version_text(13000) == "13.0"
    assert _version_text(12080) == "12.8"
    assert _version_text(None) is None


def test_driver_cuda_version_from_nvidia_smi_header() -> None:
    from qgate.runtime.accelerators import smi_cuda_version

    header = (
        "| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     "
        "CUDA Version: 13.0     |\n"
    )
    assert smi_cuda_version(header) == "13.0"
    assert smi_cuda_version("NVIDIA-SMI has failed") is None


def test_torch_facts_record_the_build_tag_of_this_torch() -> None:
    import torch

    from qgate.runtime.accelerators import torch_facts

    facts = torch_facts()
    assert facts["torch_build"] == torch.__version__
    assert "+" in facts["torch_build"]  # e.g. 2.13.0+cpu here, 2.11.0+cu130 on the H200
    assert isinstance(facts["devices"], list)


def test_qgate_revision_from_a_source_tree_and_from_an_archive(tmp_path: Path) -> None:
    from qgate.runtime.fingerprint import qgate_revision

    here = qgate_revision()  # this checkout is a git worktree
    assert here is not None and not here.startswith("git archive")
    archive = tmp_path / "src"
    (archive / "qgate").mkdir(parents=True)
    (archive / "qgate" / "_revision.txt").write_text("7a13e74\n")
    assert qgate_revision(archive) == "git archive 7a13e74"
    (archive / "qgate" / "_revision.txt").write_text("$Format:%h$\n")  # not substituted
    assert qgate_revision(archive) is None


def test_h200_report_fingerprint_has_the_cuda_facts() -> None:
    import base64
    import json

    root = Path(__file__).resolve().parents[3] / "examples" / "h200"
    line = (root / "llama3-8b-shape-h200-preview" / "report.intoto.jsonl").read_text()
    fp = json.loads(base64.b64decode(json.loads(line)["payload"]))["predicate"]["fingerprint"]
    (acc,) = fp["accelerators"]
    assert (acc["model"], acc["arch"]) == ("NVIDIA H200", "sm_90")
    assert acc["runtime_version"] == "cuda 13.0"
    assert acc["collective_version"] == "nccl 2.28.9" and acc["driver_version"] == "580.159.04"
    assert fp["torch_build"] == "2.11.0+cu130" and fp["packages"]["torch"] == "2.11.0"
    assert fp["qgate_revision"] == "git archive 7a13e74"
