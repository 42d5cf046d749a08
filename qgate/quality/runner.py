"""How a suite runs on one runtime: the context it gets and the two runner protocols.

A suite's entry (qgate/profile/suites.py) names its runner as "module:attribute";
the quality stage (stage.py) imports it on first use and calls it with a
`SuiteContext`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from qgate.core.records import Role
from qgate.quality.board import Board
from qgate.quality.client import SuiteClient
from qgate.quality.divergence_data import ScoreSet
from qgate.quality.records import SuiteRun

__all__ = ["PairedRunner", "SuiteContext", "SuiteRunner"]


@dataclass(frozen=True)
class SuiteContext:
    """One runtime as a suite sees it, and the request settings every suite shares."""

    role: Role
    base_url: str
    model: str
    headers: dict[str, str]
    concurrency: int
    seed: int
    max_model_len: int | None
    timeout_s: float
    tokenizer_path: Path | None = None
    check_alive: Callable[[], None] = lambda: None
    board: Board | None = None  # set when the suites may stop early (quality.stop)
    cross_check: bool = False  # the candidate's divergence scored a second way (issue 55)

    def client(self, concurrency: int | None = None) -> SuiteClient:
        """The suites' one HTTP client for this runtime (its headers, retries and error
        mapping), `concurrency` requests in flight (default the stage's)."""
        return SuiteClient(
            self.base_url,
            self.model,
            concurrency=self.concurrency if concurrency is None else concurrency,
            timeout_s=self.timeout_s,
            headers=self.headers,
        )

    def common(self) -> dict[str, Any]:
        """The keyword arguments the HTTP suites take (`run_math`, `run_recall`)."""
        return {
            "concurrency": self.concurrency,
            "seed": self.seed,
            "max_model_len": self.max_model_len,
            "headers": self.headers,
            "timeout_s": self.timeout_s,
            "board": self.board,
        }


class SuiteRunner(Protocol):
    """The lazily imported half of an exact-answer suite: its data digests and its run."""

    def data_digests(self, setting: Any, max_model_len: int | None) -> dict[str, str]:
        """Result id -> sha256 of what defines its prompts (the reference cache keys on it)."""
        ...

    async def run(self, setting: Any, ctx: SuiteContext) -> list[SuiteRun]:
        """Every result of the suite on one runtime, one `SuiteRun` per result id."""
        ...


class PairedRunner(Protocol):
    """The paired suite (divergence): the reference's scores, then the candidate's on them."""

    def data_digests(self, setting: Any, max_model_len: int | None) -> dict[str, str]:
        """Result id -> sha256 of what defines its prompts."""
        ...

    async def reference(self, setting: Any, ctx: SuiteContext) -> ScoreSet:
        """Generate on the reference and score what it generated."""
        ...

    async def candidate(self, reference: ScoreSet, ctx: SuiteContext) -> ScoreSet:
        """Score the reference's (possibly cached) token sequences on the candidate."""
        ...
