"""The signed report: model, DSSE/in-toto signing, verification, rendered views.

How a run produces its report (what `qgate.pipeline` calls)::

    from qgate.report.files import new_run_dir, atomic_write      # run folder, atomic writes
    from qgate.report.keys import load_signer                     # -> LoadedSigner
    from qgate.report.model import Report, QualitySection, PerfSection, ScenarioResult
    from qgate.report.signing import subjects_for                 # profile + checkpoint subjects
    from qgate.report.verdict import overall, perf_status         # the same logic verify uses
    from qgate.report.writer import write_report                  # redact, sign, write, render

    run_dir = new_run_dir(out_root, profile.name)
    ...  # stages write their raw files into run_dir with atomic_write
    status = perf_status(quality_passed, skip_perf, force_perf)
    report = Report(qgate_version=..., command_line=argv, created_at=iso_utc,
                    profile=profile.model_dump(mode="json"), profile_sha256=sha,
                    fingerprint=fp, effective_configs=[ref_cfg, cand_cfg],
                    quality=QualitySection(runs=..., divergence=..., verdicts=...),
                    perf=PerfSection(status=status, bootstrap_resamples=..., bootstrap_seed=...,
                                     runs=[...], results=[ScenarioResult(...)]),
                    verdict="FAIL", target_mismatches=..., emulated=..., stage_timings=...)
    report.verdict = overall(report.all_verdicts(), status)
    signer = load_signer(opts.key, profile.signing.key_env, profile.signing.kms_uri,
                         profile.signing.scheme)
    written = write_report(run_dir, report, subjects_for(opts.profile, fp), signer,
                           extra_secret_names=profile.secrets)
    # written.envelope = run_dir/report.intoto.jsonl; also report.md, report.html, junit.xml

`qgate verify` (verify.py) re-derives every verdict with the same functions.
"""
