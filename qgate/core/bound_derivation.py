"""Which bounds each quality derivation judges a paired 0/1 gate by (issue 53): the one
mapping the gates (gates/noninferiority.py) and the sizing (quality/sizing.py) both read, so
that a suite is sized by the bound its gate will apply and a report is verified by the bounds
it was signed with.

- before `CORRECTED_FROM` (6): above 40 items, Tango's plain score bound;
- from `CORRECTED_FROM`: above 40 items, the corrected score bound (core/corrected_score.py);
- from `REFINED_FROM` (7): at 40 items or fewer, the exact bound's supremum over the nuisance
  searched past its grid (core/exact_bound.py), and the lower bound the mirrored table's upper
  one (`bounds.loss_lower`); before, the grid's supremum and Tango's plain lower bound.
"""

from __future__ import annotations

__all__ = ["CORRECTED_FROM", "REFINED_FROM", "bound_flags"]

CORRECTED_FROM = 6
"""The quality derivation from which the upper bound above 40 items is the corrected score
bound (gates/judgement.py QUALITY_DERIVATION); a report of an older one is judged by Tango's
plain score bound, as it was signed."""

REFINED_FROM = 7
"""The quality derivation from which the exact bound (40 items or fewer) searches its
p-value's supremum past the grid and the lower bound is the mirrored upper one (exact, or
corrected above 40 items); a report of an older one is judged by the grid's supremum and
Tango's plain lower bound, as it was signed. The newest derivation: every default."""


def bound_flags(derivation: int = REFINED_FROM) -> dict[str, bool]:
    """The keywords of `bounds.loss_upper` (and of `show_power`, `items_to_show` and
    `clean_items_to_show`) that quality `derivation` judged by."""
    return {"corrected": derivation >= CORRECTED_FROM, "refined": derivation >= REFINED_FROM}
