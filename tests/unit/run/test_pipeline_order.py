"""The pipeline's order of stages for several candidates, every stage replaced by a stand-in.

One reference quality stage, each candidate in turn, a failing candidate's
runtime recorded with its root cause while the others still run, and one
reference perf stage shared by every candidate whose perf ran. One pipeline
for one candidate or several (qgate/run/pipeline.py).
"""

from __future__ import annotations

import dataclasses
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers.report_synthetic import make_signer

from qgate.core.records import Role
from qgate.core.serving import EffectiveConfig
from qgate.errors import RuntimeFailure
from qgate.profile import Profile
from qgate.profile.load_multi import load_multi_file
from qgate.quality.stage import QualityOutput
from qgate.report.preregistration import PREREGISTRATION_NAME, read_statement
from qgate.run import candidate as candidate_stage
from qgate.run import life_probes, pipeline, placement, together
from qgate.run import reference as ref_stage
from qgate.run import report as report_stage
from qgate.run import rounds as rounds_stage
from qgate.run.context import Fingerprinted, RunContext, RunSet
from qgate.run.options import RunOptions
from qgate.runtime.lives import Lives

SIGNER = make_signer("ecdsa")

SHIPPED = Path(__file__).resolve().parents[3] / "precision_profiles" / "smollm2-cpu-multi.yaml"


def _contexts(tmp_path: Path) -> RunSet:
    loaded = load_multi_file(SHIPPED)
    opts = RunOptions(profile=SHIPPED, out_root=tmp_path)
    contexts = [
        RunContext(
            opts=opts,
            profile=c.profile,
            profile_path=SHIPPED,
            profile_sha256="0" * 64,
            run_dir=tmp_path / "candidates" / c.name,
            source_model=tmp_path,
            model_paths={},
            tokenizer_path=None,
            signer=Any,
            declared_profile=c.profile,  # type: ignore[arg-type]
            selection=SimpleNamespace(notes=[]),  # type: ignore[arg-type]
        )
        for c in loaded.multi.candidates
    ]
    ref = RunContext(**{**contexts[0].__dict__, "run_dir": tmp_path})
    return RunSet(loaded, ref, contexts, [c.name for c in loaded.multi.candidates])


# the fingerprint stage's result where nothing is fingerprinted (the stand-ins need none)
NO_MACHINE = Fingerprinted(None, ())  # type: ignore[arg-type]

PROBED: list[tuple[str, str, int, int]] = []


@pytest.fixture(autouse=True)
def _life_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each life's probes recorded (side, kind, round, life), nothing asked, no idle pause."""
    PROBED.clear()

    def ask(
        self: Any,
        profile: Any,
        rt: Any,
        role: Any,
        side: str,
        life: int,
        round: int,
        purpose: str,
        kind: str,
        idle_s: float,
    ) -> None:
        PROBED.append((side, kind, round, life))

    monkeypatch.setattr(life_probes.LifeProbing, "_ask", ask)
    monkeypatch.setattr(life_probes.time, "sleep", lambda s: None)


class _Runtime:
    """A stand-in server: its start is recorded (or fails, for the `broken` side)."""

    def __init__(self, name: str, role: Role, calls: list[tuple[str, str]], broken: str | None):
        self.name, self.role, self.calls, self.broken = name, role, calls, broken

    def __enter__(self) -> _Runtime:
        self.calls.append(("start", self.name))
        if self.name == self.broken:
            raise RuntimeFailure("candidate", "exited with status 1", ["RuntimeError: no KV space"])
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def effective_config(self) -> EffectiveConfig:
        return EffectiveConfig(role=self.role, kind="stand-in", base_url="-", served_model="m")


class _Named(str):
    """A stand-in runtime known by its name; not frozen while the other side's block runs."""

    def paused(self) -> AbstractContextManager[None]:
        return nullcontext()


