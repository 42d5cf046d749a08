"""Attribution's trials: each a sub-candidate life against the same reference records.

The lives are stand-ins (`candidate.evaluate`): what is checked is what the run
layer builds from them, the sub-profiles, the order, the records kept, ERROR.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from qgate.core.verdict import Verdict
from qgate.profile.changes import changes_of
from qgate.profile.load import load_profile
from qgate.quality.stage import QualityOutput
from qgate.run import candidate as candidate_stage
from qgate.run import context as context_stage
from qgate.run.attribute import attribute
from qgate.run.candidate import CandidateResult
from qgate.run.context import RunContext
from qgate.run.options import RunOptions

SHIPPED = Path(__file__).resolve().parents[3] / "precision_profiles"
PROFILE = SHIPPED / "smollm2-cpu-int4-attribute.yaml"


def test_each_change_alone_then_the_smallest_failing_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = load_profile(PROFILE, check_files=False)
    ctx = RunContext(
        opts=RunOptions(profile=PROFILE, out_root=tmp_path), profile=profile,
        profile_path=PROFILE, profile_sha256="0" * 64, run_dir=tmp_path, source_model=tmp_path,
        model_paths={}, tokenizer_path=None, signer=Any, declared_profile=profile,  # type: ignore[arg-type]
        selection=SimpleNamespace(notes=[]),  # type: ignore[arg-type]
    )  # fmt: skip
    seen: list[tuple[str, list[str], bool]] = []

    def evaluate(trial: RunContext, name: str, reference: Any, force_perf: bool,
                 keep_going: bool) -> CandidateResult:  # fmt: skip
        applied = [c.name for c in changes_of(trial.profile)]
        seen.append((name, applied, trial.opts.skip_perf))
        assert trial.run_dir == tmp_path / "attribution" / name and keep_going
        if applied == ["args.max_num_seqs"]:
            return CandidateResult(name=name, error="did not start: no KV space")
        failed = applied == ["emulate_weights"]
        verdict = Verdict(gate="divergence.max_mean_kld", suite="divergence", observed=0.4,
                          limit=0.05, passed=not failed, reason="r")  # fmt: skip
        return CandidateResult(name=name, quality=QualityOutput(role="candidate"),
                               verdicts=[verdict])  # fmt: skip

    monkeypatch.setattr(candidate_stage, "evaluate", evaluate)
    monkeypatch.setattr(context_stage, "model_paths", lambda profile, source: {})
    att = attribute(ctx, QualityOutput(role="reference"), max_lives=6, groups=[])
    assert [s[1] for s in seen] == [["args.enable_prefix_caching"], ["args.max_num_seqs"],
                                    ["emulate_weights"]]  # fmt: skip
    assert all(skip_perf for *_, skip_perf in seen)  # attribution judges gates only
    assert [t.verdict for t in att.trials] == ["PASS", "ERROR", "FAIL"]
    assert att.trials[1].error == "did not start: no KV space"
    assert att.minimal == ["emulate_weights"] and att.lives == 3 and att.not_tried == []
