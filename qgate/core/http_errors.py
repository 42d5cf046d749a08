"""The one place that says what a failed HTTP request means, whatever client made it.

qgate talks HTTP with the standard library (runtime probes) and with aiohttp
(suites, perf). Both fail with their own exception trees; `map_exceptions`
turns any of them into one `TransportError` with a `kind` that callers
decide on (retry a refused connection, report a timeout, record a stream
cut mid-answer), as httpx's `map_exceptions` does for its transports. An
HTTP status is an answer, not a transport failure, and is never mapped.
"""

from __future__ import annotations

import sys
import urllib.error
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

__all__ = ["TransportError", "TransportKind", "classify", "map_exceptions"]

TransportKind = Literal["timeout", "refused", "connection", "dropped", "other"]


class TransportError(Exception):
    """No (complete) HTTP answer: timed out, refused, connection lost, or cut mid-answer."""

    def __init__(self, kind: TransportKind, original: Exception, detail: str) -> None:
        super().__init__(detail)
        self.kind: TransportKind = kind
        self.original = original
        self.detail = detail

    @property
    def retryable(self) -> bool:
        """Failed before any answer, so sending again is safe."""
        return self.kind in ("refused", "connection")

    @property
    def name(self) -> str:
        """The client library's exception class, e.g. `ServerDisconnectedError`."""
        return type(self.original).__name__


def _aiohttp_kind(exc: BaseException) -> TransportKind | None:
    aiohttp = sys.modules.get("aiohttp")  # never imported here: only its own errors need it
    if aiohttp is None or not isinstance(exc, aiohttp.ClientError):
        return None
    if isinstance(exc, aiohttp.ClientResponseError):
        return None  # an HTTP status: an answer
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "dropped"
    if isinstance(exc, aiohttp.ClientConnectorError) and isinstance(
        exc.os_error, ConnectionRefusedError
    ):
        return "refused"
    if isinstance(exc, aiohttp.ClientConnectionError):
        return "connection"
    return "other"


def classify(exc: Exception) -> TransportError | None:
    """The TransportError `exc` stands for, or None when it is not a transport failure."""
    kind = _aiohttp_kind(exc)
    if kind is not None:
        return TransportError(kind, exc, str(exc))
    if isinstance(exc, urllib.error.HTTPError):
        return None
    if isinstance(exc, urllib.error.URLError):
        reason = exc.reason
        if isinstance(reason, ConnectionRefusedError):
            return TransportError("refused", exc, "connection refused")
        if isinstance(reason, TimeoutError):
            return TransportError("timeout", exc, "timed out")
        return TransportError("connection", exc, str(reason))
    if isinstance(exc, ConnectionRefusedError):
        return TransportError("refused", exc, "connection refused")
    if isinstance(exc, TimeoutError):
        return TransportError("timeout", exc, "timed out")
    if isinstance(exc, OSError):
        return TransportError("connection", exc, str(exc))
    return None


@contextmanager
def map_exceptions() -> Iterator[None]:
    """Raise TransportError (from the original) for a transport failure inside the block."""
    try:
        yield
    except Exception as exc:
        mapped = classify(exc)
        if mapped is None:
            raise
        raise mapped from exc
