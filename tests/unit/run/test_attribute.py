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
from qgate.run import attribute as attribute_module
from qgate.run.attribute import attribute
from qgate.run.candidate import CandidateResult
from qgate.run.context import RunContext
from qgate.run.options import RunOptions
from qgate.runtime.lives import Lives

SHIPPED = Path(__file__).resolve().parents[3] / "precision_profiles"
PROFILE = SHIPPED / "smollm2-cpu-int4-attribute.yaml"


def test_halves_first_then_the_smallest_failing_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = load_profile(PROFILE, check_files=False)
    ctx = RunContext(
        opts=RunOptions(profile=PROFILE, out_root=tmp_path),
        profile=profile,
        profile_path=PROFILE,
        profile_sha256="0" * 64,
        run_dir=tmp_path,
        source_model=tmp_path,
        model_paths={},
        tokenizer_path=None,
        signer=Any,
        declared_profile=profile,  # type: ignore[arg-type]
        selection=SimpleNamespace(notes=[]),  # type: ignore[arg-type]
    )
    seen: list[tuple[str, list[str], bool]] = []

    def evaluate(
        trial: RunContext, name: str, reference: Any, force_perf: bool, keep_going: bool
    ) -> CandidateResult:
        applied = [c.name for c in changes_of(trial.profile)]
        seen.append((name, applied, trial.opts.skip_perf))
        assert trial.run_dir == tmp_path / "attribution" / name and keep_going
        if "args.max_num_seqs" in applied:
            return CandidateResult(name=name, error="did not start: no KV space")
        failed = applied == ["emulate_weights"]
        verdict = Verdict(
            gate="divergence.max_mean_kld",
            suite="divergence",
            observed=0.4,
            limit=0.05,
            passed=not failed,
            reason="r",
        )
        return CandidateResult(
            name=name, quality=QualityOutput(role="candidate"), verdicts=[verdict]
        )

    monkeypatch.setattr(attribute_module, "evaluate", evaluate)
    monkeypatch.setattr(attribute_module, "model_paths", lambda profile, source, elsewhere: {})
    att = attribute(ctx, QualityOutput(role="reference"), max_lives=6, groups=[])
    assert [s[1] for s in seen] == [  # halves first
        ["args.enable_prefix_caching", "args.max_num_seqs"],
        ["emulate_weights"],
    ]
    assert all(skip_perf for *_, skip_perf in seen)  # attribution judges gates only
    assert [t.verdict for t in att.trials] == ["ERROR", "FAIL"]
    assert att.trials[0].error == "did not start: no KV space"
    assert att.minimal == ["emulate_weights"] and att.complete
    assert att.lives == 2 and att.not_tried == []


def test_a_spent_budget_is_recorded_with_the_set_it_would_try_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = load_profile(PROFILE, check_files=False)
    ctx = RunContext(
        opts=RunOptions(profile=PROFILE, out_root=tmp_path),
        profile=profile,
        profile_path=PROFILE,
        profile_sha256="0" * 64,
        run_dir=tmp_path,
        source_model=tmp_path,
        model_paths={},
        tokenizer_path=None,
        signer=Any,
        declared_profile=profile,  # type: ignore[arg-type]
        selection=SimpleNamespace(notes=[]),  # type: ignore[arg-type]
    )

    def evaluate(
        trial: RunContext, name: str, reference: Any, force_perf: bool, keep_going: bool
    ) -> CandidateResult:
        return CandidateResult(name=name, error="did not start")

    monkeypatch.setattr(attribute_module, "evaluate", evaluate)
    monkeypatch.setattr(attribute_module, "model_paths", lambda profile, source, elsewhere: {})
    att = attribute(ctx, QualityOutput(role="reference"), max_lives=1, groups=[])
    assert att.lives == 1 and not att.complete and att.minimal is None
    assert att.not_tried == ["emulate_weights"]


