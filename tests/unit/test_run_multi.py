"""The multi-candidate pipeline's order of stages, with every stage replaced by a stand-in.

One reference quality stage, each candidate in turn, a failing candidate's
runtime recorded with its root cause while the others still run, and one
reference perf stage shared by every candidate whose perf ran.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from qgate.errors import RuntimeFailure
from qgate.profile.load_multi import load_multi_file
from qgate.quality import gates
from qgate.quality.stage import QualityOutput
from qgate.run import multi as run_multi
from qgate.run import stages as run_stages
from qgate.run.context import RunContext
from qgate.run.multi_context import MultiContext
from qgate.run.options import RunOptions

SHIPPED = Path(__file__).resolve().parents[2] / "precision_profiles" / "smollm2-cpu-multi.yaml"


def _contexts(tmp_path: Path) -> MultiContext:
    loaded = load_multi_file(SHIPPED)
    opts = RunOptions(profile=SHIPPED, out_root=tmp_path)
    contexts = [
        RunContext(
            opts=opts, profile=c.profile, profile_path=SHIPPED, profile_sha256="0" * 64,
            run_dir=tmp_path / "candidates" / c.name, source_model=tmp_path, model_paths={},
            tokenizer_path=None, signer=Any, declared_profile=c.profile,  # type: ignore[arg-type]
            selection=SimpleNamespace(notes=[]),  # type: ignore[arg-type]
        )  # fmt: skip
        for c in loaded.multi.candidates
    ]
    ref = RunContext(**{**contexts[0].__dict__, "run_dir": tmp_path})
    return MultiContext(loaded, ref, contexts)


def test_failing_candidate_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []
    captured: dict[str, Any] = {}
    mctx = _contexts(tmp_path)

    @contextmanager
    def started(ctx: RunContext, role: str) -> Iterator[str]:
        name = ctx.run_dir.name if role == "candidate" else "reference"
        calls.append(("start", name))
        if name == "prefix-cache":
            raise RuntimeFailure("candidate", "exited with status 1", ["RuntimeError: no KV space"])
        yield name

    def perf_on(ctx: RunContext, runtime: str, role: str, quality: QualityOutput) -> list[str]:
        calls.append(("perf", runtime))
        return [f"{runtime}-run"]

    def write_multi(*args: Any) -> str:
        captured["args"] = args
        return "outcome"

    monkeypatch.setattr(run_multi, "prepare_multi", lambda opts, loaded: mctx)
    monkeypatch.setattr(run_stages, "fingerprint", lambda ctx: None)
    monkeypatch.setattr(run_stages, "reference_quality",
                        lambda ctx: QualityOutput(role="reference"))  # fmt: skip
    monkeypatch.setattr(run_stages, "started", started)
    monkeypatch.setattr(run_stages, "quality_on",
                        lambda ctx, rt, role, ref: QualityOutput(role="candidate"))  # fmt: skip
    monkeypatch.setattr(run_stages, "divergence_of", lambda ref, cand: None)
    monkeypatch.setattr(run_stages, "perf_on", perf_on)
    monkeypatch.setattr(gates, "evaluate_quality", lambda spec, runs, div: [])
    monkeypatch.setattr(run_multi, "_report", lambda *a: None)
    import qgate.run.multi_report as report_stage

    monkeypatch.setattr(report_stage, "write_multi", write_multi)

    assert run_multi.run_multi(mctx.reference.opts, mctx.loaded) == "outcome"  # type: ignore[comparison-overlap]
    assert calls == [
        ("start", "fp8-weights"), ("perf", "fp8-weights"),
        ("start", "prefix-cache"),
        ("start", "max-seqs-2"), ("perf", "max-seqs-2"),
        ("start", "api-server"), ("perf", "api-server"),
        ("start", "reference"), ("perf", "reference"),
    ]  # fmt: skip
    _, results, _, timings = captured["args"]
    assert [r.name for r in results] == ["fp8-weights", "prefix-cache", "max-seqs-2", "api-server"]
    failed = results[1]
    assert failed.quality is None and failed.error is not None
    assert "exited with status 1" in failed.error and "no KV space" in failed.error
    assert results[0].perf_runs == ["fp8-weights-run"] and results[0].status == "ran"
    assert list(timings)[:3] == ["load", "fingerprint", "reference_quality"]
    assert "candidate:prefix-cache" in timings and "reference_perf" in timings


def test_capability_notes_name_their_candidate(tmp_path: Path) -> None:
    from qgate.run.multi_report import _capability_notes

    mctx = _contexts(tmp_path)
    for ctx in mctx.candidates:
        ctx.selection = SimpleNamespace(  # type: ignore[assignment]
            notes=["reference: native on this CPU", "candidate: ran its fallback"]
        )
    names = [c.name for c in mctx.loaded.multi.candidates]
    assert _capability_notes(mctx) == [
        "reference: native on this CPU",
        *(f"candidate {name}: ran its fallback" for name in names),
    ]
