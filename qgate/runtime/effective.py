"""What a vLLM server says it applied, and whether that is what the profile asked for.

Pure functions over log text, /metrics text and parsed JSON, so that captured logs
can be tested and a report's effective configuration can be re-checked offline.

Sources, most trusted first: what the server answers over HTTP whatever its log level
(`max_model_len` in /v1/models; the KV cache dtype in the labels of /metrics'
`vllm:cache_config_info`), then its start-up log (the engine config line, at INFO: the
dtype, the quantization, the parallel sizes; the kernels and warnings). A user's
environment can hide the log lines (`VLLM_LOGGING_LEVEL=WARNING`,
`VLLM_CONFIGURE_LOGGING=0`, a `VLLM_LOGGING_CONFIG_PATH` that drops them): a setting
that no source states is then recorded as not verified (`not_verified`), never
reported as "not applied", which is only for a setting the server states otherwise.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import Field

from qgate.core.records import Record
from qgate.core.redact import redact_env
from qgate.profile.base import EngineArgValue
from qgate.runtime.causes import is_noise

__all__ = [
    "ENGINE_ENV_PREFIXES",
    "EngineLogReport",
    "FATAL_STARTUP_MARKERS",
    "check_applied",
    "engine_facts",
    "fatal_startup_line",
    "log_hidden_by",
    "metrics_cache_config",
    "metrics_facts",
    "models_max_len",
    "normalize_dtype",
    "not_verified",
    "parse_engine_log",
    "recorded_env",
]

_CONFIG_RE = re.compile(
    r"Initializing a V1 LLM engine \(v(?P<version>[^)]+)\) with config: (?P<config>.*)$",
    re.MULTILINE,
)
# "speculative_config=SpeculativeConfig(method='ngram', model=None, num_spec_tokens=3)" or
# "speculative_config=None" in the config line (vLLM's SpeculativeConfig.__repr__).
_SPEC_RE = re.compile(r"(?:^|, )speculative_config=(?P<spec>None|SpeculativeConfig\([^)]*\))")
# First match wins, so more specific announcements come first.
_BACKEND_RES = (
    re.compile(r"Using (?P<name>[A-Za-z0-9_]+) attention backend"),
    re.compile(r"Using (?P<name>[A-Za-z0-9_]+) backend(?: \(selected via [^)]*\))?\.?\s*$", re.M),
)
# vLLM 0.26 on Hopper: "Using FlashAttention version 3" (v1/attention/backends/flash_attn.py).
_FA_VERSION_RE = re.compile(r"Using FlashAttention version (?P<version>\d+)")
# "Selected CutlassFP8ScaledMMLinearKernel for Fp8PerTensorOnlineLinearMethod"
# (model_executor/kernels/linear/__init__.py): which GEMM kernel a quantized linear method uses.
_LINEAR_KERNEL_RE = re.compile(
    r"Selected (?P<kernel>[A-Za-z_][A-Za-z0-9_]*) for (?P<method>[A-Za-z_][A-Za-z0-9_.]*)"
)
# vLLM's warnings that an FP8 KV cache / FP8 attention runs with default (1.0) scales
# (model_executor/layers/quantization/kv_cache.py); each pattern names the scales it reports.
_KV_SCALE_1 = re.compile(r"Using KV cache scaling factor 1\.0 for \w+")
_Q_FROM_K = re.compile(r"Checkpoint does not provide a q scaling factor")
_Q_PROB_1 = re.compile(
    r"Using uncalibrated q_scale (?P<q>[-+0-9.eE]+) and/or prob_scale (?P<prob>[-+0-9.eE]+)"
)
# The part of a vLLM log line before its message:
# "(EngineCore pid=1) WARNING 11-30 13:02:49 [kv_cache.py:150] ".
_LOG_PREFIX_RE = re.compile(r"^.*?\b(?:WARNING|INFO|DEBUG|ERROR)\b[^\[]*\[[^\]]*\]\s*")
# Keys of the config line that qgate records; their values never contain ", ".
_KEYS = (
    "model",
    "dtype",
    "max_seq_len",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "quantization",
    "enforce_eager",
    "kv_cache_dtype",
    "device_config",
    "served_model_name",
    "enable_prefix_caching",
    "enable_chunked_prefill",
    "load_format",
    "seed",
)


class EngineLogReport(Record):
    """Facts a vLLM server printed about itself at startup."""

    engine_version: str | None = Field(default=None, description="Version in the config line.")
    config: dict[str, str] = Field(
        default_factory=dict, description="Selected key=value pairs of the config line, raw."
    )
    attention_backend: str | None = Field(default=None, description="Backend it announced.")
    flash_attn_version: int | None = Field(
        default=None, description="FlashAttention version it announced (2, 3, 4)."
    )
    linear_kernels: dict[str, str] = Field(
        default_factory=dict, description="Quantized linear method -> GEMM kernel selected."
    )
    uncalibrated_scales: list[str] = Field(
        default_factory=list,
        description="FP8 scales vLLM left at 1.0 ('k', 'v', 'q', 'prob'), from its warnings.",
    )
    warnings: list[str] = Field(
        default_factory=list, description="Engine warnings qgate recognises, as logged."
    )


def _config_value(config: str, key: str) -> str | None:
    # `(?:^|, )` keeps `dtype=` from matching inside `kv_cache_dtype=`.
    m = re.search(r"(?:^|, )" + re.escape(key) + r"=('(?:[^'\\]|\\.)*'|[^,]*)", config)
    if m is None:
        return None
    value = m.group(1).strip()
    if len(value) >= 2 and value[0] == value[-1] == "'":
        value = value[1:-1]
    return value


def parse_engine_log(text: str) -> EngineLogReport:
    """Parse a vLLM server log: the engine config line (last one wins) and the attention backend."""
    matches = list(_CONFIG_RE.finditer(text))
    report = EngineLogReport()
    if matches:
        last = matches[-1]
        report.engine_version = last.group("version").strip()
        config = last.group("config")
        for key in _KEYS:
            value = _config_value(config, key)
            if value is not None:
                report.config[key] = value
        spec = _SPEC_RE.search(config)
        if spec is not None:
            report.config["speculative_config"] = spec.group("spec")
    for pattern in _BACKEND_RES:
        found = pattern.search(text)
        if found:
            report.attention_backend = found.group("name")
            break
    fa = _FA_VERSION_RE.search(text)
    if fa is not None:
        report.flash_attn_version = int(fa.group("version"))
    for m in _LINEAR_KERNEL_RE.finditer(text):
        report.linear_kernels.setdefault(m.group("method"), m.group("kernel"))
    _scale_warnings(text, report)
    return report


def _message(line: str) -> str:
    """A log line without vLLM's process/level/time/source prefix."""
    return _LOG_PREFIX_RE.sub("", line.strip(), count=1)


