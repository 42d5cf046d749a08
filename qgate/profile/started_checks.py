"""Profile keys that only mean something for runtimes qgate starts, and attribution groups
that name nothing the candidate changes.

An endpoint (`engine.kind: endpoint`) is a server that already runs: qgate finds it, it
cannot start it, give it arguments or an environment, bind it, pick its dtype or read its
start-up log. A key that asks for one of those on an endpoint side would be silently
ignored, so it is refused here, at validate time, naming the key:

- `attribution` (either side an endpoint: its sub-candidates are lives of the candidate
  with some of the changes, started by qgate on the engine of the side they come from);
- `engine.preflight: always` (the candidate an endpoint: nothing to start early);
- `engine.placement: together` (either side an endpoint: nothing to place);
- `engine.cpu_dtype: auto` (either side an endpoint: it sets the serving dtype of both
  sides alike, and an endpoint's is not qgate's to set);
- `engine.uncalibrated_kv_scales: fail` (both sides endpoints: the gate reads the engine's
  start-up log, which only a started runtime has);
- `cluster` (both sides endpoints: a cluster places the lives qgate starts, and there are
  none), and `cluster.reference` / `cluster.candidates` for an endpoint side (resources
  that no life of that side would hold);
- an endpoint side's `args`, `env`, `fallback` and, in its engine block, `host`, `port`,
  `launcher`, `startup_timeout_s` (`emulate_weights`: qgate/profile/checks.py).

The other way round, `args.api_key` of a server qgate starts is refused: the profile (and
so the signed report) would carry the key; `VLLM_API_KEY` in the environment (redacted in
the report) is what qgate sends to it.

An attribution group pattern that matches none of the candidate's changes is almost
always a typo; it is refused with the closest change names.
"""

from __future__ import annotations

import difflib
import fnmatch
from typing import TYPE_CHECKING

from qgate.profile.changes import raw_change_names
from qgate.profile.engine_checks import starts_process

if TYPE_CHECKING:
    from qgate.profile import Profile
    from qgate.profile.base import EngineArgValue, KeyPath

__all__ = [
    "attribution_group_problems",
    "attribution_refused",
    "key_in_args_problems",
    "started_only_problems",
]

ROLES = ("reference", "candidate")
# Keys of an engine block that only a started server uses.
LAUNCH_ONLY = ("host", "port", "launcher", "startup_timeout_s")
_RUNNING = "already running: qgate cannot start or configure it"


def _engine_path(profile: Profile, role: str) -> KeyPath:
    return (role, "engine") if getattr(profile, role).engine is not None else ("engine",)


def _not_started(profile: Profile) -> list[str]:
    """The sides whose engine qgate does not start (endpoints)."""
    return [r for r in ROLES if not starts_process(profile.engine_of(r).kind)]


def _are(roles: list[str]) -> str:
    """'the candidate is an endpoint (...)' or 'both sides are endpoints (...)'."""
    who = "both sides are endpoints" if len(roles) == 2 else f"the {roles[0]} is an endpoint"
    return f"{who} ({_RUNNING})"


def attribution_refused(profile: Profile) -> str | None:
    """Why `qgate run --attribute` cannot attribute this profile's candidate, or None."""
    idle = _not_started(profile)
    if not idle:
        return None
    return f"--attribute needs runtimes qgate starts, and {_are(idle)}"


