"""Which CPU cores a CPU engine's threads are bound to: the machine's, shared fairly.

vLLM-CPU's own default (`VLLM_CPU_OMP_THREADS_BIND=auto`) binds the engine
to one core per NUMA node's last-SMT sibling and reserves the rest for its
scheduler: on the 2-core machines qgate's demo and CI run on that is core 0
only, half the machine idle (measured: 1,024-token prefill ~2x slower than
bound to both), and two servers started at once both land on core 0.

So qgate places each server it starts itself. A placement is a lease on
cores, held as `flock` locks on one file per core in a folder shared by
every qgate process of this user: a server alone gets every core this
process may use; a server started while others hold cores gets the free
ones (disjoint from theirs); when none is free it shares them all, and says
so. A lease is released when the server stops, and by the kernel when its
process dies, so a killed run leaves nothing held. `want` asks for fewer
cores than all, for servers that are meant to run side by side.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "BIND_ENV",
    "CoreLease",
    "bind_spec",
    "lease_cores",
    "lease_dir",
    "lease_these",
    "usable_cores",
]

BIND_ENV = "VLLM_CPU_OMP_THREADS_BIND"
LEASE_DIR_ENV = "QGATE_CORE_LEASES"


def usable_cores() -> list[int]:
    """The cores this process may run on (its affinity mask), sorted."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def lease_dir() -> Path:
    """Where the per-core lock files live: $QGATE_CORE_LEASES, else a per-user temp folder."""
    if env := os.environ.get(LEASE_DIR_ENV):
        return Path(env)
    return Path(tempfile.gettempdir()) / f"qgate-core-leases-{os.getuid()}"


def bind_spec(cores: Sequence[int]) -> str:
    """`[0, 1, 2, 5]` -> `0-2,5` (the list syntax of VLLM_CPU_OMP_THREADS_BIND)."""
    parts: list[str] = []
    ordered = sorted(set(cores))
    start = prev = ordered[0]
    for core in [*ordered[1:], None]:
        if core is not None and core == prev + 1:
            prev = core
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if core is not None:
            start = prev = core
    return ",".join(parts)


@dataclass
class CoreLease:
    """Cores one server is bound to; `shared` when another qgate server holds them too."""

    cores: list[int]
    usable: list[int]
    shared: bool
    _fds: list[int] = field(default_factory=list, repr=False)

    @property
    def spec(self) -> str:
        return bind_spec(self.cores)

    def describe(self) -> str:
        of = f"{len(self.cores)} of {len(self.usable)} usable core(s)"
        if self.shared:
            return f"cores {self.spec} ({of}; shared: every core was leased by another server)"
        return f"cores {self.spec} ({of})"

    def release(self) -> None:
        """Give the cores back; safe to call twice."""
        fds, self._fds = self._fds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def lease_cores(
    want: int | None = None, usable: Sequence[int] | None = None, folder: Path | None = None
) -> CoreLease:
    """Lease up to `want` free cores (all free ones when None); all of them, shared, if none is."""
    cores = sorted(usable) if usable is not None else usable_cores()
    root = folder or lease_dir()
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    held: list[int] = []
    fds: list[int] = []
    for core in cores:
        if want is not None and len(held) >= want:
            break
        fd = _try_lock(root / f"cpu{core}.lock")
        if fd is not None:
            held.append(core)
            fds.append(fd)
    if not held:
        return CoreLease(cores[:want] if want else list(cores), list(cores), shared=True)
    return CoreLease(held, list(cores), shared=False, _fds=fds)


def lease_these(
    chosen: Sequence[int], usable: Sequence[int] | None = None, folder: Path | None = None
) -> CoreLease:
    """Lease exactly `chosen` (servers placed side by side by one run, each on its own half).

    The binding is `chosen` whatever else holds them (`shared` says so when another qgate
    server does): two sides of one run must never land on the same cores, which a lease of
    "any free ones" did when an older server held them all (seen in CI: both on core 0).
    """
    cores = sorted(usable) if usable is not None else usable_cores()
    root = folder or lease_dir()
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    fds = [fd for core in chosen if (fd := _try_lock(root / f"cpu{core}.lock")) is not None]
    return CoreLease(sorted(chosen), cores, shared=len(fds) < len(chosen), _fds=fds)