def _scale_warnings(text: str, report: EngineLogReport) -> None:
    """Record vLLM's uncalibrated-FP8-scale warnings (each once) and the scales they name."""
    scales: list[str] = []
    for line in text.splitlines():
        if "scal" not in line:
            continue
        names: list[str] = []
        if _KV_SCALE_1.search(line):
            names = ["k", "v"]
        elif _Q_FROM_K.search(line):
            names = ["q"]
        elif (m := _Q_PROB_1.search(line)) is not None:
            names = [n for n in ("q", "prob") if _is_one(m.group(n))]
        else:
            continue
        message = _message(line)
        if message not in report.warnings:
            report.warnings.append(message)
        scales += [n for n in names if n not in scales]
    order = ("k", "v", "q", "prob")
    report.uncalibrated_scales = [n for n in order if n in scales]


def _is_one(value: str) -> bool:
    try:
        return float(value) == 1.0
    except ValueError:
        return False


def _none_if_null(value: str | None) -> str | None:
    return None if value in (None, "None", "none", "") else value


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def normalize_dtype(value: str | None) -> str | None:
    """`torch.bfloat16` / `bf16` / `half` -> canonical names (`bfloat16`, `float16`, `float32`)."""
    if value is None:
        return None
    v = value.strip().lower().removeprefix("torch.")
    aliases = {
        "bf16": "bfloat16",
        "half": "float16",
        "fp16": "float16",
        "float": "float32",
        "fp32": "float32",
    }
    return aliases.get(v, v)


