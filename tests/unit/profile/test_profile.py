"""Malformed profiles: every one exits 2 and names file, line and key path, without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from qgate.cli.main import main
from qgate.errors import BadInput, ProfileError
from qgate.profile import Profile
from qgate.profile.load import format_path, load_profile, load_profile_file, profile_sha256

PROFILES = Path(__file__).resolve().parents[1] / "profiles"

BASE = """\
name: t
model:
  embedded: smollm2
candidate:
  args: {kv_cache_dtype: fp8}
quality:
  math: {max_drop: 0.1}
"""

PERF = """\
perf:
  scenarios:
    - {name: a, input_tokens: 16, output_tokens: 4}
"""

# (id, profile text, expected "LINE KEY.PATH" fragment, expected message fragment)
CASES: list[tuple[str, str, str, str]] = [
    ("unknown-top-key", BASE + "colour: red\n", ":8 colour:", "unknown key"),
    ("misspelt-top-key", BASE + "candiate: {}\n", ":8 candiate:", "did you mean 'candidate'?"),
    (
        "misspelt-suite",
        BASE + "  divergance: {sequences: 4}\n",
        ":8 quality.divergance:",
        "did you mean 'divergence'?",
    ),
    (
        "misspelt-nested-key",
        BASE.replace("{max_drop: 0.1}", "{max_dorp: 0.1}"),
        ":7 quality.math.max_dorp:",
        "did you mean 'max_drop'?",
    ),
    ("duplicate-key", BASE + "name: u\n", ":8 name:", "duplicate key (first given on line 1)"),
    (
        "duplicate-nested-key",
        BASE.replace("  embedded: smollm2\n", "  embedded: smollm2\n  embedded: smollm2\n"),
        ":4 model.embedded:",
        "duplicate key (first given on line 3)",
    ),
    (
        "wrong-type",
        BASE + "  concurrency: lots\n",
        ":8 quality.concurrency:",
        "must be a valid integer",
    ),
    (
        "negative-threshold",
        BASE + "  divergence:\n    max_p99_kld: -0.5\n",
        ":9 quality.divergence.max_p99_kld:",
        "must be greater than 0 (got -0.5)",
    ),
    (
        "zero-threshold",
        BASE + "  divergence: {max_mean_kld: 0}\n",
        ":8 quality.divergence.max_mean_kld:",
        "must be greater than 0",
    ),
    (
        "fraction-above-one",
        BASE.replace("{max_drop: 0.1}", "{max_drop: 1.5}"),
        ":7 quality.math.max_drop:",
        "less than or equal to 1",
    ),
    (
        "empty-scenario-list",
        BASE + "perf:\n  scenarios: []\n",
        ":9 perf.scenarios:",
        "must list at least 1 item",
    ),
    (
        "duplicate-scenario-names",
        BASE + PERF + "    - {name: a, input_tokens: 8, output_tokens: 4}\n",
        ":11 perf.scenarios[1].name:",
        "duplicate scenario name 'a'",
    ),
    (
        "unknown-scenario-kind",
        BASE + PERF + "    - {name: b, kind: multiturn}\n",
        ":11 perf.scenarios[1].kind:",
        "did you mean 'multi_turn'?",
    ),
    (
        "scenario-misspelt-field",
        BASE + PERF + "    - {name: b, kind: multi_turn, conversatons: 2}\n",
        ":11 perf.scenarios[1].conversatons:",
        "did you mean 'conversations'?",
    ),
    (
        "scenario-not-a-mapping",
        BASE + PERF + "    - just-a-name\n",
        ":11 perf.scenarios[1]:",
        "must be a mapping",
    ),
    (
        "scenario-missing-field",
        BASE + "perf:\n  scenarios:\n    - {name: a, output_tokens: 4}\n",
        ":10 perf.scenarios[0].input_tokens:",
        "required key is missing",
    ),
    (
        "missing-model",
        "name: t\ncandidate: {}\nquality:\n  math: {}\n",
        ":1 model:",
        "required key is missing",
    ),
    (
        "model-without-source",
        BASE.replace("  embedded: smollm2\n", "  served_name: x\n"),
        ":2 model:",
        "give one of 'path' or 'embedded'",
    ),
    (
        "both-path-and-embedded",
        BASE.replace("  embedded: smollm2\n", "  path: /m\n  embedded: smollm2\n"),
        ":4 model.embedded:",
        "give only one of 'path' or 'embedded'",
    ),
    (
        "unknown-embedded-model",
        BASE.replace("embedded: smollm2", "embedded: smolm2"),
        ":3 model.embedded:",
        "did you mean 'smollm2'?",
    ),
    (
        "missing-candidate",
        "name: t\nmodel: {embedded: smollm2}\nquality:\n  math: {}\n",
        ":1 candidate:",
        "required key is missing",
    ),
    (
        "no-suite",
        BASE.replace("  math: {max_drop: 0.1}\n", "  seed: 3\n"),
        ":6 quality:",
        "configure at least one suite",
    ),
    (
        "engine-arg-mapping",
        BASE + "engine:\n  args:\n    compilation_config: {level: 0}\n",
        ":10 engine.args.compilation_config:",
        "not a mapping",
    ),
    (
        "candidate-arg-nested-list",
        BASE.replace("{kv_cache_dtype: fp8}", "{cuda_graph_sizes: [1, [2]]}"),
        ":5 candidate.args.cuda_graph_sizes[1]:",
        "not a nested list",
    ),
    (
        "engine-arg-date",
        BASE + "reference:\n  args: {revision: 2024-01-01}\n",
        ":9 reference.args.revision:",
        "quote it",
    ),
    (
        "env-value-number",
        BASE + "engine:\n  env: {VLLM_ROCM_USE_AITER: 1}\n",
        ":9 engine.env.VLLM_ROCM_USE_AITER:",
        'quote it, e.g. "1"',
    ),
    (
        "bad-engine-kind",
        BASE + "engine: {kind: vlm}\n",
        ":8 engine.kind:",
        "did you mean 'vllm'?",
    ),
    (
        "endpoint-kind-without-endpoint",
        BASE + "engine: {kind: endpoint}\n",
        ":4 candidate.endpoint:",
        "required when engine.kind is 'endpoint'",
    ),
    (
        "endpoint-with-vllm-kind",
        BASE.replace(
            "  args: {kv_cache_dtype: fp8}\n",
            "  args: {kv_cache_dtype: fp8}\n  endpoint: {base_url: 'http://h:8000/v1'}\n",
        ),
        ":6 candidate.endpoint:",
        "only valid when engine.kind is 'endpoint'",
    ),
    (
        "bad-base-url",
        BASE.replace(
            "  args: {kv_cache_dtype: fp8}\n",
            "  endpoint: {base_url: 'h:8000/v1'}\nreference:\n  endpoint: {base_url: 'http://h/v1'}\n",
        )
        + "engine: {kind: endpoint}\n",
        ":5 candidate.endpoint.base_url:",
        "must start with http:// or https://",
    ),
    (
        "bad-port",
        BASE + "engine: {port: 70000}\n",
        ":8 engine.port:",
        "less than or equal to 65535",
    ),
    (
        "concurrency-union",
        BASE + "perf:\n  scenarios:\n    - {name: a, input_tokens: 1, output_tokens: 1,"
        " concurrency: many}\n",
        ":10 perf.scenarios[0].concurrency:",
        "must be a valid integer or a valid list",
    ),
    (
        "bad-prompt-form",
        BASE.replace("{max_drop: 0.1}", "{prompts: [short, longg]}"),
        ":7 quality.math.prompts[1]:",
        "did you mean 'long'?",
    ),
    (
        "empty-name",
        BASE.replace("name: t", "name: ''"),
        ":1 name:",
        "must not be empty",
    ),
    (
        "lm-eval-not-a-list",
        BASE + "  lm_eval: {task: gsm8k}\n",
        ":8 quality.lm_eval:",
        "must be a valid list",
    ),
    (
        "non-string-key",
        BASE + "engine:\n  env: {1: x}\n",
        ":9 engine.env[1]:",
        "must be strings",
    ),
    ("bad-yaml-syntax", BASE + "perf: [unclosed\n", ":9:", "YAML syntax error"),
    ("bad-yaml-mapping", BASE + "foo: bar: baz\n", ":8:", "YAML syntax error"),
    ("tab-indent", BASE + "target:\n\taccelerator: cpu\n", ":9:", "tab character"),
    ("list-root", "- name: t\n- model: x\n", ":1:", "must be a mapping of keys, not a list"),
    ("scalar-root", "just words\n", ":1:", "must be a mapping of keys, not a str"),
    ("empty-file", "", ":1:", "empty profile"),
    ("only-comments", "# nothing here\n", ":1:", "empty profile"),
    ("two-documents", BASE + "---\nname: u\n", ":8:", "expected a single document"),
]

# A key pasted where a variable name belongs: no message may ever contain it.
PASTED = "sk-proj-Q3xT9bLm2VwZ8rKc4NfY7hJd"

ENDPOINTS = f"""\
name: t
model:
  embedded: smollm2
