"""The signed report: model, DSSE/in-toto signing, verification, rendered views.

How a run produces its report (what `qgate.run.report.report` does)::

    from qgate.report.files import new_run_dir, atomic_write, artifact_digests
    from qgate.attest.keys import load_signer, signer_notice      # -> LoadedSigner
    from qgate.report.verdict import overall, perf_status         # the same logic verify uses
    from qgate.report.assemble import build_report                # the one judge's verdicts
    from qgate.report.inputs import ReportInputs                  # evidence + the run's facts
    from qgate.report.signing import subjects_for                 # profile + checkpoint subjects
    from qgate.report.writer import write_report                  # redact, sign, write, render

    run_dir = new_run_dir(out_root, profile.name)                 # never reused
    signer = load_signer(key, profile.signing.key_env, profile.signing.kms_uri,
                         profile.signing.scheme)                  # dev key on first use
    report = build_report(ReportInputs(profile=..., evidence=Evidence(...), ...))
    written = write_report(run_dir, report, subjects_for(profile_path, fingerprint), signer,
                           extra_secret_names=profile.secrets)
    # run_dir/report.intoto.jsonl (DSSE envelope, one JSON line), report.md, report.html,
    # junit.xml; written.report is the redacted, signed Report; signer_notice(signer)
    # says where the dev key's public key is.

`qgate verify` (verify/) re-derives every verdict with the same functions.
The names below are the package's surface, loaded lazily (importing
`qgate.report` imports none of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgate.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from qgate.attest.keys import LoadedSigner, load_signer
    from qgate.report.assemble import build_report
    from qgate.report.model import Report
    from qgate.report.signing import subjects_for
    from qgate.report.verdict import overall, perf_status
    from qgate.report.verify.single import VerifyResult, verify_bytes, verify_file
    from qgate.report.writer import WrittenReport, write_report

__all__ = [
    "LoadedSigner",
    "Report",
    "VerifyResult",
    "WrittenReport",
    "build_report",
    "load_signer",
    "overall",
    "perf_status",
    "subjects_for",
    "verify_bytes",
    "verify_file",
    "write_report",
]

_HOME = {
    "build_report": "assemble",
    "LoadedSigner": "qgate.attest.keys",
    "load_signer": "qgate.attest.keys",
    "Report": "model",
    "subjects_for": "signing",
    "overall": "verdict",
    "perf_status": "verdict",
    "VerifyResult": "verify.single",
    "verify_bytes": "verify.single",
    "verify_file": "verify.single",
    "WrittenReport": "writer",
    "write_report": "writer",
}

__getattr__ = lazy_getattr(__name__, _HOME)
