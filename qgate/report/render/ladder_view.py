"""The context ladder's section: per length bucket, both sides' accuracy, flips and gate,
and the cliff (the first bucket whose gates failed), read from the report as stored.

The gates are the ones `verify` recomputes from the records; the cliff follows from them.
"""

from __future__ import annotations

from qgate.core.verdict import Verdict
from qgate.profile.context_ladder import bucket_of_suite, first_cliff
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


def cliff_line(report: Report) -> str | None:
    """'the candidate first departs from the reference at context.4096 ([2896, 5792] ...)'."""
    verdicts = _bucket_verdicts(report)
    centre = first_cliff({c: any(not v.passed for v in vs) for c, vs in verdicts.items()})
    if centre is None:
        return None
    passed = sorted(c for c, vs in verdicts.items() if c < centre and all(v.passed for v in vs))
    run = next((r for r in report.quality.runs if r.suite == f"context.{centre}"), None)
    span = (
        f" ([{run.params.get('bucket_lo')}, {run.params.get('bucket_hi')}] tokens)"
        if run is not None
        else ""
    )
    failed = [v.gate for v in verdicts[centre] if not v.passed]
    below = f"; shorter buckets pass: {', '.join(map(str, passed))}" if passed else ""
    return (
        f"the candidate first departs from the reference at context.{centre}{span}: "
        f"{', '.join(failed)} failed{below}"
    )


def ladder_section(report: Report) -> Section | None:
    """Per bucket, shortest first: tokens, both accuracies, lost/gained, the gate; the cliff."""
    verdicts = _bucket_verdicts(report)
    rows: list[list[str]] = []
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
    sec.tables.append(
        Table(
            [
                "Bucket",
                "Tokens",
                "Haystack tokens",
                "Reference",
                "Candidate",
                "Lost",
                "Gained",
                "Gate",
            ],
            rows,
        )
    )
    return sec
