"""What the agent-shaped suites add to the gates: ignored parameters named, failure kinds counted.

A structured-output result whose outputs are not valid JSON for their schema,
although they ended on their own (from quality derivation 8, `PREFIX_FROM`, also: cut by
max_tokens where no continuation makes them valid), was not constrained: the server ignored
the parameter (vLLM >= 0.12 drops the legacy `guided_json` with HTTP 200; a proxy may
drop `response_format`). That is its own gate, `structured.<param>.constrained`,
and the result's accuracy gates then fail as "not scored" instead of counting the
model wrong. From quality derivation `SERVED_FROM` (8) each agent result also gets
`<result>.served`: it fails when the candidate answered with an HTTP error items the
reference served (a proxy that drops `tools` leaves vLLM to answer `tool_choice` with HTTP
400); graded as wrong items alone, such refusals on items the reference had wrong too leave
the accuracy gates no loss to see. Items both sides refused are not the candidate's doing.
Tool-call and structured results list their failure kinds per side
(content instead of a call, malformed arguments, ...) in the report's warnings, and a
streamed result (`<result>.streamed`) its streamed-only losses: items the same side answered
right asked as is and wrong streamed. Pure functions of the profile and the records:
`qgate verify` re-derives them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from qgate.core.redact import redact_url
from qgate.core.verdict import Verdict
from qgate.gates.suite import all_failed
from qgate.profile import QualitySpec
from qgate.profile.suite_results import STREAMED, agent_ways
from qgate.profile.suites import exact_results
from qgate.quality.agent_data import HTTP_ERROR, PREFIX_FROM
from qgate.quality.records import ItemRecord, SuiteRun

__all__ = [
    "AGENT_FAMILIES",
    "SERVED_FROM",
    "failure_lines",
    "served_verdict",
    "served_verdicts",
    "structured_verdicts",
]

AGENT_FAMILIES = ("tool_calls", "structured")
UNCONSTRAINED = "unconstrained"
SERVED_FROM = 8
"""The quality derivation from which each agent result gets its `served` gate."""
MESSAGE_CHARS = 160
"""How much of the first refusal's error text a `served` reason quotes."""
_CLIENT_PREFIX = re.compile(r"^(HTTP (\d{3}): )POST \S+: HTTP \2: ")
"""What the suite client (quality/client.py) puts before the server's message: the URL and a
second copy of the status."""


def _run(runs: Sequence[SuiteRun], suite: str, role: str) -> SuiteRun | None:
    return next((r for r in runs if r.suite == suite and r.role == role), None)


def _ignored(run: SuiteRun | None) -> int:
    return 0 if run is None else sum(i.failure == UNCONSTRAINED for i in run.items)


def structured_verdicts(
    spec: QualitySpec, runs: Sequence[SuiteRun], verdicts: list[Verdict], derivation: int
) -> list[Verdict]:
    """`verdicts` with each structured result's `constrained` gate added after its own, and its
    accuracy gates failed as not scored where a side's server ignored the parameter. The
    reasons say what `unconstrained` meant at quality `derivation` (cut outputs that are no
    prefix of valid JSON count from PREFIX_FROM on)."""
    if spec.structured is None:
        return verdicts
    prefixes = derivation >= PREFIX_FROM
    out = list(verdicts)
    ways = agent_ways("structured", spec.structured.params, spec.structured.streamed)
    for suite, param, _ in ways:
        ref, cand = _run(runs, suite, "reference"), _run(runs, suite, "candidate")
        if ref is None or cand is None:
            continue  # the accuracy gates already fail for the missing run
        n_ref, n_cand = _ignored(ref), _ignored(cand)
        sides = [
            f"{role} {n} of {len(run.items)}"
            for role, n, run in (("reference", n_ref, ref), ("candidate", n_cand, cand))
            if n
        ]
        if sides:
            cut = (
                ", or cut by max_tokens where no continuation makes them valid" if prefixes else ""
            )
            why = (
                f"the server ignored `{param}`: outputs not valid JSON for their schema "
                f"although they ended on their own{cut} ({', '.join(sides)})"
            )
            out = [
                v for v in out if v.suite != suite or v.gate.endswith(".constrained")
            ] + all_failed(suite, spec.structured, f"not scored: {why}")
        else:
            cut = "a prefix of it cut" if prefixes else "cut"
            why = f"every output of both sides is valid JSON for its schema or {cut} by max_tokens"
        constrained = Verdict(
            gate=f"{suite}.constrained",
            suite=suite,
            observed=float(n_cand),
            limit=0.0,
            passed=not sides,
            reason=f"{suite}: {why}",
            metric="unconstrained_outputs",
            comparator="<=",
            n=len(cand.items),
        )
        out.append(constrained)
    return out