class _Lives(Lives):
    """The run's lives as stand-ins: every server the run starts goes through here."""

    def __init__(self, calls: list[tuple[str, str]], broken: str | None = None) -> None:
        self.calls, self.broken = calls, broken

    def runtime(
        self, profile: Profile, role: Role, model: Path, logs: Path, *, round: int = 0
    ) -> Any:
        logs = logs.parent if round else logs  # a later perf round's logs/round-N
        name = logs.parent.name if role == "candidate" else "reference"
        return _Runtime(name if not round else f"{name} r{round}", role, self.calls, self.broken)


def _use_lives(runs: RunSet, lives: _Lives) -> RunSet:
    """`runs` with every context's servers made by `lives` (the contexts are frozen: copies)."""

    def on(ctx: RunContext) -> RunContext:
        paths = {"reference": ctx.source_model, "candidate": ctx.source_model}
        return dataclasses.replace(ctx, lives=lives, model_paths=paths)

    if runs.reference is runs.candidates[0]:  # one candidate: one context
        one = on(runs.reference)
        return dataclasses.replace(runs, reference=one, candidates=[one])
    return dataclasses.replace(
        runs, reference=on(runs.reference), candidates=[on(c) for c in runs.candidates]
    )


def test_failing_candidate_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    captured: dict[str, Any] = {}
    mctx = _use_lives(_contexts(tmp_path), _Lives(calls, broken="prefix-cache"))

    def perf_on(
        ctx: RunContext, runtime: Any, role: str, quality: QualityOutput, reference: Any = None
    ) -> list[str]:
        calls.append(("perf", runtime.name))
        return [f"{runtime.name}-run"]

    def write_multi(*args: Any) -> str:
        captured["args"] = args
        return "outcome"

    monkeypatch.setattr(pipeline, "prepare", lambda opts, loaded, lives: mctx)
    monkeypatch.setattr(pipeline, "fingerprint", lambda ctx: NO_MACHINE)
    monkeypatch.setattr(pipeline, "engine_envs", lambda runs, found: found)
    # the reference's quality is cached: its one life is the perf baseline, after the candidates
    monkeypatch.setattr(placement, "reference_cached", lambda ctx, fp: True)
    from_cache = ref_stage.ReferenceSource(cached=True)
    cached_life = ref_stage.ReferenceLife(QualityOutput(role="reference"), None, from_cache)
    monkeypatch.setattr(pipeline, "reference_life", lambda ctx, fp, with_perf, clock: cached_life)
    monkeypatch.setattr(
        candidate_stage, "quality_on", lambda ctx, rt, role, ref: QualityOutput(role="candidate")
    )
    monkeypatch.setattr(candidate_stage, "divergence_of", lambda ref, cand: None)
    monkeypatch.setattr(candidate_stage, "perf_blocks", perf_on)
    monkeypatch.setattr(ref_stage, "perf_blocks", perf_on)
    monkeypatch.setattr(candidate_stage, "quality_verdicts", lambda *a, **k: [])
    monkeypatch.setattr(report_stage, "report_of", lambda *a: None)
    monkeypatch.setattr(report_stage, "write_multi", write_multi)

    assert pipeline.run(mctx.reference.opts) == "outcome"  # type: ignore[comparison-overlap]
    assert calls == [
        ("start", "fp8-weights"),
        ("perf", "fp8-weights"),
        ("start", "prefix-cache"),
        ("start", "max-seqs-2"),
        ("perf", "max-seqs-2"),
        ("start", "api-server"),
        ("perf", "api-server"),
        ("start", "reference"),
        ("perf", "reference"),
    ]
    _, found, source, results, _, timings, plan = captured["args"]
    # what the fingerprint stage and the reference's life returned, passed to the report
    assert found is NO_MACHINE and source is from_cache
    assert [life.side for life in plan.lives] == [*mctx.names, "reference"]
    assert [r.name for r in results] == ["fp8-weights", "prefix-cache", "max-seqs-2", "api-server"]
    failed = results[1]
    assert failed.quality is None and failed.error is not None
    assert "exited with status 1" in failed.error and "no KV space" in failed.error
    assert results[0].perf_runs == ["fp8-weights-run"] and results[0].status == "ran"
    assert list(timings)[:2] == ["load", "fingerprint"]
    assert "candidate:prefix-cache" in timings and "reference_perf" in timings


