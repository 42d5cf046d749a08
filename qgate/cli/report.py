"""CLI subcommands of the report package: keygen, verify, show, compare.

Registered lazily in qgate/cli/main.py; heavy imports (securesystemslib,
matplotlib) happen inside the command functions.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

import click

from qgate.attest.dsse import read_envelope
from qgate.attest.keys import write_keypair
from qgate.cli.outputs import VerifyOutput, echo_json
from qgate.cli.util import TEXT_OR_JSON
from qgate.core.outpaths import check_in_file, check_out_file
from qgate.errors import BadInput, QgateError, VerificationFailed
from qgate.report.model import Report
from qgate.report.multi_model import MultiReport
from qgate.report.verify.multi import is_multi_payload, parse_multi_statement, verify_any_file
from qgate.report.verify.single import parse_statement

_PATH = click.Path(path_type=Path)


def _load_any_unverified(path: Path) -> Report | MultiReport:
    """The report inside an envelope, single or multi, without checking the signature."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None
    envelope = read_envelope(data, str(path))
    try:
        payload = base64.b64decode(envelope["payload"], validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise BadInput(f"{path}: payload is not valid base64") from None
    try:
        if is_multi_payload(payload):
            return parse_multi_statement(payload)[1]
        return parse_statement(payload)[1]
    except VerificationFailed as exc:
        # Nothing was verified here: a payload that is no report is unusable input.
        raise BadInput(f"{path}: {exc.message}") from None


def load_any(path: Path, pubkey: Path | None) -> Report | MultiReport:
    """The report in an envelope, single or multi; its signature checked when `pubkey` is given."""
    if pubkey is None:
        return _load_any_unverified(path)
    return verify_any_file(path, pubkey).report


def load_report(path: Path, pubkey: Path | None) -> Report:
    """A single report; `REPORT#NAME` picks candidate NAME of a multi report."""
    name = None
    if not path.exists() and "#" in path.name:
        base, _, name = path.name.rpartition("#")
        path = path.with_name(base)
    rep = load_any(path, pubkey)
    if isinstance(rep, Report):
        if name is not None:
            raise BadInput(f"{path} holds one candidate: drop '#{name}'")
        return rep
    names = ", ".join(c.name for c in rep.candidates)
    if name is None:
        raise BadInput(f"{path} holds several candidates; name one: {path}#CANDIDATE ({names})")
    entry = rep.entry(name)
    if entry is None:
        raise BadInput(f"{path} has no candidate {name!r} ({names})")
    if entry.report is None:
        raise BadInput(f"{path}#{name}: the candidate has no report ({entry.error})")
    return entry.report


@click.command()
@click.option(
    "--type",
    "key_type",
    type=click.Choice(["ecdsa", "ed25519"]),
    default="ecdsa",
    show_default=True,
    help="ECDSA P-256 (cosign-compatible) or Ed25519.",
)
@click.option(
    "--out",
    type=_PATH,
    required=True,
    help="The private key file (mode 0600; '.pem' is added when missing); the public key "
    "goes beside it with '.pub.pem' instead of '.pem'.",
)
def keygen(key_type: str, out: Path) -> None:
    """Create a signing key pair as PEM files (the private key is never printed)."""
    prefix = out.with_name(out.name.removesuffix(".pem") or out.name)
    check_out_file(Path(f"{prefix}.pem"), "--out")
    priv, pub = write_keypair(prefix, key_type)
    click.echo(f"private key: {priv} (mode 0600; keep it secret)")
    click.echo(f"public key:  {pub} (give this to verifiers)")


@click.command()
@click.argument("report", type=_PATH)
@click.option("--pubkey", type=_PATH, required=True, help="PEM public key of the signer.")
@click.option(
    "--profile",
    type=_PATH,
    default=None,
    help="Gate against this profile: the report must embed it (loaded as `run` loads it) "
    "and its limits decide every verdict. Without it the report's own copy is used.",
)
@click.option(
    "--model",
    "model_dir",
    type=_PATH,
    default=None,
    help="Check every checkpoint file against the subjects.",
)
@click.option(
    "--preregistration",
    type=_PATH,
    default=None,
    help="The pre-registration statement as you received it before the run: the report "
    "must bind to exactly this file, registered and signed before its servers started. "
    "[default: the one beside the report, when there is one]",
)
@click.option(
    "--preregistration-pubkey",
    type=_PATH,
    default=None,
    help="PEM public key that signed --preregistration [default: --pubkey].",
)
@click.option(
    "--require-pass",
    is_flag=True,
    help="Exit 1 also when the report verifies but its verdict is not PASS (FAIL, UNGATED, "
    "PREVIEW), so `qgate verify R --require-pass && deploy` deploys only a verified PASS.",
)
@click.option(
    "--format",
    "fmt",
    type=TEXT_OR_JSON,
    default="text",
    show_default=True,
    help="Lines for people, or one JSON object (`qgate schema verify`).",
)
def verify(
    report: Path,
    pubkey: Path,
    profile: Path | None,
    model_dir: Path | None,
    preregistration: Path | None,
    preregistration_pubkey: Path | None,
    require_pass: bool,
    fmt: str,
) -> None:
    """Check REPORT's signature, subjects and schema, and recompute every verdict from its
    records.

    Exit 0 when everything holds, 1 with the first reason otherwise (and, with
    --require-pass, when it verifies with a verdict other than PASS), 2 for an
    unreadable file or profile, 3 when this environment cannot run the checks.
    """

    def out(**kw: object) -> VerifyOutput:
        return VerifyOutput(report=str(report), require_pass=require_pass, **kw)

    try:
        # Checked before the signature and the recomputation, which take a while on big reports.
        if profile is not None:
            check_in_file(profile, "--profile")
        if model_dir is not None and not model_dir.is_dir():
            raise BadInput(f"--model {model_dir}: not a folder")
        result = verify_any_file(
            report,
            pubkey,
            profile,
            model_dir,
            preregistration=preregistration,
            preregistration_pubkey=preregistration_pubkey,
        )
    except QgateError as exc:
        if fmt != "json":
            raise
        echo_json(
            out(
                verified=False,
                kind=None,
                verdict=None,
                passed=False,
                checked=[],
                notes=[],
                error=exc.message,
                exit_code=int(exc.exit_code),
            )
        )
        raise click.exceptions.Exit(int(exc.exit_code)) from None
    verdict = str(result.report.verdict)
    passed = verdict == "PASS"
    code = 1 if require_pass and not passed else 0
    if fmt == "json":
        kind = "multi" if isinstance(result.report, MultiReport) else "single"
        echo_json(
            out(
                verified=True,
                kind=kind,
                verdict=verdict,
                passed=passed,
                checked=list(result.checked),
                notes=list(result.notes),
                signed_only=list(result.signed_only),
                error=None,
                exit_code=code,
            )
        )
    else:
        for line in result.checked:
            click.echo(f"ok  {line}")
        for note in result.notes:
            click.echo(f"note {note}")
        for line in result.signed_only:
            click.echo(f"signed but not re-derived: {line}")
        click.echo(f"VERIFIED {report} (verdict {verdict})")
        if code:
            click.echo(
                f"NOT PASS: {report} verifies, but its verdict is {verdict} (--require-pass)",
                err=True,
            )
    if code:
        raise click.exceptions.Exit(code)


__all__ = ["keygen", "load_any", "load_report", "verify"]
