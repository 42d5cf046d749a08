"""`qgate calibrate REPORT --pubkey KEY`: a verified report's answers on ladder items, as
calibration records bound to the model that gave them.

The file it writes is what `quality.math.calibration.records` names: per ladder
item, whether the reference (and the candidate) answered it, and the model
(checkpoint digest), engine and engine version of that run. Only a report that
`qgate verify` accepts with `--pubkey` is read; a run of another model refuses
the file.
"""

from __future__ import annotations

from pathlib import Path

import click

from qgate.cli.report import load_report
from qgate.core.files import atomic_write
from qgate.core.outpaths import check_out_file
from qgate.errors import BadInput
from qgate.profile import Profile
from qgate.profile.side import side
from qgate.quality.calibrate import (
    calibration_from_runs,
    canonical_bytes,
    level_stats,
    model_label,
)
from qgate.report.model import Report

_PATH = click.Path(path_type=Path)


def _engine(report: Report, profile: Profile) -> tuple[str, str | None]:
    """The reference's engine kind and version in the report's run (the server's own
    account where it gave one, else what the engine declares for the fingerprinted machine)."""
    reference = side(profile, "reference")
    for config in report.effective_configs:
        if config.role == "reference" and config.engine_version:
            return config.kind, config.engine_version
    packages = report.fingerprint.packages if report.fingerprint else {}
    return reference.kind, reference.engine_version(packages)


@click.command(name="calibrate")
@click.argument("report", type=_PATH)
@click.option("--out", "-o", type=_PATH, required=True, help="Calibration file to write (JSON).")
@click.option("--suite", default="math.short", show_default=True, help="Result id to read.")
@click.option(
    "--pubkey",
    type=_PATH,
    required=True,
    help="PEM public key of the signer: the report is verified first (as `qgate verify`).",
)
def calibrate_cmd(report: Path, out: Path, suite: str, pubkey: Path) -> None:
    """Write calibration records from REPORT (a signed report, verified with --pubkey): per
    ladder item of --suite, whether the reference and the candidate answered it, with the
    model, engine and engine version that answered, and print the accuracy per level."""
    check_out_file(out, "--out")
    loaded = load_report(report, pubkey)
    fingerprint = loaded.fingerprint
    if fingerprint is None or fingerprint.checkpoint_sha256 is None:
        raise BadInput(
            f"{report}: the report records no checkpoint digest, so its records cannot be "
            "bound to a model"
        )
    profile = Profile.model_validate(loaded.profile)
    engine, version = _engine(loaded, profile)
    source = f"{report.name} ({suite}, verified, created {loaded.created_at})"
    data = calibration_from_runs(
        loaded.quality.runs,
        suite,
        source,
        model=model_label(profile.model),
        model_sha256=fingerprint.checkpoint_sha256,
        engine=engine,
        engine_version=version,
    )
    atomic_write(out, canonical_bytes(data))
    for stat in level_stats(data.items).values():
        paired = f", {stat.lost} lost / {stat.gained} gained" if stat.paired else ""
        click.echo(
            f"level {stat.level}: reference {stat.reference_correct}/{stat.n} "
            f"({100 * stat.accuracy:.0f}%){paired}"
        )
    click.echo(f"wrote {out} ({data.model}, {engine} {version or 'version not stated'})")
