"""The accelerators of this machine, as torch and the vendors' tools report them.

Part of the environment fingerprint (qgate/runtime/fingerprint.py): each group of identical
devices with its memory, driver, runtime, architecture and collective library.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from collections import Counter
from typing import Any

from pydantic import Field

from qgate.core.records import Record

__all__ = [
    "Accelerator",
    "accelerators",
    "arch_name",
    "run_text",
    "smi_cuda_version",
    "torch_facts",
]


class Accelerator(Record):
    """A group of identical accelerators."""

    vendor: str = Field(description="'nvidia', 'amd' or another vendor name.")
    model: str = Field(description="Device name as the driver reports it.")
    count: int = Field(description="How many of them.")
    memory_bytes: int | None = Field(default=None, description="Memory per device.")
    driver_version: str | None = Field(default=None, description="Kernel driver version.")
    runtime_version: str | None = Field(
        default=None, description="Runtime torch was built for, e.g. 'cuda 13.0', 'hip 7.0'."
    )
    arch: str | None = Field(
        default=None, description="Compute capability ('sm_90') on NVIDIA, gfx arch on AMD."
    )
    driver_runtime_version: str | None = Field(
        default=None, description="Newest CUDA runtime the driver supports, e.g. 'cuda 13.0'."
    )
    collective_version: str | None = Field(
        default=None, description="Collective library torch loaded, e.g. 'nccl 2.27.7', 'rccl …'."
    )
    source: str = Field(description="Where the facts came from (torch, nvidia-smi, rocm-smi).")


def run_text(argv: list[str], timeout: float = 20.0) -> str | None:
    """The command's stdout, or None when it is missing, fails or times out."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _nvidia_smi() -> list[dict[str, Any]]:
    out = run_text(
        [
            "nvidia-smi",
            "--query-gpu=name,memory.total,driver_version",
            "--format=csv,noheader,nounits",
        ]
    )
    devices = []
    for line in (out or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0]:
            mem = int(float(parts[1]) * 2**20) if parts[1].replace(".", "").isdigit() else None
            devices.append({"model": parts[0], "memory_bytes": mem, "driver_version": parts[2]})
    return devices


def _rocm_smi() -> list[dict[str, Any]]:
    out = run_text(["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"])
    driver_out = run_text(["rocm-smi", "--showdriverversion", "--json"])
    driver: str | None = None
    try:
        for section in json.loads(driver_out or "{}").values():
            if isinstance(section, dict):
                driver = next((str(v) for k, v in section.items() if "driver" in k.lower()), driver)
        cards = json.loads(out or "{}")
    except ValueError:
        return []
    devices = []
    for name, info in sorted(cards.items()):
        if not (name.startswith("card") and isinstance(info, dict)):
            continue
        model = str(info.get("Card Series") or info.get("Card series") or info.get("Card model"))
        mem_raw = info.get("VRAM Total Memory (B)")
        mem = int(mem_raw) if isinstance(mem_raw, str | int) and str(mem_raw).isdigit() else None
        devices.append({"model": model, "memory_bytes": mem, "driver_version": driver})
    return devices


def _torch_devices() -> tuple[list[dict[str, Any]], str | None, str | None]:
    """Devices torch sees, its vendor and runtime version; only if torch is installed."""
    facts = torch_facts()
    return facts["devices"], facts["vendor"], facts["runtime"]


def _version_text(value: Any) -> str | None:
    if isinstance(value, tuple | list):
        return ".".join(str(v) for v in value)
    if isinstance(value, int) and value >= 1000:
        # CUDA's integer form: 13000 -> 13.0, 12080 -> 12.8
        return f"{value // 1000}.{(value % 1000) // 10}"
    return str(value) if value else None


