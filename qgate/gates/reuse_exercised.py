"""Whether a reuse pass ran the path it names: the `<suite>@<pass>.exercised` verdict.

Read from the server's counters scraped around each suite of a pass (quality derivation 4 on;
a missing or broken snapshot proves nothing): warm reused at least `min_exercised_share` of the
prompt tokens the same side's cold pass computed; restored shows the reset took (device-cache
hits fall to about zero in a probe) and served at least `min_exercised_share` from the
host/external tier; load saw the engine preempt at least `load.min_preemptions` requests while
the items were in flight, the items' own served share read from their answers' usage. Reports
of derivation 3 and before are judged by their rules (`_exercised_v3`). The gates that use it:
qgate/gates/reuse.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from qgate.core.verdict import Verdict
from qgate.profile import ReuseSpec
from qgate.profile.reuse import PassName
from qgate.quality.reuse_records import (
    AFTER_RESET,
    BEFORE_RESET,
    PassSuite,
    Shares,
    item_usage,
    shares,
)
from qgate.quality.stats import EPS, pct

__all__ = ["PATH_OF", "RESET_LEFT", "STRICT", "exercised", "shares_text"]

# warm counts every token not computed again: a candidate with a small device cache and a host
# tier serves its warm pass from the host tier (seen on the H200: 67.7% host, 31.8% device), and
# that is reuse just the same; restored must come from the host/external tier.
PATH_OF: dict[PassName, Literal["reused", "external"] | None] = {
    "warm": "reused",
    "restored": "external",
    "load": None,
}
STRICT = 4
"""The quality derivation from which a missing or broken counter snapshot proves nothing and warm
is judged against its cold pass (before it: lenient scrapes, a raw share)."""
RESET_LEFT = 0.05
"""Share of the probe's device-cache hits that may remain after a reset that took."""
_PATH_WORDS = {
    "reused": "KV cache (device prefix cache or host/external tier)",
    "external": "host/external KV tier",
}


def shares_text(s: Shares) -> str:
    """'1,234 prompt tokens: 80.0% device cache, 0.0% host/external, 20.0% computed'."""
    if s.prompt_tokens is None:
        return "the server reports no prompt tokens by source"
    if s.device is None or s.external is None or s.computed is None:
        return "no prompt tokens counted"
    return (
        f"{s.prompt_tokens:,.0f} prompt tokens: {pct(s.device)} device cache, "
        f"{pct(s.external)} host/external, {pct(s.computed)} computed"
    )


def exercised(
    reuse: ReuseSpec,
    name: PassName,
    where: str,
    ref: PassSuite,
    cand: PassSuite,
    cold: tuple[PassSuite | None, PassSuite | None],
    derivation: int,
    probes: Sequence[PassSuite] = (),
) -> Verdict:
    """The `exercised` verdict of pass `name` of one suite (`where`: 'math.long@warm'), from
    the counters around it (its cold pass's for warm, the reset probes' for restored), by
    the rules of the report's quality `derivation`."""
    if derivation < STRICT:
        return _exercised_v3(reuse, name, where, ref, cand)
    c, r = shares(cand.before, cand.after), shares(ref.before, ref.after)
    seen = f"candidate {shares_text(c)}; reference {shares_text(r)}"
    if c.problem is not None:
        return _unproven(where, f"{where}: the candidate's counters say nothing: {c.problem}")
    if name == "warm":
        return _warm_against_cold(reuse, where, c, seen, cold)
    if name == "load":
        return _load(reuse, where, c, r, cand, ref)
    return _restored(reuse, where, c, seen, probes)


def _device_tokens(s: Shares) -> float | None:
    if s.prompt_tokens is None or s.device is None:
        return None
    return s.prompt_tokens * s.device


