"""The lifecycle every engine that qgate starts as a process shares.

Start in its own process group, wait for /health (with the engine's own
fatal line and a retry when the free port was taken), read what the server
reports about itself, watch it, stop it and its children, and say why it
died. An engine module (vllm_server, sglang_server, command_server) declares
only what differs: its command line, how it reads its log, what it serves.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from qgate.checkpoint.formats import emulated_label, stored_dtype
from qgate.core import http
from qgate.core.records import Role
from qgate.core.redact import redact_argv, redact_text, secret_values
from qgate.core.serving import EffectiveConfig, Lifecycle
from qgate.errors import RuntimeFailure
from qgate.profile.base import EngineArgValue
from qgate.profile.engines import EngineDecl
from qgate.profile.side import side
from qgate.runtime import causes, effective, process, server_log
from qgate.runtime.command import server_environment
from qgate.runtime.ports import free_port, port_in_use
from qgate.runtime.startup import ready_line, start_facts
from qgate.runtime.waiting import poll_health, startup_progress

if TYPE_CHECKING:
    from qgate.profile import Profile

__all__ = ["ServerProcess"]

log = logging.getLogger("qgate")
_PORT_TAKEN_MARKERS = ("Address already in use", "address already in use", "Errno 98")
_POLL_S = 0.1
# After a fatal log line, how long a server may take to exit by itself.
FATAL_EXIT_GRACE_S = 10.0
_MAX_PORT_RETRIES = 2


class ServerProcess(EngineDecl, Lifecycle):
    """One server process group; a context manager that starts, waits and always stops."""

    starts_process: ClassVar[bool] = True

    def __init__(
        self,
        *,
        role: Role,
        model_path: Path,
        served_model: str,
        run_dir: Path,
        args: Mapping[str, EngineArgValue] | None = None,
        env: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        launcher: Sequence[str] | None = None,
        accelerator: str = "cpu",
        startup_timeout_s: float = 900.0,
        stop_grace_s: float = 20.0,
        secret_names: Iterable[str] = (),
        emulated: Iterable[str] = (),
    ) -> None:
        self.role: Role = role
        self.model_path = Path(model_path)
        self._served_model = served_model
        self.run_dir = Path(run_dir)
        self.host = host
        self.fixed_port = port
        self.launcher = tuple(launcher) if launcher else None
        self.startup_timeout_s = startup_timeout_s
        self.stop_grace_s = stop_grace_s
        self.secret_names = list(secret_names)
        self.emulated = list(emulated)
        self.accelerator = accelerator
        self.args, self.env_overlay = self.prepare_args(
            dict(args or {}), dict(env or {}), accelerator
        )
        self.port: int | None = None
        self.command: list[str] = []
        self.returncode: int | None = None
        self.spawned_at: float | None = None
        self.ready_at: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._effective: EffectiveConfig | None = None
        self._stopped = False
        self._scan_offset = 0

    def prepare_args(
        self, args: dict[str, EngineArgValue], env: dict[str, str], accelerator: str
    ) -> tuple[dict[str, EngineArgValue], dict[str, str]]:
        """The args and env overlay to run with; raise BadInput for args qgate sets itself."""
        return args, env

    def build_command(self, port: int) -> list[str]:
        """The full launch command for `port`."""
        raise NotImplementedError

    def server_env(self) -> dict[str, str]:
        """The process environment of the server."""
        return server_environment(self.env_overlay)

    def log_facts(self, log_text: str) -> dict[str, Any]:
        """EffectiveConfig fields the engine's log states (dtype, kernels, ...)."""
        return {}

    def served_facts(self, root_url: str) -> dict[str, Any]:
        """EffectiveConfig fields the running server states about itself over HTTP."""
        return {}

    def headers(self) -> dict[str, str]:
        """HTTP headers every client of this server sends (a key it requires); none here."""
        return {}

    def applied_problems(self, config: EffectiveConfig) -> list[str]:
        """Requested settings the server says it did not apply."""
        return []

    def unverified(self, config: EffectiveConfig) -> list[str]:
        """Requested settings the server stated nowhere qgate reads (recorded, not failed)."""
        return []

    def fatal_exit_grace_s(self) -> float:
        """How long a server that logged a fatal line may take to exit by itself."""
        return FATAL_EXIT_GRACE_S

    @classmethod
    def from_profile(
        cls, profile: Profile, role: Role, model_path: Path, run_dir: Path
    ) -> ServerProcess:
        """The reference or candidate server of a profile: its side's engine + overrides."""
        own = side(profile, role)
        spec, engine = own.spec, own.launch
        served = profile.model.served_name or profile.model.embedded or Path(model_path).name
        args = cls.merge_args(engine.args, spec.args)
        emulated = []
        if spec.emulate_weights is not None:
            emulated.append(emulated_label(spec.emulate_weights, stored_dtype(args.get("dtype"))))
        server = cls(
            role=role,
            model_path=model_path,
            served_model=served,
            run_dir=run_dir,
            args=args,
            env=own.env,
            host=engine.host,
            port=engine.port,
            launcher=engine.launcher,
            accelerator=profile.target.accelerator,
            startup_timeout_s=engine.startup_timeout_s,
            secret_names=profile.secrets,
            emulated=emulated,
        )
        server.configure(profile, role)
        return server

    def configure(self, profile: Profile, role: Role) -> None:
        """Engine settings beyond the common ones (e.g. a command template)."""

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeFailure(self.role, "not started")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def served_model(self) -> str:
        return self._served_model

    @property
    def log_path(self) -> Path:
        return self.run_dir / f"{self.role}.log"

    @property
    def pid(self) -> int | None:
        """Process id of the server; also its process group id."""
        return self._proc.pid if self._proc is not None else None

    def _secrets(self) -> list[str]:
        return secret_values({**os.environ, **self.env_overlay}, self.secret_names)

    def _log_note(self, text: str) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(f"# qgate: {redact_text(text, self._secrets())}\n")

    def _tail(self) -> list[str]:
        secrets = self._secrets()
        return [redact_text(line, secrets) for line in process.tail_lines(self.log_path, 20)]

    def _fail(self, message: str, returncode: int | None = None) -> RuntimeFailure:
        line, context = causes.explain(message, returncode, causes.read_log(self.log_path))
        secrets = self._secrets()
        return RuntimeFailure(
            self.role,
            f"{redact_text(line, secrets)} (log: {self.log_path})",
            [redact_text(c, secrets) for c in context],
            returncode,
        )

    def _spawn(self, port: int) -> None:
        self.port = port
        self.command = self.build_command(port)
        self._log_note(f"starting {self.role} runtime: {' '.join(self.command_redacted())}")
        self.spawned_at = time.monotonic()
        self._proc = process.spawn_group(
            self.command, self.server_env(), self.log_path, self.run_dir
        )

    def start(self) -> None:
        """Spawn the server in its own process group; returns at once (see wait_ready)."""
        if self._proc is not None:
            raise RuntimeFailure(self.role, "already started")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        log.info("starting %s runtime (%s, %s)", self.role, self.kind, self._served_model)
        if self.fixed_port is not None:
            if port_in_use(self.host, self.fixed_port):
                raise RuntimeFailure(
                    self.role, f"port {self.fixed_port} on {self.host} is already in use"
                )
            self._spawn(self.fixed_port)
        else:
            self._spawn(free_port(self.host))

    def _port_was_taken(self) -> bool:
        return any(m in line for line in self._tail() for m in _PORT_TAKEN_MARKERS)

    def wait_ready(self) -> None:
        """Wait for /health, then check the server's own account of its configuration.

        Raise RuntimeFailure (and leave no process) if it exits, times out,
        serves another model name or did not apply a requested setting.
        """
        try:
            self._wait_health()
            self.ready_at = time.monotonic()
            self._effective = self._probe_effective()
            ready = ready_line(self._effective, self.log_path)
            log.info("%s runtime ready in %s", self.role, ready)
            unverified = self.unverified(self._effective)
            if unverified:
                self._effective = self._effective.model_copy(update={"not_verified": unverified})
                for line in unverified:
                    log.warning("%s runtime: not verified: %s", self.role, line)
            problems = self.applied_problems(self._effective)
            if problems:
                raise RuntimeFailure(
                    self.role,
                    "the server did not apply the requested configuration: " + "; ".join(problems),
                    self._tail(),
                )
        except BaseException:
            self.stop()
            raise

    def _new_log_text(self) -> str:
        """Log text written since the last call (for scanning during startup)."""
        text, self._scan_offset = process.read_lines_from(self.log_path, self._scan_offset)
        return text

    def _wait_health(self) -> None:
        retries = 0
        fatal_at: float | None = None
        fatal_line = ""
        deadline = time.monotonic() + self.startup_timeout_s
        label = f"starting {self.role} runtime ({self._served_model})"
        with startup_progress(label) as tick:
            while True:
                proc = self._proc
                if proc is None:
                    raise RuntimeFailure(self.role, "not started")
                code = proc.poll()
                if code is not None:
                    if (
                        self.fixed_port is None
                        and retries < _MAX_PORT_RETRIES
                        and self._port_was_taken()
                    ):
                        # Another process grabbed the free port between our check and the bind.
                        retries += 1
                        process.stop_group(proc, 1.0)
                        self._log_note(f"port {self.port} was taken; retrying on a new port")
                        self._spawn(free_port(self.host))
                        continue
                    self.returncode = code
                    process.stop_group(proc, 1.0)
                    raise self._fail(
                        f"server exited during startup ({process.describe_status(code)})", code
                    )
                try:
                    status, _ = http.get(f"{http.root_url(self.base_url)}/health", timeout=2.0)
                    if status == 200:
                        return
                    tick(f"/health: HTTP {status}")
                except http.ProbeError:
                    tick()
                if fatal_at is None:
                    found = server_log.fatal_startup_line(self._new_log_text())
                    if found is not None:
                        fatal_at, fatal_line = time.monotonic(), found
                elif time.monotonic() - fatal_at > self.fatal_exit_grace_s():
                    raise self._fail(
                        "server reported a fatal error during startup and did not exit: "
                        + redact_text(fatal_line[-300:], self._secrets())
                    )
                if time.monotonic() > deadline:
                    raise self._fail(f"not ready within {self.startup_timeout_s:g} s")
                time.sleep(_POLL_S)

    def _probe_effective(self) -> EffectiveConfig:
        root = http.root_url(self.base_url)
        try:
            models = http.get_json(f"{self.base_url}/models", timeout=10.0, headers=self.headers())
        except http.ProbeError as e:
            raise self._fail(f"/v1/models failed after /health was OK: {e}") from e
        ids = [m.get("id") for m in models.get("data", []) if isinstance(m, dict)]
        if self._served_model not in ids:
            raise self._fail(
                f"serves {ids!r}, not {self._served_model!r}: another server on port {self.port}?"
            )
        version: str | None = None
        try:
            version = str(http.get_json(f"{root}/version", timeout=5.0).get("version")) or None
        except http.ProbeError:
            version = None
        log_text = self.log_path.read_text(encoding="utf-8", errors="replace")
        facts = {**self.log_facts(log_text), **self.served_facts(root)}
        facts["engine_version"] = version or facts.get("engine_version")
        listed_len = effective.models_max_len(models, self._served_model)
        if listed_len is not None:
            facts["max_model_len"] = listed_len
        return EffectiveConfig(
            role=self.role,
            kind=self.kind,
            base_url=self.base_url,
            served_model=self._served_model,
            env_flags=self._recorded_env(),
            args=dict(self.args),
            command=self.command_redacted(),
            emulated=list(self.emulated),
            **start_facts(log_text, self.spawned_at, self.ready_at),
            **facts,
        )

    def _recorded_env(self) -> dict[str, str]:
        return server_log.recorded_env(self.env_overlay, self.secret_names)

    def command_redacted(self) -> list[str]:
        """The launch command as it may be recorded (secret flag values hidden)."""
        return redact_argv(self.command, self._secrets())

    def effective_config(self) -> EffectiveConfig:
        """What the server reported about itself once ready."""
        if self._effective is None:
            raise RuntimeFailure(self.role, "no effective configuration: the server is not ready")
        return self._effective

    def check_alive(self, timeout_s: float = 30.0) -> None:
        """Raise RuntimeFailure if the server exited, or /health fails for `timeout_s`.

        An exited server is reported at once; a live one gets the whole
        `timeout_s`, because a busy CPU server can be slow to answer.
        """
        proc = self._proc
        if proc is None:
            raise RuntimeFailure(self.role, "not started")
        problem = poll_health(proc, f"{http.root_url(self.base_url)}/health", timeout_s)
        if problem == "":
            return
        if problem is not None:
            raise self._fail(f"server stopped answering /health: {problem}")
        code = proc.returncode
        self.returncode = code
        self.stop()
        raise self._fail(f"server exited ({process.describe_status(code)})", code)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The whole server frozen inside the block (SIGSTOP to its group), resumed after:
        the idle side of a side-by-side perf block (qgate/run/together.py says why)."""
        if self._proc is None or self._stopped:
            yield
            return
        with process.frozen_group(self._proc.pid):
            yield

    def stop(self) -> None:
        """SIGTERM the process group, SIGKILL after the grace period; safe to call twice."""
        proc = self._proc
        if proc is None or self._stopped:
            return
        self._stopped = True
        code = process.stop_group(proc, self.stop_grace_s)
        self.returncode = code if self.returncode is None else self.returncode
        # A CPU server stopped by SIGTERM may abort on the way out; that is not a failure.
        self._log_note(f"stopped ({process.describe_status(code)})")
