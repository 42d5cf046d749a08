"""Re-derive what a report's raw records imply: each item's correctness, each KL value.

`qgate verify` must not trust a stored `correct` flag or a stored per-position
KL: a key holder could forge them and re-sign. Here they are recomputed from
the raw data next to them with the very functions `run` used:

- math items: `extract_number` on the stored response, `answer_matches` with
  the expected answer;
- recall items: `extract_symbol`, exact equality with the planted code; each
  item's id (its haystack and depth) and expected code re-derived from the
  profile's recall settings (the context ladder's: ladder_check.py);
- lm-eval items: lm-eval's `exact_match` (its regexes_to_ignore, ignore_case,
  ignore_punctuation and ignore_numbers options, read from the task's local
  YAML) on the logged filtered response and target, when the task is local,
  its YAML and data still have the digest the run recorded and its metric is
  exact_match; other items are listed as not re-derived;
- divergence: `position_divergence` on both sides' stored top-k logprobs
  (within 1e-9 relative: transcendental functions may round differently on
  the auditor's CPU); every position at once by its bit-identical batch form,
  and one by one only where that does not confirm the stored values
  (divergence_screen.py).

A disagreement raises VerificationFailed naming the item.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from qgate.core.files import sha256_text
from qgate.core.registry import load_object
from qgate.errors import BadInput, InfrastructureError, VerificationFailed
from qgate.gates.judgement import QUALITY_DERIVATION
from qgate.profile import Profile, RecallSuite
from qgate.profile.suites import entry_of_result, registered
from qgate.quality.agent_data import (
    PREFIX_FROM,
    Graded,
    grade_structured,
    grade_tool_call,
    structured_items,
    tool_items,
)
from qgate.quality.data_recall import planted
from qgate.quality.math_set import MathItem, math_data_sha256, math_items, short_prompt
from qgate.quality.records import DivergenceRun, ItemRecord, SuiteRun
from qgate.quality.sizing import agent_items, recall_haystacks
from qgate.report.verify.cross_check import check_cross_records
from qgate.report.verify.ladder_check import check_ladder_items

# answer extractor, then the correctness rule on (answer, expected)
Extractor = Callable[[str], "str | None"]
Judge = Callable[["str | None", str], bool]


@dataclass
class Rederived:
    """What could be re-derived, and what could not (one line per suite) for the output."""

    items: int = 0
    positions: int = 0
    data_checked: int = 0
    recall_checked: int = 0
    ladder_logprobs: int = 0
    """Context-ladder answers with stored logprobs, checked usable (ladder_check.py)."""
    not_rederived: list[str] = field(default_factory=list)
    profile_given: bool = False
    """`--profile FILE` was given: the data its suites define must be what the run used."""
    derivation: int = QUALITY_DERIVATION
    """The quality derivation the records are graded by: the report's (a structured output cut
    by max_tokens is graded by it, agent_data.PREFIX_FROM); the newest outside verify."""
    math_set: dict[str, MathItem] | None = field(default=None, repr=False)
    """The profile's math items by id, made once for all math runs (a set extended to a
    field-scale size is generated, not read: four runs made it four times)."""


def _extractors() -> tuple[Extractor, Judge, Extractor]:
    """(number extractor, its judge, symbol extractor): the functions the run used."""
    try:
        from qgate.quality.extract import answer_matches, extract_number, extract_symbol
    except ImportError as exc:
        raise InfrastructureError(f"cannot re-derive correctness: {exc}") from None
    return extract_number, answer_matches, extract_symbol


def _rederive_extracted(run: SuiteRun, extract: Extractor, judge: Judge, out: Rederived) -> None:
    for item in run.items:
        answer = extract(item.output)
        check_item(run, item, answer, judge(answer, item.expected))
    out.items += len(run.items)


def rederive_math(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """Math items: the final number of each response, matched against the expected answer."""
    extract_number, answer_matches, _ = _extractors()
    _rederive_extracted(run, extract_number, answer_matches, out)


def rederive_symbol(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """Recall and context-ladder items: the symbol in each response, equal to the planted one."""
    _, _, extract_symbol = _extractors()
    _rederive_extracted(run, extract_symbol, lambda answer, expected: answer == expected, out)


SuiteCheck = Callable[[SuiteRun, Profile, "Rederived"], None]
"""A suite's re-derivation or item check (`SuiteEntry.rederive`, `SuiteEntry.check_items`)."""


def _hook(where: str) -> SuiteCheck:
    return cast("SuiteCheck", load_object(where))


def check_item(run: SuiteRun, item: ItemRecord, answer: str | None, correct: bool) -> None:
    where = f"{run.suite} {run.role} item {item.id}"
    if correct != item.correct:
        raise VerificationFailed(
            f"{where}: stored correct={item.correct} but its response gives answer {answer!r} "
            f"against expected {item.expected!r} (correct={correct})"
        )
    if answer != item.answer:
        raise VerificationFailed(
            f"{where}: stored answer {item.answer!r} but its response gives {answer!r}"
        )


