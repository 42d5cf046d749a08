"""The engine's own reason for dying, found in its log.

A failed start-up ends in a wall of traceback whose last lines are generic
wrappers ("Engine core initialization failed. See root cause above"); the
line a person needs (`FP8 KV cache on CPU requires x86 with AVX-512 or
AMX.`, `error: unrecognized arguments: --foo`, an out-of-memory error) is
often far above them. `root_cause` picks that line out of the log of the
server's last start so that the one-line error can name it, and
`cause_context` gives the few lines around it for the terminal.

Never a cause: lines logged at DEBUG, INFO or WARNING level and Python
warnings, whatever they quote (vLLM's start-up warning about the fd limit
mentions `OSError: [Errno 24] Too many open files`, and was once reported as
the reason a SIGKILLed server died), and the engine's argparse usage text.
A server killed by a signal is reported by that signal first
(`death_reading`); the engine's fatal line follows only when there is one.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from qgate.errors import InfrastructureError, RuntimeFailure

__all__ = [
    "blamed_on",
    "cause_context",
    "death_reading",
    "explain",
    "is_noise",
    "read_log",
    "root_cause",
    "root_cause_in",
]

if TYPE_CHECKING:
    from qgate.core.serving import Runtime

# Most specific first: the first pattern with a match wins.
_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"error: (unrecognized arguments: .*)"),
    re.compile(r"error: (argument [^:]+: .*)"),
    re.compile(r"((?:torch\.)?OutOfMemoryError: .*|CUDA out of memory.*|HIP out of memory.*)"),
    re.compile(r"(Cannot allocate memory.*|std::bad_alloc.*|MemoryError.*)"),
    re.compile(r"(Fatal Python error: .*|terminate called after throwing .*|Segmentation fault.*)"),
    re.compile(r"\b((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): .+)"),
)
# Exception lines that only wrap the real cause.
_WRAPPERS = (
    "Engine core initialization failed",
    "See root cause above",
    "EngineCore failed to start",
    "Worker failed with error",
    "WorkerProc initialization failed",
    "See stack trace (above)",
)
# The API server's account of an engine core that is gone. Its own text points "above": the
# cause is searched there, and when nothing is there (SIGKILL, the OOM killer) it is said so.
_DEAD = re.compile(r"EngineDeadError|Engine core proc \S+ died unexpectedly")
_ENGINE_DIED = (
    "the engine core process died without an error of its own (often the out-of-memory "
    "killer; see `dmesg` or `journalctl -k`)"
)
_MAX_BYTES = 4 << 20
# vLLM's "(APIServer pid=1) WARNING 12-01 16:06:45 [file.py:255] ...", uvicorn's "INFO:     ...",
# and Python's "file.py:24: DeprecationWarning: ...".
_NOISE = re.compile(
    r"^(?:\([^)]*\)\s*)?(?:DEBUG|INFO|WARNING|WARN)\b|^\S+:\d+: \w*Warning: |^\w*Warning: "
)
_START_BANNER = "# qgate: starting "
_CONTEXT_LINES = 3
# A traceback line under vLLM's optional "(EngineCore pid=7) ERROR 12-01 10:00:00 [core.py:1]"
# prefix: indented (`  File "...", line N`, the code line under it).
_FRAME = re.compile(
    r"^(?:\([^)]*\)\s*)?(?:(?:ERROR|CRITICAL)\s+(?:[\d-]+ [\d:]+ \[[^]]*\])?)?\s{2,}\S"
)

_SIGNAL_READINGS = {
    "SIGKILL": "often the out-of-memory killer; see `dmesg` or `journalctl -k`",
    "SIGSEGV": "a crash in native code (the engine or a kernel library)",
    "SIGBUS": "a crash in native code (the engine or a kernel library)",
    "SIGABRT": "the engine aborted (a failed check in native code)",
    "SIGTERM": "stopped by another process",
}


def is_noise(line: str) -> bool:
    """A log line at DEBUG/INFO/WARNING level or a Python warning: never a cause."""
    return bool(_NOISE.search(line.strip()))


def _last_start(text: str) -> list[str]:
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.startswith(_START_BANNER)]
    return lines[starts[-1] + 1 :] if starts else lines


def _usage_lines(lines: list[str]) -> set[int]:
    """Indexes of argparse usage text: from `usage:` up to the line before `...: error:`."""
    out: set[int] = set()
    start: int | None = None
    for i, line in enumerate(lines):
        if line.startswith("usage:"):
            start = i
        elif start is not None and re.search(r"^\S+: error: ", line):
            out.update(range(start, i))
            start = None
    if start is not None:  # usage text without its error line: hide it all the same
        out.update(range(start, len(lines)))
    return out


def _find(lines: list[str]) -> tuple[int, str] | None:
    candidates = [
        (i, ln.strip())
        for i, ln in enumerate(lines)
        if not ln.startswith("# qgate:") and not is_noise(ln)
    ]
    dead = next((i for i, line in candidates if _DEAD.search(line)), None)
    for pattern in _PATTERNS:
        for i, line in candidates:
            found = pattern.search(line)
            if found and not any(w in line for w in _WRAPPERS) and not _tracker_noise(lines, i):
                return i, found.group(1).strip()[:300]
    return None if dead is None else (dead, _ENGINE_DIED)


def _tracker_noise(lines: list[str], at: int) -> bool:
    """The KeyError that multiprocessing's resource tracker prints when its process group dies."""
    return any("resource_tracker.py" in line for line in lines[max(0, at - 3) : at])


