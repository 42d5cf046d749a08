"""The engine's own fatal line, picked out of a log whose tail is only wrappers."""

from __future__ import annotations

from pathlib import Path

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
    with pytest.raises(RuntimeFailure, match="candidate runtime: server exited") as err, \
            blamed_on(dead):  # type: ignore[arg-type]
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
