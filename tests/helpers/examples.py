"""Reading the committed example reports (examples/): the signed predicate of one report, and
`qgate verify` of one run folder."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from qgate.cli.main import main


def predicate_of(report: Path) -> dict[str, Any]:
    """The in-toto predicate inside a report's first DSSE envelope (no signature check)."""
    line = report.read_text().splitlines()[0]
    out: dict[str, Any] = json.loads(base64.b64decode(json.loads(line)["payload"]))["predicate"]
    return out


def verify_example(folder: Path, pubkey: Path, profile: Path | None = None) -> tuple[int, str]:
    """`qgate verify` of a committed run folder's report against its profile (or `profile`):
    exit code and output."""
    result = CliRunner().invoke(
        main,
        [
            "verify",
            str(folder / "report.intoto.jsonl"),
            "--pubkey",
            str(pubkey),
            "--profile",
            str(profile or folder / "profile.yaml"),
        ],
    )
    return result.exit_code, result.output
