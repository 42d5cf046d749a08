"""The context ladder's section: per length bucket, both sides' accuracy, flips, divergence
and gate, and the cliff (the first bucket whose gates failed), read from the report as stored.

The gates are the ones `verify` recomputes from the records; the cliff follows from them.
The divergence columns are computed here from the stored logprobs with the gates' function
(qgate/quality/ladder_divergence.py), whether or not the profile gates them.
"""

from __future__ import annotations

from qgate.core.verdict import Verdict
from qgate.profile.context_ladder import bucket_of_suite, first_cliff
from qgate.quality.ladder_divergence import BucketDivergence, bucket_divergence
from qgate.quality.records import SuiteRun
from qgate.quality.stats import pct
from qgate.report.derive import accuracy, flips, suite_pairs
from qgate.report.model import Report
from qgate.report.render.parts import Section, Table, fmt

__all__ = ["cliff_line", "ladder_section"]


def _bucket_verdicts(report: Report) -> dict[int, list[Verdict]]:
    out: dict[int, list[Verdict]] = {}
    for v in report.quality.verdicts:
        centre = bucket_of_suite(v.suite or "")
        if centre is not None:
            out.setdefault(centre, []).append(v)
    return out


def _reference_correct(report: Report, centre: int) -> int | None:
    """How many of bucket `centre`'s items the reference answered right (None: no run)."""
    ref = next(
        (
            r
            for r in report.quality.runs
            if r.suite == f"context.{centre}" and r.role == "reference"
        ),
        None,
    )
    return None if ref is None else accuracy(ref)[0]


def cliff_line(report: Report) -> str | None:
    """'the candidate first departs from the reference at context.4096 ([2896, 5792] ...)'."""
    verdicts = _bucket_verdicts(report)
    centre = first_cliff({c: any(not v.passed for v in vs) for c, vs in verdicts.items()})
    if centre is None:
        return None
    shorter = sorted(c for c, vs in verdicts.items() if c < centre and all(v.passed for v in vs))
    # a bucket the reference answered nothing right in passes vacuously: it had nothing to lose
    empty = [c for c in shorter if _reference_correct(report, c) == 0]
    passed = [c for c in shorter if c not in empty]
    run = next((r for r in report.quality.runs if r.suite == f"context.{centre}"), None)
    span = (
        f" ([{run.params.get('bucket_lo')}, {run.params.get('bucket_hi')}] tokens)"
        if run is not None
        else ""
    )
    failed = [v.gate for v in verdicts[centre] if not v.passed]
    below = f"; shorter buckets pass: {', '.join(map(str, passed))}" if passed else ""
    if empty:
        below += (
            f"; {', '.join(map(str, empty))}: nothing to lose "
            "(the reference answered no item right there)"
        )
    return (
        f"the candidate first departs from the reference at context.{centre}{span}: "
        f"{', '.join(failed)} failed{below}"
    )


def _divergence(ref: SuiteRun | None, cand: SuiteRun | None) -> BucketDivergence | None:
    if ref is None or cand is None:
        return None
    top_k = ref.params.get("logprobs_top_k")
    return bucket_divergence(ref, cand, top_k) if isinstance(top_k, int) and top_k > 0 else None


def _divergence_cells(d: BucketDivergence | None) -> list[str]:
    if d is None or d.top1_agreement is None:
        return ["–", "–", "–", "0" if d is None else f"0 ({d.skipped} items without)"]
    return [
        fmt(d.mean_kld),
        fmt(d.max_kld),
        pct(d.top1_agreement),
        f"{d.positions} ({d.items} items)",
    ]


DIVERGENCE_LINE = (
    "Divergence: KL(reference || candidate) over the top-k logprobs of the answers' generated "
    "tokens (the divergence suite's truncated top-k math), at the positions where both sides "
    "had the identical context: the same prompt token ids, then each generated position while "
    "both sides' tokens so far are equal, up to and including the first where they part (so an "
    "item adds at most one top-1 disagreement). Positions after that have different contexts "
    "and are not compared. Gated only where the profile sets a limit."
)


def ladder_section(report: Report) -> Section | None:
    """Per bucket, shortest first: tokens, both accuracies, lost/gained, the gate; the cliff."""
    verdicts = _bucket_verdicts(report)
    rows: list[list[str]] = []
    with_logprobs = False
    for suite, ref, cand in suite_pairs(report.quality.runs):
        centre = bucket_of_suite(suite)
        if centre is None:
            continue
        any_run = ref or cand
        assert any_run is not None
        p = any_run.params
        rc, rn = accuracy(ref)
        cc, cn = accuracy(cand)
        lost, gained = flips(ref, cand) if ref is not None and cand is not None else ([], [])
        vs = verdicts.get(centre, [])
        result = "–" if not vs else ("PASS" if all(v.passed for v in vs) else "FAIL")
        with_logprobs |= bool(p.get("logprobs_top_k"))
        measured = f"{p.get('haystack_tokens_min')}-{p.get('haystack_tokens_max')}"
        if p.get("clip_reason"):
            measured += " (clipped)"
        rows.append(
            [
                str(centre),
                f"[{p.get('bucket_lo')}, {p.get('bucket_hi')}]",
                measured,
                f"{fmt(rc / rn if rn else None)} ({rc}/{rn})",
                f"{fmt(cc / cn if cn else None)} ({cc}/{cn})",
                str(len(lost)),
                str(len(gained)),
                *_divergence_cells(_divergence(ref, cand)),
                result,
            ]
        )
    if not rows:
        return None
    sec = Section("Context-length ladder")
    sec.lines.append(
        "Recall items in length buckets up to the model's limit, each bucket gated on its own; "
        "bucket edges at the half powers of two, so every power-of-two boundary lies inside a "
        "bucket with items on both sides of it. Haystack tokens as measured with the served "
        "model's tokenizer."
    )
    line = cliff_line(report)
    sec.lines.append(f"CLIFF: {line}" if line else "No cliff: every bucket's gates passed.")
    head = ["Bucket", "Tokens", "Haystack tokens", "Reference", "Candidate", "Lost", "Gained"]
    divergence = ["Mean KL", "Max KL", "Top-1 agree", "Positions"]
    if with_logprobs:
        sec.lines.append(DIVERGENCE_LINE)
    else:  # a report made before the ladder asked logprobs, or top_k 0
        rows = [[*r[:7], r[-1]] for r in rows]
        divergence = []
    sec.tables.append(Table([*head, *divergence, "Gate"], rows))
    return sec