def test_capability_notes_name_their_candidate(tmp_path: Path) -> None:
    from qgate.run.report import capability_notes

    mctx = _contexts(tmp_path)
    notes = SimpleNamespace(notes=["reference: native on this CPU", "candidate: ran its fallback"])
    mctx = dataclasses.replace(
        mctx, candidates=[dataclasses.replace(c, selection=notes) for c in mctx.candidates]
    )
    names = mctx.names
    assert capability_notes(mctx) == [
        "reference: native on this CPU",
        *(f"candidate {name}: ran its fallback" for name in names),
    ]


def _stand_ins(
    monkeypatch: pytest.MonkeyPatch,
    runs: RunSet,
    calls: list[tuple[str, str]],
    broken: str | None = None,
    cached: bool = False,
) -> None:
    runs = _use_lives(runs, _Lives(calls, broken))

    def perf_on(
        ctx: RunContext, rt: Any, role: str, q: QualityOutput, save: bool = True, block: int = 0
    ) -> list[SimpleNamespace]:
        name = getattr(rt, "name", rt)
        return [SimpleNamespace(scenario="s", rt=name, block=block, round=ctx.round)]

    def reference_life(
        ctx: RunContext, fp: Any, with_perf: bool, clock: Any
    ) -> ref_stage.ReferenceLife:
        out = QualityOutput(role="reference")
        with clock.stage("reference_quality"):
            if cached:
                return ref_stage.ReferenceLife(out, None)
            calls.append(("start", "reference"))
        if not with_perf:
            return ref_stage.ReferenceLife(out, None)
        with clock.stage("reference_perf"):
            return ref_stage.ReferenceLife(out, perf_on(ctx, "reference", "reference", out))

    monkeypatch.setattr(pipeline, "prepare", lambda opts, loaded, lives: runs)
    monkeypatch.setattr(pipeline, "fingerprint", lambda ctx: NO_MACHINE)
    monkeypatch.setattr(pipeline, "engine_envs", lambda runs, found: found)
    monkeypatch.setattr(placement, "reference_cached", lambda ctx, fp: cached)
    monkeypatch.setattr(
        pipeline,
        "preflight_candidate",
        lambda ctx, how: calls.append(("preflight", ctx.run_dir.name)),
    )
    monkeypatch.setattr(pipeline, "reference_life", reference_life)
    monkeypatch.setattr(
        candidate_stage, "quality_on", lambda ctx, rt, role, ref: QualityOutput(role="candidate")
    )
    monkeypatch.setattr(candidate_stage, "divergence_of", lambda ref, cand: None)

    def blocks(
        ctx: RunContext,
        rt: Any,
        role: str,
        q: QualityOutput,
        earlier: Any = (),
        reference: Any = None,
    ) -> list[SimpleNamespace]:
        # the candidate's probes are picked from the reference's records, in every round
        assert role == "reference" or (reference is not None and reference.role == "reference")
        if ctx.round:  # a later perf round's fresh life
            calls.append(("perf", rt.name))
        return perf_on(ctx, rt, role, q)

    monkeypatch.setattr(candidate_stage, "perf_blocks", blocks)
    monkeypatch.setattr(ref_stage, "perf_blocks", blocks)
    monkeypatch.setattr(rounds_stage, "perf_blocks", blocks)
    monkeypatch.setattr(candidate_stage, "quality_verdicts", lambda *a, **k: [])