def started_only_problems(profile: Profile) -> list[tuple[KeyPath, str]]:
    """Keys set for a side that qgate does not start (see the module docstring)."""
    idle = _not_started(profile)
    if not idle:
        return []
    found: list[tuple[KeyPath, str]] = []
    if profile.attribution is not None:
        found.append(
            (
                ("attribution",),
                f"needs runtimes qgate starts (it starts sub-candidates with some of the "
                f"changes), and {_are(idle)}; remove this block",
            )
        )
    engine = profile.engine
    if engine.preflight == "always" and "candidate" in idle:
        found.append(
            (("engine", "preflight"), f"'always' starts the candidate early; {_are(['candidate'])}")
        )
    if engine.placement == "together":
        found.append(
            (("engine", "placement"), f"'together' places servers qgate starts; {_are(idle)}")
        )
    if engine.cpu_dtype == "auto":
        found.append(
            (
                ("engine", "cpu_dtype"),
                f"'auto' sets the serving dtype of both sides alike; {_are(idle)}; use as_written",
            )
        )
    if engine.uncalibrated_kv_scales == "fail" and len(idle) == 2:
        found.append(
            (
                ("engine", "uncalibrated_kv_scales"),
                f"'fail' reads the engine's start-up log, which an endpoint does not give "
                f"qgate, so the gate could never run; {_are(idle)}",
            )
        )
    found += _cluster_problems(profile, idle)
    # Keys of an endpoint side, and of the engine block it runs with (an endpoint block
    # serves endpoint sides alone: its kind is 'endpoint'), keyed by path so that the
    # top-level block of two endpoint sides is named once.
    owners: dict[KeyPath, list[str]] = {}
    for role in idle:
        spec = getattr(profile, role)
        for key in ("args", "env"):
            if getattr(spec, key):
                owners.setdefault((role, key), []).append(role)
        if spec.fallback is not None:
            owners.setdefault((role, "fallback"), []).append(role)
        launch = profile.engine_of(role)
        where = _engine_path(profile, role)
        for key in ("args", "env"):
            if getattr(launch, key):
                owners.setdefault((*where, key), []).append(role)
        for key in LAUNCH_ONLY:
            if key in launch.model_fields_set:
                owners.setdefault((*where, key), []).append(role)
    for path, roles in owners.items():
        what = "never used" if path[-1] == "fallback" else "not applied"
        if path[-1] in LAUNCH_ONLY:
            what = "only for servers qgate starts"
        found.append((path, f"{what}: {_are(roles)}"))
    return found


def _cluster_problems(profile: Profile, idle: list[str]) -> list[tuple[KeyPath, str]]:
    """The `cluster` block, or a side's resources in it, where nothing would be placed."""
    spec = profile.cluster
    if spec is None:
        return []
    if len(idle) == 2:
        return [
            (
                ("cluster",),
                f"a cluster places the servers qgate starts, and {_are(idle)}; remove this block",
            )
        ]
    keys = {"reference": "reference", "candidate": "candidates"}
    return [
        (
            ("cluster", keys[role]),
            f"no life of the {role} is placed: {_are([role])}",
        )
        for role in idle
        if getattr(spec, keys[role])
    ]


def key_in_args_problems(profile: Profile) -> list[tuple[KeyPath, str]]:
    """`api_key` among the args of a side qgate starts (its value would be in the report)."""
    found: list[tuple[KeyPath, str]] = []
    for role in ROLES:
        if not starts_process(profile.engine_of(role).kind):
            continue
        blocks: list[tuple[KeyPath, dict[str, EngineArgValue]]] = [
            ((role, "args"), getattr(profile, role).args),
            ((*_engine_path(profile, role), "args"), profile.engine_of(role).args),
        ]
        for where, args in blocks:
            for key in args:
                path = (*where, key)
                if key.strip("-").replace("-", "_") == "api_key" and path not in [
                    p for p, _ in found
                ]:
                    found.append(
                        (
                            path,
                            "a key here is written into the profile and the signed report; "
                            "set VLLM_API_KEY in qgate's environment instead (redacted in "
                            "the report; qgate's probes and suites send it)",
                        )
                    )
    return found


def attribution_group_problems(profile: Profile) -> list[tuple[KeyPath, str]]:
    """Group patterns that match none of the candidate's changes, with the nearest names."""
    if profile.attribution is None:
        return []
    names = raw_change_names(profile)
    found: list[tuple[KeyPath, str]] = []
    taken: dict[str, int] = {}
    for g, group in enumerate(profile.attribution.groups):
        matched: set[str] = set()
        for p, pattern in enumerate(group):
            hits = {n for n in names if fnmatch.fnmatchcase(n, pattern)}
            matched |= hits
            if hits:
                continue
            close = difflib.get_close_matches(pattern, names, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            listed = ", ".join(names) if names else "it changes nothing"
            found.append(
                (
                    ("attribution", "groups", g, p),
                    f"{pattern!r} matches none of the candidate's changes ({listed}){hint}",
                )
            )
        earlier = {taken[n] for n in matched if n in taken}
        if matched and matched <= taken.keys():
            found.append(
                (
                    ("attribution", "groups", g),
                    "every change it names is already in attribution.groups"
                    f"[{min(earlier)}]; a change belongs to one group",
                )
            )
        for name in matched:
            taken.setdefault(name, g)
    return found
