"""The plan signed before the run's first server starts (qgate/report/preregistration.py).

A run of one candidate signs a pre-registration statement of its profile, criteria and plan
into its run folder before it starts any server, or, given `--preregistration FILE` (signed
earlier by `qgate plan --sign`, perhaps by someone else), checks that the file registers this
profile and this plan and copies it there instead. The report binds to that file
(qgate/report/writer.py). A run of several candidates signs none yet: each candidate's
criteria differ, and the multi report holds no binding.
"""

from __future__ import annotations

from qgate.core.files import atomic_write
from qgate.core.plan import Plan
from qgate.errors import BadInput
from qgate.report.preregistration import (
    PREREGISTRATION_NAME,
    plan_lock,
    preregistration_of,
    read_statement,
    sign_preregistration,
)
from qgate.run.context import RunSet
from qgate.run.options import RunOptions

__all__ = ["preregister"]


def preregister(runs: RunSet, plan: Plan, opts: RunOptions) -> None:
    """Write the run's pre-registration statement into its folder (signed, or the one given)."""
    if runs.multi is not None:
        if opts.preregistration is not None:
            raise BadInput("--preregistration: a run of several candidates binds none yet")
        return
    ctx = runs.reference
    target = ctx.run_dir / PREREGISTRATION_NAME
    if opts.preregistration is None:
        prereg = preregistration_of(
            ctx.declared_profile, ctx.profile_path, ctx.profile_sha256, plan
        )
        atomic_write(target, sign_preregistration(prereg, ctx.signer))
        return
    origin = f"--preregistration {opts.preregistration}"
    try:
        data = opts.preregistration.read_bytes()
    except OSError as exc:
        raise BadInput(f"{origin}: {exc.strerror}") from None
    given, _ = read_statement(data, origin)
    if given.profile_sha256 != ctx.profile_sha256:
        raise BadInput(
            f"{origin}: registers profile sha256 {given.profile_sha256[:12]}..., this run's "
            f"{ctx.profile_path.name} is {ctx.profile_sha256[:12]}...: the profile changed "
            "since it was registered"
        )
    lock = plan_lock(ctx.declared_profile, ctx.profile_sha256, plan)
    if given.lock_sha256 != lock:
        raise BadInput(
            f"{origin}: its criteria or plan differ from this run's (lock {given.lock_sha256[:12]}"
            f"... registered, {lock[:12]}... now): re-register with `qgate plan --sign`"
        )
    atomic_write(target, data)
