"""Which derivation's checks verify applies: the signing qgate's, never the one a report claims.

`quality.derivation` and `perf.derivation` say which figures the qgate that made a report
derived; verify relaxes its checks for older ones (no V2 verdict fields before quality 2, no
unconfirmed-changes warning before 3, counters dropped from pooled blocks before perf 5,
stored figures only "covered" below the current perf derivation, the perf-rounds interval
rule of perf 6, Tango's plain score bound above 40 items before quality 6, no agent result's
`served` gate, nor a structured output cut by max_tokens graded `unconstrained`, before
quality 8). A report cannot
be trusted to say that of itself: someone who holds the key could lower the number and switch
the newer checks off.

So the derivations are taken from the qgate that signed. The report records which one in
`fingerprint.qgate_revision` (`git describe` of the source tree, or the commit of a `git
archive`); `qgate_version` has been 0.1.0 throughout, so it tells nothing yet. `SIGNERS`
lists the revisions known to have written older derivations (those of the committed example
runs, checked by their tests); any other report, the revision unknown or absent, is held to
this qgate's derivations (the newest). The claimed numbers must equal the signer's, and they
may not be below what the records themselves need (`record_floor`, from each raw record
kind's derivation in record_kinds.RAW: a life probe set's cache salt is perf derivation 15, a
perf run's cache records 14, a graded session turn 9, a graded probe or a life's records 8, a
run in a later round 6, a second block 4, a time series 3; a
divergence cross-check is quality 5, a noise floor, speculative counters or an engine's
logged speculative_config 4, reuse passes or calibration records 2, a verdict with its
eval-result fields quality 2), so naming an old revision does not lower the checks of
records that revision could not have made. What remains (named under "signed but not
re-derived"): the revision is itself signed, not re-derived, so a report whose records an
older listed revision could have made may name that revision and be checked as it would
have been.
"""

from __future__ import annotations

from typing import NamedTuple

from qgate.errors import VerificationFailed
from qgate.gates.judgement import PERF_DERIVATION, QUALITY_DERIVATION
from qgate.report.model import Report
from qgate.report.verify.record_kinds import floor

__all__ = ["SIGNERS", "Derivations", "check_derivations", "record_floor", "signer_derivations"]


class Derivations(NamedTuple):
    """The quality and perf derivation numbers, and why they are what they are."""

    quality: int
    perf: int
    why: str


# fingerprint.qgate_revision -> (quality, perf) derivations that revision wrote: every
# revision known to have signed a report of an older derivation than this qgate's (the
# committed examples; tests/unit/report/test_verify_derivation.py checks each).
SIGNERS: dict[str, tuple[int, int]] = {
    "git archive 7a13e74": (1, 1),  # examples/h200/llama3-8b-shape-h200-preview (schema 1)
    "git archive e7e159d": (1, 2),  # examples/h200x2/...-preview
    "git archive 6c77f54": (1, 2),  # examples/h200x2/...-preview-r2
    "git archive 5916213": (1, 4),  # examples/h200/one-life/preview-run*
    "git archive 6828f90": (1, 4),  # examples/h200/one-life/smollm2-run*
    "git archive 9cf3e66": (2, 5),  # examples/h200/smollm2-h200-fp8
    "git archive add1877": (2, 5),  # examples/h200/side-by-side/run*
    "git archive bfbcf8c": (3, 5),  # examples/h200/kv-offload
    "0e0f091629e4-dirty": (3, 6),  # the first examples/cpu/smollm2-cpu-rounds (commit 3acf0d1)
    "6e7923722337": (3, 7),  # examples/cpu/smollm2-cpu-rounds, re-run for the t interval
    "git archive bd330ba": (4, 9),  # examples/h200/draft/run*
    "git archive 0ec3abe": (4, 9),  # examples/h200/kv-offload-envelope
    "3809bf930c53": (5, 13),  # examples/cpu/smollm2-cpu-int8-demo (the plain score bound)
    "git archive 9e9065f": (6, 14),  # examples/h100/kv-offload (the exact bound on its grid)
    "fb6687fed8f4": (7, 14),  # examples/cpu/smollm2-cpu-int8-demo-zen5 (life probes unsalted)
}


def signer_derivations(report: Report) -> Derivations:
    """The derivations the qgate that signed `report` wrote: from `SIGNERS` by its recorded
    revision, else this qgate's (the newest)."""
    fp = report.fingerprint
    revision = fp.qgate_revision if fp is not None else None
    if revision is not None and revision in SIGNERS:
        quality, perf = SIGNERS[revision]
        return Derivations(quality, perf, f"what qgate revision {revision!r} wrote")
    shown = f"qgate revision {revision!r}" if revision else "no qgate revision recorded"
    return Derivations(
        QUALITY_DERIVATION,
        PERF_DERIVATION,
        f"{shown}: not one known to have written an older derivation, so this qgate's",
    )


def record_floor(report: Report) -> Derivations:
    """The least derivations that could have made the report's records and figures: the
    newest that introduced a raw record kind it holds (record_kinds.RAW), and quality 2 for
    verdicts with their eval-result fields."""
    quality, perf, why = floor(report)
    if quality < 2 and any(v.metric is not None for v in report.quality.verdicts):
        quality = 2
        why.append("quality verdicts with their eval-result fields (quality 2)")
    return Derivations(quality, perf, "; ".join(why) or "no record needs more than 1")


def check_derivations(report: Report) -> Derivations:
    """The derivations verify applies: the signer's; raise VerificationFailed when the report
    claims others, or fewer than its records need. A claim above this qgate's, from a signer
    not listed as older, is left to the recomputation, which names the newer qgate."""
    signer = signer_derivations(report)
    floor = record_floor(report)
    claims = (
        ("quality.derivation", report.quality.derivation, signer.quality, floor.quality),
        ("perf.derivation", report.perf.derivation, signer.perf, floor.perf),
    )
    newest = {"quality.derivation": QUALITY_DERIVATION, "perf.derivation": PERF_DERIVATION}
    for name, claimed, signed, least in claims:
        if claimed > newest[name] and signed == newest[name]:
            continue  # perhaps a newer qgate's: a listed older signer's claim is refused below
        if claimed < least:
            raise VerificationFailed(
                f"{name}: {claimed} stored, at least {least} re-derived from the records "
                f"({floor.why})"
            )
        if claimed != signed:
            raise VerificationFailed(
                f"{name}: {claimed} stored, {signed} re-derived ({signer.why})"
            )
    return signer
