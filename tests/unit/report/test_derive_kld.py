"""Mean KL with its standard error, both directions, from the stored records
(qgate/report/derive.py: kld_both_ways; shown in the divergence section)."""

from __future__ import annotations

import math

from helpers.report_synthetic import build_report

from qgate.quality.divergence import position_divergence
from qgate.report.derive import kld_both_ways, mean_kld
from qgate.report.render.md import render_markdown


def test_forward_mean_and_its_standard_error_over_sequences() -> None:
    report = build_report()
    both = kld_both_ways(report)
    mean, se, n = both["forward"]
    assert mean == mean_kld(report)
    seqs = [s.kld for s in report.quality.divergence.sequences]  # type: ignore[union-attr]
    means = [sum(k) / len(k) for k in seqs]
    m = sum(means) / len(means)
    sd = math.sqrt(sum((x - m) ** 2 for x in means) / (len(means) - 1))
    assert n == len(seqs) and se is not None and math.isclose(se, sd / math.sqrt(n))


def test_reverse_direction_swaps_the_sides_position_by_position() -> None:
    report = build_report()
    div = report.quality.divergence
    assert div is not None
    swapped = []
    for s in div.sequences:
        assert s.reference_top_ids and s.reference_top_logprobs
        assert s.candidate_top_ids and s.candidate_top_logprobs
        for r_ids, r_lp, c_ids, c_lp, tok in zip(
            s.reference_top_ids,
            s.reference_top_logprobs,
            s.candidate_top_ids,
            s.candidate_top_logprobs,
            s.token_ids,
            strict=True,
        ):
            cand = dict(zip(c_ids, c_lp, strict=True))
            ref = dict(zip(r_ids, r_lp, strict=True))
            swapped.append(position_divergence(cand, ref, tok, div.top_k).kld)
    mean, _, n = kld_both_ways(report)["reverse"]
    assert n == len(div.sequences) and math.isclose(mean, sum(swapped) / len(swapped))
    forward = [k for q in div.sequences for k in q.kld]
    assert not math.isclose(mean, sum(forward) / len(forward))  # KL is not symmetric
    md = render_markdown(report)
    assert "Mean KL(reference || candidate):" in md and "standard error over" in md
    assert "reverse KL(candidate || reference), not gated" in md


def test_reports_without_raw_logprobs_show_the_forward_direction_only() -> None:
    report = build_report()
    div = report.quality.divergence
    assert div is not None
    div.sequences = [s.model_copy(update={"candidate_top_ids": None}) for s in div.sequences]
    assert set(kld_both_ways(report)) == {"forward"}
