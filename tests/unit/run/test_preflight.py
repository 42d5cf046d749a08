"""When `qgate run` starts the candidate alone first (before the reference stage)."""

from __future__ import annotations

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
    cache, key = stages._reference_cache(ctx)  # type: ignore[arg-type]
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
