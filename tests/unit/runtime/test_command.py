from __future__ import annotations

import sys
from pathlib import Path

import pytest

from qgate.errors import BadInput
from qgate.profile import Profile
from qgate.runtime import command as cmd
from qgate.runtime.vllm_server import VllmServer


def test_flags_snake_to_kebab_scalars_and_order() -> None:
    flags = cmd.engine_args_to_flags(
        {"max_model_len": 4096, "kv_cache_dtype": "fp8", "gpu_memory_utilization": 0.5}
    )
    assert flags == [
        "--max-model-len",
        "4096",
        "--kv-cache-dtype",
        "fp8",
        "--gpu-memory-utilization",
        "0.5",
    ]


def test_bools_true_bare_false_no_prefix_or_omitted_for_store_true() -> None:
    flags = cmd.engine_args_to_flags(
        {"enforce_eager": True, "enable_prefix_caching": False, "disable_log_stats": False}
    )
    assert flags == ["--enforce-eager", "--no-enable-prefix-caching"]
    assert cmd.engine_args_to_flags({"disable_log_stats": True}) == ["--disable-log-stats"]


def test_none_and_empty_list_are_omitted() -> None:
    assert cmd.engine_args_to_flags({"quantization": None, "cudagraph_capture_sizes": []}) == []


def test_lists_join_after_one_flag_or_repeat_for_append_flags() -> None:
    flags = cmd.engine_args_to_flags(
        {"cudagraph_capture_sizes": [1, 2, 4], "middleware": ["a.B", "c.D"]}
    )
    assert flags == [
        "--cudagraph-capture-sizes",
        "1",
        "2",
        "4",
        "--middleware",
        "a.B",
        "--middleware",
        "c.D",
    ]


def test_dash_keys_are_accepted() -> None:
    assert cmd.engine_args_to_flags({"max-num-seqs": 8}) == ["--max-num-seqs", "8"]


@pytest.mark.parametrize("key", ["model", "port", "host", "served_model_name", "served-model-name"])
def test_reserved_args_are_bad_input(key: str) -> None:
    with pytest.raises(BadInput, match="set by qgate"):
        cmd.engine_args_to_flags({key: "x"})


def test_merge_role_overrides_shared_with_normalised_keys() -> None:
    merged = cmd.merge_args(
        {"max_model_len": 4096, "kv-cache-dtype": "auto", "enforce_eager": True},
        {"kv_cache_dtype": "fp8", "enforce_eager": None},
    )
    assert merged == {"max_model_len": 4096, "kv_cache_dtype": "fp8", "enforce_eager": None}
    assert cmd.engine_args_to_flags(merged) == [
        "--max-model-len",
        "4096",
        "--kv-cache-dtype",
        "fp8",
    ]
    assert cmd.merge_env({"A": "1", "B": "2"}, {"B": "3", "VLLM_ROCM_USE_AITER": "1"}) == {
        "A": "1",
        "B": "3",
        "VLLM_ROCM_USE_AITER": "1",
    }


def test_cpu_defaults_injected_only_when_unset_and_only_on_cpu() -> None:
    args, env = cmd.apply_platform_defaults({}, {}, "cpu", {})
    assert args == {"gpu_memory_utilization": 0.3}
    assert env == {"VLLM_CPU_KVCACHE_SPACE": "2"}
    args, env = cmd.apply_platform_defaults(
        {"gpu_memory_utilization": 0.5}, {"VLLM_CPU_KVCACHE_SPACE": "4"}, "CPU", {}
    )
    assert args == {"gpu_memory_utilization": 0.5} and env == {"VLLM_CPU_KVCACHE_SPACE": "4"}
    _, env = cmd.apply_platform_defaults({}, {}, "cpu", {"VLLM_CPU_KVCACHE_SPACE": "8"})
    assert env == {}
    assert cmd.apply_platform_defaults({}, {"X": "1"}, "MI325X", {}) == ({}, {"X": "1"})


def test_build_command_always_names_model_and_address() -> None:
    argv = cmd.build_command(
        ["py", "-m", "srv"], "/m", "smol", "127.0.0.1", 8123, {"enforce_eager": True}
    )
    assert argv == [
        "py",
        "-m",
        "srv",
        "--model",
        "/m",
        "--served-model-name",
        "smol",
        "--host",
        "127.0.0.1",
        "--port",
        "8123",
        "--enforce-eager",
    ]


