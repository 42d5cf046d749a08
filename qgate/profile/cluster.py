"""The `cluster:` block: run the server lives on a Ray cluster, and what each holds on its node.

`qgate run --cluster ADDRESS` (or `$RAY_ADDRESS`, the option's environment
variable) names the cluster for one run; `cluster.address` names it in the
profile, which the command line overrides. Without either, the run stays on
this machine and the rest of the block waits for a run that does go to a
cluster. What the block asks is checked here, before anything joins a cluster:
an address Ray can join, and resource amounts a Ray actor may ask for.
docs/cluster.md says what runs where.
"""

from __future__ import annotations

import math
import re
from typing import Self

from pydantic import Field, field_validator, model_validator

from qgate.profile.base import KeyIssue, KeyPath, Strict

__all__ = ["ClusterSpec", "address_problem", "amount_problem"]

# Ray's own resource names: a life's GPUs come from `target.count`, its cores from `cpus`.
_BUILT_IN = ("CPU", "GPU", "memory", "object_store_memory")
# A host name or IPv4 address, or an IPv6 address (bare or in brackets): nothing a shell, a
# URL parser or Ray would read as more than a host (`;`, `$(`, quotes, `user:pass@`).
_HOST_RE = re.compile(
    r"^(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$"
)


def address_problem(address: str) -> str | None:
    """Why Ray cannot join `address` as a driver, or None ('auto', or HOST:PORT)."""
    if address == "auto":
        return None
    if "://" in address:
        return (
            "give 'auto' or HOST:PORT of the cluster's head (Ray's GCS port, 6379 by default); "
            "a Ray Client address (ray://) is not supported: the suites talk HTTP to the nodes"
        )
    host, sep, port = address.rpartition(":")
    if not sep or not host or any(c.isspace() for c in host):
        return "give 'auto' or HOST:PORT of the cluster's head (Ray's GCS port, 6379 by default)"
    if "@" in host:
        return "no credentials (USER:PASSWORD@) in the address: give HOST:PORT of the head"
    if not _HOST_RE.match(host):
        shown = repr(host) if len(host) <= 60 else repr(host[:57]) + "..."
        return f"{shown} is not a host name or an IP address: give HOST:PORT of the head"
    # str.isdigit() and int() also take other scripts' digits ('８０００'): ASCII only
    if not (port.isascii() and port.isdigit()) or not 1 <= int(port) <= 65535:
        return f"port {port!r} is not a number from 1 to 65535"
    return None


def amount_problem(amount: float) -> str | None:
    """Why a Ray actor cannot hold `amount` of a resource (Ray's rule), or None."""
    if not math.isfinite(amount):
        return "must be a finite number"
    if not amount > 0:
        return "must be > 0"
    if amount > 1 and amount != int(amount):
        return "above 1 it must be a whole number (Ray's rule for resource amounts)"
    return None


class ClusterSpec(Strict):
    """Every server life an actor on a node of a Ray cluster (docs/cluster.md).

    Reference and candidates then start at once, each on a node with its needs:
    `target.count` GPUs (off the CPU), `cpus` cores, and the custom resources named here.
    """

    address: str | None = Field(
        default=None,
        description="The cluster to join: HOST:PORT of its head (Ray's GCS port, 6379 by "
        "default), or 'auto' for the cluster this machine is a node of. `qgate run --cluster "
        "ADDRESS` or $RAY_ADDRESS wins over it; without any of the three the run stays on "
        "this machine (and the rest of this block applies whenever it runs on a cluster).",
    )
    reference: dict[str, float] = Field(
        default_factory=dict,
        description="Custom Ray resources the reference's life holds on its node, e.g. "
        "{ref: 1} to put it on the nodes started with `--resources '{\"ref\": 1}'`.",
    )
    candidates: dict[str, float] = Field(
        default_factory=dict,
        description="Custom Ray resources every candidate life holds on its node (each "
        "candidate of a multi profile, the preflight, attribution's sub-candidates), e.g. "
        "{cand: 1}.",
    )
    cpus: float | None = Field(
        default=None,
        description="CPU cores each life holds on its node (Ray's num_cpus of its actor). On "
        "a CPU target its server is bound to that many cores, so this is how much of a node "
        "one life takes and how many lives share it; unset, a CPU life holds every core of "
        "the smallest node that can hold it (vLLM-CPU uses every core it may: one life a "
        "node), an accelerator life 1.",
    )

    @field_validator("address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        if v is not None and (problem := address_problem(v)) is not None:
            raise ValueError(problem)
        return v

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, v: float | None) -> float | None:
        if v is not None and (problem := amount_problem(v)) is not None:
            raise ValueError(problem)
        return v

    @model_validator(mode="after")
    def _resources(self) -> Self:
        issues: list[tuple[KeyPath, str]] = []
        for side in ("reference", "candidates"):
            for name, amount in getattr(self, side).items():
                if name in _BUILT_IN:
                    issues.append(
                        (
                            (side, name),
                            "a custom resource name here; a life's GPUs come from "
                            "target.count and its cores from cluster.cpus",
                        )
                    )
                elif not name.strip():
                    issues.append(((side, name), "a resource needs a name"))
                elif (problem := amount_problem(amount)) is not None:
                    issues.append(((side, name), problem))
        if issues:
            raise KeyIssue(issues)
        return self

    def custom(self) -> dict[str, dict[str, float]]:
        """The custom resources per side, as the executor asks them ('reference', 'candidate')."""
        return {"reference": dict(self.reference), "candidate": dict(self.candidates)}
