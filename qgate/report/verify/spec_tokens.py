"""The speculative counters held to the tokens the suites generated (issue 54: accepted tokens
raised to 3,042 where the suites generated 1,605 in all verified, the counters' own arithmetic
holding).

Each draft step emits its accepted draft tokens and one more, so between two snapshots of a
side's quality stage its accepted tokens plus its drafts are at most the tokens its requests
generated, plus what a request's last step emitted past the end of its output (a stop token
or max_tokens): at most num_speculative_tokens + 1 a request. The generated tokens are the
items' `output_tokens` (usage), held where a window is one suite of one greedy completion per
item with every item's usage recorded and none failed: math and recall. Other windows
(divergence scoring, the ladder, agent and sampling suites, lm-eval, the reuse passes) make
requests or generate tokens their items do not count one for one, and are left alone.
"""

from __future__ import annotations

from qgate.errors import VerificationFailed
from qgate.profile import Profile
from qgate.profile.spec_plan import draft_length
from qgate.profile.suites import configured
from qgate.quality.spec_counters import ACCEPTED, DRAFTS
from qgate.report.model import Report

__all__ = ["check_spec_generated"]

_ONE_PER_ITEM = ("math", "recall")


def check_spec_generated(report: Report, profile: Profile) -> str | None:
    """Raise VerificationFailed where a side's accepted tokens and drafts between two
    snapshots exceed what its suites there generated; a line for `checked` (None: nothing
    held)."""
    snaps = report.quality.speculative
    if not snaps:
        return None
    results = {
        entry.key: {rid for rid, _ in entry.results_of(setting)}
        for entry, setting in configured(profile.quality)
        if entry.key in _ONE_PER_ITEM
    }
    held = 0
    for role in ("reference", "candidate"):
        k = draft_length(profile, role)
        own = [s for s in snaps if s.role == role]
        for a, b in zip(own, own[1:], strict=False):
            suites = results.get(b.at.removeprefix("after "))
            if k is None or suites is None or ACCEPTED not in b.counters:
                continue
            items = [
                i
                for r in report.quality.runs
                if r.role == role and r.suite in suites
                for i in r.items
            ]
            tokens = [i.output_tokens for i in items if i.failure is None]
            if len(tokens) != len(items) or None in tokens:
                continue
            generated = sum(t or 0 for t in tokens)
            accepted = b.counters[ACCEPTED] - a.counters.get(ACCEPTED, 0.0)
            drafts = b.counters.get(DRAFTS, 0.0) - a.counters.get(DRAFTS, 0.0)
            most = generated + (k + 1) * len(items)
            if accepted + drafts > most:
                raise VerificationFailed(
                    f"quality.speculative ({role}, {b.at}): {accepted:g} accepted tokens and "
                    f"{drafts:g} drafts stored, at most {most:g} together re-derived from the "
                    f"{generated} tokens its {len(items)} items generated (each draft step "
                    f"emits its accepted tokens and one more; up to {k + 1} a request past "
                    "its output's end)"
                )
            held += 1
    return (
        f"speculative counters of {held} suite window(s) within the tokens generated"
        if held
        else None
    )