def _restored(
    reuse: ReuseSpec, where: str, c: Shares, seen: str, probes: Sequence[PassSuite]
) -> Verdict:
    """The restored pass: the reset took (a probe prompt the device cache served before the
    reset is served from it no more after it) and the items' hits came from the host/external
    tier. HTTP 200 from the reset endpoint alone proves neither."""
    metric = "external_share"
    held = next((p for p in probes if p.suite == BEFORE_RESET), None)
    after = next((p for p in probes if p.suite == AFTER_RESET), None)
    if held is None or after is None:
        return _unproven(where, f"{where}: no reset probe recorded: the reset cannot be shown")
    h, a = shares(held.before, held.after), shares(after.before, after.after)
    was, now = _device_tokens(h), _device_tokens(a)
    if h.problem or a.problem or was is None or now is None:
        why = h.problem or a.problem or "no prompt tokens by source"
        return _unproven(where, f"{where}: the reset probe's counters say nothing: {why}")
    probe = f"reset probe: {was:,.0f} prompt tokens from the device cache before the reset, "
    probe += f"{now:,.0f} after it"
    if was <= 0:
        return _unproven(
            where,
            f"{where}: the device cache did not serve the probe before the reset, so the reset "
            f"cannot be shown to take; {probe}",
        )
    if now > RESET_LEFT * was:
        return _unproven(
            where, f"{where}: the reset did not take: {probe} (> {pct(RESET_LEFT)} left)"
        )
    limit = reuse.min_exercised_share
    observed = c.external
    ok = observed is not None and observed + EPS >= limit
    share = "no share" if observed is None else pct(observed)
    return Verdict(
        gate=f"{where}.exercised",
        suite=where,
        observed=observed,
        limit=limit,
        passed=ok,
        reason=f"{where}: evidence: the reset took ({probe}); after it the candidate served "
        f"{share} of the items' prompt tokens from the {_PATH_WORDS['external']}; "
        + (">=" if ok else "<")
        + f" {pct(limit)} required; {seen}",
        metric=metric,
        comparator=">=",
        n=None if c.prompt_tokens is None else int(c.prompt_tokens),
        exercised=ok,
    )


def _own(s: PassSuite) -> str:
    got = item_usage(s.usage)
    return "no usage recorded" if got is None else got.text()


def _load(
    reuse: ReuseSpec, where: str, c: Shares, r: Shares, cand: PassSuite, ref: PassSuite
) -> Verdict:
    """The load pass: the engine preempted while the items were in flight (the counters are
    scraped right before the first item and right after the last, so the window holds the
    items and the filler running beside them: a preemption is the engine's, whichever request
    it hit); what the items themselves were served comes from their own answers' usage
    (per-request cached tokens), never from the window, which counts the filler's prompts."""
    limit = float(reuse.load.min_preemptions)
    observed = c.preemptions
    ok = observed is not None and observed + EPS >= limit
    got = "no preemption counter" if observed is None else f"{observed:.0f} preemptions"
    ref_got = "-" if r.preemptions is None else f"{r.preemptions:.0f}"
    mine = item_usage(cand.usage)
    evidence = (
        "the items' own answers (usage.prompt_tokens_details, per request)"
        if mine is not None and mine.cached_share is not None
        else "no per-request cached tokens (vLLM: --enable-prompt-tokens-details), so no "
        "share of the items' own; the window's shares below count the filler's prompts too"
    )
    return Verdict(
        gate=f"{where}.exercised",
        suite=where,
        observed=observed,
        limit=limit,
        passed=ok,
        reason=f"{where}: candidate {got} while its items were in flight beside the filler "
        f"(reference {ref_got}); "
        + (">=" if ok else "<")
        + f" {limit:.0f} required; items served: evidence: {evidence}; candidate items "
        f"{_own(cand)}, reference items {_own(ref)}; window (filler included): candidate "
        f"{shares_text(c)}; reference {shares_text(r)}",
        metric="preemptions",
        comparator=">=",
        n=None if mine is None else int(mine.prompt_tokens),
        exercised=ok,
    )


def _unproven(where: str, reason: str, metric: str | None = None) -> Verdict:
    return Verdict(
        gate=f"{where}.exercised",
        suite=where,
        observed=None,
        limit=None,
        passed=False,
        reason=reason,
        metric=metric,
        exercised=False,
    )


