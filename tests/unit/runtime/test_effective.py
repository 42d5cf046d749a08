from __future__ import annotations

from pathlib import Path

import pytest

from qgate.runtime.effective import (
    check_applied,
    engine_facts,
    fatal_startup_line,
    models_max_len,
    normalize_dtype,
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


def test_asked_but_unreported_settings_are_mismatches() -> None:
    problems = check_applied(
        {
            "kv_cache_dtype": "fp8",
            "dtype": "bfloat16",
            "quantization": "fp8",
            "tensor_parallel_size": 8,
        },
        {},
    )
    assert len(problems) == 4
    assert problems[0] == "kv_cache_dtype: asked for 'fp8', server reports None"


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
