"""The fault proxy (perf/faults/proxy.py) in front of a stand-in server, on its own event loop
in a thread: for unit tests that inject a field's fault between qgate and the mock."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

from helpers.mock_server import load_by_path

ROOT = Path(__file__).resolve().parents[2]
proxy = load_by_path("proxy", ROOT / "perf" / "faults" / "proxy.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def faulty(upstream: str, *rules: str, share: float = 1.0) -> Iterator[str]:
    """The proxy with `rules` (`drop:tools`, `stream:tool_calls`) in front of `upstream` (an
    OpenAI base URL); yields the proxy's base URL (`.../v1`)."""
    port = _free_port()
    faults = proxy.Faults([proxy.Rule.parse(r) for r in rules], share=share)
    loop = asyncio.new_event_loop()
    task = loop.create_task(proxy.serve("127.0.0.1", port, upstream.removesuffix("/v1"), faults))

    def run() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(task)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    for _ in range(100):
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            break
        threading.Event().wait(0.05)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        loop.call_soon_threadsafe(task.cancel)
        thread.join(5)
