"""What a run's stages share: the setup, fixed before the first stage, and the steps every
stage uses.

`prepare` turns the profile, read once, into a `RunSet` (the reference's context and one
per candidate): it resolves (and where asked, emulates) the checkpoint, loads the signer and
makes the run folder. A `RunContext` is frozen: no stage fills it in later. What a stage
finds is its return value, passed forward as an argument: `fingerprint` returns the machine
(`Fingerprinted`), the reference's life where its quality came from (qgate/run/reference.py
`ReferenceSource`), and the report takes both. `save_raw` writes a stage's raw results into
the run folder at once; `started` and `quality_on` start one runtime (made by the run's
`Lives`, qgate/run/lives.py) and run every suite on it.

Two fields are run-wide logs, not settings: one object each, shared by every context of a
run (later rounds' and attribution trials' `dataclasses.replace` copies too) and appended
to by every life as it starts: `starts` (each server start) and `probing` (each life's
start and idle probes).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from qgate.attest.keys import LoadedSigner, load_signer
from qgate.checkpoint.embedded import cache_root, require_checkpoint
from qgate.checkpoint.emulate import emulate_checkpoint
from qgate.checkpoint.formats import stored_dtype
from qgate.core.files import atomic_write
from qgate.core.records import Role
from qgate.core.serving import Runtime, ServerStart
from qgate.errors import BadInput
from qgate.gates.board import SettleBoard
from qgate.profile import Profile
from qgate.profile.engine_checks import starts_process
from qgate.profile.load import LoadedProfile
from qgate.profile.load_multi import LoadedMulti
from qgate.profile.side import side as side_of
from qgate.profile.started_checks import attribution_refused
from qgate.quality.board import Board
from qgate.quality.calibrate import math_calibration, model_label, model_problem
from qgate.quality.divergence_data import ScoreSet
from qgate.quality.stage import QualityOutput, ReferenceScores, evaluate
from qgate.report.files import new_run_dir
from qgate.run.life_probes import LifeProbing
from qgate.run.lives import LOCAL, Lives
from qgate.run.options import RunOptions
from qgate.runtime.capabilities import (
    CpuCaps,
    Selection,
    caps_of,
    probe_cpu,
    runtime_args,
    select_machine,
)
from qgate.runtime.engine_env import prepare as prepare_env
from qgate.runtime.fingerprint import Fingerprint, check_target, collect_fingerprint

__all__ = [
    "CANDIDATES_DIR",
    "Fingerprinted",
    "RAW",
    "RunContext",
    "RunSet",
    "check_calibration_model",
    "engine_envs",
    "fingerprint",
    "model_paths",
    "prepare",
    "quality_on",
    "resolve_model",
    "save_life_probes",
    "save_raw",
    "select",
    "signer_for",
    "started",
]

log = logging.getLogger("qgate")


RAW = "raw"
CANDIDATES_DIR = "candidates"


@dataclass(frozen=True)
class RunContext:
    """A run's setup, fixed before its first stage: the profile, paths, the signer, where
    its lives run; and the run-wide logs of its starts and life probes."""

    opts: RunOptions
    profile: Profile
    profile_path: Path
    profile_sha256: str
    run_dir: Path
    source_model: Path
    model_paths: dict[str, Path]
    tokenizer_path: Path | None
    signer: LoadedSigner
    declared_profile: Profile
    selection: Selection
    # the lives' machine, fingerprinted there by the executor (None: this one; Lives.machine)
    machine: Fingerprint | None = None
    # every server start of the run, in order (one list shared by all of a run's contexts)
    starts: list[ServerStart] = field(default_factory=list)
    side: str = "candidate"  # this context's candidate name
    lives: Lives = LOCAL  # where each server of the run lives (qgate/run/lives.py)
    # the perf round this context's lives belong to (0: the run's own lives; perf.rounds)
    round: int = 0
    # every life's start and idle probes (one shared by all of a run's contexts; lives:)
    probing: LifeProbing = field(default_factory=LifeProbing)

    @property
    def no_perf(self) -> bool:
        return self.opts.skip_perf or self.profile.perf is None

    def new_runtime(self, role: Role) -> Runtime:
        """The runtime of `role` for this context's profile, made by its `lives`, not started;
        a later perf round's logs go to their own folder (`logs/round-N`, N from 2)."""
        logs = self.run_dir / "logs"
        if self.round:
            logs = logs / f"round-{self.round + 1}"
        return self.lives.runtime(
            self.profile, role, self.model_paths[role], logs, round=self.round
        )


def save_raw(ctx: RunContext, name: str, model: BaseModel | Sequence[BaseModel]) -> None:
    """Write one stage's raw results into the run folder (atomic)."""
    if isinstance(model, BaseModel):
        data = model.model_dump_json(indent=1)
    else:
        data = "[" + ",\n".join(m.model_dump_json() for m in model) + "]"
    atomic_write(ctx.run_dir / RAW / name, data.encode())


