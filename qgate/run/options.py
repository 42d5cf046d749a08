"""What `qgate run` is asked to do, and what it hands back.

Its own module so that the pipeline and its stages both read it without
importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from qgate.core.verdict import Verdict
from qgate.errors import ExitCode
from qgate.gates.judgement import PerfStatus
from qgate.report.multi_model import CandidateVerdict

__all__ = ["RunOptions", "RunOutcome"]


@dataclass
class RunOptions:
    """What `qgate run` was asked to do."""

    profile: Path
    out_root: Path = Path("qgate-runs")
    key: Path | None = None
    cache_dir: Path | None = None
    refresh_reference: bool = False
    trust_cache_keys: tuple[Path, ...] = ()
    strict_cache: bool = False
    skip_perf: bool = False
    force_perf: bool = False
    progress: bool = True
    metadata: dict[str, str] = field(default_factory=dict)
    attribute: bool = False  # a failing candidate: find which of its changes broke it
    """--metadata KEY=VALUE pairs, recorded in the signed report."""
    cluster: str | None = None
    """--cluster ADDRESS (or $RAY_ADDRESS): run the lives on that Ray cluster; None: the
    profile's cluster.address, else this machine (qgate/run/lives.py, `lives_for`)."""
    preregistration: Path | None = None
    """--preregistration FILE: the statement signed before the run (`qgate plan --sign`) that
    the run must match; None: the run signs its own before its first server starts."""
    executor: str | None = None
    """--executor NAME: the registered executor that makes every life (qgate/runtime/lives.py);
    None: 'ray' on a cluster address, else this machine."""


@dataclass
class RunOutcome:
    """Where the report is, the verdict, and what to tell people."""

    run_dir: Path
    envelope: Path
    verdict: CandidateVerdict
    exit_code: ExitCode
    verdicts: list[Verdict]
    perf_status: PerfStatus
    headline: list[str] = field(default_factory=list)
    engine_warnings: list[str] = field(default_factory=list)
    public_key: Path | None = None
    reference_cached: bool = False
    warnings: list[str] = field(default_factory=list)
    capability_notes: list[str] = field(default_factory=list)
    attribution: list[str] = field(default_factory=list)
    """What attribution found (qgate/report/attribution.py: summary_lines)."""
    cliff: str | None = None
    floor: str | None = None  # the reference's noise floor and what it set (quality.noise_floor)
    """The context ladder's first failing bucket (qgate/report/render/ladder_view.py)."""
    candidates: list[str] = field(default_factory=list)
    """A profile with several candidates: one line per candidate (name, verdict, perf)."""
    time: list[str] = field(default_factory=list)
    """Where the run's time went (start-ups, suites, perf, the rest), one line each."""