def engine_facts(report: EngineLogReport) -> dict[str, Any]:
    """The typed subset of a log report that EffectiveConfig holds."""
    c = report.config
    return {
        "engine_version": report.engine_version,
        "dtype": normalize_dtype(_none_if_null(c.get("dtype"))),
        "quantization": _none_if_null(c.get("quantization")),
        "kv_cache_dtype": _none_if_null(c.get("kv_cache_dtype")),
        "attention_backend": report.attention_backend,
        "flash_attn_version": report.flash_attn_version,
        "linear_kernels": dict(report.linear_kernels),
        "uncalibrated_scales": list(report.uncalibrated_scales),
        "engine_warnings": list(report.warnings),
        "max_model_len": _int_or_none(c.get("max_seq_len")),
        "tensor_parallel_size": _int_or_none(c.get("tensor_parallel_size")),
        "pipeline_parallel_size": _int_or_none(c.get("pipeline_parallel_size")),
        "speculative_config": c.get("speculative_config"),
    }


def models_max_len(models_json: Mapping[str, Any], served_model: str) -> int | None:
    """`max_model_len` that /v1/models reports for the served model (vLLM adds it)."""
    for entry in models_json.get("data", []) or []:
        if isinstance(entry, dict) and entry.get("id") == served_model:
            value = entry.get("max_model_len")
            return int(value) if isinstance(value, int) else None
    return None


# `vllm:cache_config_info{block_size="128",cache_dtype="auto",...} 1.0` (vLLM's CacheConfig as
# the labels of an info gauge, served whatever the log level; v1/metrics/loggers.py).
_CACHE_INFO_RE = re.compile(r"^vllm:cache_config_info\{(?P<labels>.*)\}\s", re.MULTILINE)
_LABEL_RE = re.compile(r'(?P<name>[A-Za-z_][A-Za-z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')


def metrics_cache_config(text: str) -> dict[str, str]:
    """The labels of the first `vllm:cache_config_info` sample of a /metrics page ({} if none:
    another engine, or vLLM run with --disable-log-stats)."""
    found = _CACHE_INFO_RE.search(text)
    if found is None:
        return {}
    return {
        m.group("name"): m.group("value").replace('\\"', '"').replace("\\\\", "\\")
        for m in _LABEL_RE.finditer(found.group("labels"))
    }


def metrics_facts(labels: Mapping[str, str]) -> dict[str, Any]:
    """The EffectiveConfig fields that `vllm:cache_config_info`'s labels state."""
    kv = _none_if_null(labels.get("cache_dtype"))
    return {} if kv is None else {"kv_cache_dtype": kv}


def log_hidden_by(env: Mapping[str, str]) -> str | None:
    """The server environment setting that can keep vLLM's INFO lines out of its log, or None."""
    level = env.get("VLLM_LOGGING_LEVEL", "").strip().upper()
    if level and level not in ("DEBUG", "INFO", "NOTSET"):
        return f"VLLM_LOGGING_LEVEL={level}"
    if env.get("VLLM_CONFIGURE_LOGGING", "").strip() == "0":
        return "VLLM_CONFIGURE_LOGGING=0"
    if env.get("VLLM_LOGGING_CONFIG_PATH"):
        return "VLLM_LOGGING_CONFIG_PATH (a logging configuration of its own)"
    return None


def _kv_matches(asked: str, applied: str, dtype: str | None) -> bool:
    a = asked.lower()
    b = applied.lower()
    if a == "auto":
        # Some versions resolve `auto` to the model dtype before logging it.
        return b == "auto" or normalize_dtype(b) == dtype
    if a == "fp8":
        # vLLM may spell plain fp8 as its default e4m3 variant.
        return b in ("fp8", "fp8_e4m3")
    return a == b


