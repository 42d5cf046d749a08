"""Every server life graded (issue 44): a small probe set at its start and after an idle pause."""

from __future__ import annotations

from pydantic import Field

from qgate.profile.base import Strict

__all__ = ["EnvelopeSpec", "LivesSpec"]


class LivesSpec(Strict):
    """Probes every fresh server life of the run answers (the first lives, perf rounds,
    attribution trials, reuse and cluster lives): `probes` math items (short form, the quality
    suites' sampling) right after the life is ready, and again after the life has served its
    work and then sat idle for `idle_s` seconds (the window in which vLLM #52150's first
    request came back garbage). Each answer is graded against the item's known answer; a
    candidate life loses an item the reference answered correctly in its quality stage and in
    every probe of the same kind (start or idle) it asked itself, and the candidate in its own
    quality stage (a loss there is the quality gates'), and more than `max_flips`
    lost items fail that life (named in the report by side, round and node), whose perf
    figures are then kept out of the ratios. The reference's own lives are held to the items'
    known answers too: one that loses more than `max_flips` items another of its lives of the
    kind answered right, or answers none right, is broken, which makes the run INCONCLUSIVE
    and keeps its round out of the ratios. A side qgate does not start (an `endpoint`) is
    probed the same way, at qgate's first contact with it and after the pause, and named an
    endpoint, not a life of qgate's. Needs a math suite in `quality`.
    """

    probes: int = Field(
        default=4,
        ge=0,
        le=64,
        description="Items asked at each life's start and again after its idle pause, one "
        "after another (the first after the pause is the request the field's bug corrupts). "
        "0: no life probes.",
    )
    idle_s: float = Field(
        default=50.0,
        ge=0,
        le=3600,
        description="Seconds each life sits idle, once, before its idle probes. The default "
        "covers the window reported in the field (vLLM #52150, ROCm/aiter #4888: the first "
        "request after 20-50 s idle is garbage): a fault that fires after T seconds of quiet "
        "fires after any longer pause, so 50 s catches every T up to 50. Counted from the "
        "life's last work: side by side, the other side's last perf block is part of it. "
        "0: no idle probes, only the start probes.",
    )
    max_flips: int = Field(
        default=0,
        ge=0,
        le=64,
        description="Items a candidate life may lose at its start or after its pause (each "
        "kind counted on its own) before that life fails; and a reference life, of the items "
        "another of its lives of that kind answered right, before it is broken (the run "
        "INCONCLUSIVE).",
    )


class EnvelopeSpec(Strict):
    """The pooled envelope gate (issue 53 item 4): every graded probe answer the candidate gave
    while serving (each perf scenario's probes at every level, block and round, and every
    life's start and idle probes) pooled into one count of broken answers: an answer is
    broken when it is wrong on an item the reference answered right under the same condition
    (the same scenario, or its own lives' probes of that kind) and the candidate answered
    right in its own quality stage. The gate PASSes only when the one-sided exact
    (Clopper-Pearson) upper bound on the rate of broken answers is within `max_broken`,
    FAILs when the lower bound is above it, and is INCONCLUSIVE otherwise: 4 clean answers
    bound the rate at 53%, 29 at 10%, 59 at 5% (95%). The per-scenario and per-life gates
    stay as gross-fault alarms, each under its own label. `qgate validate` refuses a profile
    that writes `envelope`, `lives`, `perf.probes` or `perf.probe_share` and whose runs can
    never pool that many answers (every count at its most), since each of them would end
    INCONCLUSIVE."""

    max_broken: float = Field(
        default=0.1,
        gt=0,
        lt=1,
        description="The rate of broken answers under serving that the envelope must show it "
        "stays within. 0.1 takes 29 clean probe answers to show (95%); 0.05 takes 59.",
    )
    alpha: float = Field(
        default=0.05,
        gt=0,
        lt=1,
        description="One minus the confidence of its bounds (one-sided).",
    )
