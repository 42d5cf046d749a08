"""Redaction of secrets in environments, command lines and log text.

Everything qgate writes (its own log lines, command lines and environments
recorded in reports, log tails in error messages) goes through here first.
A value is secret when its variable NAME looks secret (HF_TOKEN, OPENAI_API_KEY)
or when the VALUE itself looks like a credential (hf_..., sk-..., a long
random string), so a key hidden under an innocent name is still caught.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

REDACTED = "***REDACTED***"

# Whole words of a variable name that mark it secret. Matching whole words
# (split on _ - . and camelCase) keeps KEY from hitting names such as
# KEYBOARD or MONKEY, and TOKEN from hitting TOKENIZERS_PARALLELISM.
_SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "KEY",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTH",
        "AUTHORIZATION",
        "APIKEY",
        "ACCESSKEY",
        "AUTHTOKEN",
        "PRIVATEKEY",
        "COOKIE",
    }
)

# Well-known credential shapes; the prefix alone is not enough, the tail must be long.
_TOKEN_PATTERNS = (
    r"hf_[A-Za-z0-9]{20,}",
    r"sk-[A-Za-z0-9_\-]{20,}",
    r"(?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{20,}",
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"xox[abpr]-[A-Za-z0-9\-]{10,}",
    r"AKIA[0-9A-Z]{16}",
    r"eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
)
_TOKEN_RE = re.compile(r"\b(?:" + "|".join(_TOKEN_PATTERNS) + r")")
_BEARER_RE = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/\-]{8,}=*)")
_RANDOMISH_RE = re.compile(r"[A-Za-z0-9+/=_\-]{32,}")
_HEX_RE = re.compile(r"[0-9a-fA-F]{32,}")

# Command-line flags whose next argument is a secret value.
_SECRET_FLAG_RE = re.compile(
    r"^--?[A-Za-z0-9\-_]*(?:api-key|api_key|token|secret|password|passwd)$"
)


def _name_words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.upper()) if w]


def is_secret_name(name: str) -> bool:
    """True when an environment variable's name says it holds a secret."""
    return any(w in _SECRET_WORDS for w in _name_words(name))


def _entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_like_token(value: str) -> bool:
    """True when a value has the shape of a credential rather than a setting or a path."""
    v = value.strip()
    if _TOKEN_RE.fullmatch(v) or _BEARER_RE.fullmatch(v):
        return True
    if v.startswith(("/", ".")) or len(v) < 32:
        return False
    if _HEX_RE.fullmatch(v):
        return _entropy(v) >= 3.0
    if _RANDOMISH_RE.fullmatch(v):
        has_digit = any(c.isdigit() for c in v)
        has_alpha = any(c.isalpha() for c in v)
        return has_digit and has_alpha and _entropy(v) >= 4.0
    return False


def redact_env(env: Mapping[str, str], extra_secret_names: Iterable[str] = ()) -> dict[str, str]:
    """A copy of `env` with secret values replaced by REDACTED (names are kept)."""
    extra = {n.upper() for n in extra_secret_names}
    out: dict[str, str] = {}
    for name, value in env.items():
        secret = name.upper() in extra or is_secret_name(name) or looks_like_token(value)
        out[name] = REDACTED if secret and value else value
    return out


def secret_values(env: Mapping[str, str], extra_secret_names: Iterable[str] = ()) -> list[str]:
    """The values of `env` that redact_env would hide, for use with redact_text."""
    redacted = redact_env(env, extra_secret_names)
    return [value for name, value in env.items() if redacted[name] != value]


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Replace every given secret value and every credential-shaped token in `text`."""
    # Longest first, so a secret that contains another is replaced whole.
    for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _BEARER_RE.sub(lambda m: m.group(1) + REDACTED, text)
    return _TOKEN_RE.sub(REDACTED, text)


def redact_argv(argv: Sequence[str], secrets: Iterable[str] = ()) -> list[str]:
    """A command line with secret flag values (--api-key X, --hf-token=X) and secrets hidden."""
    secret_list = list(secrets)
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        flag, eq, _value = arg.partition("=")
        if _SECRET_FLAG_RE.match(flag):
            if eq:
                out.append(f"{flag}={REDACTED}")
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(redact_text(arg, secret_list))
    return out


# `scheme://user:password@host` or `scheme://token@host` inside any text (index URLs).
_URL_USERINFO_RE = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/@\s:]+(?::[^/@\s]*)?)@")
# `?token=...` style query parameters whose name says secret.
_URL_QUERY_SECRET_RE = re.compile(
    r"(?i)([?&][a-z0-9_\-]*(?:token|key|secret|password|passwd|auth|signature|sig)"
    r"[a-z0-9_\-]*=)([^&\s#]+)"
)


def redact_url(text: str) -> str:
    """`text` with URL credentials hidden: the user-info part (`https://user:pw@host` ->
    `https://***REDACTED***@host`), secret-named query values, and credential-shaped tokens."""
    text = _URL_USERINFO_RE.sub(lambda m: m.group(1) + REDACTED + "@", text)
    text = _URL_QUERY_SECRET_RE.sub(lambda m: m.group(1) + REDACTED, text)
    return redact_text(text)
