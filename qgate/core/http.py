"""Tiny blocking HTTP probes (health, version, model list) with the standard library.

Runtimes only need a few GETs at start and for liveness; the suites use
their own async clients.

A server on this machine (a loopback address, where every server qgate starts listens
by default) is always reached directly: urllib would otherwise send the probe to the
proxy of HTTP_PROXY / ALL_PROXY (set for the registries, with no NO_PROXY), which cannot
reach this machine's loopback. An endpoint elsewhere goes through the proxy as configured.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

from qgate.core.http_errors import TransportError, map_exceptions

__all__ = ["ProbeError", "direct_to_loopback", "get", "get_json", "is_loopback", "root_url"]

# No proxy at all: for servers on this machine.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ProbeError(Exception):
    """A probe that got no usable answer; `refused` when nothing listens at all."""

    def __init__(self, message: str, status: int | None = None, refused: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.refused = refused


def get(url: str, timeout: float, headers: Mapping[str, str] | None = None) -> tuple[int, bytes]:
    """GET `url`; return (status, body). Raise ProbeError on transport errors."""
    request = urllib.request.Request(url, headers=dict(headers or {}), method="GET")
    opener = _DIRECT.open if is_loopback(url) else urllib.request.urlopen
    try:
        with map_exceptions(), opener(request, timeout=timeout) as response:
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


def is_loopback(url: str) -> bool:
    """Whether `url` names this machine by a loopback address (127.0.0.0/8, ::1, localhost)."""
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def direct_to_loopback(url: str) -> Iterator[None]:
    """Inside the block, clients that read the proxy variables (`requests`, as lm-eval uses it)
    reach `url` directly when it is a loopback address: its host is added to NO_PROXY."""
    if not is_loopback(url):
        yield
        return
    host = urllib.parse.urlsplit(url).hostname or ""
    saved = {name: os.environ.get(name) for name in ("NO_PROXY", "no_proxy")}
    current = ",".join(v for v in saved.values() if v)
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = ",".join(filter(None, [current, host]))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