def arch_name(vendor: str | None, props: Any, capability: tuple[int, int] | None) -> str | None:
    """'sm_90' from a compute capability; 'gfx942' from an AMD device's gcnArchName."""
    gcn = getattr(props, "gcnArchName", None)
    if vendor == "amd" and isinstance(gcn, str) and gcn:
        return gcn.split(":", 1)[0]
    if capability is not None:
        return f"sm_{capability[0]}{capability[1]}"
    return None


def torch_facts() -> dict[str, Any]:
    """What torch says about its build and the devices: versions, arch, collectives.

    Keys: devices (list of dicts: model, memory_bytes, arch), vendor, runtime,
    torch_build, driver_runtime, collective. Empty answers when torch is absent
    or no device is usable; nothing here raises.
    """
    facts: dict[str, Any] = dict.fromkeys(
        ("vendor", "runtime", "torch_build", "driver_runtime", "collective")
    )
    facts["devices"] = []
    if importlib.util.find_spec("torch") is None:
        return facts
    import torch

    hip = getattr(torch.version, "hip", None)
    cuda = getattr(torch.version, "cuda", None)
    vendor = "amd" if hip else "nvidia"
    facts["vendor"] = vendor if (hip or cuda) else None
    facts["runtime"] = f"hip {hip}" if hip else (f"cuda {cuda}" if cuda else None)
    facts["torch_build"] = str(torch.__version__)
    try:
        if not torch.cuda.is_available():
            return facts
        devices = []
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            cap = (int(props.major), int(props.minor)) if hasattr(props, "major") else None
            devices.append(
                {
                    "model": str(props.name),
                    "memory_bytes": int(props.total_memory),
                    "arch": arch_name(vendor, props, cap),
                }
            )
        facts["devices"] = devices
    except RuntimeError:
        return facts
    try:
        lib = "rccl" if hip else "nccl"
        nccl_version = getattr(torch.cuda, "nccl").version  # noqa: B009 (untyped in torch)
        facts["collective"] = f"{lib} {_version_text(nccl_version())}"
    except (AttributeError, RuntimeError, TypeError):
        facts["collective"] = None
    if not hip:
        # torch 2.11 has no public call for the driver's CUDA version; nvidia-smi prints it.
        smi_cuda = smi_cuda_version(run_text(["nvidia-smi"]) or "")
        facts["driver_runtime"] = f"cuda {smi_cuda}" if smi_cuda else None
    return facts


def smi_cuda_version(text: str) -> str | None:
    """'13.0' from nvidia-smi's header line `... CUDA Version: 13.0 |` (the driver's CUDA)."""
    m = re.search(r"CUDA Version:\s*([0-9]+(?:\.[0-9]+)*)", text)
    return m.group(1) if m else None


def _group(devices: list[dict[str, Any]], **common: Any) -> list[Accelerator]:
    counts = Counter(
        (d["model"], d.get("memory_bytes"), d.get("driver_version"), d.get("arch")) for d in devices
    )
    return [
        Accelerator(
            model=model, count=n, memory_bytes=mem, driver_version=driver, arch=arch, **common
        )
        for (model, mem, driver, arch), n in counts.items()
    ]


def accelerators(facts: dict[str, Any] | None = None) -> list[Accelerator]:
    """Accelerators via torch when installed, with driver versions from the vendor tools."""
    smi_nv = _nvidia_smi()
    smi_amd = [] if smi_nv else _rocm_smi()
    smi = smi_nv or smi_amd
    smi_vendor = "nvidia" if smi_nv else "amd"
    driver = smi[0].get("driver_version") if smi else None
    facts = torch_facts() if facts is None else facts
    devices = facts["devices"]
    if devices:
        for d in devices:
            d["driver_version"] = driver
        return _group(
            devices,
            vendor=facts["vendor"] or smi_vendor,
            runtime_version=facts["runtime"],
            driver_runtime_version=facts["driver_runtime"],
            collective_version=facts["collective"],
            source="torch",
        )
    if smi:
        tool = "nvidia-smi" if smi_nv else "rocm-smi"
        return _group(smi, vendor=smi_vendor, runtime_version=None, source=tool)
    return []
