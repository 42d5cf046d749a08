"""Reading the committed example reports (examples/): the signed predicate of one report."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any


def predicate_of(report: Path) -> dict[str, Any]:
    """The in-toto predicate inside a report's first DSSE envelope (no signature check)."""
    line = report.read_text().splitlines()[0]
    out: dict[str, Any] = json.loads(base64.b64decode(json.loads(line)["payload"]))["predicate"]
    return out