def root_cause(text: str) -> str | None:
    """The line that says why the engine failed, trimmed; None when nothing specific is found.

    Only the log of the last start is read (after qgate's last `starting` note).
    """
    found = _find(_last_start(text))
    return found[1] if found else None


def cause_context(text: str) -> list[str]:
    """Lines for the terminal: the engine's fatal line and the traceback lines right above it;
    none when there is no fatal line (the message names the log). Never argparse usage text."""
    lines = _last_start(text)
    found = _find(lines)
    if found is None:
        return []
    at = found[0]
    hidden = _usage_lines(lines)
    above: list[int] = []
    for i in range(at - 1, max(-1, at - _CONTEXT_LINES), -1):
        if i in hidden or not _FRAME.match(lines[i]) or is_noise(lines[i]):
            break
        above.insert(0, i)
    return [lines[i].rstrip()[:300] for i in [*above, at]]


def death_reading(returncode: int | None) -> str | None:
    """What a death by signal usually means (`killed by SIGKILL` -> the OOM killer), or None."""
    if returncode is None or returncode >= 0:
        return None
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        return None
    return _SIGNAL_READINGS.get(name)


def explain(message: str, returncode: int | None, log_text: str) -> tuple[str, list[str]]:
    """A failure for people: a death by signal read first, then the engine's fatal line (only
    when there is one); and the lines around that fatal line, for the details."""
    reading = death_reading(returncode)
    if reading is not None and message.endswith(")"):
        message = f"{message[:-1]} — {reading})"
    cause = root_cause(log_text)
    return (f"{message}: {cause}" if cause else message), cause_context(log_text)


def root_cause_in(path: Path | None) -> str | None:
    """`root_cause` of a log file (its last 4 MiB), None when unreadable."""
    return root_cause(read_log(path))


def read_log(path: Path | None) -> str:
    """The last 4 MiB of a log file as text; "" when unreadable."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - _MAX_BYTES))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


@contextmanager
def blamed_on(runtime: Runtime) -> Iterator[None]:
    """Turn a request failure inside a stage into the runtime's own failure.

    "connection failed after 4 attempts" says nothing about which server died
    or why; when a request fails, ask the runtime: an exited server raises
    RuntimeFailure with its role, exit status, root cause and log path. A
    server that is still alive leaves the original error, with role and log added.
    """
    try:
        yield
    except RuntimeFailure:
        raise
    except InfrastructureError as exc:
        try:
            runtime.check_alive()
        except RuntimeFailure as dead:
            raise dead from exc
        log = f" (log: {runtime.log_path})" if runtime.log_path else ""
        raise InfrastructureError(
            f"{runtime.role} runtime: {exc.message}{log}", exc.details
        ) from exc
