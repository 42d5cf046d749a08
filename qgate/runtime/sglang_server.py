"""An SGLang server (`python -m sglang.launch_server`) that qgate starts, watches and stops.

What SGLang serves, from its documentation: the OpenAI API with `min_tokens`
and `ignore_eos` as extra sampling parameters, `/health`, `/v1/models`, and
with `--enable-metrics` Prometheus series named `sglang:*`. It does not serve
vLLM's `prompt_logprobs` (its input logprobs come from its native /generate
API in another form), `return_token_ids` in streamed chunks, a `/tokenize`
qgate can rely on, or prefix-cache hit/query counters (only a
`sglang:cache_hit_rate` gauge), so those features are not declared.
"""

from __future__ import annotations

import sys
from typing import ClassVar

from qgate.profile_base import EngineArgValue
from qgate.runtime.engines import MetricNames
from qgate.runtime.features import Feature
from qgate.runtime.flags import plain_flags
from qgate.runtime.server import ServerProcess

__all__ = ["SGLANG_METRICS", "SglangServer"]

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


class SglangServer(ServerProcess):
    """One SGLang server process group."""

    kind: ClassVar[str] = "sglang"
    features: ClassVar[frozenset[Feature]] = frozenset({"min_tokens"})
    metrics: ClassVar[MetricNames | None] = SGLANG_METRICS

    def prepare_args(
        self, args: dict[str, EngineArgValue], env: dict[str, str], accelerator: str
    ) -> tuple[dict[str, EngineArgValue], dict[str, str]]:
        self._flags(args)  # BadInput for reserved keys now, not at start
        return args, env

    @staticmethod
    def _flags(args: dict[str, EngineArgValue]) -> list[str]:
        return plain_flags(args, lambda key: key.replace("_", "-"), RESERVED_ARGS)

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
