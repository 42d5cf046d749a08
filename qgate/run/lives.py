"""Where a side's server lives: the one seam an executor replaces.

Every server a run starts (the reference's life, each candidate's, a preflight,
both sides of a side-by-side run, each attribution trial) is made by the run's
`Lives`, through `RunContext.new_runtime(role)` (qgate/run/context.py)::

    class Lives:
        def runtime(
            self, profile: Profile, role: Role, model: Path, logs: Path, *, round: int = 0
        ) -> Runtime

`round` is the perf round the life belongs to (perf.rounds, 0-based): 0 for
every life of the run's own plan, k >= 1 for the fresh lives of round k, which
serve perf only (qgate/run/rounds.py). `swapped(k)` (qgate/core/plan.py) says
whether round k runs its sides in the reverse order of round 0 (ABBA: every odd
k); an executor that places the two sides on two nodes swaps the nodes in those
rounds.

It hands back a runtime **not yet started**; the run starts it (`with runtime:`
in `context.started`, or `start()` then `wait_ready()` in qgate/run/together.py,
which overlaps two start-ups), talks to it over HTTP at `base_url` and always
stops it. `LOCAL` makes the engine's own runtime class in this process
(qgate/runtime/factory.py). An executor that runs each life elsewhere (a Ray
actor on a GPU node) hands back a proxy implementing the same protocol
(qgate/core/serving.py: role, base_url, served_model, log_path, start,
wait_ready, effective_config, check_alive, stop, and the context manager), with
a `base_url` this process can reach, and is passed as
`pipeline.run(opts, lives=...)`; without one the run asks `lives_for`: the Ray
cluster named by `--cluster` (or $RAY_ADDRESS), else by the profile's
`cluster.address`, else this machine. What else the run asks of an executor
(`places_lives`, `at_once`, `stop_all`, `side_by_side`, `provenance`) is declared on `Lives`
with its default (qgate/runtime/lives.py); executors are registered by name there.
The engine extras the run uses (`metrics`, `cores_chosen`, `can_dry_check`/`dry_check`,
`paused`) are declared on the `Runtime` protocol with their defaults on `Lifecycle`
(qgate/core/serving.py): an engine or proxy that has none of them inherits "none".
"""

from __future__ import annotations

from qgate.profile import Profile
from qgate.runtime.lives import CLUSTER_EXECUTOR, LOCAL, Lives, LocalLives, executor

__all__ = ["LOCAL", "Lives", "LocalLives", "cluster_address", "lives_for"]


def cluster_address(given: str | None, profile: Profile) -> tuple[str, str] | None:
    """The Ray cluster a run goes to and who named it: `given` (`--cluster`, $RAY_ADDRESS)
    first, else the profile's `cluster.address`; None: this machine."""
    if given:
        return given, "--cluster or $RAY_ADDRESS"
    if profile.cluster is not None and profile.cluster.address:
        return profile.cluster.address, "the profile's cluster.address"
    return None


def lives_for(given: str | None, profile: Profile, name: str | None = None) -> Lives:
    """The run's lives: executor `name`'s (`--executor`; the address `cluster_address` names,
    or none), else the cluster executor's on the cluster `cluster_address` names, else this
    machine's."""
    where = cluster_address(given, profile)
    if name is not None:
        return executor(name, *(where or ("", "--executor")))
    if where is None:
        return LOCAL
    return executor(CLUSTER_EXECUTOR, *where)
