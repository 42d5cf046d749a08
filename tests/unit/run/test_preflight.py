"""When `qgate run` starts the candidate alone first (before the reference stage)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from qgate.attest.keys import LoadedSigner, generate_private_pem, public_pem_of, signer_from_pem
from qgate.profile import Profile
from qgate.run import reference as stages


def _ctx(tmp_path: Path, preflight: str, refresh: bool = False) -> SimpleNamespace:
    profile = Profile.model_validate(
        {
            "name": "t",
            "model": {"embedded": "smollm2"},
            "engine": {"preflight": preflight},
            "candidate": {"args": {"kv_cache_dtype": "fp8"}},
            "quality": {"math": {"limit": 4}},
        }
    )
    opts = SimpleNamespace(
        cache_dir=tmp_path, refresh_reference=refresh, trust_cache_keys=[], strict_cache=False
    )
    pem = generate_private_pem("ecdsa")
    signer = LoadedSigner(signer_from_pem(pem), public_pem_of(pem), "file")
    return SimpleNamespace(profile=profile, opts=opts, fingerprint=None, signer=signer)


def _store_reference(ctx: SimpleNamespace) -> None:
    cache, key = stages._reference_cache(ctx, None)  # type: ignore[arg-type]
    cache.entry_dir(key).mkdir(parents=True)


@pytest.mark.parametrize(
    ("mode", "cached", "refresh", "expected"),
    [
        ("auto", False, False, "dry"),  # the reference stage will run: check the candidate first,
        # with vLLM's own argument parser (no start)
        ("auto", True, False, "none"),  # cached reference: the candidate starts next anyway
        ("auto", True, True, "dry"),  # --refresh-reference recomputes it
        ("always", True, False, "start"),  # a full start and stop, always
        ("never", False, False, "none"),
    ],
)
def test_preflight_modes(
    tmp_path: Path, mode: str, cached: bool, refresh: bool, expected: str
) -> None:
    ctx = _ctx(tmp_path, mode, refresh)
    if cached:
        _store_reference(ctx)
    assert stages.wants_preflight(ctx) == expected  # type: ignore[arg-type]


class _Proxy:
    """A runtime an executor hands back (qgate/run/lives.py): a dry check, or a start."""

    def __init__(self, can_dry: bool) -> None:
        self.can_dry = can_dry
        self.calls: list[str] = []

    def can_dry_check(self) -> bool:
        return self.can_dry

    def dry_check(self) -> None:
        self.calls.append("dry_check")


@pytest.mark.parametrize(
    ("how", "can_dry", "expected"),
    [
        ("dry", True, ["dry_check"]),  # the executor's dry check (on a node, on a cluster)
        ("dry", False, ["started"]),  # a launcher without one: started instead
        ("start", True, ["started"]),
    ],
)
def test_the_preflight_goes_through_the_runs_lives(
    monkeypatch: pytest.MonkeyPatch, how: str, can_dry: bool, expected: list[str]
) -> None:
    """Both kinds of preflight use the runtime the run's Lives made, never one of their own."""
    proxy = _Proxy(can_dry)
    made: list[str] = []

    def new_runtime(role: str) -> _Proxy:
        made.append(role)
        return proxy

    ctx = SimpleNamespace(new_runtime=new_runtime)

    @contextmanager
    def started(ctx: SimpleNamespace, role: str, purpose: str) -> Iterator[_Proxy]:
        assert purpose == "preflight"
        proxy.calls.append("started")
        yield ctx.new_runtime(role)

    monkeypatch.setattr(stages, "started", started)
    stages.preflight_candidate(ctx, how)  # type: ignore[arg-type]
    assert proxy.calls == expected
    assert set(made) == {"candidate"}
