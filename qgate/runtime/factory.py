"""The one place that picks a runtime for a side: the engine registry entry of its kind."""

from __future__ import annotations

from pathlib import Path

from qgate.core.records import Role
from qgate.core.serving import Runtime
from qgate.profile import Profile
from qgate.profile.engines import engine_class

__all__ = ["make_runtime"]


def make_runtime(
    profile: Profile,
    role: Role,
    model_path: Path,
    run_dir: Path,
) -> Runtime:
    """A not yet started runtime for `role`, made by its side's engine (see `engine_of`)."""
    engine = engine_class(profile.engine_of(role).kind)
    return engine.from_profile(profile, role, model_path, run_dir)
