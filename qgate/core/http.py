"""Tiny blocking HTTP probes (health, version, model list) with the standard library.

Runtimes only need a few GETs at start and for liveness; the suites use
their own async clients.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from qgate.core.http_errors import TransportError, map_exceptions

__all__ = ["ProbeError", "get", "get_json", "root_url"]


class ProbeError(Exception):
    """A probe that got no usable answer; `refused` when nothing listens at all."""

    def __init__(self, message: str, status: int | None = None, refused: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.refused = refused


def get(url: str, timeout: float, headers: Mapping[str, str] | None = None) -> tuple[int, bytes]:
    """GET `url`; return (status, body). Raise ProbeError on transport errors."""
    request = urllib.request.Request(url, headers=dict(headers or {}), method="GET")
    try:
        with map_exceptions(), urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as e:
        return int(e.code), e.read() if e.fp is not None else b""
    except TransportError as e:
        # A timeout inside urllib's URLError keeps its reason's words, as it always did.
        bare_timeout = e.kind == "timeout" and not isinstance(e.original, urllib.error.URLError)
        text = f"no answer within {timeout:g} s" if bare_timeout else e.detail
        raise ProbeError(text, refused=e.kind == "refused") from e.original


def get_json(url: str, timeout: float, headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """GET a JSON object; ProbeError for a non-200 status or a body that is not an object."""
    status, body = get(url, timeout, headers)
    if status != 200:
        raise ProbeError(f"HTTP {status} from {url}", status=status)
    try:
        data = json.loads(body)
    except ValueError as e:
        raise ProbeError(f"{url} did not answer JSON") from e
    if not isinstance(data, dict):
        raise ProbeError(f"{url} did not answer a JSON object")
    return data


def root_url(base_url: str) -> str:
    """`http://h:p/v1` -> `http://h:p` (where /health and /version live)."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base