def test_launcher_falls_back_to_module_when_vllm_distribution_is_missing() -> None:
    # This venv has vllm-cpu, whose console script cannot work (ENVIRONMENT.md).
    cmd.detect_launcher.cache_clear()
    launcher = cmd.detect_launcher(sys.executable)
    assert launcher == (sys.executable, "-m", cmd.API_SERVER_MODULE)


def test_server_environment_overlays_and_unbuffers() -> None:
    env = cmd.server_environment({"VLLM_X": "1"}, base={"PATH": "/bin", "VLLM_X": "0"})
    assert env == {"PATH": "/bin", "VLLM_X": "1", "PYTHONUNBUFFERED": "1"}


def _profile(**engine: object) -> Profile:
    return Profile.model_validate(
        {
            "name": "t",
            "model": {"path": "/models/x"},
            "engine": {
                "args": {"max_model_len": 2048, "kv_cache_dtype": "auto"},
                "env": {"SHARED": "1", "ROLE": "shared"},
                **engine,
            },
            "reference": {"args": {"dtype": "bfloat16"}},
            "candidate": {
                "args": {"kv_cache_dtype": "fp8"},
                "env": {"ROLE": "cand"},
                "emulate_weights": {"format": "fp8_e4m3"},
            },
            "quality": {"math": {}},
            "secrets": ["MY_PRIVATE"],
        }
    )


def test_from_profile_merges_shared_and_role(tmp_path: Path) -> None:
    profile = _profile(port=9001, launcher=["vllm", "serve"])
    cand = VllmServer.from_profile(profile, "candidate", Path("/models/x"), tmp_path)
    assert cand.served_model == "x"
    assert cand.args == {
        "max_model_len": 2048,
        "kv_cache_dtype": "fp8",
        "gpu_memory_utilization": 0.3,
    }
    assert cand.env_overlay["ROLE"] == "cand" and cand.env_overlay["SHARED"] == "1"
    assert cand.fixed_port == 9001 and cand.launcher == ("vllm", "serve")
    assert cand.log_path == tmp_path / "candidate.log"
    assert cand.emulated and "emulated" in cand.emulated[0]
    ref = VllmServer.from_profile(profile, "reference", Path("/models/x"), tmp_path)
    assert ref.args["kv_cache_dtype"] == "auto" and ref.args["dtype"] == "bfloat16"
    assert ref.env_overlay["ROLE"] == "shared" and ref.emulated == []


def test_no_cpu_defaults_for_gpu_targets(tmp_path: Path) -> None:
    profile = _profile()
    profile.target.accelerator = "H200"
    ref = VllmServer.from_profile(profile, "reference", Path("/models/x"), tmp_path)
    assert "gpu_memory_utilization" not in ref.args
    assert "VLLM_CPU_KVCACHE_SPACE" not in ref.env_overlay


def test_vllm_serve_takes_the_model_positionally_and_the_module_form_keeps_model_flag() -> None:
    serve = cmd.build_command(["/x/vllm", "serve"], "/m", "smol", "127.0.0.1", 8123, {})
    assert serve[:3] == ["/x/vllm", "serve", "/m"] and "--model" not in serve
    module = cmd.build_command(
        [sys.executable, "-m", cmd.API_SERVER_MODULE], "/m", "smol", "127.0.0.1", 8123, {}
    )
    assert module[3:5] == ["--model", "/m"]
    assert cmd.model_is_positional(("vllm", "serve"))
    assert not cmd.model_is_positional((sys.executable, "-m", cmd.API_SERVER_MODULE))


def test_both_command_lines_parse_to_the_model_with_this_vllm() -> None:
    # vllm-cpu 0.32 here; the H200 run used `vllm serve MODEL` with vLLM 0.26 (examples/h200).
    # The module form parses a positional model too, but ignores it (vLLM's default model would
    # be served): that is why it keeps --model.
    pytest.importorskip("vllm.entrypoints.cli.serve")
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    module = cmd.build_command(
        [sys.executable, "-m", cmd.API_SERVER_MODULE],
        "/m",
        "smol",
        "127.0.0.1",
        8123,
        {"enforce_eager": True},
    )
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(module[3:])
    assert args.model == "/m"
    ignored = make_arg_parser(FlexibleArgumentParser()).parse_args(["/m"])
    assert ignored.model_tag == "/m" and ignored.model != "/m"

    top = FlexibleArgumentParser()
    ServeSubcommand().subparser_init(top.add_subparsers(dest="subparser"))
    serve = cmd.build_command(["vllm", "serve"], "/m", "smol", "127.0.0.1", 8123, {})
    args = top.parse_args(serve[1:])
    assert args.model_tag == "/m"  # ServeSubcommand.cmd copies it into args.model