def _single(tmp_path: Path, placement: str = "sequence", rounds: int = 1) -> RunSet:
    from qgate.profile.load import load_profile_file

    path = SHIPPED.with_name("smollm2-cpu-int8.yaml")
    loaded = load_profile_file(path)
    engine = loaded.profile.engine.model_copy(update={"placement": placement})
    assert loaded.profile.perf is not None
    perf = loaded.profile.perf.model_copy(update={"rounds": rounds})
    profile = loaded.profile.model_copy(update={"engine": engine, "perf": perf})
    ctx = RunContext(
        opts=RunOptions(profile=path, out_root=tmp_path),
        profile=profile,
        profile_path=path,
        profile_sha256="0" * 64,
        run_dir=tmp_path / "run",
        source_model=tmp_path,
        model_paths={},
        tokenizer_path=None,
        signer=SIGNER,
        declared_profile=profile,
        selection=SimpleNamespace(notes=[]),  # type: ignore[arg-type]
    )
    return RunSet(loaded, ctx, [ctx], ["candidate"])


def test_one_candidate_takes_the_same_path_and_writes_the_single_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    captured: dict[str, Any] = {}
    runs = _single(tmp_path)
    _stand_ins(monkeypatch, runs, calls)

    def write_single(*args: Any) -> str:
        captured["args"] = args
        return "single outcome"

    monkeypatch.setattr(report_stage, "write_single", write_single)
    assert pipeline.run(runs.reference.opts) == "single outcome"  # type: ignore[comparison-overlap]
    # each runtime starts once: the reference serves its quality and its perf in one life
    assert calls == [("preflight", "run"), ("start", "reference"), ("start", "run")]
    _, _, _, _, result, perf, timings, plan = captured["args"]
    assert result.status == "ran" and [r.rt for r in perf] == ["run", "reference"]
    assert list(timings)[:6] == [
        "load",
        "fingerprint",
        "candidate_preflight",
        "reference_quality",
        "reference_perf",
        "candidate",
    ]
    assert plan.preflight == {"candidate": "dry"} and plan.starts == 2


def test_the_plan_is_signed_before_any_server_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    runs = _single(tmp_path)
    _stand_ins(monkeypatch, runs, calls)
    signed = pipeline.preregister

    def preregister(*args: Any) -> None:
        calls.append(("preregister", "run"))
        signed(*args)

    monkeypatch.setattr(pipeline, "preregister", preregister)
    monkeypatch.setattr(report_stage, "write_single", lambda *a: None)
    pipeline.run(runs.reference.opts)
    assert calls[:2] == [("preregister", "run"), ("preflight", "run")]
    statement = runs.reference.run_dir / PREREGISTRATION_NAME
    prereg, keyid = read_statement(statement.read_bytes(), str(statement))
    assert keyid == SIGNER.signer.public_key.keyid
    assert prereg.profile_sha256 == runs.reference.profile_sha256
    assert [c.gate for c in prereg.criteria][:2] == [
        "quality.math.max_drop",
        "quality.math.significance",
    ]


def test_a_cached_reference_starts_once_for_its_perf_after_the_candidate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    captured: dict[str, Any] = {}
    runs = _single(tmp_path)
    _stand_ins(monkeypatch, runs, calls, cached=True)
    monkeypatch.setattr(report_stage, "write_single", lambda *a: captured.update(args=a))
    pipeline.run(runs.reference.opts)
    assert calls == [("start", "run"), ("start", "reference")]  # no preflight: nothing to wait for
    _, _, _, _, result, perf, timings, plan = captured["args"]
    assert [r.rt for r in perf] == ["run", "reference"]
    assert [life.side for life in plan.lives] == ["candidate", "reference"]
    assert plan.lives[1].condition == "when some candidate's perf ran"


def test_one_candidate_whose_runtime_fails_ends_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    runs = _single(tmp_path)
    _stand_ins(monkeypatch, runs, calls, broken="run")
    with pytest.raises(RuntimeFailure, match="exited with status 1"):
        pipeline.run(runs.reference.opts)
    # the candidate's failure ends the run after the reference's life, with no report
    assert calls == [("preflight", "run"), ("start", "reference"), ("start", "run")]


