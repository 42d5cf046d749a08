"""A KV tier that outlives a life or is shared by the two sides is refused at validate.

A server whose KV cache reaches past its own process (a disk or a remote LMCache store, a
Mooncake store, vLLM's SharedStorageConnector folder, a KV transfer between instances) can
serve blocks that another life wrote: the reference's, another round's, an earlier run's,
written under another configuration, with no error (vllm-project/vllm #55904, #56311;
LMCache #4991, #5151). Then neither the candidate's answers nor its reuse-driven speed are
its own. qgate cannot namespace such a tier per side and round for every connector, so it
refuses one (issue 55 item 5). A tier inside the server process (`kv_offloading_backend:
native`, vLLM's OffloadingConnector, LMCache on host memory alone) dies with its life and is
allowed: it is what the shipped KV-offload profiles use. LMCache's connector is allowed on host
memory alone; pointed at a disk or a remote store (its extra config, or LMCACHE_* variables
in the side's environment) it is refused.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from qgate.profile.side import side

if TYPE_CHECKING:
    from qgate.profile import Profile
    from qgate.profile.base import KeyPath

__all__ = ["IN_PROCESS_CONNECTORS", "OUTLIVING_ENV", "kv_tier_problems"]

IN_PROCESS_CONNECTORS = frozenset({"OffloadingConnector", "CPUOffloadingConnector"})
"""KV connectors that keep their blocks in the server's own process (host memory)."""

OUTLIVING_ENV = (
    "LMCACHE_REMOTE_URL",
    "LMCACHE_LOCAL_DISK",
    "LMCACHE_CONFIG_FILE",
    "MOONCAKE_CONFIG_PATH",
)
"""Environment variables that point a server's KV tier outside its process."""

_WHY = (
    "can serve KV another life wrote (the other side's, another round's or run's, under "
    "another configuration) with no error, so neither the answers nor the reuse speed "
    "would be this side's own; use a tier inside the server (kv_offloading_backend: native)"
)


def _outside(value: Any) -> str | None:
    """The connector a `kv_transfer_config` (a mapping, or its JSON text) names when it keeps
    blocks outside the server: any but the in-process ones, and LMCache's only when its
    extra config points at a disk or a remote store (alone it keeps them in host memory)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value or None
    if not isinstance(value, dict) or not value.get("kv_connector"):
        return None
    name = str(value["kv_connector"])
    if name in IN_PROCESS_CONNECTORS:
        return None
    if name.startswith("LMCache"):
        extra = json.dumps(value.get("kv_connector_extra_config") or {}).lower()
        return name if any(k in extra for k in ("remote", "disk", "config_file")) else None
    return name


def kv_tier_problems(profile: Profile) -> list[tuple[KeyPath, str]]:
    """Each side whose KV tier can outlive its life or be shared, with where it says so."""
    found: list[tuple[KeyPath, str]] = []
    for role in ("reference", "candidate"):
        s = side(profile, role)
        args = s.args
        connector = _outside(args.get("kv_transfer_config"))
        if connector is not None:
            where = s.arg_path("kv_transfer_config") or (role, "args", "kv_transfer_config")
            found.append(
                (where, f"the {connector} KV connector keeps blocks outside the server and {_WHY}")
            )
        spec = getattr(profile, role)
        block = (role, "engine") if spec.engine is not None else ("engine",)
        for name in OUTLIVING_ENV:
            if s.env.get(name):
                where = (role, "env", name) if name in spec.env else (*block, "env", name)
                found.append(
                    (where, f"{name} points the KV cache outside the server, which {_WHY}")
                )
    return found
