"""`qgate calibrate REPORT`: a prior report's answers on ladder items, as calibration records.

The file it writes is what `quality.math.calibration.records` names: per ladder
item, whether the reference (and the candidate) answered it. `--pubkey`
verifies the report first; without it the records are taken as they are, and
the file's `source` says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from qgate.cli.report import load_report
from qgate.core.files import atomic_write
from qgate.core.outpaths import check_out_file
from qgate.quality.calibrate import calibration_from_runs, level_stats

_PATH = click.Path(path_type=Path)


@click.command(name="calibrate")
@click.argument("report", type=_PATH)
@click.option("--out", "-o", type=_PATH, required=True, help="Calibration file to write (JSON).")
@click.option("--suite", default="math.short", show_default=True, help="Result id to read.")
@click.option("--pubkey", type=_PATH, default=None, help="Verify the report first.")
def calibrate_cmd(report: Path, out: Path, suite: str, pubkey: Path | None) -> None:
    """Write calibration records from REPORT (a signed report): per ladder item of --suite,
    whether the reference and the candidate answered it, and print the accuracy per level."""
    check_out_file(out, "--out")
    loaded = load_report(report, pubkey)
    trust = "verified" if pubkey is not None else "not verified"
    source = f"{report.name} ({suite}, {trust}, created {loaded.created_at})"
    data = calibration_from_runs(loaded.quality.runs, suite, source)
    atomic_write(out, (json.dumps(data.model_dump(mode="json"), indent=1) + "\n").encode())
    for stat in level_stats(data.items).values():
        paired = f", {stat.lost} lost / {stat.gained} gained" if stat.paired else ""
        click.echo(
            f"level {stat.level}: reference {stat.reference_correct}/{stat.n} "
            f"({100 * stat.accuracy:.0f}%){paired}"
        )
    click.echo(f"wrote {out}")