def test_preflight_decides_alike_for_several_candidates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    runs = _contexts(tmp_path)
    _stand_ins(monkeypatch, runs, calls)
    monkeypatch.setattr(report_stage, "report_of", lambda *a: None)
    monkeypatch.setattr(report_stage, "write_multi", lambda *a: "outcome")
    pipeline.run(runs.reference.opts)
    assert [c for c in calls if c[0] == "preflight"] == [("preflight", n) for n in runs.names]


def _side_by_side_stand_ins(
    monkeypatch: pytest.MonkeyPatch,
    runs: RunSet,
    calls: list[tuple[str, str]],
    gates_pass: bool = True,
) -> None:
    _stand_ins(monkeypatch, runs, calls)
    # the plan must not depend on what memory other processes of this machine hold now
    monkeypatch.setattr(placement, "_available_gib", lambda: None)

    def start_both(ctx: RunContext, cand: RunContext, life: Any) -> tuple[str, str]:
        later = f" r{ctx.round}" if ctx.round else ""
        calls.append(("start together", "reference+candidate" + later))
        return _Named("ref-rt"), _Named("cand-rt")

    monkeypatch.setattr(together, "start_both", start_both)
    monkeypatch.setattr(rounds_stage, "start_both", start_both)

    def quality_on(
        ctx: RunContext,
        rt: str,
        role: str,
        reference: Any,
        on_scores: Any = None,
        board: Any = None,
    ) -> QualityOutput:
        if callable(reference):
            reference()  # the candidate's divergence waits for the reference's results
        calls.append(("quality", role))
        return QualityOutput(role=role)  # type: ignore[arg-type]

    def judge(ctx: RunContext, out: Any, reference: Any, force: bool) -> None:
        out.status = "ran" if gates_pass else "skipped: gates failed"

    def perf_on(
        ctx: RunContext,
        rt: str,
        role: str,
        q: Any,
        save: bool = True,
        block: int = 0,
        reference: Any = None,
    ) -> list[Any]:
        assert role == "reference" or (reference is not None and reference.role == "reference")
        calls.append(("perf", role + (f" r{ctx.round}" if ctx.round else "")))
        from qgate.perf.records import ScenarioRun

        return [
            ScenarioRun(
                scenario="s",
                role=role,
                kind="fixed",
                gpus=1,
                duration_ns=1,
                requests=[],
                block=block,
                round=ctx.round,
            )
        ]  # type: ignore[arg-type]

    monkeypatch.setattr(together, "quality_on", quality_on)
    monkeypatch.setattr(together, "judge", judge)
    monkeypatch.setattr(together, "save_raw", lambda *a: None)
    stored = ref_stage.ReferenceSource()
    monkeypatch.setattr(together, "store_reference", lambda ctx, fp, out: stored)
    monkeypatch.setattr(together, "perf_on", perf_on)
    monkeypatch.setattr(together, "perf_blocks", lambda ctx, rt, role, q: perf_on(ctx, rt, role, q))


def test_side_by_side_starts_both_at_once_and_interleaves_perf_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    captured: dict[str, Any] = {}
    runs = _single(tmp_path, placement="together")
    _side_by_side_stand_ins(monkeypatch, runs, calls)
    monkeypatch.setattr(report_stage, "write_single", lambda *a: captured.update(args=a))
    pipeline.run(runs.reference.opts)
    assert calls[0] == ("start together", "reference+candidate")  # no preflight, no other start
    assert sorted(calls[1:3]) == [("quality", "candidate"), ("quality", "reference")]
    assert calls[3:] == [("perf", "reference"), ("perf", "candidate")] * 2  # 2 blocks
    _, _, _, _, result, perf, timings, plan = captured["args"]
    assert plan.mode == "together" and plan.blocks == 2 and plan.preflight == {"candidate": "none"}
    assert [(r.role, r.block) for r in perf] == [
        ("candidate", 0),
        ("candidate", 1),
        ("reference", 0),
        ("reference", 1),
    ]
    assert result.status == "ran"
    assert list(timings)[:5] == ["load", "fingerprint", "startup", "quality", "perf"]