def few(ids: list[str], n: int = 3) -> str:
    return ", ".join(ids[:n]) + (f", ... ({len(ids)} items)" if len(ids) > n else "")


def rederive_correctness(runs: list[SuiteRun], profile: Profile, out: Rederived) -> None:
    """Every item's answer and correctness from its stored response; raise on a difference.

    Each suite says how (`SuiteEntry.rederive`); a suite that does not, or a run no
    registered suite owns, is listed as not re-derived.
    """
    for run in runs:
        entry = entry_of_result(run.suite)
        if entry is not None and entry.rederive is not None:
            _hook(entry.rederive)(run, profile, out)
        elif run.items:
            out.not_rederived.append(
                f"{run.suite} ({run.role}): unknown suite; items {few([i.id for i in run.items])}"
            )


def rederive_tool_calls(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """Tool-call items: each grade from the stored output and finish reason."""
    _rederive_graded(
        run, lambda item: grade_tool_call(item.output, item.finish_reason, item.expected), out
    )


def rederive_structured(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """Structured-output items: each grade from the stored output and finish reason, a cut
    output's by the report's quality derivation (`out.derivation`)."""
    prefixes = out.derivation >= PREFIX_FROM
    _rederive_graded(
        run,
        lambda item: grade_structured(
            item.id, item.output, item.finish_reason, item.expected, prefixes=prefixes
        ),
        out,
    )


def _rederive_graded(
    run: SuiteRun, grade_of: Callable[[ItemRecord], Graded], out: Rederived
) -> None:
    """Tool calls and structured output: the grade (answer, failure kind, correct) from the
    stored output and finish reason, with the functions the run used."""
    for item in run.items:
        grade = grade_of(item)
        check_item(run, item, grade.answer, grade.correct)
        if grade.failure != item.failure:
            raise VerificationFailed(
                f"{run.suite} {run.role} item {item.id}: stored failure {item.failure!r} but "
                f"its response gives {grade.failure!r}"
            )
    out.items += len(run.items)


def check_questions(runs: list[SuiteRun], profile: Profile, out: Rederived) -> None:
    """Both runtimes expected the same answers; math items match the local math set.

    The expected answer is stored beside the response, so a forger could
    change both; the reference's copy and, for math, the data set the run's
    digest names pin it down.
    """
    reference = {
        (r.suite, i.id): i.expected for r in runs if r.role == "reference" for i in r.items
    }
    for run in runs:
        if run.role != "candidate":
            continue
        for item in run.items:
            want = reference.get((run.suite, item.id))
            if want is not None and want != item.expected:
                raise VerificationFailed(
                    f"{run.suite} item {item.id}: the reference expected {want!r} "
                    f"but the candidate {item.expected!r}"
                )
    for entry in registered():
        owned = [run for run in runs if entry.owns(run.suite)]
        if entry.check_items is None or not owned:
            continue  # an unused suite's hook is not imported (it may import its client)
        check = _hook(entry.check_items)
        for run in owned:
            check(run, profile, out)


def check_math_items(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """Math items are those of the set the run's digest names, expecting its answers."""
    if profile.quality.math is not None:
        _check_math_set(run, profile, out)


def check_tool_call_items(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """Every tool-call item is one the profile generates, expecting its answer."""
    tools = profile.quality.tool_calls
    if tools is not None:
        want = {i.id: i.expected for i in tool_items(agent_items(tools), tools.seed)}
        _check_generated(run, want)


def check_structured_items(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """Every structured-output item is one the profile generates, expecting its answer."""
    spec = profile.quality.structured
    if spec is not None:
        want = {i.id: i.expected for i in structured_items(agent_items(spec), spec.seed)}
        _check_generated(run, want)


def check_ladder_runs(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """Every context-ladder item is one the profile plants (ladder_check.py)."""
    if profile.quality.context_ladder is not None:
        check_ladder_items(run, profile.quality.context_ladder)
        out.recall_checked += len(run.items)
        out.ladder_logprobs += sum(i.generated is not None for i in run.items)


def check_recall_runs(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    """Every recall item is one the profile plants, expecting the code planted there."""
    if profile.quality.recall is not None:
        _check_recall_items(run, profile.quality.recall)
        out.recall_checked += len(run.items)


def _check_generated(run: SuiteRun, want: dict[str, str]) -> None:
    for record in run.items:
        if want.get(record.id) != record.expected:
            raise VerificationFailed(
                f"{run.suite} {run.role} item {record.id}: expected {record.expected!r} stored, "
                f"{want.get(record.id)!r} generated from the profile's setting"
            )


def _check_recall_items(run: SuiteRun, spec: RecallSuite) -> None:
    """Every recall item is one the profile plants (its id names its haystack and depth) and
    expects the code planted there; no item twice."""
    length = int(run.suite.partition(".")[2])
    codes = planted(spec.seed, length, recall_haystacks(spec), list(spec.depths), spec.similar)
    seen: set[str] = set()
    for record in run.items:
        where = f"{run.suite} {run.role} item {record.id}"
        if record.id in seen:
            raise VerificationFailed(f"{where}: stored twice")
        seen.add(record.id)
        want = codes.get(record.id)
        if want is None:
            raise VerificationFailed(
                f"{where}: id names no haystack and depth the profile plants "
                f"(haystacks {recall_haystacks(spec)}, depths {list(spec.depths)})"
            )
        if record.expected != want:
            raise VerificationFailed(
                f"{where}.expected: {record.expected!r} stored, {want!r} re-derived "
                "(the code planted at its depth)"
            )


def _check_math_set(run: SuiteRun, profile: Profile, out: Rederived) -> None:
    spec = profile.quality.math
    assert spec is not None
    form = run.suite.partition(".")[2]
    budget = run.params.get("preamble_tokens_budget")
    try:
        # the budget the run used stands in for max_model_len, which the digest only clips by
        digest = math_data_sha256(
            spec, form, max_model_len=None, long_tokens=budget if isinstance(budget, int) else None
        )
        if out.math_set is None:
            out.math_set = {i.id: i for i in math_items(spec)}
        items = out.math_set
    except BadInput as exc:
        out.not_rederived.append(f"{run.suite} ({run.role}): math set not checked ({exc.message})")
        return
    if digest != run.data_sha256 and out.profile_given:
        raise VerificationFailed(
            f"{run.suite} ({run.role}).data_sha256: {run.data_sha256} stored, {digest} "
            "re-derived from the profile (--profile): the run did not ask the math set it names"
        )
    if digest != run.data_sha256:
        out.not_rederived.append(
            f"{run.suite} ({run.role}): the local math set differs from the run's; "
            "expected answers not checked against it"
        )
        return
    for record in run.items:
        item = items.get(record.id)
        where = f"{run.suite} {run.role} item {record.id}"
        if item is None:
            raise VerificationFailed(f"{where}: not in the math set the run's digest names")
        if record.expected != str(item.answer):
            raise VerificationFailed(
                f"{where}: expected {record.expected!r} but the math set says {item.answer}"
            )
        if form == "short" and record.prompt_sha256 != _sha256(short_prompt(item.question)):
            raise VerificationFailed(f"{where}: prompt digest does not match the math set")
    out.data_checked += len(run.items)


def _sha256(text: str) -> str:
    return sha256_text(text)


# exp and log may differ in the last bits between machines (numpy and libm pick
# CPU-specific code paths), so values re-derived on the auditor's machine are
# compared within a tolerance far below any meaningful KL limit.
_REL_TOL = 1e-9
_ABS_TOL = 1e-12


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_REL_TOL, abs_tol=_ABS_TOL)


def rederive_divergence(run: DivergenceRun, out: Rederived, *, required: bool) -> None:
    """Every per-position KL, top-1 agreement and delta-p from the stored logprobs.

    `required`: a report of the current schema must carry the logprobs; an
    older one without them is listed as not re-derived.
    """
    try:
        from qgate.quality.divergence import position_divergence
        from qgate.report.verify.divergence_screen import suspects
    except ImportError as exc:
        raise InfrastructureError(f"cannot re-derive divergence: {exc}") from None
    # every position at once; those it does not confirm (none in a genuine report) one by one
    todo = suspects(run, _REL_TOL, _ABS_TOL)
    for seq, positions in zip(run.sequences, todo, strict=True):
        r_ids, r_lps = seq.reference_top_ids, seq.reference_top_logprobs
        c_ids, c_lps = seq.candidate_top_ids, seq.candidate_top_logprobs
        if r_ids is None or r_lps is None or c_ids is None or c_lps is None:
            if required:
                raise VerificationFailed(
                    f"divergence sequence {seq.id}: per-position logprobs are missing"
                )
            out.not_rederived.append(
                f"divergence: {len(run.sequences)} sequences predate stored logprobs"
            )
            return
        n = len(seq.token_ids)
        lengths = {
            len(x) for x in (seq.kld, seq.top1_agree, seq.delta_p, r_ids, r_lps, c_ids, c_lps)
        }
        if lengths != {n}:
            raise VerificationFailed(
                f"divergence sequence {seq.id}: per-position lists differ in length"
            )
        for i in positions:
            token = seq.token_ids[i]
            try:
                pos = position_divergence(
                    dict(zip(r_ids[i], r_lps[i], strict=True)),
                    dict(zip(c_ids[i], c_lps[i], strict=True)),
                    token,
                    run.top_k,
                )
            except ValueError as exc:
                raise VerificationFailed(
                    f"divergence sequence {seq.id} position {i}: logprobs unusable ({exc})"
                ) from None
            if not (
                pos.top1_agree == seq.top1_agree[i]
                and _close(pos.kld, seq.kld[i])
                and _close(pos.delta_p, seq.delta_p[i])
            ):
                raise VerificationFailed(
                    f"divergence sequence {seq.id} position {i}: stored kld={seq.kld[i]} "
                    f"top1_agree={seq.top1_agree[i]} delta_p={seq.delta_p[i]} but its logprobs "
                    f"give kld={pos.kld} top1_agree={pos.top1_agree} delta_p={pos.delta_p}"
                )
        out.positions += n
    check_cross_records(run)
