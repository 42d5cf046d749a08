"""Signing keys: generate, write as PEM, load from a file, an env var, a KMS or the dev key.

securesystemslib and cryptography are imported inside functions so that
`qgate --help` stays instant.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key
from securesystemslib.signer import (  # type: ignore[attr-defined]  # re-exported without __all__
    SIGNER_FOR_URI_SCHEME,
    CryptoSigner,
    Key,
    Signer,
    SSlibKey,
)

from qgate.core.files import atomic_write
from qgate.errors import BadInput

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

KeyType = Literal["ecdsa", "ed25519"]
DEFAULT_KEY_ENV = "QGATE_SIGNING_KEY"
DEV_KEY_NAME = "dev-key.pem"

SignerSource = Literal["local-dev", "file", "env", "kms"]
"""Where a signing key came from; 'local-dev' is an unmanaged development key."""


@dataclass(frozen=True)
class LoadedSigner:
    """A ready signer, its public key as PEM, and where it came from."""

    signer: Signer
    public_pem: str
    source: SignerSource
    public_key_path: Path | None = None


def _key_type(scheme: str) -> KeyType:
    # the profile says 'ecdsa-p256'; securesystemslib says 'ecdsa-sha2-nistp256'
    if scheme in ("ecdsa", "ecdsa-p256", "ecdsa-sha2-nistp256"):
        return "ecdsa"
    if scheme == "ed25519":
        return "ed25519"
    raise BadInput(f"unsupported key type {scheme!r}: use ecdsa or ed25519")


def generate_private_pem(key_type: str = "ecdsa") -> bytes:
    """A new private key (ECDSA P-256 or Ed25519) as unencrypted PKCS#8 PEM."""
    private: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
    if _key_type(key_type) == "ecdsa":
        private = ec.generate_private_key(ec.SECP256R1())
    else:
        private = ed25519.Ed25519PrivateKey.generate()
    return private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def public_pem_of(private_pem: bytes) -> str:
    """The SubjectPublicKeyInfo PEM of a private key PEM."""
    private = _load_private(private_pem, "key")
    return (
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def write_keypair(prefix: str | Path, key_type: str = "ecdsa") -> tuple[Path, Path]:
    """Write PREFIX.pem (private, mode 0600) and PREFIX.pub.pem; refuse to overwrite."""
    priv_path = Path(f"{prefix}.pem")
    pub_path = Path(f"{prefix}.pub.pem")
    for p in (priv_path, pub_path):
        if p.exists():
            raise BadInput(f"{p} already exists; not overwriting a key")
    private_pem = generate_private_pem(key_type)
    atomic_write(priv_path, private_pem, mode=0o600)
    atomic_write(pub_path, public_pem_of(private_pem).encode(), mode=0o644)
    return priv_path, pub_path


def dev_key_path() -> Path:
    """Where the local development key lives: $XDG_CONFIG_HOME/qgate or ~/.config/qgate."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "qgate" / DEV_KEY_NAME


def _load_private(pem: bytes, origin: str) -> EllipticCurvePrivateKey | Ed25519PrivateKey:
    try:
        private = load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise BadInput(f"{origin}: not an unencrypted PEM private key ({exc})") from None
    if isinstance(private, ec.EllipticCurvePrivateKey):
        if not isinstance(private.curve, ec.SECP256R1):
            raise BadInput(f"{origin}: ECDSA keys must be P-256, got {private.curve.name}")
    elif not isinstance(private, ed25519.Ed25519PrivateKey):
        raise BadInput(f"{origin}: only ECDSA P-256 and Ed25519 keys are supported")
    return private


def signer_from_pem(pem: bytes, origin: str = "key") -> Signer:
    """A securesystemslib CryptoSigner for an ECDSA P-256 or Ed25519 private key PEM."""
    return CryptoSigner(_load_private(pem, origin))


def public_key_from_pem(pem: str | bytes, origin: str = "public key") -> Key:
    """A securesystemslib Key (with its default keyid) for a public key PEM."""
    data = pem.encode() if isinstance(pem, str) else pem
    try:
        public = load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise BadInput(f"{origin}: not a PEM public key ({exc})") from None
    if isinstance(public, ec.EllipticCurvePublicKey):
        if not isinstance(public.curve, ec.SECP256R1):
            raise BadInput(f"{origin}: ECDSA keys must be P-256")
    elif not isinstance(public, ed25519.Ed25519PublicKey):
        raise BadInput(f"{origin}: only ECDSA P-256 and Ed25519 keys are supported")
    return SSlibKey.from_crypto(public)


def _public_pem_of_key(key: Key) -> str:
    if not isinstance(key, SSlibKey):
        raise BadInput(f"unsupported signing key type {type(key).__name__}")
    return (
        key._crypto_key()
        .public_bytes(  # noqa: SLF001 - the only public accessor
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        .decode()
    )


def _kms_signer(uri: str) -> Signer:
    """Load a KMS signer through securesystemslib: `import_` fetches the public key."""
    scheme, _, rest = uri.partition(":")
    cls = SIGNER_FOR_URI_SCHEME.get(scheme)
    importer = getattr(cls, "import_", None)
    if cls is None or importer is None:
        raise BadInput(f"signing.kms_uri: unsupported or unknown KMS scheme {scheme!r}")
    try:
        priv_uri, public_key = importer(rest)
        return Signer.from_priv_key_uri(priv_uri, public_key)
    except ImportError as exc:
        raise BadInput(f"signing.kms_uri: install securesystemslib's extra for {scheme}") from exc
    except Exception as exc:  # noqa: BLE001 - KMS clients raise their own trees
        raise BadInput(f"signing.kms_uri: cannot load {uri}: {exc}") from None


def ensure_dev_key(scheme: str = "ecdsa") -> tuple[Path, Path, bool]:
    """Create the local development key on first use; return (private, public, created)."""
    priv = dev_key_path()
    pub = priv.with_name(priv.name.replace(".pem", ".pub.pem"))
    created = False
    if not priv.exists():
        priv.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        private_pem = generate_private_pem(scheme)
        atomic_write(priv, private_pem, mode=0o600)
        atomic_write(pub, public_pem_of(private_pem).encode())
        created = True
    elif not pub.exists():
        atomic_write(pub, public_pem_of(priv.read_bytes()).encode())
    return priv, pub, created


def load_signer(
    key_path: str | Path | None = None,
    key_env: str | None = None,
    kms_uri: str | None = None,
    scheme: str = "ecdsa",
) -> LoadedSigner:
    """Pick the signing key: --key file, the named env var, KMS, $QGATE_SIGNING_KEY, dev key.

    An explicitly named `key_env` that is unset is an error; the default
    variable is optional. An explicit choice in the profile beats the default
    variable, so a stray QGATE_SIGNING_KEY never overrides a configured KMS.
    `scheme` is only used when the dev key has to be created.
    """
    if key_path is not None:
        path = Path(key_path)
        try:
            pem = path.read_bytes()
        except OSError as exc:
            raise BadInput(f"cannot read signing key {path}: {exc.strerror}") from None
        signer = signer_from_pem(pem, str(path))
        return LoadedSigner(signer, _public_pem_of_key(signer.public_key), "file")
    if key_env:
        value = os.environ.get(key_env)
        if not value:
            raise BadInput(f"signing.key_env: environment variable {key_env} is not set")
        signer = signer_from_pem(value.encode(), f"${key_env}")
        return LoadedSigner(signer, _public_pem_of_key(signer.public_key), "env")
    if kms_uri:
        signer = _kms_signer(kms_uri)
        return LoadedSigner(signer, _public_pem_of_key(signer.public_key), "kms")
    default_value = os.environ.get(DEFAULT_KEY_ENV)
    if default_value:
        signer = signer_from_pem(default_value.encode(), f"${DEFAULT_KEY_ENV}")
        return LoadedSigner(signer, _public_pem_of_key(signer.public_key), "env")
    priv, pub, _ = ensure_dev_key(scheme)
    signer = signer_from_pem(priv.read_bytes(), str(priv))
    return LoadedSigner(signer, _public_pem_of_key(signer.public_key), "local-dev", pub)


def signer_notice(loaded: LoadedSigner) -> str | None:
    """A line for people when the report was signed with the unmanaged local dev key."""
    if loaded.source != "local-dev":
        return None
    return (
        f"signed with the local development key; verifiers need its public key "
        f"{loaded.public_key_path} (configure signing.key/key_env/kms_uri for a managed key)"
    )