def test_side_by_side_with_a_failed_gate_measures_no_speed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    runs = _single(tmp_path, placement="together")
    _side_by_side_stand_ins(monkeypatch, runs, calls, gates_pass=False)
    monkeypatch.setattr(report_stage, "write_single", lambda *a: None)
    pipeline.run(runs.reference.opts)
    assert not [c for c in calls if c[0] == "perf"]  # not even the reference's baseline


def _side_by_side_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quality_on: Any
) -> RunOptions:
    """Options of a side-by-side run whose quality stage is `quality_on` (the rest stand-ins)."""
    calls: list[tuple[str, str]] = []
    runs = _single(tmp_path, placement="together")
    _side_by_side_stand_ins(monkeypatch, runs, calls)
    monkeypatch.setattr(report_stage, "write_single", lambda *a: None)
    monkeypatch.setattr(together, "quality_on", quality_on)
    return runs.reference.opts


def test_side_by_side_hands_the_reference_scores_over_before_its_quality_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    got: list[Any] = []
    candidate_scored = threading.Event()
    scores = object()

    def quality_on(
        ctx: RunContext,
        rt: str,
        role: str,
        reference: Any,
        on_scores: Any = None,
        board: Any = None,
    ) -> QualityOutput:
        if role == "reference":
            on_scores(scores)  # divergence done: the other suites still to run
            assert candidate_scored.wait(10), "the candidate waited for the whole reference"
        else:
            got.append(reference())
            candidate_scored.set()
        return QualityOutput(role=role)  # type: ignore[arg-type]

    pipeline.run(_side_by_side_run(tmp_path, monkeypatch, quality_on))
    assert got == [scores]


def test_side_by_side_candidate_gets_the_reference_error_when_it_fails_before_its_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    seen: list[str] = []
    waiting, answered = threading.Event(), threading.Event()

    def quality_on(
        ctx: RunContext,
        rt: str,
        role: str,
        reference: Any,
        on_scores: Any = None,
        board: Any = None,
    ) -> QualityOutput:
        if role == "reference":
            assert waiting.wait(10)
            raise RuntimeFailure("reference", "server died in math.short")
        waiting.set()
        try:
            reference()  # must not hang: the reference failed before handing its scores over
        except RuntimeFailure as exc:
            seen.append(str(exc))
        answered.set()
        return QualityOutput(role=role)  # type: ignore[arg-type]

    with pytest.raises(RuntimeFailure, match="reference runtime: server died"):
        pipeline.run(_side_by_side_run(tmp_path, monkeypatch, quality_on))
    assert answered.wait(10)
    assert seen == ["reference runtime: server died in math.short"]


def test_perf_rounds_in_sequence_start_fresh_lives_in_abba_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    captured: dict[str, Any] = {}
    runs = _single(tmp_path, rounds=3)
    _stand_ins(monkeypatch, runs, calls)
    monkeypatch.setattr(report_stage, "write_single", lambda *a: captured.update(args=a))
    pipeline.run(runs.reference.opts)
    # round 1: reference, candidate (their first lives); round 2 reversed; round 3 as round 1
    assert calls == [
        ("preflight", "run"),
        ("start", "reference"),
        ("start", "run"),
        ("start", "run r1"),
        ("perf", "run r1"),
        ("start", "reference r1"),
        ("perf", "reference r1"),
        ("start", "reference r2"),
        ("perf", "reference r2"),
        ("start", "run r2"),
        ("perf", "run r2"),
    ]
    # every fresh life answered its start probes and, its work done, its idle probes
    # (the reference's first life is a stand-in here: reference_life is replaced)
    assert PROBED == [
        ("candidate", "start", 0, 0),
        ("candidate", "idle", 0, 0),
        ("candidate", "start", 1, 1),
        ("candidate", "idle", 1, 1),
        ("reference", "start", 1, 2),
        ("reference", "idle", 1, 2),
        ("reference", "start", 2, 3),
        ("reference", "idle", 2, 3),
        ("candidate", "start", 2, 4),
        ("candidate", "idle", 2, 4),
    ]
    _, _, _, _, result, perf, timings, _ = captured["args"]
    assert [(r.rt, r.round) for r in perf] == [
        ("run", 0),
        ("run r1", 1),
        ("run r2", 2),
        ("reference", 0),
        ("reference r1", 1),
        ("reference r2", 2),
    ]
    assert result.status == "ran" and "perf_rounds" in timings


