"""The sampled test's stated power: perf/bench_sampled.py's table at its default seed, and the
line `qgate plan` prints from it for a setting.

The power of the two gates depends on the model's answer distribution, so it is measured on a
stated model (the benchmark's docstring) rather than derived; a setting is quoted the row of
the largest benchmarked (N, k) it reaches (more questions or samples do not lower it), and a
setting whose temperature, margins or alpha differ from the benchmark's is told so.
"""

from __future__ import annotations

from typing import NamedTuple

from qgate.profile.sampled import SampledSuite

__all__ = ["BENCHED", "POWER", "Row", "power_line"]


class Row(NamedTuple):
    """Shares of suite verdicts in the benchmark: PASS of A/A, the lowest PASS of the benign
    candidates, the highest FAIL of A/A and benign (false FAIL), and FAIL of each fault."""

    aa_pass: float
    benign_pass: float
    false_fail: float
    greedy: float
    halved: float
    loss10: float


BENCHED = SampledSuite()
"""The setting the benchmark varies only N and k of."""

POWER: dict[tuple[int, int], Row] = {
    (64, 4): Row(0.43, 0.4, 0.0, 1.0, 0.63, 0.42),
    (64, 8): Row(0.7, 0.68, 0.0, 1.0, 0.93, 0.63),
    (64, 16): Row(0.92, 0.89, 0.0, 1.0, 1.0, 0.84),
    (128, 4): Row(0.7, 0.72, 0.0, 1.0, 0.89, 0.67),
    (128, 8): Row(0.94, 0.91, 0.0, 1.0, 0.99, 0.85),
    (256, 8): Row(1.0, 0.99, 0.0, 1.0, 1.0, 0.99),
}
"""(N, k) -> the benchmark's row (perf/bench_sampled.py --reps 400 --seed 20261207
--temperature 1)."""


def power_line(setting: SampledSuite) -> str:
    """The stated power `qgate plan` prints for `setting`."""
    rows = [nk for nk in POWER if nk[0] <= setting.prompts and nk[1] <= setting.samples]
    if not rows:
        least = min(POWER, default=(0, 0))
        return f"power not stated below N={least[0]}, k={least[1]} (perf/bench_sampled.py)"
    n, k = max(rows, key=lambda nk: (nk[0] * nk[1], nk[0]))
    r = POWER[(n, k)]
    line = (
        f"stated power (perf/bench_sampled.py, simulated, at N={n}, k={k}): FAILs a greedy "
        f"fall-back {100 * r.greedy:.0f}%, a halved temperature {100 * r.halved:.0f}%, a 10-pt "
        f"accuracy loss {100 * r.loss10:.0f}%; PASSes A/A {100 * r.aa_pass:.0f}%, benign ones "
        f"at least {100 * r.benign_pass:.0f}%, false FAIL {100 * r.false_fail:.0f}%"
    )
    asked = (setting.temperature, setting.max_drop, setting.max_diversity_change, setting.alpha)
    benched = (BENCHED.temperature, BENCHED.max_drop, BENCHED.max_diversity_change, BENCHED.alpha)
    if asked != benched:
        line += (
            f" (benchmarked at T={benched[0]:g}, max_drop {benched[1]:g}, max_diversity_change "
            f"{benched[2]:g}, alpha {benched[3]:g}: not stated for this setting)"
        )
    return line
