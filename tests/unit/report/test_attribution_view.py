"""The attribution section: the changes, each trial's verdict and figures, the conclusion."""

from __future__ import annotations

from helpers.report_synthetic import build_report

from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.profile.changes import changes_of
from qgate.report.attribution import Attribution, Trial
from qgate.report.render.md import render_markdown
from qgate.report.verify.single import default_recompute


def test_the_section_names_the_smallest_failing_set_and_each_trial() -> None:
    report = build_report(items=10, requests=3, fns=default_recompute())
    prof = Profile.model_validate(report.profile)
    cand = next(r for r in report.quality.runs if r.role == "candidate").model_copy(deep=True)
    for item in cand.items[:6]:
        item.correct = False
    ref = [r for r in report.quality.runs if r.role == "reference"]
    verdicts = evaluate_quality(prof.quality, ref + [cand], report.quality.divergence)
    report.attribution = Attribution(
        changes=changes_of(prof),
        trials=[
            Trial(
                name="only-kv",
                changes=["args.kv_cache_dtype"],
                verdict="FAIL",
                verdicts=verdicts,
                runs=[cand],
                divergence=report.quality.divergence,
                seconds=61.0,
            ),
            Trial(
                name="only-token", changes=["env.HF_TOKEN"], verdict="ERROR", error="did not start"
            ),
        ],
        minimal=["args.kv_cache_dtype"],
        complete=True,
        lives=2,
        max_lives=8,
    )
    text = render_markdown(report)
    assert (
        "ATTRIBUTION: the smallest failing set is args.kv_cache_dtype (without any one of its "
        "changes it passes) (2 of 8 lives, 2 changes)"
    ) in text
    section = text.split("## Which change broke it", 1)[1].split("\n## ", 1)[0]
    assert '| args.kv_cache_dtype | - | "fp8" |' in section  # unset on the reference side
    assert "| 1 | args.kv_cache_dtype | FAIL | math.short.max_drop" in section
    assert "| 5 / 0 |" in section  # 6 wrong, one of which the reference got wrong too
    assert "| 2 | env.HF_TOKEN | ERROR | did not start | 0 / 0 | – | 0 s |" in section
    assert "2 changes: the budget of 8 lives covers the search's worst case (2)." in section


def test_a_spent_budget_is_shown_as_not_minimal_with_what_was_next() -> None:
    report = build_report(items=4, requests=3, fns=default_recompute())
    report.attribution = Attribution(
        changes=changes_of(Profile.model_validate(report.profile)),
        trials=[Trial(name="only-kv", changes=["args.kv_cache_dtype"], verdict="PASS")],
        minimal=None,
        complete=False,
        lives=1,
        max_lives=1,
        not_tried=["env.HF_TOKEN"],
    )
    text = render_markdown(report)
    assert "ATTRIBUTION: not minimal: budget spent after 1 lives; no smaller failing set" in text
    section = text.split("## Which change broke it", 1)[1].split("\n## ", 1)[0]
    assert "Next, had the budget of lives allowed: env.HF_TOKEN." in section
    assert "may take up to 2 lives, the budget is 1" in section


def test_the_time_table_counts_the_attribution_lives() -> None:
    from qgate.report.derive import time_breakdown

    report = build_report(items=4, requests=3, fns=default_recompute())
    report.attribution = Attribution(
        changes=[],
        trials=[
            Trial(name="only-kv", changes=["args.kv_cache_dtype"], verdict="PASS", seconds=61.4)
        ],
        minimal=None,
        lives=1,
        max_lives=8,
    )
    report.stage_timings = {"load": 1.0, "candidate": 40.0, "attribution": 62.0}
    rows = dict(time_breakdown(report))
    assert rows["attribution: 1 sub-candidate lives (args.kv_cache_dtype 61 s)"] == 62.0
    assert rows["total"] == 103.0