def _warm_against_cold(
    reuse: ReuseSpec,
    where: str,
    c: Shares,
    seen: str,
    cold: tuple[PassSuite | None, PassSuite | None],
) -> Verdict:
    """The warm pass reused what the cold pass left: of the prompt tokens the candidate's cold
    pass computed (its share not served from cache: a shared preamble is cached within the
    cold pass itself), the share its warm pass served from reused KV."""
    metric = "reused_beyond_cold_share"
    ref_cold, cand_cold = cold
    if cand_cold is None:
        return _unproven(where, f"{where}: no cold-pass counters to compare the warm pass with")
    k = shares(cand_cold.before, cand_cold.after)
    cold_seen = f"cold: candidate {shares_text(k)}"
    if ref_cold is not None:
        cold_seen += f"; reference {shares_text(shares(ref_cold.before, ref_cold.after))}"
    was, now = k.of("reused"), c.of("reused")
    if k.problem is not None or was is None or now is None:
        why = k.problem or "no prompt tokens by source in the cold or the warm pass"
        return _unproven(where, f"{where}: warm cannot be compared with cold: {why}", metric)
    if was >= 1.0 - EPS:
        return _unproven(
            where,
            f"{where}: the cold pass was already served entirely from cache ({pct(was)}): "
            f"nothing it left can show reuse across passes; {cold_seen}",
            metric,
        )
    lift = max(0.0, (now - was) / (1.0 - was))
    limit = reuse.min_exercised_share
    ok = lift + EPS >= limit
    return Verdict(
        gate=f"{where}.exercised",
        suite=where,
        observed=lift,
        limit=limit,
        passed=ok,
        reason=f"{where}: evidence: warm against the same side's cold pass; the candidate's warm "
        f"pass reused {pct(lift)} of the prompt tokens its cold pass computed (reused share "
        f"{pct(now)} warm, {pct(was)} cold); "
        + (">=" if ok else "<")
        + f" {pct(limit)} required; warm: {seen}; {cold_seen}",
        metric=metric,
        comparator=">=",
        n=None if c.prompt_tokens is None else int(c.prompt_tokens),
        exercised=ok,
    )


def _exercised_v3(
    reuse: ReuseSpec, name: PassName, where: str, ref: PassSuite, cand: PassSuite
) -> Verdict:
    """The exercise of quality derivation 3 and before: a raw share (warm, restored) or the
    preemptions of the whole window (load); lenient scrapes."""
    path = PATH_OF[name]
    c = shares(cand.before, cand.after, strict=False)
    r = shares(ref.before, ref.after, strict=False)
    seen = f"candidate {shares_text(c)}; reference {shares_text(r)}"
    if path is None:
        limit = float(reuse.load.min_preemptions)
        observed = c.preemptions
        ok = observed is not None and observed + EPS >= limit
        got = "no preemption counter" if observed is None else f"{observed:.0f} preemptions"
        ref_got = "-" if r.preemptions is None else f"{r.preemptions:.0f}"
        reason = (
            f"{where}: candidate {got} under the filler traffic (reference {ref_got}); "
            + (">=" if ok else "<")
            + f" {limit:.0f} required; {seen}"
        )
        metric = "preemptions"
    else:
        limit = reuse.min_exercised_share
        observed = c.of(path)
        ok = observed is not None and observed + EPS >= limit
        share = "no share" if observed is None else pct(observed)
        reason = (
            f"{where}: candidate served {share} from the {_PATH_WORDS[path]}; "
            + (">=" if ok else "<")
            + f" {pct(limit)} required; {seen}"
        )
        metric = f"{path}_share"
    return Verdict(
        gate=f"{where}.exercised",
        suite=where,
        observed=observed,
        limit=limit,
        passed=ok,
        reason=reason,
        metric=metric,
        comparator=">=",
        n=None if c.prompt_tokens is None else int(c.prompt_tokens),
        exercised=ok,
    )
