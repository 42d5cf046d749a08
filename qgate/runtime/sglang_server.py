"""An SGLang server (`python -m sglang.launch_server`) that qgate starts, watches and stops.

What SGLang serves, from its documentation: the OpenAI API with `min_tokens`
and `ignore_eos` as extra sampling parameters, `/health`, `/v1/models`, and
with `--enable-metrics` Prometheus series named `sglang:*`. It does not serve
vLLM's `prompt_logprobs` (its input logprobs come from its native /generate
API in another form), `return_token_ids` in streamed chunks, a `/tokenize`
qgate can rely on, or prefix-cache hit/query counters (only a
`sglang:cache_hit_rate` gauge), so those features are not declared. The
applied configuration is read from GET /get_server_info (SGLang's own
account of its arguments) and the precision-relevant ones are compared with
what was asked.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, ClassVar

from qgate.core import http
from qgate.core.features import Feature
from qgate.core.serving import EffectiveConfig, MetricNames
from qgate.profile.base import EngineArgValue
from qgate.runtime.flags import plain_flags
from qgate.runtime.server import ServerProcess

__all__ = ["CHECKED_ARGS", "SGLANG_METRICS", "SglangServer", "server_info_facts", "unapplied"]

SGLANG_METRICS = MetricNames(
    prompt_tokens="sglang:prompt_tokens_total",
    generation_tokens="sglang:generation_tokens_total",
)
RESERVED_ARGS = {
    "model_path": "model.path",
    "host": "engine.host",
    "port": "engine.port",
    "served_model_name": "model.served_name",
}
LAUNCH_MODULE = "sglang.launch_server"


# /get_server_info key -> EffectiveConfig field.
_INFO_FIELDS = {
    "dtype": "dtype",
    "kv_cache_dtype": "kv_cache_dtype",
    "quantization": "quantization",
    "attention_backend": "attention_backend",
    "tp_size": "tensor_parallel_size",
    "pp_size": "pipeline_parallel_size",
    "context_length": "max_model_len",
    "version": "engine_version",
}
# Requested args whose applied value decides the numerics; compared with /get_server_info.
CHECKED_ARGS = (
    "dtype",
    "kv_cache_dtype",
    "quantization",
    "attention_backend",
    "tp_size",
    "context_length",
)


def server_info_facts(info: Mapping[str, Any]) -> dict[str, Any]:
    """EffectiveConfig fields from an SGLang /get_server_info answer."""
    facts: dict[str, Any] = {}
    for key, field in _INFO_FIELDS.items():
        value = info.get(key)
        if value is None:
            continue
        if field in ("tensor_parallel_size", "pipeline_parallel_size", "max_model_len"):
            facts[field] = int(value)
        else:
            facts[field] = str(value)
    return facts


def unapplied(requested: Mapping[str, EngineArgValue], info: Mapping[str, Any]) -> list[str]:
    """Requested settings the server reports with another value."""
    out = []
    for key in CHECKED_ARGS:
        if key not in requested or requested[key] is None or key not in info:
            continue
        asked, runs = str(requested[key]).lower(), str(info[key]).lower()
        if asked != runs:
            out.append(f"{key}: asked {requested[key]}, the server runs {info[key]}")
    return out


class SglangServer(ServerProcess):
    """One SGLang server process group."""

    kind: ClassVar[str] = "sglang"
    features: ClassVar[frozenset[Feature]] = frozenset({"min_tokens"})
    metrics: ClassVar[MetricNames | None] = SGLANG_METRICS
    version_distributions: ClassVar[tuple[str, ...]] = ("sglang",)
    server_info: dict[str, Any] = {}  # noqa: RUF012  (replaced per instance once probed)

    def prepare_args(
        self, args: dict[str, EngineArgValue], env: dict[str, str], accelerator: str
    ) -> tuple[dict[str, EngineArgValue], dict[str, str]]:
        self._flags(args)  # BadInput for reserved keys now, not at start
        return args, env

    @staticmethod
    def _flags(args: dict[str, EngineArgValue]) -> list[str]:
        return plain_flags(args, lambda key: key.replace("_", "-"), RESERVED_ARGS)

    def served_facts(self, root_url: str) -> dict[str, Any]:
        """The server's own arguments from GET /get_server_info, as applied."""
        try:
            self.server_info = http.get_json(f"{root_url}/get_server_info", timeout=10.0)
        except http.ProbeError as e:
            self.server_info = {}
            return {"engine_warnings": [f"applied configuration not readable: {e}"]}
        return server_info_facts(self.server_info)

    def applied_problems(self, config: EffectiveConfig) -> list[str]:
        return unapplied(self.args, self.server_info)

    def build_command(self, port: int) -> list[str]:
        launcher = list(self.launcher or (sys.executable, "-m", LAUNCH_MODULE))
        return [
            *launcher,
            "--model-path",
            str(self.model_path),
            "--served-model-name",
            self.served_model,
            "--host",
            self.host,
            "--port",
            str(port),
            *self._flags(self.args),
        ]
