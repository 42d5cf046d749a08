"""Life probes for tests: a life's start or idle probe set and the quality records they are
judged against (the life gates' and the pooled envelope gate's tests)."""

from __future__ import annotations

from helpers.perf_runs import PROBE_TRUTH, probe

from qgate.perf.life_probes import LifeProbes
from qgate.quality.records import ItemRecord, SuiteRun

TRUTH = PROBE_TRUTH
RIGHT = {k: f"The answer is {v}." for k, v in TRUTH.items()}


def corrupt(text: str) -> str:
    """The fault proxy's corruption: digits rotated by 5."""
    return "".join(str((int(c) + 5) % 10) if c.isdigit() else c for c in text)


def life(
    role: str,
    kind: str,
    answers: dict[str, str],
    *,
    life: int = 1,
    round: int = 0,
    side: str | None = None,
    node: str | None = None,
) -> LifeProbes:
    return LifeProbes(
        side=side or role,
        role=role,  # type: ignore[arg-type]
        life=life,
        round=round,
        node=node,
        kind=kind,  # type: ignore[arg-type]
        idle_s=30.0 if kind == "idle" else 0.0,
        requests=[probe(k, v, index=i) for i, (k, v) in enumerate(answers.items())],
    )


def reference_quality(
    wrong: frozenset[str] = frozenset(), role: str = "reference"
) -> list[SuiteRun]:
    items = [
        ItemRecord(
            id=k,
            prompt_sha256="",
            output="",
            answer=v,
            expected=v,
            correct=k not in wrong,
            output_tokens=None,
        )
        for k, v in TRUTH.items()
    ]
    return [SuiteRun(suite="math.short", role=role, data_sha256="", items=items)]  # type: ignore[arg-type]
