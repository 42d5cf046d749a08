"""The reference and the candidate side by side: started at once, quality at once, perf interleaved.

When both servers fit on the machine (run/plan.py decides: vLLM on both sides,
one candidate, an uncached reference, and on the CPU at least two usable cores
and the memory for two, on an accelerator one device whose memory the two
`gpu_memory_utilization` shares split), each is bound to its own half of the
cores and both start together, so their start-ups overlap (on an accelerator the
candidate starts once the reference is ready). Their quality suites run at the same time; the
reference runs its divergence step first and hands its scores over at once, so
the candidate's divergence (last in its order) rarely waits. The gates are
judged as in sequence (qgate/run/candidate.py: judge) and, only when every
gate passed, the perf scenarios run in interleaved blocks (reference,
candidate, reference, candidate, ...): the two sides see the same machine
state within a block pair, and the spread of the per-block ratios widens each
ratio's interval (qgate/perf/blocks.py). A failing candidate leaves no
reference perf to throw away: the reference's perf is measured only beside a
candidate's.

While one side runs its perf block the other is paused (SIGSTOP to its
process group, SIGCONT after). On the 2-core AVX2 EPYC two runs of
perf/bench_neighbour.py could not tell an idle neighbour's effect from the
shared machine's drift (single-stream output rate x0.82 beside it in an
alternating order, x0.97-1.09 in a balanced one); a paused one takes no CPU.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, ExitStack
from typing import Any, NamedTuple

from qgate.core.plan import swapped
from qgate.core.progress import StageClock
from qgate.core.records import Role
from qgate.core.serving import Runtime
from qgate.gates.board import SettleBoard
from qgate.perf.records import ScenarioRun
from qgate.quality.divergence_data import ScoreSet
from qgate.quality.stage import QualityOutput
from qgate.run.attribute import attribution_wanted
from qgate.run.candidate import CandidateResult, judge, settled_fail
from qgate.run.context import RunContext, quality_on, save_life_probes, save_raw, start_record
from qgate.run.life_probes import Life
from qgate.run.perf import compares_to_reference, perf_blocks, perf_on
from qgate.run.reference import ReferenceSource, store_reference
from qgate.runtime.cores import usable_cores
from qgate.runtime.fingerprint import Fingerprint

__all__ = ["SideBySide", "interleaved", "side_by_side", "start_both"]

log = logging.getLogger("qgate")


def start_both(ctx: RunContext, cand: RunContext, life: ExitStack) -> tuple[Runtime, Runtime]:
    """Spawn both servers, each on half of the cores, then wait for both (start-ups overlap).

    On an accelerator both share one device, each with its `gpu_memory_utilization`;
    the candidate starts once the reference is ready, because vLLM sizes its KV cache
    from the device's free memory while it profiles, which a neighbour starting at the
    same time moves (it fails when memory is freed under it).
    """
    usable = usable_cores()
    half = max(1, len(usable) // 2)
    # lives an executor places on nodes (qgate/cluster/lives.py) share no device: no stagger
    stagger = ctx.profile.target.accelerator.lower() != "cpu" and not ctx.lives.places_lives
    made: list[Runtime] = []
    roles: tuple[tuple[RunContext, Role, list[int]], ...] = (
        (ctx, "reference", usable[:half]),
        (cand, "candidate", usable[half : 2 * half]),
    )
    for side, role, own in roles:
        runtime = side.new_runtime(role)
        runtime.cores_chosen = own  # disjoint halves, whatever else holds cores
        life.callback(runtime.stop)  # stopped on the way out, whatever happens
        runtime.start()
        if stagger:
            runtime.wait_ready()
        made.append(runtime)
    lives: list[Life] = []
    for runtime, side in zip(made, (ctx, cand), strict=True):
        if not stagger:
            runtime.wait_ready()
        name = "reference" if runtime.role == "reference" else cand.side
        side.starts.append(start_record(runtime, name, "life"))
        lives.append(
            (side.profile, runtime, runtime.role, name, len(side.starts) - 1, side.round, "life")
        )
    ctx.probing.at_start_of(lives)  # both at once, each on its own cores
    save_life_probes(ctx)

    def idle_probes(kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:  # both lives' work ended without an error: one pause, both probed
            ctx.probing.at_end_of(lives)
            save_life_probes(ctx)

    life.push(idle_probes)  # runs before the stops registered above
    return made[0], made[1]


def _paused(runtime: Runtime) -> AbstractContextManager[None]:
    """The runtime frozen while its neighbour's perf block runs (engines that can be)."""
    return runtime.paused()


def _scores(early: Future[ScoreSet], whole: Future[QualityOutput]) -> Callable[[], ScoreSet | None]:
    """A call that waits for the reference's scores: handed over early, or with its whole result.

    If the reference fails before its scores exist, the call raises the reference's error.
    """

    def get() -> ScoreSet | None:
        either: list[Future[Any]] = [early, whole]
        wait(either, return_when=FIRST_COMPLETED)
        return early.result() if early.done() else whole.result().scores

    return get


class SideBySide(NamedTuple):
    """What the two lives side by side produced."""

    reference: QualityOutput  # the reference's quality
    ref_perf: list[ScenarioRun]  # its perf baseline ([]: the candidate's perf did not run)
    result: CandidateResult  # the candidate's quality, gates and perf
    source: ReferenceSource = ReferenceSource()  # the reference's results, as stored