_CHECKED_INTS = ("max_model_len", "tensor_parallel_size", "pipeline_parallel_size")


def _asked(requested: Mapping[str, EngineArgValue]) -> dict[str, EngineArgValue]:
    """The requested settings a server can be held to (an `auto` dtype asks for nothing)."""
    out: dict[str, EngineArgValue] = {}
    for key in ("kv_cache_dtype", "quantization"):
        if isinstance(requested.get(key), str):
            out[key] = requested[key]
    dtype = requested.get("dtype")
    if isinstance(dtype, str) and dtype.lower() != "auto":
        out["dtype"] = dtype
    for key in _CHECKED_INTS:
        asked = requested.get(key)
        if isinstance(asked, int) and not isinstance(asked, bool):
            out[key] = asked
    return out


def check_applied(requested: Mapping[str, EngineArgValue], applied: Mapping[str, Any]) -> list[str]:
    """One line per setting the profile asked for that the server states it applied otherwise.

    `applied` holds EffectiveConfig's fields (dtype, quantization,
    kv_cache_dtype, max_model_len, tensor/pipeline_parallel_size). A setting the
    server did not state at all (None) is not a mismatch: `not_verified` lists it.
    """
    problems: list[str] = []
    for key, asked in _asked(requested).items():
        got = applied.get(key)
        if got is None:
            continue
        if key == "kv_cache_dtype":
            same = _kv_matches(str(asked), str(got), applied.get("dtype"))
        elif key == "dtype":
            same = normalize_dtype(str(asked)) == normalize_dtype(str(got))
        elif key == "quantization":
            same = str(asked).lower() == str(got).lower()
        else:
            same = got == asked
        if not same:
            problems.append(f"{key}: asked for {asked!r}, server reports {got!r}")
    return problems


def not_verified(
    requested: Mapping[str, EngineArgValue], applied: Mapping[str, Any], why: str
) -> list[str]:
    """One line per setting the profile asked for that no source of the server stated.

    `why` says what hid it, for the report (e.g. "its log did not state it").
    """
    return [
        f"{key}: asked for {asked!r}; {why}"
        for key, asked in _asked(requested).items()
        if applied.get(key) is None
    ]


# Lines after which a starting vLLM server never becomes healthy; some
# versions then hang instead of exiting (seen: a worker failing its KV cache
# allocation on a machine short of memory left the API server waiting).
FATAL_STARTUP_MARKERS = (
    "Engine core initialization failed",
    "EngineCore failed to start",
    "Worker failed with error",
    "WorkerProc hit an exception",
    "torch.OutOfMemoryError",
    "CUDA out of memory",
    "HIP out of memory",
)


def fatal_startup_line(text: str) -> str | None:
    """The first log line that says a starting server has failed for good, if any.

    Lines at INFO/WARNING level and Python warnings never count, whatever they quote.
    """
    for line in text.splitlines():
        if any(marker in line for marker in FATAL_STARTUP_MARKERS) and not is_noise(line):
            return line.strip()
    return None


# Inherited variables that change what the engine does; recorded with the overlay.
ENGINE_ENV_PREFIXES = (
    "VLLM_",
    "SGLANG_",
    "SGL_",
    "ATOM_",
    "HIP_",
    "ROCM_",
    "ROCR_",
    "CUDA_",
    "NCCL_",
    "OMP_",
    "PYTORCH_",
    "AITER_",
    "TORCH_",
    "HF_HUB_OFFLINE",
)


def recorded_env(
    overlay: Mapping[str, str],
    secret_names: Iterable[str],
    inherited: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment a server ran with, as recorded: engine variables it inherited, the
    profile's overlay, secrets redacted."""
    env = os.environ if inherited is None else inherited
    kept = {k: v for k, v in env.items() if k.startswith(ENGINE_ENV_PREFIXES)}
    return redact_env({**kept, **overlay}, list(secret_names))
