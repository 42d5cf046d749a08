"""The exception tree and the exit codes.

    QgateError                 base; never raised directly
     ├── BadInput              exit 2: profile, report, arguments, data files
     │    └── ProfileError     a profile that fails to load; carries every problem
     ├── InfrastructureError   exit 3: engine did not start, crashed, hung, unreachable
     │    └── RuntimeFailure   a runtime (reference/candidate) failed; carries the log tail
     └── VerificationFailed    exit 1: a report whose signature or verdicts do not hold

A failed gate is a result, not an exception: the pipeline returns it and the
CLI maps it to exit 1. Ctrl-C maps to 130.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    PASS = 0
    GATE_FAILED = 1
    BAD_INPUT = 2
    INFRASTRUCTURE = 3
    INCONCLUSIVE = 4
    INTERRUPTED = 130


class QgateError(Exception):
    """Base of every expected qgate error; the CLI prints it without a traceback."""

    exit_code: ExitCode = ExitCode.BAD_INPUT

    def __init__(self, message: str, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: list[str] = list(details or [])


class BadInput(QgateError):
    """A profile, report, argument or data file that qgate cannot use."""

    exit_code = ExitCode.BAD_INPUT


class ProfileError(BadInput):
    """A profile that fails to load; `details` holds one line per problem."""


class InfrastructureError(QgateError):
    """The engine, the endpoint or the machine failed, not the configuration under test."""

    exit_code = ExitCode.INFRASTRUCTURE


class RuntimeFailure(InfrastructureError):
    """A runtime failed to start, exited, hung or misapplied its configuration."""

    def __init__(
        self,
        role: str,
        message: str,
        log_tail: list[str] | None = None,
        returncode: int | None = None,
    ) -> None:
        super().__init__(f"{role} runtime: {message}", details=list(log_tail or []))
        self.role = role
        self.returncode = returncode
        self.log_tail = list(log_tail or [])


class VerificationFailed(QgateError):
    """A report whose signature, subjects or recomputed verdicts do not hold."""

    exit_code = ExitCode.GATE_FAILED