def test_perf_rounds_after_a_cached_reference_reverse_its_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    runs = _single(tmp_path, rounds=3)
    _stand_ins(monkeypatch, runs, calls, cached=True)
    monkeypatch.setattr(report_stage, "write_single", lambda *a: None)
    pipeline.run(runs.reference.opts)
    # round 1 ran the candidate, then the reference's perf-only life: round 2 reverses it
    assert [name for what, name in calls if what == "start"] == [
        "run",
        "reference",
        "reference r1",
        "run r1",
        "run r2",
        "reference r2",
    ]


def test_perf_rounds_wait_for_passed_gates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str]] = []
    runs = _single(tmp_path, rounds=3)
    _stand_ins(monkeypatch, runs, calls)
    failed = "skipped: gates failed"
    monkeypatch.setattr(candidate_stage, "perf_status", lambda verdicts, no, force: failed)
    monkeypatch.setattr(report_stage, "write_single", lambda *a: None)
    pipeline.run(runs.reference.opts)
    assert calls == [("preflight", "run"), ("start", "reference"), ("start", "run")]


def test_perf_rounds_side_by_side_start_both_and_swap_the_interleaving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    captured: dict[str, Any] = {}
    runs = _single(tmp_path, placement="together", rounds=3)
    _side_by_side_stand_ins(monkeypatch, runs, calls)
    monkeypatch.setattr(report_stage, "write_single", lambda *a: captured.update(args=a))
    pipeline.run(runs.reference.opts)
    perf_calls = calls[3:]
    assert perf_calls == [
        *[("perf", "reference"), ("perf", "candidate")] * 2,
        ("start together", "reference+candidate r1"),
        *[("perf", "candidate r1"), ("perf", "reference r1")] * 2,
        ("start together", "reference+candidate r2"),
        *[("perf", "reference r2"), ("perf", "candidate r2")] * 2,
    ]
    _, _, _, _, result, perf, timings, _ = captured["args"]
    assert sorted((r.role, r.round, r.block) for r in perf) == sorted(
        (role, k, b) for role in ("reference", "candidate") for k in range(3) for b in range(2)
    )
    assert "perf_rounds" in timings


def test_perf_rounds_of_several_candidates_skip_a_failed_one_and_reverse_the_whole_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    captured: dict[str, Any] = {}
    runs = _contexts(tmp_path)

    def two_rounds(ctx: RunContext) -> RunContext:
        assert ctx.profile.perf is not None
        perf = ctx.profile.perf.model_copy(update={"rounds": 2})
        return dataclasses.replace(ctx, profile=ctx.profile.model_copy(update={"perf": perf}))

    runs = dataclasses.replace(
        runs,
        reference=two_rounds(runs.reference),
        candidates=[two_rounds(c) for c in runs.candidates],
    )
    _stand_ins(monkeypatch, runs, calls, broken="prefix-cache")
    monkeypatch.setattr(report_stage, "report_of", lambda *a: None)
    monkeypatch.setattr(report_stage, "write_multi", lambda *a: captured.update(args=a))
    pipeline.run(runs.reference.opts)
    later = [name for what, name in calls if what == "start" and name.endswith(" r1")]
    # round 1 ran the reference, then the candidates in order; round 2 reverses all of it,
    # without the candidate whose runtime failed
    assert later == ["api-server r1", "max-seqs-2 r1", "fp8-weights r1", "reference r1"]
    _, _, _, results, _, _, _ = captured["args"]
    assert [r.rt for r in results[0].perf_runs] == ["fp8-weights", "fp8-weights r1"]
    assert results[1].error is not None and results[1].perf_runs == []
