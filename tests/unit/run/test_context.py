"""A run's setup is frozen; what a stage finds is its return value, passed forward.

No stage fills a `RunContext` in after `prepare`, and nothing copies one stage's findings into
the candidates' contexts (`share_reference` is gone): the fingerprint stage returns
`Fingerprinted`, the reference's life its `ReferenceSource`, and the report takes both.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from qgate.attest.keys import LoadedSigner, generate_private_pem, public_pem_of, signer_from_pem
from qgate.profile.load import load_profile_file
from qgate.run import context, reference
from qgate.run.context import Fingerprinted, RunContext, RunSet, engine_envs, fingerprint
from qgate.run.options import RunOptions
from qgate.runtime.fingerprint import CpuInfo, Fingerprint

ROOT = Path(__file__).resolve().parents[3]
PROFILE = ROOT / "precision_profiles" / "smollm2-cpu-int8.yaml"


def _ctx(tmp_path: Path, machine: Fingerprint | None = None) -> RunContext:
    profile = load_profile_file(PROFILE).profile
    return RunContext(
        opts=RunOptions(profile=PROFILE, out_root=tmp_path),
        profile=profile,
        profile_path=PROFILE,
        profile_sha256="0" * 64,
        run_dir=tmp_path,
        source_model=tmp_path / "no-model",
        model_paths={},
        tokenizer_path=None,
        signer=Any,  # type: ignore[arg-type]
        declared_profile=profile,
        selection=SimpleNamespace(notes=[]),  # type: ignore[arg-type]
        machine=machine,
    )


def _machine() -> Fingerprint:
    return Fingerprint(
        hostname="h", os="Linux", python="3.12", cpu=CpuInfo(model="x", logical_cores=2)
    )


def test_a_context_is_frozen(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.profile = ctx.profile  # type: ignore[misc]
    for gone in ("fingerprint", "target_mismatches", "reference_cached", "reference_provenance"):
        assert gone not in {f.name for f in dataclasses.fields(RunContext)}, gone
    assert not hasattr(RunSet, "share_reference")


def test_the_fingerprint_stage_returns_what_it_found(tmp_path: Path) -> None:
    """The machine (here the lives' own, `Lives.machine`) comes back with the target's
    mismatches; the context is left as it was, and the raw record is written at once."""
    machine = _machine()
    ctx = _ctx(tmp_path, machine)
    before = {f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx)}
    found = fingerprint(ctx)
    assert found.fingerprint is machine
    assert isinstance(found.target_mismatches, tuple)
    assert (tmp_path / "raw" / "fingerprint.json").exists()
    assert {f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx)} == before
    runs = RunSet(load_profile_file(PROFILE), ctx, [ctx], ["candidate"])
    again = engine_envs(runs, found)  # no side pins a release: an empty list, a new value
    assert (
        again.fingerprint.engine_envs == [] and again.target_mismatches == found.target_mismatches
    )
    assert again is not found and found.fingerprint is machine


def test_the_cache_key_comes_from_the_fingerprint_passed_in(tmp_path: Path) -> None:
    """The reference cache's key is that of the machine the caller passes (the fingerprint
    stage's result), not a field some stage filled in."""
    pem = generate_private_pem("ecdsa")
    signer = LoadedSigner(signer_from_pem(pem), public_pem_of(pem), "file")
    opts = RunOptions(profile=PROFILE, out_root=tmp_path, cache_dir=tmp_path / "cache")
    ctx = dataclasses.replace(_ctx(tmp_path), signer=signer, opts=opts)
    machine = _machine().model_copy(update={"packages": {"vllm": "0.0.1-test"}})
    for fp in (None, machine):
        assert reference._reference_cache(ctx, fp)[1] == reference.reference_key_for(
            ctx.profile, fp
        )
    assert reference.reference_key_for(ctx.profile, machine) != reference.reference_key_for(
        ctx.profile, None
    )
    assert not reference.reference_cached(ctx, machine)
    assert Fingerprinted(machine).target_mismatches == ()


WRITERS = ("ctx", "cand", "ref", "runs", "trial_ctx", "reference")


def _filled_in(tree: ast.AST) -> list[str]:
    """Every `NAME.field = ...` (or augmented) on a context-like name."""
    out = []
    for node in ast.walk(tree):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign | ast.AnnAssign)
            else []
        )
        for t in targets:
            for leaf in t.elts if isinstance(t, ast.Tuple) else [t]:
                if (
                    isinstance(leaf, ast.Attribute)
                    and isinstance(leaf.value, ast.Name)
                    and leaf.value.id in WRITERS
                ):
                    out.append(f"{node.lineno}: {ast.unparse(leaf)}")
    return out


@pytest.mark.parametrize("path", sorted((ROOT / "qgate" / "run").glob("*.py")), ids=str)
def test_no_stage_fills_a_context_in(path: Path) -> None:
    assert not _filled_in(ast.parse(path.read_text())), path.name


def test_a_filled_in_context_is_seen() -> None:
    source = "def f(ctx, cand):\n    ctx.fingerprint, x = 1, 2\n    cand.reference_cached = True\n"
    assert _filled_in(ast.parse(source)) == ["2: ctx.fingerprint", "3: cand.reference_cached"]


def test_share_reference_is_called_nowhere() -> None:
    hits = [p for p in (ROOT / "qgate").rglob("*.py") if "share_reference" in p.read_text()]
    assert hits == []
    assert "share_reference" not in (ROOT / "qgate" / "run" / "pipeline.py").read_text()
    assert context.__all__  # the module's surface still resolves
