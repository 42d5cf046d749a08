"""The canaries' gate names the parameters the candidate ignored and those not judged."""

from __future__ import annotations

from qgate.gates.quality import evaluate_quality
from qgate.profile import Profile
from qgate.quality.records import ItemRecord, SuiteRun


def _run(role: str, honoured: dict[str, tuple[bool, str]]) -> SuiteRun:
    items = [
        ItemRecord(id=p, prompt_sha256="0", output="[]", answer=a, expected="honoured", correct=ok)
        for p, (ok, a) in honoured.items()
    ]
    return SuiteRun(suite="sampling", role=role, data_sha256="d", items=items)  # type: ignore[arg-type]


PROFILE = Profile.model_validate(
    {
        "name": "s",
        "model": {"embedded": "smollm2"},
        "candidate": {},
        "quality": {"sampling": {"params": ["temperature", "seed", "top_k"]}},
    }
)


def test_a_lost_canary_fails_naming_the_parameter_and_both_answers() -> None:
    ref = _run(
        "reference",
        {
            "temperature": (True, "4 distinct of 4"),
            "seed": (True, "same"),
            "top_k": (False, "not greedy"),
        },
    )
    cand = _run(
        "candidate",
        {
            "temperature": (False, "1 distinct of 4"),
            "seed": (True, "same"),
            "top_k": (False, "not greedy"),
        },
    )
    gate = next(
        v
        for v in evaluate_quality(PROFILE.quality, [ref, cand], None)
        if v.gate == "sampling.max_flips"
    )
    assert not gate.passed and gate.observed == 1
    assert gate.reason.endswith(
        "; ignored by the candidate: temperature: reference 4 distinct of 4, candidate 1 "
        "distinct of 4; not judged, the reference did not honour them either: top_k (not greedy)"
    )


def test_all_honoured_passes_and_says_nothing_more() -> None:
    same = {
        "temperature": (True, "4 distinct of 4"),
        "seed": (True, "same"),
        "top_k": (True, "greedy"),
    }
    verdicts = evaluate_quality(
        PROFILE.quality, [_run("reference", same), _run("candidate", same)], None
    )
    gate = next(v for v in verdicts if v.gate == "sampling.max_flips")
    assert gate.passed and "ignored" not in gate.reason and "not judged" not in gate.reason
