"""The two matplotlib steps every plot shares: pyplot on the Agg backend, a figure as PNG bytes.

matplotlib is imported inside `load_pyplot` (a heavy optional import, qgate/core/lazy.py)
so that importing qgate.report stays cheap.
"""

from __future__ import annotations

import io
from typing import Any

__all__ = ["load_pyplot", "png_bytes"]


def load_pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig: Any) -> bytes:
    buf = io.BytesIO()
    # a fixed date in the metadata keeps the PNG bytes reproducible
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    load_pyplot().close(fig)
    return buf.getvalue()
