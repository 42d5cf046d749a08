"""Check the report's record of where the reference's results came from (schema 2).

What can be checked without the cache itself:

- the recorded cache entry envelope verifies with the recorded public key,
  that key has the recorded key id, and the signed Statement names the
  recorded entry digest, cache key and creation time;
- a 'fresh' entry was made no later than the report (one machine, one
  clock; a cache entry from another machine only gets a note);
- 'cache' means every reference suite run is marked cached, 'fresh' none;
- a 'fresh' entry was signed by the report's own key, and the report's
  `reference_quality` stage (`quality` side by side) took at least as long as the
  reference suites.

Not checkable here: that the entry's payload equals the report's reference
records (the payload is not in the report), and that the cache key matches
the run's inputs. A cache entry signed by another key is named in a note.
"""

from __future__ import annotations

from datetime import datetime

from qgate.errors import VerificationFailed
from qgate.quality.cache_auth import entry_statement
from qgate.report.model import Report

REFERENCE_STAGE = "reference_quality"
SIDE_BY_SIDE_STAGE = "quality"  # both sides' quality at once (plan mode 'together')
# stage timings and suite wall times are each rounded to milliseconds
_ROUNDING_S = 0.01


def _time(text: str, what: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise VerificationFailed(f"reference provenance: {what} {text!r} is not a time") from None


def check_provenance(report: Report, keyid: str, notes: list[str]) -> str:
    """Raise VerificationFailed when the provenance record does not hold; a line for `checked`."""
    p = report.reference_provenance
    reference_records = report.quality.divergence is not None or any(
        r.role == "reference" for r in report.quality.runs
    )
    if p is None and not reference_records:
        # a dummy-weights preview has no reference results; a profile that configures
        # suites but lost their records fails those gates in the quality recomputation
        notes.append("no reference quality results (a speed preview): no provenance to check")
        return ""
    if p is None:
        if report.schema_version == "1":
            notes.append("schema 1 report: no reference provenance recorded")
            return ""
        raise VerificationFailed("the report does not record where its reference results came from")
    try:
        st = entry_statement(p.envelope.encode(), [p.signer_public_key_pem])
    except VerificationFailed as exc:
        raise VerificationFailed(
            f"reference provenance: cache entry envelope: {exc.message}"
        ) from None
    for name, recorded, signed in (
        ("signer_keyid", p.signer_keyid, st.keyid),
        ("entry_sha256", p.entry_sha256, st.payload_sha256),
        ("cache_key", p.cache_key, st.cache_key),
        ("created_at", p.created_at, st.created_at),
    ):
        if recorded != signed:
            raise VerificationFailed(
                f"reference provenance: {name} {recorded[:16]!r} but the entry's signature "
                f"says {signed[:16]!r}"
            )
    newer = _time(p.created_at, "created_at") > _time(report.created_at, "report created_at")
    refs = [r for r in report.quality.runs if r.role == "reference"]
    want_cached = p.source == "cache"
    odd = next((r.suite for r in refs if r.cached != want_cached), None)
    if odd is not None:
        raise VerificationFailed(
            f"reference provenance says {p.source!r} but reference suite {odd} is "
            + ("not marked cached" if want_cached else "marked cached")
        )
    if p.source == "fresh":
        if newer:  # one run, one clock
            raise VerificationFailed(
                "reference provenance: the fresh entry is newer than the report"
            )
        if p.signer_keyid != keyid:
            raise VerificationFailed(
                "reference provenance says 'fresh' but the entry was signed by another key "
                f"({p.signer_keyid[:16]}) than the report ({keyid[:16]})"
            )
        stage = report.stage_timings.get(REFERENCE_STAGE)
        if stage is None:
            stage = report.stage_timings.get(SIDE_BY_SIDE_STAGE)
        suites = sum(r.wall_s for r in refs)
        if stage is None or stage + _ROUNDING_S < suites:
            shown = "no reference_quality stage" if stage is None else f"{stage:.3f} s"
            raise VerificationFailed(
                f"reference provenance says 'fresh' but the stage timings show {shown} "
                f"for {suites:.3f} s of reference suites"
            )
    elif newer:  # another machine made it: its clock may run ahead
        notes.append(f"the reference cache entry is dated {p.created_at}, after the report")
    if p.source == "cache" and p.signer_keyid != keyid:
        notes.append(
            f"reference results came from a cache entry signed by key {p.signer_keyid} "
            "(another key than the report's; the run trusted it)"
        )
    return f"reference provenance ({p.source}, entry {p.entry_sha256[:12]}) signed by its key"
