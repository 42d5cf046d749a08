"""The one place that picks a runtime class for a profile's engine kind."""

from __future__ import annotations

from pathlib import Path

from qgate.models import Role
from qgate.profile import Profile
from qgate.runtime.base import Runtime


def make_runtime(
    profile: Profile,
    role: Role,
    model_path: Path,
    run_dir: Path,
) -> Runtime:
    """A not yet started runtime for `role`: a VllmServer, or an Endpoint to probe."""
    if profile.engine.kind == "endpoint":
        from qgate.runtime.endpoint import Endpoint

        return Endpoint.from_profile(profile, role)
    from qgate.runtime.vllm_server import VllmServer

    return VllmServer.from_profile(profile, role, model_path, run_dir)
