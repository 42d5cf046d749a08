"""A dry preflight of a life on a Ray cluster runs on a node, in the life's actor, not here.

A stand-in for `ray` runs the actor in this process, on a pickled copy of the runtime
as Ray would ship it; the engine's dry check is replaced by one that writes to the log
it would write and accepts or refuses. What is tested is RayLife's and LifeHost's part:
the actor holds the life's resources, the check runs on the actor's copy (the node's
folder), the node's output reaches the driver's log, a refusal comes back as the
engine's error quoting the driver's log, and the actor is killed on every path.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from qgate.cluster import life as life_mod
from qgate.cluster.life import RayLife
from qgate.cluster.placement import needs_of
from qgate.errors import RuntimeFailure
from qgate.runtime.vllm_server import VllmServer


class _Ref:
    def __init__(self, call: Any) -> None:
        self.call = call


class _Actor:
    def __init__(self, host: Any) -> None:
        self.host = host

    def __getattr__(self, name: str) -> Any:
        if name == "where":  # the node, as Ray's runtime context would say
            return SimpleNamespace(remote=lambda: _Ref(lambda: {"node_id": "c" * 40, "ip": "n2"}))
        method = getattr(self.host, name)
        return SimpleNamespace(remote=lambda *a: _Ref(lambda: method(*a)))


class _FakeRay:
    """Actors in this process; the runtime crosses as a pickled copy, as it would to a node."""

    exceptions = SimpleNamespace(RayError=RuntimeError)

    def __init__(self) -> None:
        self.options: list[dict[str, Any]] = []
        self.killed: list[_Actor] = []

    def remote(self, cls: type) -> Any:
        fake = self

        class _Class:
            def options(self, **opts: Any) -> Any:
                fake.options.append(opts)
                return self

            def remote(self, *args: Any) -> _Actor:
                return _Actor(cls(*pickle.loads(pickle.dumps(args))))

        return _Class()

    def get(self, ref: _Ref, timeout: float | None = None) -> Any:
        return ref.call()

    def kill(self, actor: _Actor, no_restart: bool = True) -> None:
        self.killed.append(actor)


def _server(tmp_path: Path, launcher: list[str] | None = None) -> VllmServer:
    return VllmServer(
        role="candidate",
        model_path=tmp_path / "model",
        served_model="m",
        run_dir=tmp_path / "driver",
        accelerator="cpu",
        launcher=launcher or ["python", "-m", "vllm.entrypoints.openai.api_server"],
        args={"kv_cache_dtype": "fp8"},
    )


@pytest.fixture
def fake_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> _FakeRay:
    ray = _FakeRay()
    monkeypatch.setattr(life_mod, "import_ray", lambda: ray)
    monkeypatch.setenv("QGATE_RAY_WORKDIR", str(tmp_path / "node"))
    return ray


def _check(accept: bool) -> Any:
    def dry_check(self: VllmServer) -> None:
        self._log_note(f"dry check in {self.run_dir}")
        if not accept:
            raise RuntimeFailure(
                self.role,
                f"preflight: vLLM refused the command line: bad flag (log: {self.log_path})",
                ["vllm: error: bad flag"],
                2,
            )

    return dry_check


def test_a_dry_check_runs_in_an_actor_holding_the_lifes_resources(
    tmp_path: Path, fake_ray: _FakeRay, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(VllmServer, "dry_check", _check(accept=True))
    server = _server(tmp_path)
    life = RayLife(server, needs_of("H200", 8, 1.0, {"cand": 1}), "candidate")
    assert life.can_dry_check()
    life.dry_check()
    assert fake_ray.options[0]["num_gpus"] == 8.0
    assert fake_ray.options[0]["resources"] == {"cand": 1}
    assert len(fake_ray.killed) == 1  # the actor ends with the check
    log = server.log_path.read_text()
    assert f"dry check in {tmp_path / 'node'}" in log  # it ran on the actor's copy
    assert "preflight ran on node cccccccc (n2); its actor ended" in log
    assert server.run_dir == tmp_path / "driver" and life.placement is None  # no life made


def test_a_refused_command_line_comes_back_quoting_the_drivers_log(
    tmp_path: Path, fake_ray: _FakeRay, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(VllmServer, "dry_check", _check(accept=False))
    server = _server(tmp_path)
    life = RayLife(server, needs_of("cpu", 1, 1.0), "candidate")
    with pytest.raises(RuntimeFailure) as err:
        life.dry_check()
    assert err.value.message == (
        "candidate runtime: preflight: vLLM refused the command line: bad flag "
        f"(log: {server.log_path})"
    )
    assert err.value.log_tail == ["vllm: error: bad flag"] and err.value.returncode == 2
    assert len(fake_ray.killed) == 1
    assert "dry check in" in server.log_path.read_text()  # the node's output, copied back


def test_a_custom_launcher_has_no_dry_check_on_the_cluster_either(tmp_path: Path) -> None:
    server = _server(tmp_path, launcher=["/opt/my-serve.sh"])
    assert not RayLife(server, needs_of("cpu", 1, 1.0), "candidate").can_dry_check()
