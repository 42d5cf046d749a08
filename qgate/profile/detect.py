"""`detect:` of an exact-answer suite: the smallest drop its gates must catch, and with what
power (sizes the generated sets); whether an exact test can reject at all at a size; and the
`rule` by which max_drop is judged (a point estimate, or a bound on the loss); and the gate
policy every exact-answer suite shares (`AccuracyPolicy`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, model_validator

from qgate.profile.base import Fraction, Strict

__all__ = [
    "AccuracyPolicy",
    "RULE",
    "RULE_BEFORE",
    "Detect",
    "DropRule",
    "detect_problem",
    "fewest_rejecting",
    "rule_as_run",
    "Ruled",
    "Show",
]

DropRule = Literal["point", "bound"]
RULE: Any = Field(
    default="bound",
    description="How `max_drop` is judged. 'bound' (the default; non-inferiority, issue 53): "
    "PASS only when the one-sided (1 - alpha) upper confidence bound on the candidate's "
    "paired loss is within max_drop, FAIL when the lower bound is above it (harm shown), "
    "INCONCLUSIVE otherwise: never a PASS for lack of items. 'point' (the rule before, kept "
    "to compare): the observed drop against max_drop, with the exact McNemar test beside it.",
)
RULE_BEFORE: DropRule = "point"
"""The rule of every policy a report stored before `rule` existed (it has no such key)."""


def rule_as_run(data: Any) -> Any:
    """A stored profile (a report's JSON form) with `rule` filled in as it ran: every policy
    that holds `max_drop` but no `rule` was judged before the key existed, by the point rule;
    without this an older report would be re-judged under today's default (bound)."""
    if isinstance(data, list):
        return [rule_as_run(v) for v in data]
    if not isinstance(data, dict):
        return data
    out = {k: rule_as_run(v) for k, v in data.items()}
    if "max_drop" in out and "significance" in out and "rule" not in out:
        out["rule"] = RULE_BEFORE
    return out


class Show(Strict):
    """Size the suite to *show* a fine candidate fine (issue 53 item 2): so that a candidate with
    no true loss PASSes its bound (within `max_drop`) with `power`, when items flip either way
    at `discordance` (its benign churn: numerics that move answers both ways)."""

    power: float = Field(default=0.8, gt=0, lt=1, description="Chance of showing it.")
    discordance: Fraction | None = Field(
        default=None,
        description="Share of items a candidate with no true loss flips, half each way; default "
        "the calibration's measured share, else `detect.discordance`, else twice max_drop.",
    )
    max_items: int = Field(
        default=1000, ge=1, le=2000, description="Bound on the items sizing may ask for."
    )


class Ruled(Strict):
    """The base of a policy with a `rule`: where the file writes none it is the default, or
    the rule an older report's run had (verify reads its profile file with
    `context={"rule": ...}`, qgate/report/verify/profile.py). `show` sizes it for the rule."""

    show: Show | None = Field(
        default=None,
        description="Also size the suite so a candidate with no true loss PASSes its bound "
        "with this power (rule 'bound'); the larger of this count and `detect`'s is asked.",
    )

    @model_validator(mode="before")
    @classmethod
    def _rule_of_the_run(cls, data: Any, info: ValidationInfo) -> Any:
        rule = (info.context or {}).get("rule")
        if rule is not None and isinstance(data, dict) and "rule" not in data:
            return {**data, "rule": rule}
        return data


class Detect(Strict):
    """The smallest drop a gate must catch, and with what power: sizes the generated sets."""

    drop: float = Field(gt=0, le=1, description="Accuracy drop (a fraction) to detect.")
    power: float = Field(default=0.8, gt=0, lt=1, description="Chance of detecting it.")
    discordance: Fraction | None = Field(
        default=None,
        description="Prior share of items that flip either way (lost + gained); default twice "
        "the drop (three items lost for each one gained). A report states the observed share.",
    )
    max_items: int = Field(
        default=1000, ge=1, description="Bound on the items per suite that sizing may ask for."
    )


def fewest_rejecting(alpha: float) -> int:
    """The fewest items at which the one-sided exact McNemar test can reject at `alpha`.

    Even with every item lost (p = 2**-n) it rejects only when p < alpha.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha {alpha!r} is not a test level: it must lie between 0 and 1")
    num, den = alpha.as_integer_ratio()
    n = 1
    while den >= num << n:
        n += 1
    return n


def detect_problem(detect: Detect, alpha: float) -> tuple[str, str] | None:
    """(the key under `detect`, why) where a detection lies outside the sizing model.

    The drop is P(lost) - P(gained), so at most the share of items that flip; a
    power at or below alpha is what a test that ignores its items achieves; a
    bound below the fewest items that can ever reject leaves nothing to size.
    `qgate validate` refuses such a profile, the sizing functions raise.
    """
    if detect.discordance is not None and detect.discordance < detect.drop:
        points = f"{100 * detect.drop:.3g}"
        return (
            "discordance",
            f"must be >= detect.drop ({detect.drop:g}): a drop of {points} points needs at "
            f"least {points}% of items to flip",
        )
    if detect.power <= alpha:
        return (
            "power",
            f"must be > alpha ({alpha:g}): a test that ignores its items rejects that often",
        )
    fewest = fewest_rejecting(alpha)
    if detect.max_items < fewest:
        return (
            "max_items",
            f"must be at least {fewest}: at alpha {alpha:g} the exact test cannot fail with "
            f"fewer items, even with every one lost",
        )
    return None


class AccuracyPolicy(Ruled):
    """Gate policy shared by every exact-answer suite."""

    fraction_items: ClassVar[bool] = False
    """Its items are shares of several sampled answers (`quality.sampled`): no noise-floor flip
    allowance applies to them, and `qgate plan` states their power from their own plan rows
    rather than from the exact test's."""

    min_accuracy: Fraction | None = Field(
        default=None, description="Floor on the candidate's accuracy."
    )
    max_drop: Fraction | None = Field(
        default=None, description="Largest allowed accuracy drop, reference minus candidate."
    )
    max_flips: int | None = Field(
        default=None, ge=0, description="Largest allowed count of reference-correct items lost."
    )
    significance: bool = Field(
        default=True,
        description="Fail when a one-sided exact McNemar test finds the candidate worse at alpha.",
    )
    alpha: float = Field(default=0.05, gt=0, lt=1, description="Test level.")
    power: float = Field(default=0.8, gt=0, lt=1, description="Power for the detectable drop.")
    rule: DropRule = RULE
    detect: Detect | None = Field(
        default=None,
        description="Size the suite so its exact McNemar test at `alpha` detects this drop "
        "with this power (generated sets grow; `limit`/`haystacks` are replaced).",
    )
