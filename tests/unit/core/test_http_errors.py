"""One mapping of client-library failures (aiohttp, urllib, sockets) to what they mean."""

from __future__ import annotations

import asyncio
import socket
import urllib.error

import aiohttp
import pytest

from qgate.core import http
from qgate.core.http_errors import TransportError, classify, map_exceptions


def _refused_connector() -> aiohttp.ClientConnectorError:
    key = aiohttp.client_reqrep.ConnectionKey("h", 1, False, True, None, None, None)
    return aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "refused"))


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (TimeoutError(), "timeout"),
        (ConnectionRefusedError(), "refused"),
        (urllib.error.URLError(ConnectionRefusedError()), "refused"),
        (urllib.error.URLError(TimeoutError("timed out")), "timeout"),
        (urllib.error.URLError("Name or service not known"), "connection"),
        (OSError("network unreachable"), "connection"),
        (aiohttp.ServerDisconnectedError(), "connection"),
        (aiohttp.ClientPayloadError("cut"), "dropped"),
        (aiohttp.InvalidURL("x"), "other"),
    ],
)
def test_each_failure_has_one_meaning(exc: Exception, kind: str) -> None:
    mapped = classify(exc)
    assert mapped is not None and mapped.kind == kind and mapped.original is exc
    assert mapped.retryable == (kind in ("refused", "connection"))


def test_a_refused_aiohttp_connection_is_refused() -> None:
    mapped = classify(_refused_connector())
    assert mapped is not None and mapped.kind == "refused"


def test_an_http_status_is_an_answer_not_a_transport_failure() -> None:
    status = urllib.error.HTTPError("http://h", 503, "busy", {}, None)  # type: ignore[arg-type]
    assert classify(status) is None
    assert classify(ValueError("bad json")) is None
    with pytest.raises(ValueError), map_exceptions():
        raise ValueError("not mapped")


def test_map_exceptions_keeps_the_original_as_cause() -> None:
    with pytest.raises(TransportError) as info, map_exceptions():
        raise aiohttp.ServerDisconnectedError()
    assert isinstance(info.value.__cause__, aiohttp.ServerDisconnectedError)
    assert info.value.name == "ServerDisconnectedError"


def test_map_exceptions_lets_cancellation_through() -> None:
    with pytest.raises(asyncio.CancelledError), map_exceptions():
        raise asyncio.CancelledError()


def test_probe_of_a_closed_port_says_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(http.ProbeError) as info:
        http.get(f"http://127.0.0.1:{port}/health", timeout=2.0)
    assert str(info.value) == "connection refused" and info.value.refused