candidate:
  endpoint: {{base_url: 'http://h:8000/v1', api_key_env: {PASTED}}}
reference:
  endpoint: {{base_url: 'http://h:8001/v1'}}
engine: {{kind: endpoint}}
quality:
  math: {{max_drop: 0.1}}
"""


def _nested_block(levels: int) -> str:
    return "x:\n" + "".join(" " * (i + 1) + "a:\n" for i in range(levels))


# Bad inputs that used to fail late (or with a traceback): issue 10, point 4.
CASES += [
    (
        "deep-flow-lists",
        BASE + "description: " + "[" * 5000 + "]" * 5000 + "\n",
        ":8 description:",
        "nested more than 64 levels deep",
    ),
    ("deep-block-mappings", BASE + _nested_block(1000), ":71 x:", "nested more than 64 levels"),
    (
        "deep-flow-mappings",
        BASE + "x: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n",
        ":8 x:",
        "nested more than 64 levels deep",
    ),
    (
        "env-name-with-equals",
        BASE + "engine:\n  env: {'A=B': x}\n",
        ":9 engine.env.A=B:",
        "an environment variable name must not contain '='",
    ),
    (
        "env-name-not-identifier",
        BASE + "reference:\n  env: {'MY VAR': x}\n",
        ":9 reference.env.MY VAR:",
        "not an environment variable name",
    ),
    (
        "env-name-leading-digit",
        BASE.replace("{kv_cache_dtype: fp8}", "{kv_cache_dtype: fp8}\n  env: {1X: y}"),
        ":6 candidate.env.1X:",
        "not an environment variable name",
    ),
    (
        "env-name-empty",
        BASE + "engine:\n  env: {'': x}\n",
        ":9 engine.env.:",
        "an environment variable name must not be empty",
    ),
    (
        "env-value-nul",
        BASE + 'engine:\n  env: {A: "a\\0b"}\n',
        ":9 engine.env.A:",
        "contains a NUL character",
    ),
    (
        "env-name-nul",
        BASE + 'engine:\n  env: {"A\\0B": x}\n',
        ":9 engine.env.A\\x00B:",
        "a key contains a NUL character",
    ),
    (
        "engine-arg-value-nul",
        BASE.replace("{kv_cache_dtype: fp8}", '{kv_cache_dtype: "fp8\\0"}'),
        ":5 candidate.args.kv_cache_dtype:",
        "contains a NUL character",
    ),
    (
        "engine-arg-list-item-nul",
        BASE + 'engine:\n  args: {middleware: [a, "b\\x00"]}\n',
        ":9 engine.args.middleware[1]:",
        "contains a NUL character",
    ),
    (
        "launcher-nul",
        BASE + 'engine:\n  launcher: [vllm, "serve\\0"]\n',
        ":9 engine.launcher[1]:",
        "contains a NUL character",
    ),
    (
        "model-path-nul",
        BASE.replace("embedded: smollm2", 'path: "/models/x\\0"'),
        ":3 model.path:",
        "contains a NUL character",
    ),
    (
        "api-key-env-pasted-key",
        ENDPOINTS,
        ":5 candidate.endpoint.api_key_env:",
        "looks like a key, not an environment variable name",
    ),
    (
        "api-key-env-pasted-hf-token",
        ENDPOINTS.replace(PASTED, "hf_QxTbLmVwZrKcNfYhJdAbCdEfGh12"),
        ":5 candidate.endpoint.api_key_env:",
        "looks like a key, not an environment variable name",
    ),
    (
        "api-key-env-not-a-name",
        ENDPOINTS.replace(PASTED, "'my key'"),
        ":5 candidate.endpoint.api_key_env:",
        "must name an environment variable",
    ),
    (
        "signing-key-env-pasted-key",
        BASE + "signing: {key_env: ghp_Q3xT9bLm2VwZ8rKc4NfY7hJd1234}\n",
        ":8 signing.key_env:",
        "looks like a key",
    ),
    (
        "secrets-entry-pasted-key",
        BASE + f"secrets: [HF_TOKEN, {PASTED}]\n",
        ":8 secrets[1]:",
        "looks like a key",
    ),
    (
        "model-path-missing",
        BASE.replace("embedded: smollm2", "path: no-such-model"),
        ":3 model.path:",
        "no such folder: ",
    ),
    (
        "model-path-is-a-file",
        BASE.replace("embedded: smollm2", "path: profile.yaml"),
        ":3 model.path:",
        "not a folder: ",
    ),
    (
        "model-path-newline",
        BASE.replace("embedded: smollm2", 'path: "/models/a\\nb"'),
        ":3 model.path:",
        "no such folder: /models/a\\nb",
    ),
    (
        "tokenizer-missing",
        BASE.replace("embedded: smollm2", "embedded: smollm2\n  tokenizer: tok"),
        ":4 model.tokenizer:",
        "no such folder: ",
    ),
    (
        "math-set-missing",
        BASE.replace("{max_drop: 0.1}", "{set: data/math.jsonl}"),
        ":7 quality.math.set:",
        "no such file: ",
    ),
    (
        "math-set-is-a-folder",
        BASE.replace("{max_drop: 0.1}", "{set: .}"),
        ":7 quality.math.set:",
        "is a folder, not a file: ",
    ),
    (
        "divergence-corpus-missing",
        BASE + "  divergence: {corpus: corpus.jsonl}\n",
        ":8 quality.divergence.corpus:",
        "no such file: ",
    ),
    (
        "lm-eval-include-path-missing",
        BASE + "  lm_eval:\n    - {task: gsm8k, include_path: tasks}\n",
        ":9 quality.lm_eval[0].include_path:",
        "no such folder: ",
    ),
    (
        "trace-file-missing",
        BASE + PERF + "    - {name: b, kind: trace, path: trace.jsonl}\n",
        ":11 perf.scenarios[1].path:",
        "no such file: ",
    ),
    (
        "signing-key-file-missing",
        BASE + "signing: {key: keys/signing.pem}\n",
        ":8 signing.key:",
        "no such file: ",
    ),
    (
        "duplicate-lm-eval-task",
        BASE + "  lm_eval:\n    - {task: gsm8k}\n    - {task: gsm8k, num_fewshot: 5}\n",
        ":10 quality.lm_eval[1].task:",
        "duplicate lm-eval task 'gsm8k' (first at quality.lm_eval[0])",
    ),
    (
        "reserved-engine-arg",
        BASE + "engine:\n  args: {port: 8001}\n",
        ":9 engine.args.port:",
        "set by qgate; use engine.port instead",
    ),
    (
        "reserved-engine-arg-kebab",
        BASE.replace("{kv_cache_dtype: fp8}", "{served-model-name: x}"),
        ":5 candidate.args.served-model-name:",
        "set by qgate; use model.served_name instead",
    ),
    (
        "engine-arg-name-with-space",
        BASE.replace("{kv_cache_dtype: fp8}", "{'kv cache dtype': fp8}"),
        ":5 candidate.args.kv cache dtype:",
        "not an engine argument name",
    ),
    (
        "engine-arg-name-with-equals",
        BASE + "reference:\n  args: {'dtype=half': true}\n",
        ":9 reference.args.dtype=half:",
        "not an engine argument name",
    ),
    (
        "infinite-timeout",
        BASE + "engine: {startup_timeout_s: .inf}\n",
        ":8 engine.startup_timeout_s:",
        "must be a finite number (got inf)",
    ),
    (
        "nan-threshold",
        BASE.replace("{max_drop: 0.1}", "{max_drop: .nan}"),
        ":7 quality.math.max_drop:",
        "must be a finite number (got nan)",
    ),
    (
        "infinite-duration",
        BASE + PERF.replace("output_tokens: 4}", "output_tokens: 4, duration_s: .inf}"),
        ":10 perf.scenarios[0].duration_s:",
        "must be a finite number (got inf)",
    ),
    (
        "huge-request-count",
        BASE + PERF.replace("output_tokens: 4}", "output_tokens: 4, requests: 1000000000000}"),
        ":10 perf.scenarios[0].requests:",
        "must be at most 1,000,000 requests",
    ),
    (
        "huge-input-tokens",
        BASE + PERF.replace("input_tokens: 16", "input_tokens: 1000000000"),
        ":10 perf.scenarios[0].input_tokens:",
        "must be at most 10,000,000 tokens",
    ),
    (
        "huge-concurrency-level",
        BASE + PERF.replace("output_tokens: 4}", "output_tokens: 4, concurrency: [1, 1000000]}"),
        ":10 perf.scenarios[0].concurrency[1]:",
        "must be at most 10,000 requests in flight (got 1,000,000)",
    ),
    (
        "huge-haystack",
        BASE + "  recall: {context_tokens: [1024, 2000000000]}\n",
        ":8 quality.recall.context_tokens[1]:",
        "must be at most 10,000,000 tokens",
    ),
    (
        "huge-divergence-sequences",
        BASE + "  divergence: {sequences: 50000000}\n",
        ":8 quality.divergence.sequences:",
        "must be at most 1,000,000 sequences",
    ),
    (
        "huge-quality-concurrency",
        BASE + "  concurrency: 100000\n",
        ":8 quality.concurrency:",
        "must be at most 10,000 requests in flight",
    ),
    (
        "seed-beyond-64-bits",
        BASE + "  seed: 100000000000000000000\n",
        ":8 quality.seed:",
        "must be at most 9,223,372,036,854,775,807; engines take a 64-bit seed",
    ),
    (
        "seed-below-64-bits",
        BASE + "  seed: -100000000000000000000\n",
        ":8 quality.seed:",
        "must be at least -9,223,372,036,854,775,807; engines take a 64-bit seed",
    ),
    (
        "huge-bootstrap",
        BASE + PERF + "  bootstrap: 1000000000\n",
        ":11 perf.bootstrap:",
        "must be at most 1,000,000 resamples",
    ),
    (
        "huge-multi-turn",
        BASE + PERF + "    - {name: b, kind: multi_turn, turns: 5000000}\n",
        ":11 perf.scenarios[1].turns:",
        "must be at most 1,000,000 turns",
    ),
    (
        "week-long-timeout",
        BASE + "engine: {request_timeout_s: 100000000}\n",
        ":8 engine.request_timeout_s:",
        "must be at most 604,800 s, a week (got 100,000,000)",
    ),
    (
        "empty-served-name",
        BASE.replace("embedded: smollm2", "embedded: smollm2\n  served_name: ''"),
        ":4 model.served_name:",
        "must not be empty",
    ),
    ("empty-host", BASE + "engine: {host: ''}\n", ":8 engine.host:", "must not be empty"),
    (
        "empty-launcher",
        BASE + "engine: {launcher: []}\n",
        ":8 engine.launcher:",
        "must list the command, e.g. [vllm, serve]",
    ),
    (
        "lm-eval-empty-task",
        BASE + "  lm_eval:\n    - {task: ' '}\n",
        ":9 quality.lm_eval[0].task:",
        "must name an lm-eval task",
    ),
    (
        "lm-eval-empty-filter",
        BASE + "  lm_eval:\n    - {task: gsm8k, metric: 'exact_match,'}\n",
        ":9 quality.lm_eval[0].metric:",
        "must be a metric, or a metric and a filter",
    ),
    (
        "emulated-weights-on-endpoint",
        ENDPOINTS.replace(PASTED, "KEY").replace(
            "  endpoint: {base_url: 'http://h:8001/v1'}\n",
            "  endpoint: {base_url: 'http://h:8001/v1'}\n  emulate_weights: {format: int4}\n",
        ),
        ":8 reference.emulate_weights:",
        "only valid when engine.kind is 'vllm'",
    ),
]


def _run(*paths: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["validate", *map(str, paths)])
    # Only a clean exit is allowed: any other exception would be a traceback for the user.
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("text", "where", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_malformed_profile_names_file_line_and_key(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    code, out, err = _run(path)
    assert code == 2
    assert "Traceback" not in out + err
    assert "\x00" not in out + err
    assert not out.startswith("ok")
    lines = [line.strip() for line in err.splitlines()]
    matching = [line for line in lines if line.startswith(f"{path}{where}")]
    assert matching, f"no line starting with {path}{where!r} in:\n{err}"
    assert any(message in line for line in matching), err


def test_case_count_covers_the_brief() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("kind", ["directory", "missing", "broken-symlink", "not-utf8"])
def test_unreadable_files(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "p.yaml"
    expected = {
        "directory": "is a directory",
        "missing": "no such file",
        "broken-symlink": "broken symbolic link",
        "not-utf8": "not UTF-8 text (byte 0xff)",
    }[kind]
    if kind == "directory":
        path.mkdir()
    elif kind == "broken-symlink":
        path.symlink_to(tmp_path / "gone.yaml")
    elif kind == "not-utf8":
        path.write_bytes(BASE.encode() + b"description: caf\xff\n")
    code, _, err = _run(path)
    assert code == 2
    assert "Traceback" not in err
    assert expected in err
    if kind == "not-utf8":
        assert f"{path}:8:" in err


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(BASE + "  divergence: {max_p99_kld: 0, top_k: 500}\ncolour: red\nname: again\n")
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    details = info.value.details
    assert len(details) == 4
    assert [d.split(" ")[0].rsplit(":", 1)[1] for d in details] == ["8", "8", "9", "10"]
    assert "(4 problems)" in info.value.message


def test_mixed_files_report_each(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE + "colour: red\n")
    code, out, err = _run(PROFILES / "valid.yaml", bad)
    assert code == 2
    assert f"ok {PROFILES / 'valid.yaml'}" in out
    assert f"{bad}:8 colour:" in err


def test_valid_profiles_exit_zero() -> None:
    code, out, _ = _run(PROFILES / "valid.yaml")
    assert code == 0
    assert out.strip() == f"ok {PROFILES / 'valid.yaml'}"


def test_valid_profile_round_trips() -> None:
    profile = load_profile(PROFILES / "valid.yaml")
    again = Profile.model_validate(profile.model_dump())
    assert again == profile
    via_json = Profile.model_validate_json(profile.model_dump_json())
    assert via_json == profile


def test_relative_paths_resolve_against_the_profile_folder(tmp_path: Path) -> None:
    loaded = load_profile_file(PROFILES / "valid.yaml")
    p = loaded.profile
    assert loaded.path == (PROFILES / "valid.yaml").absolute()
    assert p.quality.math is not None and p.quality.math.set == PROFILES / "data/math.jsonl"
    assert p.quality.lm_eval[0].include_path == PROFILES / "tasks"
    assert p.signing.key == PROFILES / "keys/dev.pem"
    assert p.perf is not None
    trace = p.perf.scenarios[2]
    assert trace.kind == "trace" and trace.path == PROFILES / "traces/small.jsonl"
    other = tmp_path / "abs.yaml"
    other.write_text(BASE.replace("embedded: smollm2", "path: /models/x\n  tokenizer: tok"))
    resolved = load_profile(other, check_files=False)
    assert resolved.model.path == Path("/models/x")
    assert resolved.model.tokenizer == tmp_path / "tok"


def test_digest_is_of_the_exact_bytes(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(BASE)
    loaded = load_profile_file(path)
    assert loaded.sha256 == profile_sha256(path)
    assert loaded.raw_text == BASE
    path.write_text(BASE + "# a comment changes the digest\n")
    assert load_profile_file(path).sha256 != loaded.sha256


def test_scenario_defaults_and_kinds() -> None:
    p = load_profile(PROFILES / "valid.yaml")
    assert p.perf is not None
    assert [s.kind for s in p.perf.scenarios] == ["fixed", "multi_turn", "trace"]
    assert p.perf.scenarios[1].requests == 5


def test_merge_keys_and_anchors_are_supported(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        BASE
        + "perf:\n  scenarios:\n    - &s {name: a, input_tokens: 16, output_tokens: 4}\n"
        + "    - {<<: *s, name: b}\n"
    )
    p = load_profile(path)
    assert p.perf is not None
    assert [(s.name, getattr(s, "input_tokens", None)) for s in p.perf.scenarios] == [
        ("a", 16),
        ("b", 16),
    ]


def test_format_path() -> None:
    assert format_path(("perf", "scenarios", 0, "name")) == "perf.scenarios[0].name"
    assert format_path(()) == ""


def test_duplicate_after_a_merge_is_still_reported(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        BASE
        + "perf:\n  scenarios:\n    - &s {name: a, input_tokens: 16, output_tokens: 4}\n"
        + "    - <<: *s\n      name: b\n      name: c\n"
    )
    code, _, err = _run(path)
    assert code == 2
    assert f"{path}:13 perf.scenarios[1].name: duplicate key (first given on line 12)" in err


@pytest.mark.parametrize(
    "text",
    [
        ENDPOINTS,
        BASE + f"signing: {{key_env: {PASTED}}}\n",
        BASE + f"secrets: [{PASTED}]\n",
        ENDPOINTS.replace("{max_drop: 0.1}", "{max_drop: 7}"),
    ],
    ids=["api_key_env", "key_env", "secrets", "with-other-problems"],
)
def test_a_pasted_key_is_never_echoed(tmp_path: Path, text: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    code, out, err = _run(path)
    assert code == 2
    assert "looks like a key" in err
    assert PASTED not in out + err
    assert PASTED[:12] not in out + err


def test_endpoint_error_does_not_echo_a_key_named_as_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from qgate.errors import BadInput
    from qgate.runtime.endpoint import Endpoint

    monkeypatch.delenv(PASTED, raising=False)
    endpoint = Endpoint(role="candidate", base_url="http://h/v1", api_key_env=PASTED)
    with pytest.raises(BadInput) as info:
        endpoint.headers()
    assert PASTED not in info.value.message
    assert "looks like a key" in info.value.message


def test_alias_expansion_bomb_is_refused_not_expanded(tmp_path: Path) -> None:
    # 10**20 leaves if expanded: refused at the first value that stands for too many.
    lines = ['  a0: &a0 ["x\\0", .inf]\n']
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 21)]
    path = tmp_path / "p.yaml"
    path.write_text(BASE + "x:\n" + "".join(lines) + "description: *a20\n")
    code, _, err = _run(path)
    assert code == 2
    assert f"{path}:13: YAML aliases expand this value to more than 20,000 values" in err


def test_nesting_just_below_the_limit_is_accepted(tmp_path: Path) -> None:
    from qgate.core.yamlload import MAX_DEPTH, load_yaml

    # root mapping + `x` value + lists: exactly MAX_DEPTH levels.
    deep = "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2)
    assert load_yaml(f"x: {deep}\n").data is not None
    path = tmp_path / "p.yaml"
    path.write_text(BASE + f"description: {deep}\n")
    _, _, err = _run(path)
    assert "nested more than" not in err
    assert f"{path}:8 description: must be a valid string" in err


def test_skip_files_validates_a_profile_for_another_machine(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(BASE.replace("embedded: smollm2", "path: /models/not-here"))
    code, _, err = _run(path)
    assert code == 2
    assert f"{path}:3 model.path: no such folder: /models/not-here" in err
    result = CliRunner().invoke(main, ["validate", "--skip-files", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == f"ok {path}"  # then the notes on what it relies on


def test_every_new_problem_is_listed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        BASE.replace("embedded: smollm2", "path: gone")
        + "engine:\n  env: {'A=B': x}\n  args: {port: 1}\n  startup_timeout_s: 2e6\n"
        + "  request_timeout_s: 1e9\n"
    )
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    where = [d.split(":", 1)[1].split(":")[0] for d in info.value.details]
    assert where == [
        "3 model.path",
        "9 engine.env.A=B",
        "10 engine.args.port",
        "11 engine.startup_timeout_s",
        "12 engine.request_timeout_s",
    ]


DEEP_LINE = b"[" * 100_000 + b"]" * 100_000 + b"\n"
GOOD_TRACE = b'{"timestamp": 0, "input_tokens": 8, "output_tokens": 2}\n'
GOOD_MATH = b'{"id": "a", "question": "1+1?", "answer": 2}\n'
GOOD_CORPUS = b'{"id": "a", "prompt": "Once"}\n'
TRACE_PROFILE = BASE + PERF + "    - {name: b, kind: trace, path: data.jsonl}\n"
MATH_PROFILE = BASE.replace("{max_drop: 0.1}", "{set: data.jsonl}")
CORPUS_PROFILE = BASE + "  divergence: {corpus: data.jsonl, sequences: 2}\n"

# (id, profile, data file bytes, expected "LINE KEY.PATH: " fragment, message after the data path)
DATA_CASES: list[tuple[str, str, bytes, str, str]] = [
    (
        "trace-deep-json",
        TRACE_PROFILE,
        GOOD_TRACE + DEEP_LINE,
        ":11 perf.scenarios[1].path:",
        ":2: JSON nested too deeply",
    ),
    (
        "trace-not-json",
        TRACE_PROFILE,
        b"{oops\n",
        ":11 perf.scenarios[1].path:",
        ":1: not JSON (Expecting property name enclosed in double quotes)",
    ),
    (
        "trace-missing-field",
        TRACE_PROFILE,
        b'{"timestamp": 0, "input_tokens": 8}\n',
        ":11 perf.scenarios[1].path:",
        ":1: not a trace line: missing output_tokens",
    ),
    (
        "trace-zero-tokens",
        TRACE_PROFILE,
        GOOD_TRACE.replace(b"2}", b"0}"),
        ":11 perf.scenarios[1].path:",
        ":1: not a trace line: output_tokens must be at least 1",
    ),
    (
        "trace-bad-number",
        TRACE_PROFILE,
        GOOD_TRACE.replace(b"0,", b'"soon",'),
        ":11 perf.scenarios[1].path:",
        ":1: not a trace line: timestamp must be a number",
    ),
    (
        "trace-not-utf8",
        TRACE_PROFILE,
        GOOD_TRACE + b"\xff\n",
        ":11 perf.scenarios[1].path:",
        ":2: not UTF-8 text (byte 0xff)",
    ),
    ("trace-empty", TRACE_PROFILE, b"\n", ":11 perf.scenarios[1].path:", ": no trace lines"),
    (
        "math-set-deep-json",
        MATH_PROFILE,
        DEEP_LINE,
        ":7 quality.math.set:",
        ":1: JSON nested too deeply",
    ),
    (
        "math-set-not-an-object",
        MATH_PROFILE,
        GOOD_MATH + b"[1, 2]\n",
        ":7 quality.math.set:",
        ":2: not a math item (a JSON object)",
    ),
    (
        "math-set-bad-answer",
        MATH_PROFILE,
        GOOD_MATH.replace(b"2}", b'"two"}'),
        ":7 quality.math.set:",
        ":1: not a math item: answer must be a number",
    ),
    (
        "corpus-too-short",
        CORPUS_PROFILE,
        GOOD_CORPUS,
        ":8 quality.divergence.corpus:",
        ": only 1 corpus prompt(s); 2 needed",
    ),
    (
        "corpus-deep-json",
        CORPUS_PROFILE,
        GOOD_CORPUS + DEEP_LINE,
        ":8 quality.divergence.corpus:",
        ":2: JSON nested too deeply",
    ),
    (
        "corpus-prompt-not-text",
        CORPUS_PROFILE,
        GOOD_CORPUS + b'{"id": "b", "prompt": 7}\n',
        ":8 quality.divergence.corpus:",
        ":2: not a corpus prompt: prompt must be text",
    ),
]


def _stage_loader(text: str, data: Path) -> None:
    """Read the data file the way its stage does."""
    if text is TRACE_PROFILE:
        from qgate.perf.workloads import load_trace

        load_trace(data)
    elif text is MATH_PROFILE:
        from qgate.quality.math_set import load_math_set

        load_math_set(data)
    else:
        from qgate.quality.divergence_suite import load_corpus

        load_corpus(data, 2)


@pytest.mark.parametrize(
    ("text", "data", "where", "message"),
    [c[1:] for c in DATA_CASES],
    ids=[c[0] for c in DATA_CASES],
)
def test_data_files_are_read_at_validate_time(
    tmp_path: Path, text: str, data: bytes, where: str, message: str
) -> None:
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    (tmp_path / "data.jsonl").write_bytes(data)
    code, out, err = _run(path)
    assert code == 2
    assert "Traceback" not in out + err
    expected = f"{path}{where} {tmp_path / 'data.jsonl'}{message}"
    assert expected in err.splitlines()[1].strip(), err
    # The stage's own loader agrees, with an error for people rather than a crash.
    with pytest.raises(BadInput):
        _stage_loader(text, tmp_path / "data.jsonl")


def test_good_data_files_pass(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_bytes(GOOD_TRACE)
    (tmp_path / "m.jsonl").write_bytes(GOOD_MATH)
    (tmp_path / "c.jsonl").write_bytes(GOOD_CORPUS * 2 + b"not read: past sequences\n")
    path = tmp_path / "p.yaml"
    path.write_text(
        BASE.replace("{max_drop: 0.1}", "{set: m.jsonl}")
        + "  divergence: {corpus: c.jsonl, sequences: 2}\n"
        + PERF
        + "    - {name: b, kind: trace, path: t.jsonl}\n"
    )
    code, out, err = _run(path)
    assert code == 0, err
    assert out.strip() == f"ok {path}"


@pytest.mark.parametrize("source", ["large-file", "dev-zero"])
def test_a_huge_profile_is_refused_without_reading_it_all(tmp_path: Path, source: str) -> None:
    path = tmp_path / "p.yaml"
    if source == "dev-zero":
        if not Path("/dev/zero").exists():
            pytest.skip("needs /dev/zero")
        path.symlink_to("/dev/zero")
    else:
        path.write_text(BASE + "description: " + "x" * (1 << 20) + "\n")
    code, _, err = _run(path)
    assert code == 2
    assert f"{path}: larger than 1 MiB; a profile is a few kilobytes of YAML" in err


@pytest.mark.parametrize(
    ("value", "is_key"),
    [
        ("OPENAI_API_KEY", False),
        ("AZURE_OPENAI_API_KEY_FOR_THE_PRODUCTION_DEPLOYMENT", False),
        ("my_api_key", False),
        ("my key", False),
        (PASTED, True),
        ("hf_QxTbLmVwZrKcNfYhJdAbCdEfGh12", True),
        ("AKIAIOSFODNN7EXAMPLE", True),
        ("3f2a9c1b7e6d5a4f3e2d1c0b9a8f7e6d", True),
        ("eyJhbGciOiJIUzI1NiJ9eyJzdWIiOiIxMjM0In0", True),
        ("ZGVhZGJlZWY6c2VjcmV0cGFzc3dvcmQ=", True),
    ],
)
def test_looks_like_key(value: str, is_key: bool) -> None:
    from qgate.core.env_names import key_env_problem, looks_like_key

    assert looks_like_key(value) is is_key
    problem = key_env_problem(value)
    assert (problem is not None and "looks like a key" in problem) is is_key
