"""Key generation, key sources and the local development key."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from qgate.attest.keys import (
    generate_private_pem,
    load_signer,
    public_pem_of,
    signer_notice,
    write_keypair,
)
from qgate.errors import BadInput


@pytest.mark.parametrize(
    ("key_type", "scheme"), [("ecdsa", "ecdsa-sha2-nistp256"), ("ed25519", "ed25519")]
)
def test_write_keypair_modes_and_scheme(tmp_path: Path, key_type: str, scheme: str) -> None:
    priv, pub = write_keypair(tmp_path / "k", key_type)
    assert stat.S_IMODE(priv.stat().st_mode) == 0o600
    assert b"PRIVATE KEY" in priv.read_bytes() and b"PUBLIC KEY" in pub.read_bytes()
    loaded = load_signer(key_path=priv)
    assert loaded.source == "file"
    assert signer_notice(loaded) is None
    assert loaded.signer.public_key.scheme == scheme
    assert loaded.public_pem == pub.read_text()
    with pytest.raises(BadInput, match="already exists"):
        write_keypair(tmp_path / "k", key_type)


def test_env_key_and_explicit_missing_env(monkeypatch: pytest.MonkeyPatch) -> None:
    pem = generate_private_pem("ed25519")
    monkeypatch.setenv("MY_KEY", pem.decode())
    loaded = load_signer(key_env="MY_KEY")
    assert loaded.source == "env"
    assert loaded.public_pem == public_pem_of(pem)
    with pytest.raises(BadInput, match="NOPE_KEY is not set"):
        load_signer(key_env="NOPE_KEY")
    monkeypatch.setenv("QGATE_SIGNING_KEY", pem.decode())
    assert load_signer().source == "env"


def test_dev_key_created_once_under_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QGATE_SIGNING_KEY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    first = load_signer()
    key_file = tmp_path / "qgate" / "dev-key.pem"
    assert first.source == "local-dev"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert first.public_key_path == tmp_path / "qgate" / "dev-key.pub.pem"
    second = load_signer()
    assert second.signer.public_key.keyid == first.signer.public_key.keyid
    notice = signer_notice(second)
    assert notice is not None and "dev-key.pub.pem" in notice


def test_bad_key_material(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    with pytest.raises(BadInput, match="not an unencrypted PEM private key"):
        load_signer(key_path=bad)
    with pytest.raises(BadInput, match="cannot read"):
        load_signer(key_path=tmp_path / "missing.pem")
    with pytest.raises(BadInput, match="unsupported"):
        load_signer(kms_uri="nosuchkms:abc")


def test_kms_uri_goes_through_securesystemslib(monkeypatch: pytest.MonkeyPatch) -> None:
    from securesystemslib.signer import SIGNER_FOR_URI_SCHEME, CryptoSigner, Signer

    backing = CryptoSigner.generate_ecdsa()

    class FakeKms(Signer):
        @classmethod
        def import_(cls, rest: str) -> tuple[str, object]:
            assert rest == "projects/p/keys/k"
            return f"fakekms:{rest}", backing.public_key

        @classmethod
        def from_priv_key_uri(
            cls, priv_key_uri: str, public_key: object, secrets_handler: object = None
        ) -> Signer:  # type: ignore[override]  # noqa: E501
            assert priv_key_uri == "fakekms:projects/p/keys/k"
            return backing

    monkeypatch.setitem(SIGNER_FOR_URI_SCHEME, "fakekms", FakeKms)
    monkeypatch.delenv("QGATE_SIGNING_KEY", raising=False)
    loaded = load_signer(kms_uri="fakekms:projects/p/keys/k")
    assert loaded.source == "kms"
    assert loaded.signer.public_key.keyid == backing.public_key.keyid
    assert "PUBLIC KEY" in loaded.public_pem
