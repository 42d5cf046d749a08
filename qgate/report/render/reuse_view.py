"""The reuse passes in a report (quality.reuse), as people read them.

Per pass, side and suite: where the prompt tokens came from (device prefix cache,
host/external tier, computed), preemptions, what qgate did before the pass, and the
side's own cold -> pass flips (the reference's are the noise floor). Display only: the
shares come from the very function the gates use (qgate/quality/reuse_records.py).
"""

from __future__ import annotations

from pydantic import ValidationError

from qgate.core.verdict import Verdict
from qgate.gates.changes_applied import confirm_changes
from qgate.gates.reuse import STRICT, self_flips
from qgate.profile import Profile
from qgate.quality.reuse_records import item_usage, shares
from qgate.report.model import Report
from qgate.report.render.parts import Section, Table

__all__ = ["changes_section", "gate_result", "reuse_section"]


def gate_result(v: Verdict) -> str:
    """A gate's result cell: pass, FAIL, NOT EXERCISED or not settled."""
    if v.passed:
        return "pass"
    if v.exercised is False:
        return "NOT EXERCISED"
    return "FAIL" if v.settled else "not settled"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def reuse_section(report: Report) -> Section | None:
    """The passes' shares and flips; None when the run had no reuse passes."""
    passes = report.quality.passes
    if not passes:
        return None
    sec = Section("Reuse passes: what served the prompts")
    cold = {(r.suite, r.role): r for r in report.quality.runs}
    rows: list[list[str]] = []
    for p in passes:
        for s in p.suites:
            got = shares(s.before, s.after, strict=report.quality.derivation >= STRICT)
            own = item_usage(s.usage)
            flips = self_flips(cold.get((s.suite, p.role)), s.run) if p.name != "cold" else None
            rows.append(
                [
                    p.name,
                    p.role,
                    s.suite,
                    "–" if got.prompt_tokens is None else f"{got.prompt_tokens:,.0f}",
                    _pct(got.device),
                    _pct(got.external),
                    _pct(got.computed),
                    "–" if got.preemptions is None else f"{got.preemptions:.0f}",
                    "–" if own is None else f"{own.prompt_tokens:,.0f}",
                    "–" if own is None else _pct(own.cached_share),
                    "–" if flips is None else f"{flips.lost} / {flips.gained} / {flips.n}",
                    "–" if flips is None else str(flips.changed),
                ]
            )
    sec.tables.append(
        Table(
            [
                "Pass",
                "Side",
                "Suite",
                "Prompt tokens",
                "Device cache",
                "Host/external",
                "Computed",
                "Preemptions",
                "Items' prompt tokens",
                "Items cached",
                "Lost / gained / n vs cold",
                "Outputs changed",
            ],
            rows,
            caption="Shares of the prompt tokens from the server's counters around each suite "
            "(vllm:prompt_tokens_by_source; the load pass's window holds the filler too); the "
            "items' own prompt tokens and cached share from their answers' usage "
            "(usage.prompt_tokens_details.cached_tokens, per request; '–' where the server "
            "returned none); the reference's cold -> pass flips are the floor.",
        )
    )
    for p in passes:
        if p.prepare and p.name != "cold":
            sec.lines.append(f"{p.role} {p.name} pass: {p.prepare}.")
    missed = [v.gate for v in report.quality.verdicts if v.gate.endswith(".exercised")]
    missed = [g for g in missed if _not_exercised(report, g)]
    if missed:
        sec.lines.append("NOT EXERCISED: " + ", ".join(missed))
    return sec


def _not_exercised(report: Report, gate: str) -> bool:
    return any(v.gate == gate and v.exercised is False for v in report.quality.verdicts)


def changes_section(report: Report) -> Section | None:
    """Each candidate change, confirmed by the running server or not (None: no changes)."""
    try:
        profile = Profile.model_validate(report.profile)
    except ValidationError:  # a report of another format: nothing to derive the changes from
        return None
    checks = confirm_changes(
        profile,
        report.effective_configs,
        report.quality.passes,
        report.perf.runs,
        report.quality.speculative,
    )
    if not checks:
        return None
    sec = Section("Changes confirmed applied")
    # an environment value may be a secret: a view says only whether it is set
    rows = [
        [
            c.name,
            ("set" if c.candidate != "-" else "unset")
            if c.name.startswith("env.")
            else c.candidate,
            c.status.upper(),
            c.evidence,
        ]
        for c in checks
    ]
    sec.tables.append(Table(["Change", "Candidate", "Status", "Evidence"], rows))
    sec.lines.append(
        "CONFIRMED: the running server's own report (effective configuration, counters, "
        "emulation labels) shows the change; UNCONFIRMED: the engine took the flag but no "
        "record shows it took effect."
    )
    return sec
