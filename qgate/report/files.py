"""Run folders and artifact digests.

The pipeline writes every file of a run through `atomic_write` (qgate/core/files.py,
re-exported here) so that a crash never leaves a half-written report, and lists
every file with its digest.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from qgate.core.files import atomic_write as atomic_write
from qgate.core.files import sha256_file_sized
from qgate.errors import BadInput
from qgate.report.model import Artifact


def _slug(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return slug[:80] or "run"


def new_run_dir(root: str | Path, profile_name: str, now: datetime | None = None) -> Path:
    """Create and return a fresh run folder `<root>/<UTC timestamp>-<profile>[-N]`.

    The folder is created with mkdir(exist_ok=False), so two runs started in the
    same second get different folders and nothing is ever overwritten.
    """
    base = Path(root)
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    stem = f"{stamp}-{_slug(profile_name)}"
    try:
        base.mkdir(parents=True, exist_ok=True)
        for counter in range(10_000):
            candidate = base / (stem if counter == 0 else f"{stem}-{counter}")
            try:
                candidate.mkdir()
            except FileExistsError:
                continue
            return candidate
    except OSError as exc:
        # `qgate run` checks --out first; this catches what changed since (disk full, ...).
        raise BadInput(f"cannot create a run folder in {base}: {exc.strerror or exc}") from None
    raise FileExistsError(f"no free run folder name under {base} for {stem}")


def artifact_digests(run_dir: str | Path, exclude: tuple[str, ...] = ()) -> list[Artifact]:
    """Every regular file under `run_dir` (sorted, relative POSIX paths) with its sha256.

    `exclude` names relative paths to leave out, e.g. the envelope itself, which
    cannot list its own digest. Temp files of unfinished atomic writes are skipped.
    """
    root = Path(run_dir)
    out: list[Artifact] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(root).as_posix()
        if rel in exclude or (path.name.startswith(".") and path.name.endswith(".tmp")):
            continue
        sha, size = sha256_file_sized(path)
        out.append(Artifact(path=rel, sha256=sha, bytes=size))
    return out
