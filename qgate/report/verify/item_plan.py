"""Every suite's items held to the plan (issue 54: a report missing any planned observation is
rejected).

The gates pair a suite's items by id and verify re-derives every verdict from them, so an
insider who deleted from both sides the items the candidate lost, or a suite's last items, or a
divergence sequence, derived every verdict again and re-signed, got a report that verified: the
two sides held the same items, only fewer. Here each side that ran its quality stage holds every
result the profile plans (absent only where the stage may have halted: `stop: verdict` and a
settled FAIL) and no other, each once; each result exactly the item ids its setting plans
(`SuiteEntry.item_ids`, qgate/quality/item_ids.py), each once; a run that says it stopped early
the first of them in the order the suite asks them (the seeded look order under `stop: looks`
for a suite that shuffles), the stop itself (that the profile's `quality.stop` allows it, and
where) re-derived by the settle and look checks (recompute.py). Suites without `item_ids` hold
their items in their own `check_items` (degeneration and sampling: the profile's items in
order; the context ladder: each bucket's indices, ladder_check.py; lm-eval: the task's first
documents, rederive_lm_eval.py). The divergence suite scores the corpus's first
`quality.divergence.sequences` prompts. The reuse passes and the noise floor hold their own
items with `planned_ids` and `held_to` (pass_plan.py, floor_plan.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, cast

from qgate.core.files import sha256_text
from qgate.core.registry import load_object
from qgate.errors import BadInput, VerificationFailed
from qgate.profile import Profile, QualitySpec
from qgate.profile.suites import SuiteEntry, configured
from qgate.quality.divergence_data import CorpusPrompt, load_corpus
from qgate.quality.look_order import look_order
from qgate.quality.records import DivergenceRun, SuiteRun
from qgate.quality.settle import halted_at_verdict
from qgate.report.model import Report
from qgate.report.verify.rederive import few

__all__ = ["check_items_planned", "held_to", "planned_ids", "setting_of"]

ItemIds = Callable[[Any, SuiteRun], "list[str] | None"]
Memo = dict[tuple[str, str, str], "list[str] | None"]


def planned_ids(entry: SuiteEntry, setting: Any, run: SuiteRun) -> list[str] | None:
    """The ids `setting` plans for `run`'s result, in the order asked (None: the suite does
    not say, or cannot here)."""
    if entry.item_ids is None:
        return None
    return cast(ItemIds, load_object(entry.item_ids))(setting, run)


def setting_of(spec: QualitySpec, result_id: str) -> tuple[SuiteEntry, Any] | None:
    """The configured suite that plans `result_id`, and its setting (None: none does)."""
    return next(
        (
            (entry, setting)
            for entry, setting in configured(spec)
            if any(rid == result_id for rid, _ in entry.results_of(setting))
        ),
        None,
    )


def held_to(where: str, ids: Sequence[str], want: Sequence[str], planned: str = "planned") -> None:
    """Raise VerificationFailed unless `ids` are exactly `want`, each once, naming the first
    few missing, unplanned and repeated ids."""
    seen: set[str] = set()
    twice = []
    for i in ids:
        if i in seen:
            twice.append(i)
        seen.add(i)
    wanted = set(want)
    missing = [i for i in want if i not in seen]
    extra = [i for i in ids if i not in wanted]
    if not (missing or extra or twice):
        return
    parts = [f"{len(ids)} items stored, {len(want)} {planned}"]
    parts += [f"missing {few(missing)}"] if missing else []
    parts += [f"not planned {few(extra)}"] if extra else []
    parts += [f"stored twice {few(twice)}"] if twice else []
    raise VerificationFailed(f"{where}: " + "; ".join(parts))


def check_items_planned(report: Report, profile: Profile) -> str | None:
    """Raise VerificationFailed where a side's results or items are not what the profile plans;
    a line for `checked` (None: no quality records)."""
    q, spec = report.quality, profile.quality
    results = {
        rid: (entry, setting)
        for entry, setting in configured(spec)
        for rid, _ in entry.results_of(setting)
    }
    halted = halted_at_verdict(spec, q.verdicts)
    memo: Memo = {}
    items = held = 0
    for role in ("reference", "candidate"):
        runs: dict[str, SuiteRun] = {}
        for run in (r for r in q.runs if r.role == role):
            if run.suite not in results or run.suite in runs:
                raise VerificationFailed(
                    f"quality.runs {run.suite} ({role}): not a result the profile plans, or "
                    f"stored twice (planned: {', '.join(results) or 'none'})"
                )
            runs[run.suite] = run
        if not runs:
            continue  # no quality stage on this side (a preview, a candidate that failed)
        for rid, (entry, setting) in results.items():
            got = runs.get(rid)
            if got is None and not halted:
                raise VerificationFailed(
                    f"quality.runs {rid} ({role}): no records stored; the profile plans the "
                    "result, and only a quality stage that stopped at a settled FAIL "
                    "(quality.stop: verdict) may leave it out"
                )
            if got is not None and _check_run(entry, setting, got, spec, memo):
                items += len(got.items)
                held += 1
    sequences = _check_divergence(q.divergence, profile)
    if not (held or sequences):
        return None
    return f"{held} result(s) of {items} items hold the item ids the profile plans" + (
        f"; {sequences} divergence sequences its corpus's" if sequences else ""
    )


def _check_run(
    entry: SuiteEntry, setting: Any, run: SuiteRun, spec: QualitySpec, memo: Memo
) -> bool:
    """Hold `run` to its planned ids; False where the suite does not say them."""
    # both sides of a result usually share what their ids follow from (a field-scale math set
    # is generated, not read: once per result, not per side)
    key = (run.suite, run.data_sha256, json.dumps(run.params, sort_keys=True, default=str))
    if key not in memo:
        memo[key] = planned_ids(entry, setting, run)
    want = memo[key]
    if want is None:
        return False
    where = f"quality.runs {run.suite} ({run.role})"
    if run.planned is not None and run.planned != len(want):
        raise VerificationFailed(
            f"{where}.planned: {run.planned} stored, {len(want)} re-derived from the profile"
        )
    ids = [i.id for i in run.items]
    if run.partial and run.stopped is not None:  # whether it could stop: recompute.py
        looks = spec.stop == "looks" and entry.shuffles
        order = look_order(want, spec.seed) if looks else want
        how = f"the look order of seed {spec.seed}" if looks else "the order asked"
        planned = f"planned first (of {len(want)}, in {how}: it stopped early)"
        held_to(where, ids, order[: len(ids)], planned)
    else:
        held_to(where, ids, want)
    return True


def _check_divergence(run: DivergenceRun | None, profile: Profile) -> int:
    """The scored sequences are the corpus's first `sequences` prompts, each once (their count
    alone where the corpus at hand is not the run's); how many."""
    spec = profile.quality.divergence
    if spec is None or run is None:
        return 0
    ids = [s.id for s in run.sequences]
    where = "quality.divergence.sequences"
    try:
        prompts, digest = load_corpus(spec.corpus, spec.sequences)
    except BadInput:
        prompts, digest = [], None
    if digest == run.data_sha256:
        held_to(where, ids, [p.id for p in prompts])
        _check_prompt_digests(run, prompts)
    elif len(ids) != spec.sequences or len(set(ids)) != len(ids):
        raise VerificationFailed(
            f"{where}: {len(ids)} stored ({len(set(ids))} distinct), {spec.sequences} planned "
            "(quality.divergence.sequences)"
        )
    return len(ids)


def _check_prompt_digests(run: DivergenceRun, prompts: Sequence[CorpusPrompt]) -> None:
    """Each sequence's `prompt_sha256` is its corpus prompt's (the corpus has the run's digest):
    a digest that is not names a prompt the run did not score."""
    want = {p.id: sha256_text(p.prompt) for p in prompts}
    for s in run.sequences:
        if s.prompt_sha256 != want[s.id]:
            raise VerificationFailed(
                f"quality.divergence.sequences {s.id}.prompt_sha256: {s.prompt_sha256} stored, "
                f"{want[s.id]} re-derived from the corpus"
            )
