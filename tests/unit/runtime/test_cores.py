"""Core leases: a server alone gets every core, side-by-side servers get disjoint ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qgate.runtime.cores import bind_spec, lease_cores, lease_these


@pytest.mark.parametrize(
    ("cores", "spec"),
    [([0], "0"), ([0, 1], "0-1"), ([3, 0, 1, 2], "0-3"), ([0, 1, 2, 5, 7, 8], "0-2,5,7-8")],
)
def test_bind_spec_is_vllms_list_syntax(cores: list[int], spec: str) -> None:
    assert bind_spec(cores) == spec


def test_a_server_alone_gets_every_core(tmp_path: Path) -> None:
    lease = lease_cores(usable=[0, 1], folder=tmp_path)
    try:
        assert lease.cores == [0, 1] and not lease.shared and lease.spec == "0-1"
        assert lease.describe() == "cores 0-1 (2 of 2 usable core(s))"
    finally:
        lease.release()


def test_servers_meant_to_run_together_get_disjoint_cores(tmp_path: Path) -> None:
    first = lease_cores(1, usable=[0, 1], folder=tmp_path)
    second = lease_cores(1, usable=[0, 1], folder=tmp_path)
    try:
        assert (first.cores, second.cores) == ([0], [1])
        assert not first.shared and not second.shared
    finally:
        first.release()
        second.release()


def test_a_late_server_takes_what_is_free_then_shares_and_says_so(tmp_path: Path) -> None:
    first = lease_cores(1, usable=[0, 1, 2], folder=tmp_path)
    second = lease_cores(usable=[0, 1, 2], folder=tmp_path)
    third = lease_cores(usable=[0, 1, 2], folder=tmp_path)
    try:
        assert second.cores == [1, 2] and not second.shared
        assert third.cores == [0, 1, 2] and third.shared
        assert "shared" in third.describe()
    finally:
        for lease in (first, second, third):
            lease.release()


def test_release_gives_the_cores_back_and_is_idempotent(tmp_path: Path) -> None:
    first = lease_cores(usable=[0, 1], folder=tmp_path)
    first.release()
    first.release()
    again = lease_cores(usable=[0, 1], folder=tmp_path)
    try:
        assert again.cores == [0, 1] and not again.shared
    finally:
        again.release()


def test_a_killed_holder_frees_its_cores(tmp_path: Path) -> None:
    code = (
        "import sys, time\nfrom pathlib import Path\nfrom qgate.runtime.cores import lease_cores\n"
        f"lease = lease_cores(usable=[0, 1], folder=Path({str(tmp_path)!r}))\n"
        "print(lease.spec, flush=True)\ntime.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "0-1"
        blocked = lease_cores(usable=[0, 1], folder=tmp_path)
        assert blocked.shared
    finally:
        holder.kill()
        holder.wait()
    after = lease_cores(usable=[0, 1], folder=tmp_path)
    try:
        assert not after.shared and after.cores == [0, 1]
    finally:
        after.release()


def test_the_default_folder_is_per_user(monkeypatch: pytest.MonkeyPatch) -> None:
    from qgate.runtime.cores import lease_dir

    monkeypatch.delenv("QGATE_CORE_LEASES", raising=False)
    assert lease_dir().name == f"qgate-core-leases-{os.getuid()}"
    monkeypatch.setenv("QGATE_CORE_LEASES", "/x/y")
    assert lease_dir() == Path("/x/y")


def _server(tmp_path: Path, **kw: object) -> object:
    from qgate.runtime.vllm_server import VllmServer

    return VllmServer(
        role="reference", model_path=tmp_path, served_model="m", run_dir=tmp_path / "run", **kw
    )  # type: ignore[arg-type]


def test_a_cpu_server_binds_its_engine_to_leased_cores_and_gives_them_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qgate.runtime import cores

    monkeypatch.setenv("QGATE_CORE_LEASES", str(tmp_path / "leases"))
    monkeypatch.delenv(cores.BIND_ENV, raising=False)
    monkeypatch.setattr(cores, "usable_cores", lambda: [0, 1])
    server = _server(tmp_path)
    server._place_threads()  # type: ignore[attr-defined]
    assert server.env_overlay[cores.BIND_ENV] == "0-1"  # type: ignore[attr-defined]
    assert "engine threads bound to cores 0-1" in (tmp_path / "run" / "reference.log").read_text()
    assert lease_cores(usable=[0, 1], folder=tmp_path / "leases").shared  # held meanwhile
    server._release_cores()  # type: ignore[attr-defined]
    again = lease_cores(usable=[0, 1], folder=tmp_path / "leases")
    assert not again.shared
    again.release()


def test_a_binding_from_the_profile_shell_or_a_gpu_target_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qgate.runtime import cores

    monkeypatch.setenv("QGATE_CORE_LEASES", str(tmp_path / "leases"))
    monkeypatch.delenv(cores.BIND_ENV, raising=False)
    profile = _server(tmp_path, env={cores.BIND_ENV: "1"})
    gpu = _server(tmp_path, accelerator="H200")
    for server in (profile, gpu):
        server._place_threads()  # type: ignore[attr-defined]
    assert profile.env_overlay[cores.BIND_ENV] == "1"  # type: ignore[attr-defined]
    assert cores.BIND_ENV not in gpu.env_overlay  # type: ignore[attr-defined]
    monkeypatch.setenv(cores.BIND_ENV, "nobind")
    shell = _server(tmp_path)
    shell._place_threads()  # type: ignore[attr-defined]
    assert cores.BIND_ENV not in shell.env_overlay  # type: ignore[attr-defined]


def test_side_by_side_halves_stay_disjoint_when_another_server_holds_every_core(
    tmp_path: Path,
) -> None:
    older = lease_cores(usable=[0, 1], folder=tmp_path)  # e.g. a server an earlier test left up
    ref = lease_these([0], usable=[0, 1], folder=tmp_path)
    cand = lease_these([1], usable=[0, 1], folder=tmp_path)
    try:
        assert (ref.spec, cand.spec) == ("0", "1")  # not both "0", as "any free core" gave
        assert ref.shared and cand.shared
    finally:
        for lease in (older, ref, cand):
            lease.release()
    alone = lease_these([1], usable=[0, 1], folder=tmp_path)
    try:
        assert alone.spec == "1" and not alone.shared
    finally:
        alone.release()
