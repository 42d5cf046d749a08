"""A report missing any planned observation is rejected (qgate/report/verify/item_plan.py, issue
54): an insider who drops items from both sides of a suite, or a suite's last items, or a
divergence sequence, or swaps a reuse pass's item for another of the first ask, and derives
every verdict and the items root again with qgate's own functions, signs a report verify
refuses; the unedited report, and a stop at a look the records decide, verify.

The full insider edits (re-derived and re-signed, ~1 s each) run on the CPU demo and on the
example with reuse passes; the other deletion classes are held by the check itself."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.report_synthetic import PROFILE, build_report, make_signer
from helpers.resign import example_report, rederived, resigned_verify

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.gates.quality import evaluate_quality
from qgate.profile import ContextLadder, Profile
from qgate.profile.context_ladder import buckets, item_id, targets
from qgate.quality.data_context_ladder import ladder_codes
from qgate.quality.item_ids import recall_ids
from qgate.quality.look_order import look_order
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.report.items_tree import items_root
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verdict import overall
from qgate.report.verify.item_plan import check_items_planned
from qgate.report.verify.ladder_check import check_ladder_items
from qgate.report.verify.rederive import Rederived
from qgate.report.verify.rederive_lm_eval import check_lm_eval_items
from qgate.report.verify.single import default_recompute, verify_bytes

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
DEMO = EXAMPLES / "cpu" / "smollm2-cpu-int8-demo"
PASSES = EXAMPLES / "h200" / "kv-offload-envelope"


def _runs(report: Report, suite: str) -> list[SuiteRun]:
    return [r for r in report.quality.runs if r.suite == suite]


def _insider(edit: Callable[[Report], object]) -> Callable[[Report], None]:
    """`edit`, then every verdict and the items root derived again, as an insider would."""

    def apply(report: Report) -> None:
        edit(report)
        rederived(report, quality=True)
        report.items_root = items_root(report.quality.runs)

    return apply


def _drop_both(report: Report) -> None:
    gone = _runs(report, "math.short")[0].items[-2].id
    for run in _runs(report, "math.short"):
        run.items = [i for i in run.items if i.id != gone]


def _drop_last(report: Report) -> None:
    for run in _runs(report, "recall.512"):
        run.items = run.items[:-5]


def _drop_sequence(report: Report) -> None:
    assert report.quality.divergence is not None
    report.quality.divergence.sequences.pop()


def test_the_unedited_report_holds_its_plan() -> None:
    result = resigned_verify(DEMO, lambda r: None)
    assert (
        "6 result(s) of 404 items hold the item ids the profile plans; 16 divergence "
        "sequences its corpus's" in result.checked
    )


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (_drop_both, r"^quality\.runs math\.short \(reference\): 80 items stored, 81 planned; "),
        (
            _drop_last,
            r"^quality\.runs recall\.512 \(reference\): 35 items stored, 40 planned; missing "
            r"recall\.512\.h7\.d0-10, .*\(5 items\)$",
        ),
        (_drop_sequence, r"^quality\.divergence\.sequences: 15 items stored, 16 planned; "),
    ],
    ids=["one item from both sides", "a suite's last items", "a divergence sequence"],
)
def test_planned_items_deleted_and_everything_derived_again_are_refused(
    edit: Callable[[Report], None], reason: str
) -> None:
    with pytest.raises(VerificationFailed, match=reason):
        resigned_verify(DEMO, _insider(edit))


def _one_side(report: Report) -> None:
    _runs(report, "math.short")[1].items.pop(0)


def _outside(report: Report) -> None:
    for run in _runs(report, "recall.512"):
        run.items[0].id = "recall.512.h99.d0-10"


def _twice(report: Report) -> None:
    for run in _runs(report, "math.long"):
        run.items.append(run.items[0])


def _result(report: Report) -> None:
    report.quality.runs = [r for r in report.quality.runs if r.suite != "math.long"]


def _planned(report: Report) -> None:
    for run in _runs(report, "math.short"):
        run.items, run.planned, run.stopped = run.items[:76], 76, "settled"


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (_one_side, r"math\.short \(candidate\): 80 items stored, 81 planned; missing "),
        (
            _outside,
            r"recall\.512 \(reference\): 40 items stored, 40 planned; missing "
            r"recall\.512\.h0\.d0-10; not planned recall\.512\.h99\.d0-10$",
        ),
        (_twice, r"math\.long \(reference\): 82 items stored, 81 planned; stored twice "),
        (_result, r"math\.long \(reference\): no records stored; the profile plans the result"),
        (_planned, r"math\.short \(reference\)\.planned: 76 stored, 81 re-derived"),
    ],
    ids=["one side", "an id outside the set", "an item twice", "a whole result", "planned"],
)
def test_every_side_holds_every_planned_result_and_item_once(
    edit: Callable[[Report], None], reason: str
) -> None:
    report = example_report(DEMO)
    profile = Profile.model_validate(report.profile)
    edit(report)
    with pytest.raises(VerificationFailed, match=reason):
        check_items_planned(report, profile)


def _swap_pass_item(report: Report) -> None:
    """Each side's warm pass: its last item replaced by a copy of another item of the first
    ask, one the pass's cut (quality.reuse.limit) does not hold."""
    for p in report.quality.passes:
        if p.name != "warm":
            continue
        first = next(
            r for r in report.quality.runs if r.role == p.role and r.suite == "recall.1024"
        )
        (pass_suite,) = p.suites
        assert pass_suite.run is not None
        held = {i.id for i in pass_suite.run.items}
        pass_suite.run.items[-1] = next(i for i in first.items if i.id not in held).model_copy()


