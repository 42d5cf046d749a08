"""What a node makes and says for a life, on the node: the weights it serves (emulated in its
own cache), the facts its report names, and a setting it cannot run as bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from qgate.cluster import node as node_mod
from qgate.cluster.host import LifeHost
from qgate.cluster.life import RayLife
from qgate.cluster.placement import needs_of
from qgate.errors import BadInput, RuntimeFailure
from qgate.runtime.vllm_server import VllmServer


def _server(tmp_path: Path) -> VllmServer:
    return VllmServer(
        role="candidate",
        model_path=tmp_path / "model",
        served_model="m",
        run_dir=tmp_path / "driver",
        accelerator="cpu",
    )


def test_a_sides_emulated_weights_are_made_in_the_nodes_own_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[tuple[Any, ...]] = []

    def emulate(src: Path, spec: Any, root: Path, dtype: str) -> Path:
        made.append((src, spec.format, root, dtype))
        return root / "copy"

    monkeypatch.setenv("QGATE_CACHE_DIR", str(tmp_path / "node-cache"))
    monkeypatch.setattr(node_mod, "emulate_checkpoint", emulate)
    source = tmp_path / "model"
    assert node_mod.serving_path(source, None) == source and made == []
    setting = {"format": "int8", "granularity": "per_channel"}
    out = node_mod.serving_path(source, (setting, "float32"))
    assert out == tmp_path / "node-cache" / "emulated" / "copy"
    assert made == [(source, "int8", tmp_path / "node-cache" / "emulated", "float32")]
    facts = node_mod.life_facts(out, tmp_path / "log")
    assert facts["model_path"] == str(out) and facts["cache"] == str(tmp_path / "node-cache")


def test_a_cpu_lifes_server_is_bound_to_the_cores_the_life_holds(tmp_path: Path) -> None:
    assert LifeHost(_server(tmp_path), "c", None, 3).runtime.cores_wanted == 3
    assert LifeHost(_server(tmp_path), "c").runtime.cores_wanted is None


def test_a_setting_the_node_cannot_run_comes_back_as_bad_input(tmp_path: Path) -> None:
    host = LifeHost(_server(tmp_path), "c")
    answer = host._failure(BadInput("fp8 KV cache needs AVX-512", ["way out: a fallback"]))
    assert answer["bad"] is True
    life = RayLife(_server(tmp_path), needs_of("cpu", 1, 1), "candidate")
    err = life._failure(answer)
    assert isinstance(err, BadInput) and not isinstance(err, RuntimeFailure)
    assert err.message == "candidate on its node: fp8 KV cache needs AVX-512"
    assert isinstance(life._failure(host._failure(RuntimeError("x"))), RuntimeFailure)
