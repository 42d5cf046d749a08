"""Local TCP ports for a server qgate starts: one that is free now, and whether one is taken."""

from __future__ import annotations

import socket

__all__ = ["free_port", "port_in_use"]


def free_port(host: str) -> int:
    """A port that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_in_use(host: str, port: int) -> bool:
    """True when binding `host:port` fails (as a server with SO_REUSEADDR would bind it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # Like uvicorn: a port that only has TIME_WAIT connections is free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False