def test_a_pass_item_swapped_for_one_outside_its_cut_is_refused() -> None:
    with pytest.raises(
        VerificationFailed,
        match=r"^quality\.passes: the reference's warm pass of recall\.1024: 65 items stored, "
        r"65 planned by the cut; missing recall\.1024\.h12\.d4-90; not planned recall\.1024\.h13",
    ):
        resigned_verify(PASSES, _insider(_swap_pass_item))


LOOKS = {"stop": "looks", "looks": 3, "concurrency": 4}


def _looks_report(cherry_pick: bool) -> Report:
    """A synthetic report under `stop: looks`: the reference answers all 300 math items, the
    candidate stops at the first look (100 items, one lost), every verdict derived from them.
    `cherry_pick`: the candidate holds 100 items, but not the first of the seeded order."""
    data = copy.deepcopy(PROFILE)
    data["quality"] |= LOOKS
    data["quality"]["math"] |= {"limit": 300, "rule": "bound", "max_drop": 0.15}
    report = build_report(items=300, fns=default_recompute(), profile_json=data)
    ref, cand = _runs(report, "math.short")
    order = look_order([i.id for i in cand.items], 0)
    kept = set(order[100:200] if cherry_pick else order[:100])
    cand.items = [i for i in cand.items if i.id in kept]
    cand.planned, cand.stopped = 300, "PASS at look 1 of 3 (100 of 300 items)"
    q = report.quality
    q.verdicts = evaluate_quality(Profile.model_validate(data).quality, q.runs, q.divergence)
    report.verdict = overall(report.all_verdicts(), report.perf.status)
    return report


def _verify(report: Report) -> list[str]:
    signer = make_signer("ecdsa")
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, signer)
    return verify_bytes(envelope, signer.public_pem, recompute=default_recompute()).checked


def test_a_stop_at_a_deciding_look_verifies_and_other_items_do_not() -> None:
    checked = _verify(_looks_report(cherry_pick=False))
    assert any(c.startswith("2 result(s) of 400 items hold the item ids") for c in checked)
    with pytest.raises(
        VerificationFailed,
        match=r"^quality\.runs math\.short \(candidate\): 100 items stored, 100 planned first "
        r"\(of 300, in the look order of seed 0: it stopped early\); missing ",
    ):
        _verify(_looks_report(cherry_pick=True))


def test_a_stopped_run_holds_the_first_items_it_asks_in_its_own_order() -> None:
    """A suite that does not shuffle (recall) asks in its own order under every stop: a run
    that stopped early holds the first of it, whatever the other side holds."""
    data = copy.deepcopy(PROFILE)
    data["quality"] = {"recall": {"context_tokens": [512], "haystacks": 4}, "stop": "settled"}
    profile = Profile.model_validate(data)
    base = SuiteRun(suite="recall.512", role="reference", data_sha256="0" * 64, items=[])
    assert profile.quality.recall is not None
    planned = recall_ids(profile.quality.recall, base)
    report = build_report()  # its quality records replaced by the recall runs below
    report.quality.divergence = None

    def run(role: str, held: list[str], stopped: bool) -> SuiteRun:
        return base.model_copy(
            update={
                "role": role,
                "items": [_record(i) for i in held],
                "planned": len(planned) if stopped else None,
                "stopped": "settled at 5 of 20 items" if stopped else None,
            }
        )

    report.quality.runs = [run("reference", planned, False), run("candidate", planned[:5], True)]
    assert check_items_planned(report, profile) == (
        "2 result(s) of 25 items hold the item ids the profile plans"
    )
    report.quality.runs[1] = run("candidate", planned[:4] + planned[6:7], True)
    with pytest.raises(VerificationFailed, match=r"missing recall\.512\.h0\.d4-90; not planned"):
        check_items_planned(report, profile)


