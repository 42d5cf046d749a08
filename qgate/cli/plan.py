"""`qgate plan PROFILE`: the run plan, printed without starting anything.

The same plan `qgate run` follows (qgate/run/plan.py): every server life in
order, what each serves and where, the preflight, the suites with their item
counts, the perf scenarios with their requests and tokens, and whether the
reference's results are in the cache. It reads the profile as `run` does,
selects for this machine (fallbacks, serving dtype), and looks the reference
up in the cache when the checkpoint is here; a profile meant for another
machine gets its plan with the cache state "unknown here".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from qgate.checkpoint.embedded import cache_root, checkpoint_path
from qgate.cli.util import TEXT_OR_JSON
from qgate.core.files import atomic_write
from qgate.core.outpaths import check_in_file, check_out_file
from qgate.errors import BadInput
from qgate.profile.changes import changes_of
from qgate.profile.load import LoadedProfile
from qgate.profile.load_multi import LoadedMulti, load_any_profile_file
from qgate.report.preregistration import preregistration_of, sign_preregistration
from qgate.run.context import select, signer_for
from qgate.run.lives import cluster_address, lives_for
from qgate.run.options import RunOptions
from qgate.run.placement import plan_for
from qgate.run.plan import describe, make_plan
from qgate.run.reference import reference_key_for
from qgate.runtime.capabilities import probe_cpu
from qgate.runtime.fingerprint import collect_fingerprint

if TYPE_CHECKING:
    from qgate.core.plan import Plan
    from qgate.profile import Profile
    from qgate.runtime.lives import Lives


@click.command("plan")
@click.argument("profile", type=click.Path(path_type=Path))
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Reference cache folder [default: the qgate cache folder].",
)
@click.option("--refresh-reference", is_flag=True, help="Plan as `run --refresh-reference`.")
@click.option(
    "--cluster",
    metavar="ADDRESS",
    default=None,
    help="Also plan on this Ray cluster (HOST:PORT, or 'auto'): which lives run together "
    "and the expected wall time against the local plan (docs/cluster.md). JSON: the "
    "cluster plan. [default: the profile's cluster.address, when it has one]",
)
@click.option(
    "--life-s",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds one life takes, to state the expected wall times in minutes.",
)
@click.option(
    "--sign",
    "sign_out",
    type=click.Path(path_type=Path),
    default=None,
    metavar="FILE",
    help="Also sign the plan, the criteria (margins, alpha, rule) and the profile's digest "
    "into FILE, a pre-registration statement to hand over before the run; `qgate run "
    "--preregistration FILE` then runs against it (one candidate).",
)
@click.option(
    "--key",
    type=click.Path(path_type=Path),
    default=None,
    help="PEM private key for --sign (else the profile's signing section, "
    "$QGATE_SIGNING_KEY, or a local development key).",
)
@click.option(
    "--format",
    "fmt",
    type=TEXT_OR_JSON,
    default="text",
    show_default=True,
    help="Lines for people, or the plan as JSON.",
)
def plan_cmd(
    profile: Path,
    cache_dir: Path | None,
    refresh_reference: bool,
    cluster: str | None,
    life_s: float | None,
    sign_out: Path | None,
    key: Path | None,
    fmt: str,
) -> None:
    """Print the run plan of PROFILE (server lives, suites, scenarios); start nothing."""
    if sign_out is not None:
        check_out_file(sign_out, "--sign")
    if key is not None:
        check_in_file(key, "--key")
    loaded = load_any_profile_file(profile, check_files=False)
    if isinstance(loaded, LoadedProfile):
        declared = [("candidate", loaded.profile)]
    else:
        declared = [(c.name, c.profile) for c in loaded.multi.candidates]
    cpu = probe_cpu()
    selected: list[tuple[str, Profile]] = []
    refusals: list[str] = []
    for name, declared_profile in declared:
        try:
            selected.append((name, select(declared_profile, cpu)[0]))
        except BadInput as exc:  # meant for another machine: plan it as written
            selected.append((name, declared_profile))
            refusals.append(f"{name} cannot run on this machine: {exc.message.splitlines()[0]}")
    first = selected[0][1]
    cached = _cached(first, cache_dir)
    if refusals:  # planned as written, for its own hardware: in sequence on its target
        where = f"{first.target.count} x {first.target.accelerator} (the profile's target)"
        plan = make_plan(
            selected, reference_cached=cached, placement=where, refresh=refresh_reference
        )
    else:
        plan = plan_for(selected, cached, refresh_reference)
    plan.notes.extend(refusals)
    if sign_out is not None:
        _sign(loaded, plan, sign_out, key)
    if cluster_address(cluster, first) is not None:
        _elsewhere(plan, selected, lives_for(cluster, first), life_s, fmt)
        return
    if fmt == "json":
        click.echo(json.dumps(plan.model_dump(mode="json"), indent=1))
        return
    for line in describe(plan):
        click.echo(line)


def _sign(loaded: LoadedProfile | LoadedMulti, plan: Plan, out: Path, key: Path | None) -> None:
    """Sign the pre-registration statement of a one-candidate profile into `out`."""
    if not isinstance(loaded, LoadedProfile):
        raise BadInput("--sign: a profile of several candidates cannot be pre-registered yet")
    signer = signer_for(RunOptions(profile=loaded.path, key=key), loaded.profile)  # as `run`
    prereg = preregistration_of(loaded.profile, loaded.path, loaded.sha256, plan)
    atomic_write(out, sign_preregistration(prereg, signer))
    click.echo(
        f"pre-registration signed into {out}: {len(prereg.criteria)} criteria, "
        f"{len(prereg.suites)} suites, {len(prereg.scenarios)} scenarios; lock "
        f"{prereg.lock_sha256[:12]}... (key {signer.signer.public_key.keyid[:12]}...)",
        err=True,
    )


def _cached(profile: Profile, cache_dir: Path | None) -> bool | None:
    """Whether the cache holds an entry under the reference's key; None when the checkpoint
    is not here. Presence only: `run` authenticates the entry before it uses it."""
    model = profile.model
    folder = checkpoint_path(model.embedded) if model.embedded else model.path
    if folder is None or not folder.is_dir():
        return None
    fingerprint = collect_fingerprint(folder, cache_root() / "digests.json")
    key = reference_key_for(profile, fingerprint)
    root = (cache_dir or cache_root()) / "reference"
    return (root / key).is_dir()


def _elsewhere(
    plan: Plan, selected: list[tuple[str, Profile]], lives: Lives, life_s: float | None, fmt: str
) -> None:
    """The local plan, then the executor's plan of its lives (JSON: the executor's plan)."""
    changes = {
        name: len(changes_of(p, p.attribution.groups if p.attribution else []))
        for name, p in selected
        if any(life.side == f"{name} attribution" for life in plan.lives)
    }
    out = lives.planned(plan, selected, changes=changes, life_s=life_s)
    if fmt == "json":
        click.echo(json.dumps(out.data if out else plan.model_dump(mode="json"), indent=1))
        return
    for line in [*describe(plan), *(out.lines if out else [])]:
        click.echo(line)
