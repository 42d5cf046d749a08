"""Runtimes: vLLM servers qgate starts, endpoints it is given, and the machine fingerprint.

Entry points (import the submodule; nothing heavy is imported here):

- `factory.make_runtime(profile, role, model_path, run_dir)`: a not yet started runtime
- `vllm_server.VllmServer`: a vLLM server process group (context manager)
- `endpoint.Endpoint`: an already running OpenAI-compatible server
- `fingerprint.collect_fingerprint(model_dir, cache_path)`, `fingerprint.check_target(...)`
- `redact.redact_env(...)`, `redact.redact_text(...)`, `redact.redact_argv(...)`
- `effective.check_applied(requested_args, effective_fields)`: what the server did not apply
"""