def _record(item: str) -> ItemRecord:
    return ItemRecord(
        id=item, prompt_sha256="0" * 64, output="", answer=None, expected="", correct=False
    )


LADDER = ContextLadder.model_validate({"up_to": 2048, "per_bucket": 6})


def _bucket(held: range | list[int], stopped: bool) -> SuiteRun:
    bucket = buckets(LADDER.start, LADDER.up_to)[0]
    codes = ladder_codes(LADDER, bucket.centre, LADDER.per_bucket)
    at = targets(bucket, LADDER.per_bucket, 8192)
    items = [
        ItemRecord(
            id=item_id(bucket.centre, i, at[i], codes[i][0]),
            prompt_sha256=hashlib.sha256(str(i).encode()).hexdigest(),
            output=f"The access code is {codes[i][1]}.",
            answer=codes[i][1],
            expected=codes[i][1],
            correct=True,
        )
        for i in held
    ]
    return SuiteRun(
        suite=bucket.suite,
        role="candidate",
        data_sha256="0" * 64,
        items=items,
        planned=LADDER.per_bucket if stopped else None,
        stopped="settled" if stopped else None,
    )


def test_a_ladder_bucket_holds_every_index_or_the_first_it_asks() -> None:
    check_ladder_items(_bucket(range(6), stopped=False), LADDER)
    check_ladder_items(_bucket(range(3), stopped=True), LADDER)
    with pytest.raises(VerificationFailed, match="5 items stored, 6 planned in the bucket"):
        check_ladder_items(_bucket([0, 1, 2, 3, 5], stopped=False), LADDER)
    with pytest.raises(VerificationFailed, match=r"not the first 3 it asks .*missing index 1$"):
        check_ladder_items(_bucket([0, 2, 5], stopped=True), LADDER)


def test_an_lm_eval_task_holds_its_first_documents() -> None:
    data = copy.deepcopy(PROFILE)
    data["quality"] = {"lm_eval": [{"task": "gsm8k_local", "limit": 4}]}
    profile = Profile.model_validate(data)

    def run(docs: list[int]) -> SuiteRun:
        items = [_record(f"doc-{d:05d}") for d in docs]
        return SuiteRun(suite="lm_eval.gsm8k_local", role="reference", data_sha256="", items=items)

    out = Rederived()
    check_lm_eval_items(run([0, 1, 2, 3]), profile, out)
    assert out.not_rederived == []
    check_lm_eval_items(run([0, 1, 2]), profile, out)  # a task of 3 documents, or one taken out
    assert out.not_rederived == [
        "lm_eval.gsm8k_local (reference): 3 documents of limit 4; the task's size is not "
        "re-derived (a task lm-eval ships: its documents come from a Hugging Face dataset whose "
        "revision the run does not record)"
    ]
    with pytest.raises(VerificationFailed, match=r"missing doc-00002; not planned doc-00003$"):
        check_lm_eval_items(run([0, 1, 3]), profile, out)
    with pytest.raises(VerificationFailed, match=r"not planned doc-00004$"):
        check_lm_eval_items(run([0, 1, 2, 3, 4]), profile, out)


def _prompt_digest(report: Report) -> None:
    assert report.quality.divergence is not None
    report.quality.divergence.sequences[3].prompt_sha256 = hashlib.sha256(b"another").hexdigest()


def test_a_divergence_prompt_digest_not_its_corpus_prompts_is_refused() -> None:
    report = example_report(DEMO)
    assert report.quality.divergence is not None
    seq = report.quality.divergence.sequences[3]
    with pytest.raises(
        VerificationFailed,
        match=rf"^quality\.divergence\.sequences {seq.id}\.prompt_sha256: "
        rf"{hashlib.sha256(b'another').hexdigest()} stored, {seq.prompt_sha256} re-derived "
        r"from the corpus$",
    ):
        resigned_verify(DEMO, _insider(_prompt_digest))
