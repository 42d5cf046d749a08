"""What a node says about itself, said on the node: its fingerprint, the copy of the weights
a life serves there, and the facts a life's report names (Ray carries them back as data).

Nodes share nothing with the driver but the read-only checkpoint at the same path (a
cluster's model volume): the driver's CPU, accelerators, packages and cache are not a
life's. So the driver asks every node that could hold a life of the run for its
fingerprint (`fingerprint_here`, a Ray task pinned to the node), decides the sides'
settings from it, and a life's node makes its emulated copy of the weights in its own
cache (`serving_path`).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from qgate.checkpoint.embedded import cache_root
from qgate.checkpoint.emulate import emulate_checkpoint
from qgate.profile.model import WeightEmulation
from qgate.runtime.fingerprint import collect_fingerprint

__all__ = ["fingerprint_here", "life_facts", "serving_path"]


def fingerprint_here(model_dir: str | None) -> dict[str, Any]:
    """This node's fingerprint (its checkpoint's digests read here), as JSON data."""
    folder = Path(model_dir) if model_dir and Path(model_dir).is_dir() else None
    fp = collect_fingerprint(folder, cache_root() / "digests.json")
    return fp.model_dump(mode="json")


def serving_path(source: Path, emulate: tuple[dict[str, Any], str] | None) -> Path:
    """The weights a life serves on this node: the source, or its emulated copy made here
    (`emulate`: the side's setting and stored dtype), in this node's cache."""
    if emulate is None:
        return source
    setting, dtype = emulate
    spec = WeightEmulation.model_validate(setting)
    return emulate_checkpoint(source, spec, cache_root() / "emulated", dtype)


def life_facts(model_path: Path, log_path: Path) -> dict[str, Any]:
    """What a life's report names about where it ran, read on its node."""
    return {
        "hostname": socket.gethostname(),
        "model_path": str(model_path),
        "node_log": str(log_path),
        "cache": str(cache_root()),
        "pid": os.getpid(),
    }
