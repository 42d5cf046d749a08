"""The signed report: model, DSSE/in-toto signing, verification, rendered views.

How a run produces its report (what `qgate.run_report.report` does)::

    from qgate.report.files import new_run_dir, atomic_write, artifact_digests
    from qgate.report.keys import load_signer, signer_notice      # -> LoadedSigner
    from qgate.report.verdict import overall, perf_status         # the same logic verify uses
    from qgate.report.assemble import build_report                # summaries, ratios, checks
    from qgate.report.signing import subjects_for                 # profile + checkpoint subjects
    from qgate.report.writer import write_report                  # redact, sign, write, render

    run_dir = new_run_dir(out_root, profile.name)                 # never reused
    signer = load_signer(key, profile.signing.key_env, profile.signing.kms_uri,
                         profile.signing.scheme)                  # dev key on first use
    report = build_report(profile=..., profile_sha256=..., fingerprint=..., ...)
    written = write_report(run_dir, report, subjects_for(profile_path, fingerprint), signer,
                           extra_secret_names=profile.secrets)
    # run_dir/report.intoto.jsonl (DSSE envelope, one JSON line), report.md, report.html,
    # junit.xml; written.report is the redacted, signed Report; signer_notice(signer)
    # says where the dev key's public key is.

`qgate verify` (verify.py) re-derives every verdict with the same functions.
"""
