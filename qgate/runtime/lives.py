"""The executor contract: where each server life of a run lives, and what the run asks of it.

Every server a run starts (each side's life, a preflight, both sides of a side-by-side
run, each attribution trial, the fresh lives of later perf rounds) is made by the run's
`Lives`. `runtime` is the one member an executor must write; every other member the run
uses is declared here with the default that means "one life at a time, on this machine",
so the run calls it without probing for it (tests/unit/run/test_lives.py fails on a
`getattr` probe of an executor in qgate/run).

Executors are registered by name (`register_executor`, "module:attribute" of a factory
`(address, named_by) -> Lives`, imported on first use): `ray` (qgate/cluster/lives.py)
serves the cluster named by `--cluster`, $RAY_ADDRESS or the profile's `cluster.address`.
Installed distributions add theirs through the `qgate.executors` entry-point group
(`name = pkg.module:factory`), and `qgate run --executor NAME` picks one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from qgate.core.plan import Plan
from qgate.core.provenance import PlacedProvenance
from qgate.core.records import Role
from qgate.core.registry import Registry
from qgate.core.serving import Runtime
from qgate.profile import Profile
from qgate.runtime.factory import make_runtime
from qgate.runtime.fingerprint import Fingerprint

__all__ = [
    "CLUSTER_EXECUTOR",
    "LOCAL",
    "ExecutorFactory",
    "Lives",
    "LocalLives",
    "PlannedElsewhere",
    "executor",
    "register_executor",
]


@dataclass(frozen=True)
class PlannedElsewhere:
    """An executor's plan of a run's lives, for `qgate plan`: lines for people and its JSON."""

    lines: list[str]
    data: dict[str, Any] = field(default_factory=dict)


class Lives:
    """Makes the runtime of one side's life (not started; the run starts and stops it), and
    says what the run may do with its lives. Subclass it and write `runtime`."""

    places_lives: bool = False
    """Its lives run elsewhere (nodes of a cluster) and share no device, cores or files with
    each other nor with this machine: both sides start at once, `side_by_side` decides the
    plan's placement, `machine` says what they run on, and each life's node makes what it
    serves (emulated weights) there."""

    def machine(self, profile: Profile, model: Path) -> Fingerprint | None:
        """The machine its lives of `profile` run on, fingerprinted there (CPU, accelerators,
        packages, `model`'s digests there): the run chooses each side's settings (fallbacks,
        serving dtype) and checks the target against it. None: this machine, which the run
        fingerprints itself."""
        return None

    def runtime(
        self, profile: Profile, role: Role, model: Path, logs: Path, *, round: int = 0
    ) -> Runtime:
        """The runtime serving `model` as `profile` asks of `role`, its logs under `logs`,
        for perf round `round` (0: the run's own lives)."""
        raise NotImplementedError

    def at_once(self, profile: Profile) -> int:
        """How many candidate lives of `profile` it runs at once (waves of candidates and of
        attribution trials); default one."""
        return 1

    def stop_all(self) -> None:
        """Stop every life made so far (on Ctrl-C or an error in a wave); default nothing,
        each life is stopped by the run that started it."""

    def side_by_side(self, profile: Profile) -> tuple[str, str] | None:
        """Where the reference and the candidate go when both fit at once (read only where
        `places_lives`); None: one after the other."""
        return None

    def provenance(self) -> PlacedProvenance | None:
        """Where its lives ran, for the report (`provenance.cluster`): the Ray executor's
        `ClusterProvenance`, a plug-in's `ExecutorProvenance`; None: this machine."""
        return None

    def planned(
        self,
        plan: Plan,
        profiles: Sequence[tuple[str, Profile]],
        *,
        changes: Mapping[str, int],
        life_s: float | None,
    ) -> PlannedElsewhere | None:
        """How it would run `plan`'s lives (which run together, the expected wall time), for
        `qgate plan`; `changes`: per candidate with attribution, how many changes it has.
        None: as the local plan says."""
        return None


class LocalLives(Lives):
    """Every life a server process of this machine (or the endpoint the profile names)."""

    def runtime(
        self, profile: Profile, role: Role, model: Path, logs: Path, *, round: int = 0
    ) -> Runtime:
        return make_runtime(profile, role, model, logs)


LOCAL: Lives = LocalLives()

ExecutorFactory = Callable[[str, str], Lives]
"""(address, who named it) -> the executor's `Lives`."""


def _factory(entry: object) -> ExecutorFactory:
    if not callable(entry):
        raise TypeError(f"{entry!r} is not an executor factory")
    return cast("ExecutorFactory", entry)


EXECUTORS: Registry[ExecutorFactory] = Registry("executor", _factory)
"""Executor names -> their factories."""


def register_executor(name: str, factory: ExecutorFactory | str) -> None:
    """Add an executor: its factory, or "module:attribute" of it (imported on first use)."""
    EXECUTORS.register(name, factory)


def executor(name: str, address: str, named_by: str) -> Lives:
    """The `Lives` of executor `name` for the cluster at `address` (named by `named_by`)."""
    return EXECUTORS.get(name)(address, named_by)


CLUSTER_EXECUTOR = "ray"
"""The executor of a run given a cluster address (`--cluster`, the profile's) and no
`--executor`."""

register_executor(CLUSTER_EXECUTOR, "qgate.cluster.lives:RayLives")
EXECUTORS.open_to("qgate.executors")
