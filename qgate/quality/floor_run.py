"""The reference asked again in its own life: the records of its noise floor (issue 44).

After its quality suites, the reference answers its math and recall items a second time
at `quality.noise_floor`'s concurrency (another batch; where prefix caching is on, its
prompts are now cached too) and scores its own divergence continuations again there. The
candidate never runs this: what it measures is the reference's disagreement with itself.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from qgate.core import progress
from qgate.profile import DivergenceSuite, QualitySpec
from qgate.profile.noise_floor import FLOOR_SUITES
from qgate.profile.suites import configured
from qgate.quality.divergence_data import ScoreSet
from qgate.quality.divergence_suite import build_divergence_run
from qgate.quality.noise_floor import FloorRecords
from qgate.quality.records import DivergenceRun, SuiteRun
from qgate.quality.runner import PairedRunner, SuiteContext, SuiteRunner

log = logging.getLogger("qgate")

__all__ = ["ask_again"]


async def ask_again(spec: QualitySpec, ctx: SuiteContext, scores: ScoreSet | None) -> FloorRecords:
    """The reference's second asks (`spec.noise_floor` must be set) in the life of `ctx`."""
    floor = spec.noise_floor
    assert floor is not None
    second = floor.second_concurrency(spec.concurrency)
    again = dataclasses.replace(ctx, concurrency=second, board=None)
    t0 = time.monotonic()
    runs: list[SuiteRun] = []
    divergence: DivergenceRun | None = None
    with progress.suite(ctx.role, f"noise floor (concurrency {second})"):
        for entry, setting in configured(spec):
            if entry.key in FLOOR_SUITES:
                runner: SuiteRunner = entry.load()
                runs += await runner.run(setting, again)
            elif entry.paired and floor.divergence and scores is not None:
                assert isinstance(setting, DivergenceSuite)
                paired: PairedRunner = entry.load()
                rescored = await paired.candidate(scores, again)
                divergence = build_divergence_run(scores, rescored)
            ctx.check_alive()
    wall = round(time.monotonic() - t0, 3)
    log.info("reference: noise floor asked again at concurrency %d in %.0f s", second, wall)
    return FloorRecords(
        concurrency=spec.concurrency,
        second_concurrency=second,
        confidence=floor.confidence,
        runs=runs,
        divergence=divergence,
        wall_s=wall,
    )