def resolve_model(profile: Profile) -> Path:
    if profile.model.embedded is not None:
        return require_checkpoint(profile.model.embedded)
    assert profile.model.path is not None
    path = profile.model.path
    if any(starts_process(profile.engine_of(r).kind) for r in ("reference", "candidate")) and (
        not path.is_dir()
    ):
        raise BadInput(f"model.path: {path} is not a folder")
    return path


def select(profile: Profile, cpu: CpuCaps) -> tuple[Profile, Selection]:
    """The profile as this machine runs it (declared fallbacks applied), and the notes why.

    Fail fast: a setting this machine's engine cannot run is exit 2 now, not an
    engine traceback after the reference stage; a declared fallback runs instead.
    """
    selection = select_machine(profile, cpu)
    update = {"reference": selection.reference, "candidate": selection.candidate}
    return profile.model_copy(update=update), selection


def signer_for(opts: RunOptions, profile: Profile) -> LoadedSigner:
    """The signing key, read before the (minutes long) weight emulation so a bad key fails fast."""
    signing = profile.signing
    return load_signer(
        opts.key or signing.key,
        signing.key_env,
        signing.kms_uri,
        "ed25519" if signing.scheme == "ed25519" else "ecdsa",
    )


def model_paths(profile: Profile, source: Path, elsewhere: bool = False) -> dict[str, Path]:
    """The checkpoint each side serves: the source, or its emulated copy (cached by digest).

    An emulated copy is stored in the side's serving dtype, so that float32 serving
    (`engine.cpu_dtype: auto` on a CPU without bf16) computes with the rounded values exactly.
    `elsewhere` (lives on the nodes of a cluster): the source; each life's node makes its
    copy in its own cache (qgate/cluster/host.py), none is written here.
    """
    paths: dict[str, Path] = {}
    for role in ("reference", "candidate"):
        side = side_of(profile, role).spec
        if side.emulate_weights is None or elsewhere:
            paths[role] = source
        else:
            dtype = stored_dtype(runtime_args(profile, side).get("dtype"))
            paths[role] = emulate_checkpoint(
                source, side.emulate_weights, cache_root() / "emulated", dtype
            )
    return paths


@dataclass(frozen=True)
class Fingerprinted:
    """What the fingerprint stage found: the machine and the checkpoint, and where they miss
    the profile's `target` (passed forward to the reference cache's key and the report)."""

    fingerprint: Fingerprint
    target_mismatches: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunSet:
    """One run: the reference's context and one context per candidate.

    A profile with one `candidate:` is a run with one candidate, whose context is the
    reference's (one run folder). With `candidates:`, each candidate's run folder is
    `candidates/NAME` inside the run's, so raw results and logs never collide.
    """

    loaded: LoadedProfile | LoadedMulti
    reference: RunContext
    candidates: list[RunContext]
    names: list[str]

    @property
    def multi(self) -> LoadedMulti | None:
        """The multi profile, for a run of several candidates."""
        return self.loaded if isinstance(self.loaded, LoadedMulti) else None

    def stage_of(self, index: int) -> str:
        """The stage-timing key of candidate `index` ('candidate', or 'candidate:NAME')."""
        return "candidate" if self.multi is None else f"candidate:{self.names[index]}"


def prepare(opts: RunOptions, loaded: LoadedProfile | LoadedMulti, lives: Lives = LOCAL) -> RunSet:
    """Resolve (and where asked, emulate) the checkpoint, load the signer, make the run folder.

    `loaded` is the profile as read once by the pipeline; each candidate's profile is
    selected for this machine (fallbacks, serving dtype) and its weights emulated once per
    distinct setting (the emulation cache). Every server of the run is made by `lives`.
    """
    if isinstance(loaded, LoadedMulti):
        declared = [(c.name, c.profile) for c in loaded.multi.candidates]
        run_name = loaded.multi.name
    else:
        declared = [("candidate", loaded.profile)]
        run_name = loaded.profile.name
    if opts.attribute:
        for _, profile in declared:
            why = attribution_refused(profile)
            if why is not None:
                raise BadInput(why)
    first = declared[0][1]
    source = resolve_model(first)
    signer = signer_for(opts, first)
    machine = lives.machine(first, source)  # a cluster's nodes, fingerprinted there
    cpu = caps_of(machine) if machine is not None else probe_cpu()
    chosen = [(name, profile, *select(profile, cpu)) for name, profile in declared]
    for note in dict.fromkeys(n for *_, selection in chosen for n in selection.notes):
        log.info("%s", note)
    paths = [model_paths(profile, source, lives.places_lives) for _, _, profile, _ in chosen]
    run_dir = new_run_dir(opts.out_root, run_name)
    multi = isinstance(loaded, LoadedMulti)
    starts: list[ServerStart] = []
    probing = LifeProbing()
    contexts = [
        RunContext(
            opts=opts,
            profile=profile,
            profile_path=loaded.path,
            profile_sha256=loaded.sha256,
            run_dir=run_dir / CANDIDATES_DIR / name if multi else run_dir,
            source_model=source,
            model_paths=own,
            tokenizer_path=profile.model.tokenizer or source,
            signer=signer,
            declared_profile=declared_profile,
            selection=selection,
            starts=starts,
            side=name,
            lives=lives,
            probing=probing,
            machine=machine,
        )
        for (name, declared_profile, profile, selection), own in zip(chosen, paths, strict=True)
    ]
    reference = dataclasses.replace(contexts[0], run_dir=run_dir) if multi else contexts[0]
    count = f" ({len(contexts)} candidates)" if multi else ""
    log.info("run folder %s%s", run_dir, count)
    return RunSet(loaded, reference, contexts, [name for name, _ in declared])