def test_each_failing_candidate_of_a_multi_run_gets_its_own_attribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qgate.core.progress import StageClock
    from qgate.profile.load_multi import load_multi_file
    from qgate.run.attribute import attribute_failures
    from qgate.run.context import RunSet

    multi = SHIPPED / "smollm2-cpu-multi.yaml"
    loaded = load_multi_file(multi)
    opts = RunOptions(profile=multi, out_root=tmp_path, attribute=True)
    contexts = [
        RunContext(
            opts=opts,
            profile=c.profile,
            profile_path=multi,
            profile_sha256="0" * 64,
            run_dir=tmp_path / c.name,
            source_model=tmp_path,
            model_paths={},
            tokenizer_path=None,
            signer=Any,
            declared_profile=c.profile,  # type: ignore[arg-type]
            selection=SimpleNamespace(notes=[]),
            side=c.name,  # type: ignore[arg-type]
        )
        for c in loaded.multi.candidates
    ]
    runs = RunSet(loaded, contexts[0], contexts, [c.name for c in loaded.multi.candidates])

    def result(name: str, passed: bool) -> CandidateResult:
        verdict = Verdict(
            gate="math.short.max_drop",
            suite="math.short",
            observed=0.3,
            limit=0.1,
            passed=passed,
            reason="r",
        )
        return CandidateResult(
            name=name, quality=QualityOutput(role="candidate"), verdicts=[verdict]
        )

    results = [result(name, passed=i != 1) for i, name in enumerate(runs.names)]
    asked: list[str] = []
    monkeypatch.setattr(attribute_module, "complete", lambda spec, out: True)
    monkeypatch.setattr(
        attribute_module,
        "attribute",
        lambda ctx, ref, lives, groups: asked.append(ctx.side) or f"attribution of {ctx.side}",
    )
    clock = StageClock()
    attribute_failures(runs, QualityOutput(role="reference"), results, clock)
    failing = runs.names[1]
    assert asked == [failing]  # the passing candidates need none
    assert results[1].attribution == f"attribution of {failing}"
    assert all(r.attribution is None for i, r in enumerate(results) if i != 1)
    assert f"attribution:{failing}" in clock.timings


def test_on_an_executor_with_room_a_rounds_trials_run_at_once_and_the_width_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    class TwoAtOnce(Lives):  # an executor that holds two lives at once (qgate/cluster/lives.py)
        def at_once(self, profile: object) -> int:
            return 2

        def stop_all(self) -> None:
            pass

    profile = load_profile(PROFILE, check_files=False)
    ctx = RunContext(
        opts=RunOptions(profile=PROFILE, out_root=tmp_path),
        profile=profile,
        profile_path=PROFILE,
        profile_sha256="0" * 64,
        run_dir=tmp_path,
        source_model=tmp_path,
        model_paths={},
        tokenizer_path=None,
        signer=Any,
        declared_profile=profile,  # type: ignore[arg-type]
        selection=SimpleNamespace(notes=[]),  # type: ignore[arg-type]
        lives=TwoAtOnce(),
    )
    together = threading.Barrier(2, timeout=10)  # passes only when two trials run at once

    def evaluate(
        trial: RunContext, name: str, reference: Any, force_perf: bool, keep_going: bool
    ) -> CandidateResult:
        applied = [c.name for c in changes_of(trial.profile)]
        if len(applied) == 2:
            time.sleep(0.2)  # the first of the two ends last: the records keep the search's order
        together.wait()
        failed = "emulate_weights" in applied
        verdict = Verdict(
            gate="divergence.max_mean_kld",
            suite="divergence",
            observed=0.4,
            limit=0.05,
            passed=not failed,
            reason="r",
        )
        return CandidateResult(
            name=name, quality=QualityOutput(role="candidate"), verdicts=[verdict]
        )

    monkeypatch.setattr(attribute_module, "evaluate", evaluate)
    monkeypatch.setattr(attribute_module, "model_paths", lambda profile, source, elsewhere: {})
    att = attribute(ctx, QualityOutput(role="reference"), max_lives=6, groups=[])
    assert att.width == 2
    assert [t.changes for t in att.trials] == [
        ["args.enable_prefix_caching", "args.max_num_seqs"],
        ["emulate_weights"],
    ]
    assert att.minimal == ["emulate_weights"] and att.complete


def test_a_trial_keeps_its_reuse_passes_and_server_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qgate.core.serving import EffectiveConfig
    from qgate.quality.reuse_records import PassRun

    profile = load_profile(PROFILE, check_files=False)
    ctx = RunContext(
        opts=RunOptions(profile=PROFILE, out_root=tmp_path),
        profile=profile,
        profile_path=PROFILE,
        profile_sha256="0" * 64,
        run_dir=tmp_path,
        source_model=tmp_path,
        model_paths={},
        tokenizer_path=None,
        signer=Any,
        declared_profile=profile,  # type: ignore[arg-type]
        selection=SimpleNamespace(notes=[]),  # type: ignore[arg-type]
    )
    config = EffectiveConfig(
        role="candidate", kind="vllm", base_url="http://h:1/v1", served_model="m"
    )

    def evaluate(
        trial: RunContext, name: str, reference: Any, force_perf: bool, keep_going: bool
    ) -> CandidateResult:
        quality = QualityOutput(
            role="candidate",
            passes=[PassRun(name="warm", role="candidate")],
            effective_config=config,
        )
        return CandidateResult(name=name, quality=quality, verdicts=[])

    monkeypatch.setattr(attribute_module, "evaluate", evaluate)
    monkeypatch.setattr(attribute_module, "model_paths", lambda profile, source, elsewhere: {})
    att = attribute(ctx, QualityOutput(role="reference"), max_lives=1, groups=[])
    assert att.trials[0].passes[0].name == "warm"
    assert att.trials[0].effective_config == config
