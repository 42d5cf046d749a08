"""The `qgate` command line: the group in main.py, one module per command or command group."""

from __future__ import annotations

from qgate.cli.main import main

__all__ = ["main"]
