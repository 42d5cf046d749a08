"""qgate: quality-gated precision validation for LLM serving."""

from __future__ import annotations

__version__ = "0.1.0"
