"""Probes of a server on this machine go direct, whatever proxy the environment names."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest
import requests

from qgate.core import http as qhttp

# A proxy that is never there: a probe sent to it is refused.
DEAD_PROXY = "http://127.0.0.1:9"


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def proxied(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY set for the registries, no NO_PROXY: what urllib would send via the proxy."""
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, DEAD_PROXY)


def test_a_loopback_probe_ignores_the_proxy(proxied: None, local_url: str) -> None:
    assert qhttp.get_json(f"{local_url}/health", timeout=5.0) == {"ok": True}
    assert qhttp.get_json(f"http://localhost:{local_url.rsplit(':', 1)[1]}/x", 5.0) == {"ok": True}


def test_a_remote_url_still_goes_through_the_proxy(proxied: None) -> None:
    with pytest.raises(qhttp.ProbeError):
        qhttp.get("http://example.invalid/v1/models", timeout=5.0)


def test_requests_reach_a_loopback_server_inside_the_block(proxied: None, local_url: str) -> None:
    """lm-eval's one-at-a-time client is `requests`, which reads the proxy variables."""
    with pytest.raises(requests.exceptions.ProxyError):
        requests.get(f"{local_url}/v1/completions", timeout=5.0)
    with qhttp.direct_to_loopback(f"{local_url}/v1/completions"):
        assert requests.get(f"{local_url}/v1/completions", timeout=5.0).json() == {"ok": True}
    with pytest.raises(requests.exceptions.ProxyError):  # NO_PROXY restored afterwards
        requests.get(f"{local_url}/v1/completions", timeout=5.0)


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.1.2.3/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://localhost:8000", True),
        ("http://10.0.0.5:8000/v1", False),
        ("https://api.example.com/v1", False),
    ],
)
def test_loopback_addresses(url: str, loopback: bool) -> None:
    assert qhttp.is_loopback(url) is loopback
