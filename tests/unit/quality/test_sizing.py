"""Sample sizes from `detect: {drop, power}`: the count reaches the power, the sets grow to it."""

from __future__ import annotations

import math

import pytest

from qgate.profile import Detect, LmEvalTask, MathSuite, RecallSuite
from qgate.quality.math_set import load_math_set, math_data_sha256
from qgate.quality.sizing import (
    achieved_power,
    items_needed,
    lmeval_limit,
    math_limit,
    recall_haystacks,
)
from qgate.quality.stats import mcnemar_power


@pytest.mark.parametrize(
    ("drop", "alpha", "discordance"),
    [(0.15, 0.0167, None), (0.05, 0.05, None), (0.1, 0.05, 0.3), (0.02, 0.05, None)],
)
def test_the_count_reaches_the_stated_power_and_half_of_it_does_not(
    drop: float, alpha: float, discordance: float | None
) -> None:
    detect = Detect(drop=drop, discordance=discordance)
    sizing = items_needed(detect, alpha)
    assert sizing.needed == sizing.used and not sizing.capped
    assert sizing.power_at_used >= 0.8
    assert achieved_power(sizing.used // 2, drop, sizing.discordance, alpha) < 0.8
    assert sizing.discordance == (discordance if discordance is not None else 2 * drop)


def test_more_flips_both_ways_need_more_items() -> None:
    quiet = items_needed(Detect(drop=0.05, discordance=0.05), 0.05).used
    noisy = items_needed(Detect(drop=0.05, discordance=0.3), 0.05).used
    assert noisy > 3 * quiet


def test_the_bound_caps_the_count_and_says_so() -> None:
    sizing = items_needed(Detect(drop=0.01, max_items=200), 0.05)
    assert sizing.needed is None and sizing.used == 200 and sizing.capped
    assert sizing.power_at_used < 0.8


def test_suites_take_the_count_in_their_own_unit() -> None:
    detect = Detect(drop=0.1)
    n = items_needed(detect, 0.05).used
    assert math_limit(MathSuite(limit=10, detect=detect)) == n  # replaces limit
    assert math_limit(MathSuite(limit=10)) == 10
    recall = RecallSuite(depths=[0.1, 0.5, 0.9], haystacks=1, detect=detect)
    assert recall_haystacks(recall) == -(-n // 3)
    assert recall_haystacks(RecallSuite(haystacks=2)) == 2
    assert lmeval_limit(LmEvalTask(task="t", detect=detect)) == n


def test_the_core_math_set_grows_past_its_shipped_items_the_same_way_every_time() -> None:
    core, _ = load_math_set(None)
    grown, _ = load_math_set(None, len(core) + 150)
    assert [i.id for i in grown[: len(core)]] == [i.id for i in core]
    extra = grown[len(core) :]
    assert len(extra) == 150 and all(i.id.startswith("x") for i in extra)
    assert len({i.question for i in grown}) == len(grown)  # no question asked twice
    assert load_math_set(None, len(core) + 150)[0] == grown
    sized = MathSuite(detect=Detect(drop=0.05))  # needs more than the core set
    count = math_limit(sized)
    assert count is not None and count > len(core)
    digest = math_data_sha256(sized, "short", max_model_len=None)
    # the digest (and so the reference cache key) follows the items asked, not how
    assert digest == math_data_sha256(MathSuite(limit=count), "short", max_model_len=None)
    assert digest != math_data_sha256(MathSuite(), "short", max_model_len=None)


def test_a_capped_detection_is_a_report_warning() -> None:
    from qgate.gates.notices import capped_detections
    from qgate.profile import Profile

    def profile(max_items: int) -> Profile:
        math = {"detect": {"drop": 0.02, "max_items": max_items}, "prompts": ["long"]}
        return Profile.model_validate(
            {
                "name": "p",
                "model": {"embedded": "smollm2"},
                "candidate": {},
                "quality": {"math": math},
            }
        )

    (line,) = capped_detections(profile(300).quality)
    assert line.startswith(
        "math.long: detect 2.0 pts at power 0.8 needs more than "
        "detect.max_items 300; it ran 300 items (power 0."
    )
    assert capped_detections(profile(5000).quality) == []


def _first_reaching(detect: Detect, alpha: float) -> int | None:
    disc = detect.discordance if detect.discordance is not None else min(1.0, 2 * detect.drop)
    return next(
        (
            n
            for n in range(1, detect.max_items + 1)
            if mcnemar_power(n, detect.drop, disc, alpha) >= detect.power
        ),
        None,
    )


def _grid() -> list[tuple[Detect, float]]:
    out = []
    for drop in (0.1, 0.2, 0.4, 0.8):
        for disc in (None, drop, 0.5, 0.8, 1.0):
            if disc is not None and disc < drop:
                continue
            for power in (0.5, 0.8, 0.9):
                for alpha in (0.05, 0.0167, 0.03125, 0.25):
                    out.append(
                        (Detect(drop=drop, discordance=disc, power=power, max_items=120), alpha)
                    )
    return out


def test_the_count_is_the_smallest_that_reaches_the_power_on_the_sawtooth() -> None:
    grid = _grid()
    for detect, alpha in grid:
        sizing = items_needed(detect, alpha)
        assert sizing.needed == _first_reaching(detect, alpha), (detect, alpha)
    assert len(grid) == 228  # every grid point checked


def test_the_issues_sawtooth_cases() -> None:
    teeth = items_needed(Detect(drop=0.4, power=0.5, discordance=1.0, max_items=20), 0.05)
    assert teeth.needed == 18 and teeth.power_at_used >= 0.5
    assert items_needed(Detect(drop=0.2, power=0.5, discordance=1.0), 0.0167).needed == 116


@pytest.mark.parametrize(
    ("detect", "alpha", "why"),
    [
        (Detect(drop=0.2, discordance=0.05), 0.05, "detect.discordance must be >= detect.drop"),
        (Detect(drop=0.2, power=0.04), 0.05, "detect.power must be > alpha"),
        (Detect(drop=0.2), 1.0, "is not a test level"),
        (Detect(drop=0.2), 0.0, "is not a test level"),
    ],
)
def test_a_detection_outside_the_model_is_refused_with_the_reason(
    detect: Detect, alpha: float, why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        items_needed(detect, alpha)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ((10, 0.3, 0.1, 0.05), "discordance 0.1 must lie in"),
        ((10, 1.5, 1.0, 0.05), "drop 1.5 is not an accuracy drop"),
        ((10, 0.3, 1.2, 0.05), "discordance 1.2 must lie in"),
        ((10, 0.3, 0.5, 0.0), "not a test level"),
        ((10, 0.3, 0.5, 1.0), "not a test level"),
        ((10, -0.1, 0.5, 0.05), "drop -0.1 is not an accuracy drop"),
    ],
)
def test_the_power_refuses_inputs_outside_its_model(
    args: tuple[int, float, float, float], why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        mcnemar_power(*args)


def test_a_tiny_alpha_without_a_detection_is_not_refused_by_its_implied_bound() -> None:
    from qgate.quality.sizing import gate_power

    # at alpha 1e-310 even 1,000 items all lost cannot fail the gate (2**-1000 > alpha)
    power = gate_power("math.short", MathSuite(alpha=1e-310, max_drop=0.5), 64)
    assert power.items_needed is None and power.min_detectable_drop is None


def test_sizing_at_an_observed_discordance_matches_the_exact_power_function() -> None:
    detect = Detect(drop=0.05)  # the prior would assume 10% of items flip
    observed = (0.23, "observed on 120 calibration items")
    sizing = items_needed(detect, 0.0167, observed)
    assert sizing.discordance == 0.23 and sizing.source == observed[1]
    assert sizing.power_at_used == mcnemar_power(sizing.used, 0.05, 0.23, 0.0167) >= 0.8
    # the smallest such count on the sawtooth: no fewer items reach the power
    assert all(mcnemar_power(m, 0.05, 0.23, 0.0167) < 0.8 for m in range(1, sizing.used))
    # more observed flips than the prior assumes: more items than the prior's count
    assert sizing.used > items_needed(detect, 0.0167).used
    # an observation below the drop is impossible for that drop: floored at the drop
    assert items_needed(detect, 0.0167, (0.01, "x")).discordance == 0.05


def test_show_sizes_a_suite_to_pass_a_clean_candidate_and_the_larger_count_is_asked() -> None:
    from qgate.core.bounds import show_power
    from qgate.profile.detect import Show
    from qgate.quality.sizing import show_items

    detect = Detect(drop=0.15, discordance=0.2)  # detection alone: 81 items
    suite = MathSuite(max_drop=0.15, alpha=0.0167, detect=detect, show=Show(discordance=0.2))
    assert show_items(suite) == 95 and math_limit(suite) == 95  # showing needs more
    assert show_power(95, 0.15, 0.2, 1 - 0.0167) >= 0.8 > show_power(94, 0.15, 0.2, 1 - 0.0167)
    calm = suite.model_copy(update={"show": Show(discordance=0.04)})
    assert show_items(calm) is not None and math_limit(calm) == 81  # detection needs more
    # rule point: show sizes nothing (validate refuses it there: qgate/profile/inert.py)
    assert show_items(suite.model_copy(update={"rule": "point"})) is None
    # an alpha below float resolution leaves no bound to show: nothing sized, nothing raised
    assert show_items(suite.model_copy(update={"alpha": 1e-310})) is None


def _pass_chance(policy: MathSuite, n: int, discordance: float, derivation: int) -> float:
    """The chance a candidate with no true loss (items lost and gained at discordance / 2
    each) PASSes at `n` items, summed exactly over the trinomial's tables that weigh more
    than 1e-15, each judged by the gate itself (`bound_outcome`) as `derivation` derives it."""
    from qgate.gates.noninferiority import bound_outcome
    from qgate.quality.stats import FlipCounts

    half, total = discordance / 2, 0.0
    for lost in range(n + 1):
        for gained in range(n + 1 - lost):
            rest = n - lost - gained
            log_p = (
                math.lgamma(n + 1)
                - math.lgamma(lost + 1)
                - math.lgamma(gained + 1)
                - math.lgamma(rest + 1)
                + (lost + gained) * math.log(half)
                + rest * math.log1p(-discordance)
            )
            if log_p < math.log(1e-15):
                continue
            f = FlipCounts(both_correct=rest, lost=lost, gained=gained, both_wrong=0)
            if bound_outcome(policy, f, derivation) == "pass":
                total += math.exp(log_p)
    return total


@pytest.mark.parametrize(
    ("margin", "discordance", "alpha"), [(0.25, 0.2, 0.05), (0.15, 0.2, 0.0167)]
)
def test_show_sizes_by_the_bound_the_run_applies(
    margin: float, discordance: float, alpha: float
) -> None:
    """The items `show` sizes reach its power under the newest derivation's bound (the exact
    one refined at 40 items or fewer, the corrected score bound above), computed exactly
    through the gate's own verdict; the item before does not."""
    from qgate.core.bounds import show_power
    from qgate.gates.judgement import QUALITY_DERIVATION
    from qgate.profile.detect import Show
    from qgate.quality.sizing import show_items

    suite = MathSuite(max_drop=margin, alpha=alpha, show=Show(discordance=discordance, power=0.8))
    n = show_items(suite)
    assert n is not None and n == show_items(suite, QUALITY_DERIVATION)
    assert _pass_chance(suite, n, discordance, QUALITY_DERIVATION) >= 0.8
    assert show_power(n - 1, margin, discordance, 1 - alpha) < 0.8


def test_show_sizes_by_the_derivation_asked() -> None:
    """Derivation 5 judged above 40 items by Tango's plain bound, which passes more: sized by
    it, the demo's math needed 89 items for 80% at its margin, by the newest 95. Each count
    reaches the power under its own bound, the plain one's not under the newest."""
    from qgate.gates.judgement import QUALITY_DERIVATION
    from qgate.profile.detect import Show
    from qgate.quality.sizing import show_items

    suite = MathSuite(max_drop=0.15, alpha=0.0167, show=Show(discordance=0.2))
    old, new = show_items(suite, 5), show_items(suite)
    assert (old, new) == (89, 95)
    assert (
        _pass_chance(suite, old, 0.2, 5) >= 0.8 > _pass_chance(suite, old, 0.2, QUALITY_DERIVATION)
    )


def test_within_sized_as_show_sizes_by_the_signers_derivation() -> None:
    """`qgate verify` re-derives a report's item counts within `sized_as(the signer's
    quality derivation)`: a derivation-5 report's math sized by the plain bound (89 items),
    a new run's by the newest (95), and each count's own plan line follows."""
    from qgate.profile.detect import Show
    from qgate.quality.sizing import gate_power, sized_as

    suite = MathSuite(max_drop=0.15, alpha=0.0167, show=Show(discordance=0.2))
    with sized_as(5):
        assert math_limit(suite) == 89 and gate_power("math", suite, 89).show_items == 89
        with sized_as(7):
            assert math_limit(suite) == 95
        assert math_limit(suite) == 89
    assert math_limit(suite) == 95 and gate_power("math", suite, 89).show_items == 95
