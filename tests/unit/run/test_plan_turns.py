"""`qgate plan` shows a multi-turn scenario's graded sessions: their turns per side and the
power of their gate (qgate/gates/turns.py)."""

from __future__ import annotations

from pathlib import Path

from qgate.profile.load import load_profile_file
from qgate.run.plan import describe, make_plan

AGENT = Path(__file__).resolve().parents[3] / "precision_profiles" / "smollm2-cpu-agent.yaml"


def test_the_agent_profile_plans_its_graded_turns_and_their_power() -> None:
    profile = load_profile_file(AGENT, check_files=False).profile
    plan = make_plan([("candidate", profile)], reference_cached=None, placement="", refresh=False)
    (scenario,) = plan.scenarios
    assert scenario.graded_turns == 8 * 4  # 8 sessions, turns 2, 3, 6, 7 of 8 graded
    power = next(g for g in plan.power if g.suite == "perf.agent-4.turns")
    assert power.items == 32 and power.alpha == 0.05
    assert power.min_detectable_drop is not None and 0 < power.min_detectable_drop < 1
    lines = describe(plan)
    assert (
        "    graded turns: 32 per side (8 sessions x 8 turns beside its conversations; "
        in "\n".join(lines)
    )
    assert any(line.startswith("  power perf.agent-4.turns: 32 items detect ") for line in lines)
