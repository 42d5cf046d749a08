"""Malformed profiles: every one exits 2 and names file, line and key path, without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from qgate.cli import main
from qgate.errors import ProfileError
from qgate.profile import Profile, load_profile, load_profile_file
from qgate.profile_loader import format_path, profile_sha256

PROFILES = Path(__file__).parent / "profiles"

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
