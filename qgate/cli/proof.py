"""`qgate proof` and `qgate check-proof`: one item of a report, checked without the others.

`proof` writes the item's leaf and RFC 6962 audit path (qgate/report/items_tree.py) from a
report; `check-proof` checks it against the root in the signed result statement beside the
report (result.intoto.jsonl), which is small enough to hand over without the records.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from qgate.cli.report import load_report
from qgate.core.files import atomic_write
from qgate.core.outpaths import check_in_file, check_out_file
from qgate.errors import BadInput
from qgate.report.items_tree import prove
from qgate.report.verify.statements import check_item, read_key

_PATH = click.Path(path_type=Path)


@click.command("proof")
@click.argument("report", type=_PATH)
@click.argument("item")
@click.option("--out", type=_PATH, required=True, help="The proof file to write (JSON).")
@click.option(
    "--pubkey",
    type=_PATH,
    default=None,
    help="Verify REPORT with this key first (else it is read without checking).",
)
def proof_cmd(report: Path, item: str, out: Path, pubkey: Path | None) -> None:
    """Write the proof of ITEM (SUITE/SIDE/ID, e.g. math.short/candidate/gsm8k-17) of REPORT."""
    check_out_file(out, "--out")
    try:
        suite, role, item_id = item.split("/", 2)
    except ValueError:
        raise BadInput(f"ITEM {item!r}: write SUITE/SIDE/ID, e.g. math.short/candidate/7") from None
    rep = load_report(report, pubkey)
    made = prove(rep.quality.runs, suite, role, item_id)
    atomic_write(out, (made.model_dump_json(indent=1) + "\n").encode())
    click.echo(f"proof of {item} (leaf {made.index + 1} of {made.size}) written to {out}")


@click.command("check-proof")
@click.argument("proof", type=_PATH)
@click.option(
    "--result",
    type=_PATH,
    required=True,
    help="The signed result statement (result.intoto.jsonl beside the report).",
)
@click.option("--pubkey", type=_PATH, required=True, help="PEM public key of the signer.")
def check_proof_cmd(proof: Path, result: Path, pubkey: Path) -> None:
    """Check that PROOF's item is one of the signed records, without the report.

    Exit 0 when it is, 1 when it is not, 2 for an unreadable file.
    """
    for path, option in ((proof, "PROOF"), (result, "--result"), (pubkey, "--pubkey")):
        check_in_file(path, option)
    checked = check_item(proof, result, read_key(pubkey))
    record = json.loads(checked.leaf)["item"]
    click.echo(
        f"ok  {checked.suite}/{checked.role}/{checked.id} is leaf {checked.index + 1} of "
        f"{checked.size} under the signed root: answer {record.get('answer')!r}, expected "
        f"{record.get('expected')!r}, correct {record.get('correct')}"
    )
