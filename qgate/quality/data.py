"""The evals/ folder: where it is, what is generated into it, and its MANIFEST.

`build_evals` writes every generated file and evals/MANIFEST.json (sha256 and
generator version per file); `check_evals` verifies the files against the
manifest and against a fresh in-memory regeneration, so both an edited file
and a generator that changed without a version bump are caught.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from qgate.core.files import atomic_write, sha256_file
from qgate.core.files import sha256_bytes as sha256_bytes
from qgate.errors import BadInput
from qgate.quality import data_corpus, data_ladder, data_math, data_recall

MANIFEST_NAME = "MANIFEST.json"
MANIFEST_VERSION = 1


@dataclass(frozen=True)
class Generated:
    """One generated file: its path under evals/, the generator and its version."""

    path: str
    generator: str
    version: str
    seed: int
    make: Callable[[], bytes]


GENERATED: tuple[Generated, ...] = (
    Generated(
        "math/core.jsonl",
        "qgate.quality.data_math.math_jsonl",
        data_math.GENERATOR_VERSION,
        data_math.MATH_SEED,
        data_math.math_jsonl,
    ),
    Generated(
        "math/ladder.jsonl",
        "qgate.quality.data_ladder.ladder_jsonl",
        data_ladder.LADDER_VERSION,
        data_ladder.LADDER_SEED,
        data_ladder.ladder_jsonl,
    ),
    Generated(
        "math/preamble.txt",
        "qgate.quality.data_math.preamble_text",
        data_math.GENERATOR_VERSION,
        data_math.PREAMBLE_SEED,
        lambda: data_math.preamble_text().encode(),
    ),
    Generated(
        "recall/vocabulary.json",
        "qgate.quality.data_recall.vocabulary_json",
        data_recall.GENERATOR_VERSION,
        0,
        data_recall.vocabulary_json,
    ),
    Generated(
        "recall/recall_1k_chars.jsonl",
        "qgate.quality.data_recall.recall_chars_jsonl",
        data_recall.GENERATOR_VERSION,
        data_recall.RECALL_CHARS_SEED,
        data_recall.recall_chars_jsonl,
    ),
    Generated(
        "divergence/corpus.jsonl",
        "qgate.quality.data_corpus.corpus_jsonl",
        data_corpus.GENERATOR_VERSION,
        data_corpus.CORPUS_SEED,
        data_corpus.corpus_jsonl,
    ),
)


def evals_root() -> Path:
    """The evals/ folder: $QGATE_EVALS_DIR, else the one next to the qgate package (source tree)."""
    env = os.environ.get("QGATE_EVALS_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "evals"


def manifest_dict() -> dict[str, object]:
    """The manifest that a fresh build produces (regenerates every file in memory)."""
    files: dict[str, dict[str, str | int]] = {}
    for gen in GENERATED:
        data = gen.make()
        files[gen.path] = {
            "sha256": sha256_bytes(data),
            "bytes": len(data),
            "generator": gen.generator,
            "generator_version": gen.version,
            "seed": gen.seed,
        }
    return {"manifest_version": MANIFEST_VERSION, "files": files}


def build_evals(root: Path | None = None) -> list[Path]:
    """Regenerate every generated file and the manifest under `root`; return the paths written."""
    root = root or evals_root()
    written: list[Path] = []
    for gen in GENERATED:
        target = root / gen.path
        atomic_write(target, gen.make())
        written.append(target)
    manifest = root / MANIFEST_NAME
    atomic_write(manifest, (json.dumps(manifest_dict(), indent=2, sort_keys=True) + "\n").encode())
    written.append(manifest)
    return written


def check_evals(root: Path | None = None, *, regenerate: bool = True) -> list[str]:
    """Problems found, one line each naming the file; empty when everything matches."""
    root = root or evals_root()
    manifest_path = root / MANIFEST_NAME
    try:
        manifest = json.loads(manifest_path.read_text())
        recorded: dict[str, dict[str, object]] = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BadInput(f"{manifest_path}: cannot read the eval manifest ({exc})") from exc
    problems: list[str] = []
    fresh = manifest_dict()["files"] if regenerate else {}
    assert isinstance(fresh, dict)
    for rel, entry in sorted(recorded.items()):
        path = root / rel
        if not path.is_file():
            problems.append(f"{path}: missing (listed in {MANIFEST_NAME})")
            continue
        actual = sha256_file(path)
        if actual != entry.get("sha256"):
            problems.append(
                f"{path}: sha256 {actual[:12]} does not match {MANIFEST_NAME} "
                f"({str(entry.get('sha256'))[:12]}); run `qgate evals build` or restore the file"
            )
        elif regenerate and rel in fresh and fresh[rel]["sha256"] != actual:
            problems.append(
                f"{path}: the generator now produces different content "
                "(bump its version and run `qgate evals build`)"
            )
    for rel in sorted(set(fresh) - set(recorded)):
        problems.append(f"{root / rel}: generated file not listed in {MANIFEST_NAME}")
    return problems


def read_eval_file(rel_or_path: str | Path) -> bytes:
    """Bytes of a file under evals/ (relative) or anywhere (absolute); BadInput if unreadable."""
    path = Path(rel_or_path)
    if not path.is_absolute() and not path.exists():
        path = evals_root() / path
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read eval data ({exc.strerror})") from exc
