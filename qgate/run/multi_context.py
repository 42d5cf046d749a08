"""The state of a multi-candidate run: the reference's context, one per candidate, results.

`prepare_multi` resolves the checkpoint, emulates weights, loads the signer
and makes the run folder once; each candidate gets a RunContext of its own
whose run folder is `candidates/NAME` inside the run's, so raw results and
logs never collide.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

from qgate.core.verdict import Verdict
from qgate.perf.records import ScenarioRun
from qgate.profile.load_multi import LoadedMulti
from qgate.quality.records import DivergenceRun
from qgate.quality.stage import QualityOutput
from qgate.report.model import PerfStatus
from qgate.run.context import RunContext
from qgate.run.options import RunOptions

__all__ = ["CANDIDATES_DIR", "CandidateResult", "MultiContext", "prepare_multi"]

log = logging.getLogger("qgate")

CANDIDATES_DIR = "candidates"


@dataclass
class MultiContext:
    """The reference's context (run folder root) and one context per candidate."""

    loaded: LoadedMulti
    reference: RunContext
    candidates: list[RunContext]


@dataclass
class CandidateResult:
    """What one candidate produced: its quality, gates and perf, or why it could not."""

    name: str
    quality: QualityOutput | None = None
    divergence: DivergenceRun | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    status: PerfStatus = "skipped: --skip-perf"
    perf_runs: list[ScenarioRun] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None


def prepare_multi(opts: RunOptions, loaded: LoadedMulti) -> MultiContext:
    """Resolve the checkpoint, emulate weights once per distinct setting, load the signer."""
    from qgate.report.files import new_run_dir
    from qgate.run.context import model_paths, resolve_model, select, signer_for
    from qgate.runtime.capabilities import probe_cpu

    cpu = probe_cpu()
    first = loaded.multi.candidates[0].profile
    source = resolve_model(first)
    signer = signer_for(opts, first)
    run_dir = new_run_dir(opts.out_root, loaded.multi.name)
    contexts = []
    for cand in loaded.multi.candidates:
        profile, selection = select(cand.profile, cpu)
        paths = model_paths(profile, source)
        contexts.append(
            RunContext(
                opts=opts, profile=profile, profile_path=loaded.path, profile_sha256=loaded.sha256,
                run_dir=run_dir / CANDIDATES_DIR / cand.name, source_model=source,
                model_paths=paths, tokenizer_path=profile.model.tokenizer or source,
                signer=signer, declared_profile=cand.profile, selection=selection,
            )
        )  # fmt: skip
    for note in dict.fromkeys(n for c in contexts for n in c.selection.notes):
        log.info("%s", note)
    log.info("run folder %s (%d candidates)", run_dir, len(contexts))
    return MultiContext(loaded, dataclasses.replace(contexts[0], run_dir=run_dir), contexts)