def _refused(item: ItemRecord) -> bool:
    return item.finish_reason == HTTP_ERROR


def _ids(items: Sequence[ItemRecord]) -> str:
    shown = ", ".join(i.id for i in items[:5])
    return shown + (", ..." if len(items) > 5 else "")


def _message(item: ItemRecord) -> str:
    """The refusal's error text (`HTTP <status>: <message>`) on one line, without the client's
    own `POST <url>: HTTP <status>: ` before the server's message (it took most of the quote),
    credentials hidden, cut to MESSAGE_CHARS."""
    text = _CLIENT_PREFIX.sub(r"\1", " ".join(item.output.split()), count=1)
    text = redact_url(text)
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."


def served_verdict(suite: str, ref: SuiteRun, cand: SuiteRun) -> Verdict:
    """`<suite>.served`: FAIL when the candidate answered with an HTTP error any item the
    reference answered without one (limit 0), PASS otherwise; items both sides refused are
    named, not counted. Items of one side alone are the pairing gate's."""
    theirs = {i.id: i for i in cand.items}
    paired = [(r, theirs[r.id]) for r in ref.items if r.id in theirs]
    lost = [c for r, c in paired if _refused(c) and not _refused(r)]
    both = [c for r, c in paired if _refused(c) and _refused(r)]
    if lost:
        why = (
            f"the candidate answered {len(lost)} of {len(paired)} items with an HTTP error "
            f"where the reference served them ({_ids(lost)}; first: {_message(lost[0])})"
        )
    else:
        why = f"every request the reference served the candidate served too ({len(paired)} items)"
    if both:
        why += f"; both sides answered {len(both)} with an HTTP error ({_ids(both)}), not counted"
    return Verdict(
        gate=f"{suite}.served",
        suite=suite,
        observed=float(len(lost)),
        limit=0.0,
        passed=not lost,
        reason=f"{suite}: {why}",
        metric="refused_items",
        comparator="<=",
        n=len(paired),
    )


def served_verdicts(
    spec: QualitySpec, runs: Sequence[SuiteRun], verdicts: list[Verdict]
) -> list[Verdict]:
    """`verdicts` with each agent result's `served` gate after its last verdict (quality
    derivation SERVED_FROM on); a result without both sides' run gets none (its accuracy
    gates already fail for the missing run)."""
    out = list(verdicts)
    for suite, _ in exact_results(spec):
        if suite.partition(".")[0] not in AGENT_FAMILIES:
            continue
        ref, cand = _run(runs, suite, "reference"), _run(runs, suite, "candidate")
        if ref is None or cand is None:
            continue
        at = max((k + 1 for k, v in enumerate(out) if v.suite == suite), default=len(out))
        out.insert(at, served_verdict(suite, ref, cand))
    return out


def failure_lines(spec: QualitySpec, runs: Sequence[SuiteRun]) -> list[str]:
    """One line per agent result: its failure kinds and counts on each side."""
    lines = []
    for run_ref in (r for r in runs if r.role == "reference"):
        family = run_ref.suite.partition(".")[0]
        if family not in AGENT_FAMILIES or getattr(spec, family) is None:
            continue
        cand = _run(runs, run_ref.suite, "candidate")
        parts = []
        for role, run in (("reference", run_ref), ("candidate", cand)):
            if run is None:
                continue
            kinds = Counter(i.failure for i in run.items if i.failure is not None)
            counted = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"
            right = sum(i.correct for i in run.items)
            line = f"{role} {right}/{len(run.items)} right, failures: {counted}"
            parts.append(line + _streamed_only(runs, run))
        lines.append(f"{run_ref.suite}: " + "; ".join(parts))
    return lines


def _streamed_only(runs: Sequence[SuiteRun], streamed: SuiteRun) -> str:
    """', streamed-only losses N (ids)' for a streamed result: its items the same side answered
    right asked as is and wrong streamed (vLLM #53246's dropped calls); '' for any other."""
    if not streamed.suite.endswith(STREAMED):
        return ""
    as_is = _run(runs, streamed.suite.removesuffix(STREAMED), streamed.role)
    if as_is is None:
        return ""
    right = {i.id for i in as_is.items if i.correct}
    lost = [i.id for i in streamed.items if i.id in right and not i.correct]
    shown = ", ".join(lost[:3]) + (", ..." if len(lost) > 3 else "")
    return f", streamed-only losses {len(lost)}" + (f" ({shown})" if lost else "")
