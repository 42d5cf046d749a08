"""qgate: quality-gated precision validation for LLM serving."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