def side_by_side(
    ctx: RunContext,
    cand: RunContext,
    fingerprint: Fingerprint | None,
    name: str,
    force_perf: bool,
    clock: StageClock,
    blocks: int,
) -> SideBySide:
    """Both lives at once: the reference's quality, the candidate's result, both sides' perf
    (the reference's results signed into the cache under the key of `fingerprint`)."""
    out = CandidateResult(name=name)
    ref_perf: list[ScenarioRun] = []
    source = ReferenceSource()
    began = time.perf_counter()
    with ExitStack() as life:
        with clock.stage("startup"):
            ref_rt, cand_rt = start_both(ctx, cand, life)
        # Not `with ThreadPoolExecutor`: its exit waits for both suites to finish, so Ctrl-C or
        # a failure would wait minutes; here the servers stop at once and the threads' requests
        # fail fast (the pool is shut down first, without waiting).
        pool = ThreadPoolExecutor(2, thread_name_prefix="qgate")
        life.callback(pool.shutdown, wait=False, cancel_futures=True)
        if not ctx.profile.quality.has_suites():  # a dummy-weights preview: speed only
            reference = QualityOutput(role="reference", effective_config=ref_rt.effective_config())
            out.quality = quality_on(cand, cand_rt, "candidate", reference)
        else:
            reference, out.quality, source = _both_qualities(
                ctx, cand, fingerprint, ref_rt, cand_rt, pool, clock
            )
        judge(cand, out, reference, force_perf)
        if settled_fail(cand, out):
            ctx.probing.settled(ref_rt, cand_rt)
        if out.status in ("ran", "ungated") and compares_to_reference(cand):
            with clock.stage("perf"):
                ref_perf, out.perf_runs = interleaved(
                    ctx, cand, ref_rt, cand_rt, reference, out.quality, blocks
                )
        elif out.status in ("ran", "ungated"):
            with clock.stage("perf"):
                out.perf_runs = perf_blocks(
                    cand, cand_rt, "candidate", out.quality, reference=reference
                )
    out.seconds = round(time.perf_counter() - began, 3)
    return SideBySide(reference, ref_perf, out, source)


def _both_qualities(
    ctx: RunContext,
    cand: RunContext,
    fingerprint: Fingerprint | None,
    ref_rt: Runtime,
    cand_rt: Runtime,
    pool: ThreadPoolExecutor,
    clock: StageClock,
) -> tuple[QualityOutput, QualityOutput, ReferenceSource]:
    """Both quality stages at once; the reference's results signed into the cache."""
    with clock.stage("quality"):
        early: Future[ScoreSet] = Future()
        # one board for both sides: with quality.stop a suite ends once its verdict is
        # settled by what the two have answered so far (qgate/quality/board.py)
        board = None
        if ctx.profile.quality.stop != "off":  # attribution needs the whole reference
            board = SettleBoard(ctx.profile.quality, hold_reference=attribution_wanted(cand))
        ref_future = pool.submit(
            quality_on, ctx, ref_rt, "reference", None, early.set_result, board
        )
        cand_future = pool.submit(
            quality_on, cand, cand_rt, "candidate", _scores(early, ref_future), None, board
        )
        reference = ref_future.result()  # the reference's failure first: it is the root
        source = store_reference(ctx, fingerprint, reference)
        return reference, cand_future.result(), source


def interleaved(
    ctx: RunContext,
    cand: RunContext,
    ref_rt: Runtime,
    cand_rt: Runtime,
    reference: QualityOutput,
    candidate: QualityOutput,
    blocks: int,
    earlier: tuple[Sequence[ScenarioRun], Sequence[ScenarioRun]] = ((), ()),
) -> tuple[list[ScenarioRun], list[ScenarioRun]]:
    """`blocks` blocks per side, reference then candidate (the candidate first in a swapped
    perf round, qgate/run/rounds.py), every run tagged with its block and round. The raw
    files keep each side's `earlier` rounds' runs before them."""
    sides: dict[Role, list[ScenarioRun]] = {"reference": [], "candidate": []}
    kept: dict[Role, Sequence[ScenarioRun]] = {"reference": earlier[0], "candidate": earlier[1]}
    order: list[tuple[RunContext, Runtime, Runtime, Role, QualityOutput]] = [
        (ctx, ref_rt, cand_rt, "reference", reference),
        (cand, cand_rt, ref_rt, "candidate", candidate),
    ]
    if swapped(ctx.round):
        order.reverse()
    probing = ctx.probing
    for runtime in (ref_rt, cand_rt):
        probing.worked(runtime)
    for block in range(blocks):
        for k, (side, runtime, neighbour, role, quality) in enumerate(order):
            if k == 1 and block == blocks - 1:
                # its idle probes here, not after its block: the first side's block it sat
                # through is part of its pause, and that side's own pause (counted from the
                # end of its block) runs on through these probes and this block
                probing.idle_now(runtime)
                save_life_probes(side)
            log.info("perf block %d/%d: %s (the other side paused)", block + 1, blocks, role)
            with _paused(neighbour):
                runs = perf_on(
                    side, runtime, role, quality, save=False, block=block, reference=reference
                )
            probing.worked(runtime)
            sides[role] += runs
            save_raw(side, f"{role}-perf.json", [*kept[role], *sides[role]])
    return sides["reference"], sides["candidate"]
