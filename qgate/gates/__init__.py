"""Every gate: pure functions from records to verdicts, which `qgate run` and `qgate verify`
both call (docs/reference/gates.md lists the families).

- `judge`: the one judge, `judge(profile, evidence, derivation)`: every verdict group of one
  candidate (quality, scenarios, lives, speed, warnings, the overall verdict) from its
  `Evidence` (`judgement`: what it reads and makes); run, report and verify call it.
- `assembly`: the verdict assembly the judge is made of, `candidate_verdicts` (a candidate's
  quality verdicts) and `scenario_gates` (a perf scenario's); never a family called alone.
- quality: `quality` (the suites' and divergence gates, `evaluate_quality`), `suite` and
  `score` (the accuracy gates of one suite), `effect`, `agent`, `ladder` (the context
  ladder's divergence), `reuse` and `reuse_exercised` (the reuse passes), `speculative`
  (acceptance), `notices` (the warnings the gates leave).
- perf: `scenario` (stream errors and mismatches), `probes` (graded probes under load),
  `turns` (graded session turns), `speed` (the speed gates over the comparisons), `life`
  (each candidate life's start and idle probes, and the rounds a failed life served).
- the server's own report: `scales` (FP8 KV-cache scales), `changes_applied` (each change
  confirmed or contradicted).
- `board`: the decisions the quality stage's board makes between blocks (`quality.stop`).

The surface below is loaded lazily: importing `qgate.gates` imports none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgate.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from qgate.gates.assembly import candidate_verdicts, scenario_gates
    from qgate.gates.judge import judge, overall, perf_status, quality_verdicts
    from qgate.gates.judgement import Derivation, Evidence, Judgement
    from qgate.gates.quality import evaluate_quality, harm_shown, overall_passed
    from qgate.gates.scenario import scenario_verdicts
    from qgate.gates.speed import evaluate_perf_gates, report_gates

__all__ = [
    "Derivation",
    "Evidence",
    "Judgement",
    "candidate_verdicts",
    "evaluate_perf_gates",
    "evaluate_quality",
    "harm_shown",
    "judge",
    "overall",
    "overall_passed",
    "perf_status",
    "quality_verdicts",
    "report_gates",
    "scenario_gates",
    "scenario_verdicts",
]

_HOME = {
    "Derivation": "judgement",
    "Evidence": "judgement",
    "Judgement": "judgement",
    "judge": "judge",
    "overall": "judge",
    "perf_status": "judge",
    "quality_verdicts": "judge",
    "candidate_verdicts": "assembly",
    "scenario_gates": "assembly",
    "evaluate_quality": "quality",
    "harm_shown": "quality",
    "overall_passed": "quality",
    "scenario_verdicts": "scenario",
    "evaluate_perf_gates": "speed",
    "report_gates": "speed",
}

__getattr__ = lazy_getattr(__name__, _HOME)
