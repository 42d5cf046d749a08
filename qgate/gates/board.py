"""The board's decisions: whether a suite may stop (`quality.stop`), from what both runtimes
have answered so far.

One board per reference-candidate pair, made by the run (qgate/run/context.py,
qgate/run/together.py) and handed to the quality stage, which sees it through the `Board`
protocol of qgate/quality/board.py: the candidate's quality stage posts to it after each
block, and so does the reference's when the two run side by side; a candidate after a
finished or cached reference gets a board that already holds the reference's records. The
decisions are the pure ones of the gates (qgate/gates/quality.py, suite.py) and
qgate/quality/settle.py, so `qgate verify` re-derives every stop from the records alone; the
board only holds state between blocks, behind a lock (the two stages run in two threads).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from qgate.core.records import Role
from qgate.gates.looks import look_decision, look_sizes, paired_count
from qgate.gates.quality import evaluate_divergence, policy_for, settled_gates
from qgate.profile import AccuracyPolicy, DivergenceSuite, QualitySpec
from qgate.quality.records import DivergenceRun, ItemRecord, SuiteRun

__all__ = ["SettleBoard"]


class SettleBoard:
    """Records per suite and side, and the decisive failure once there is one."""

    def __init__(
        self, spec: QualitySpec, reference: Sequence[SuiteRun] = (), *, hold_reference: bool = False
    ) -> None:
        self.spec = spec
        # the reference runs every item when its records must serve later candidates
        # (attribution's sub-candidates): it posts, but never stops
        self.hold_reference = hold_reference
        self._lock = threading.Lock()
        self._items: dict[tuple[str, Role], list[ItemRecord]] = {
            (r.suite, "reference"): list(r.items) for r in reference
        }
        self._halt: str | None = None
        self._looked: dict[str, int] = {}  # suite -> the last look taken (stop: looks)

    @property
    def enabled(self) -> bool:
        return self.spec.stop != "off"

    @property
    def block(self) -> int:
        return self.spec.stop_block or self.spec.concurrency

    def halted(self, role: Role) -> str | None:
        """Why `role`'s whole quality stage stops (`stop: verdict`), or None."""
        if role == "reference" and self.hold_reference:
            return None
        with self._lock:
            return self._halt

    def post(self, role: Role, suite: str, items: Sequence[ItemRecord], planned: int) -> str | None:
        """Record a side's items so far; why the suite stops now, or None to go on."""
        with self._lock:
            self._items[(suite, role)] = list(items)
            if role == "reference" and self.hold_reference:
                return None
            if self._halt is not None:
                return self._halt
            ref = self._items.get((suite, "reference"), [])
            cand = self._items.get((suite, "candidate"), [])
            policy = policy_for(self.spec, suite)
            if policy is None or (len(ref) >= planned and len(cand) >= planned):
                return None
            if self.spec.stop == "looks":
                return self._look(suite, policy, ref, cand, planned)
            decided = settled_gates(policy, ref, cand, planned)
            failed = [g for g, got in decided.items() if got == "fail"]
            if self.spec.stop == "verdict" and failed:
                self._halt = f"the verdict was FAIL ({suite}.{failed[0]} settled)"
                return self._halt
            settled = decided and all(ok is not None for ok in decided.values())
            if settled and self._differs(ref, cand):
                known = len({i.id for i in ref} & {i.id for i in cand})
                return f"settled at {known} of {planned} items"
        return None

    @property
    def order_seed(self) -> int | None:
        """The seed the suites shuffle their items by (`stop: looks`), else None."""
        return self.spec.seed if self.spec.stop == "looks" else None

    def _look(
        self,
        suite: str,
        policy: AccuracyPolicy,
        ref: Sequence[ItemRecord],
        cand: Sequence[ItemRecord],
        planned: int,
    ) -> str | None:
        """At the first post past a new look: why the suite ends there, or None."""
        known = paired_count(ref, cand)
        sizes = look_sizes(planned, self.spec.looks)
        look = sum(1 for n in sizes if n <= known)
        if look <= self._looked.get(suite, 0) or known >= planned:
            return None
        self._looked[suite] = look
        decided = look_decision(policy, ref, cand, planned)
        if decided is None or not self._differs(ref, cand):
            return None
        verdict = "FAIL" if "fail" in decided.values() else "PASS"
        return f"{verdict} at look {look} of {len(sizes)} ({known} of {planned} items)"

    def post_divergence(self, setting: DivergenceSuite, run: DivergenceRun) -> None:
        """The finished divergence suite, gated: with `stop: verdict` a failure halts."""
        verdicts = evaluate_divergence(setting, run)
        failed = next((v for v in verdicts if not v.passed and v.settled), None)
        if failed is not None and self.spec.stop == "verdict":
            with self._lock:
                self._halt = self._halt or f"the verdict was FAIL ({failed.gate} settled)"

    def _differs(self, ref: Sequence[ItemRecord], cand: Sequence[ItemRecord]) -> bool:
        """Whether the no-effect gate is already out of play (it needs every answer equal)."""
        if self.spec.on_no_effect != "fail":
            return True
        outputs = {i.id: i.output for i in cand}
        return any(i.id in outputs and outputs[i.id] != i.output for i in ref)