@contextmanager
def started(
    ctx: RunContext, role: Role, purpose: Literal["preflight", "life"] = "life"
) -> Iterator[Runtime]:
    """A started, ready runtime for `role`, its start recorded; always stopped on the way out.

    A life (not a preflight) answers its start probes once ready and, when its work ended
    without an error, its idle probes before it stops (`lives`, qgate/run/life_probes.py).
    """
    runtime = ctx.new_runtime(role)
    side = ctx.side if role == "candidate" else role
    with runtime:
        ctx.starts.append(start_record(runtime, side, purpose))
        life = (ctx.profile, runtime, role, side, len(ctx.starts) - 1, ctx.round)
        if purpose == "life":
            ctx.probing.at_start(*life)
            save_life_probes(ctx)
        yield runtime
        if purpose == "life":
            ctx.probing.at_end(*life)
            save_life_probes(ctx)


def save_life_probes(ctx: RunContext) -> None:
    """Every life's probes so far, in the run folder at once (raw/life-probes.json)."""
    if ctx.probing.records:
        save_raw(ctx, "life-probes.json", ctx.probing.records)


def start_record(runtime: Runtime, side: str, purpose: Literal["preflight", "life"]) -> ServerStart:
    """What one start cost, from the runtime's effective configuration."""
    config = runtime.effective_config()
    return ServerStart(
        side=side,
        purpose=purpose,
        kind=config.kind,
        ready_s=config.ready_s,
        startup=dict(config.startup),
        compile_cache=config.compile_cache,
    )


def quality_on(
    ctx: RunContext,
    runtime: Runtime,
    role: Role,
    reference: QualityOutput | Callable[[], ScoreSet | None] | None,
    on_scores: Callable[[ScoreSet], None] | None = None,
    board: Board | None = None,
) -> QualityOutput:
    """Every suite on one started runtime; raw results saved at once.

    `reference` may be a call that waits for the reference's divergence scores (its quality
    running beside this one): only the paired divergence step waits for it. `on_scores`
    gets the reference's own scores as soon as they exist.
    """
    scores: ReferenceScores = (
        reference.scores if isinstance(reference, QualityOutput) else reference
    )
    if board is None and isinstance(reference, QualityOutput) and ctx.profile.quality.stop != "off":
        board = SettleBoard(ctx.profile.quality, reference.runs)  # a finished or cached reference
    out = evaluate(
        runtime,
        ctx.profile,
        role,
        tokenizer_path=ctx.tokenizer_path,
        reference_scores=scores,
        on_scores=on_scores,
        board=board,
    )
    save_raw(ctx, f"{role}-quality.json", out)
    ctx.probing.quality_known(ctx.side if role == "candidate" else role, out)
    return out


def fingerprint(ctx: RunContext) -> Fingerprinted:
    """Fingerprint the machine and the checkpoint; check the profile's target. On a cluster
    the machine is the lives' nodes, as fingerprinted there (`Lives.machine`), not this one."""
    model_dir = ctx.source_model if ctx.source_model.is_dir() else None
    fp = ctx.machine or collect_fingerprint(model_dir, cache_root() / "digests.json")
    found = Fingerprinted(fp, tuple(check_target(ctx.profile.target, fp)))
    save_raw(ctx, "fingerprint.json", fp)
    check_calibration_model(ctx.profile, fp.checkpoint_sha256)
    return found


def engine_envs(runs: RunSet, found: Fingerprinted) -> Fingerprinted:
    """Build (or find built) the environment of every side that pins its release, once, and
    list them in the fingerprint (the report's record of the resolved versions)."""
    wanted: list[str] = []
    for ctx in [runs.reference, *runs.candidates]:
        for role in ("reference", "candidate"):
            package = side_of(ctx.profile, role).launch.package
            if package is not None and package not in wanted:
                wanted.append(package)
    fp = found.fingerprint.model_copy(
        update={"engine_envs": [prepare_env(package) for package in wanted]}
    )
    save_raw(runs.reference, "fingerprint.json", fp)
    return dataclasses.replace(found, fingerprint=fp)


def check_calibration_model(profile: Profile, checkpoint_sha256: str | None) -> None:
    """BadInput (exit 2) when the math suite's calibration records measured another model."""
    spec = profile.quality.math
    result = math_calibration(spec) if spec is not None else None
    if result is not None:
        problem = model_problem(result, model_label(profile.model), checkpoint_sha256)
        if problem:
            raise BadInput(problem)
