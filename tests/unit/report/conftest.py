"""Fixtures for the report tests; the synthetic data lives in report_synthetic.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.report_synthetic import build_report, make_signer

from qgate.attest.keys import LoadedSigner
from qgate.report.model import Report


@pytest.fixture
def report() -> Report:
    return build_report()


@pytest.fixture(params=["ecdsa", "ed25519"])
def loaded_signer(request: pytest.FixtureRequest) -> LoadedSigner:
    return make_signer(request.param)


@pytest.fixture
def ecdsa_signer() -> LoadedSigner:
    return make_signer("ecdsa")


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, bytes], Path]:
    def _write(name: str, data: bytes) -> Path:
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        return p

    return _write
