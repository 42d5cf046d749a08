"""`qgate init`: a short commented profile to start from, for the CPU demo engine or a GPU.

The CPU profile runs as written on any machine `make demo` runs on (the
embedded SmolLM2); the GPU one names a checkpoint folder to fill in. Both
validate as printed (tests/unit/cli/test_init.py), and the CPU one is shipped
as precision_profiles/minimal.yaml. Their exact-answer suites are sized by
`detect` for the drop they forbid, so `qgate plan` finds no gate underpowered
(tests/unit/run/test_plan_power.py).
"""

from __future__ import annotations

from pathlib import Path

import click

from qgate.core.files import atomic_write
from qgate.errors import BadInput

__all__ = ["CPU_PROFILE", "GPU_PROFILE", "init_cmd"]

CPU_PROFILE = """\
# A minimal qgate profile (`qgate init --cpu`): the embedded SmolLM2-135M on vLLM-CPU.
# The reference serves the checkpoint as it is; the candidate serves its weights rounded
# to FP8 E4M3 (emulated: vLLM-CPU has no FP8 weight kernels, the report says so).
#   check it:  qgate validate minimal.yaml       run it:  qgate run minimal.yaml
# Every key is in `qgate profile-reference`; unknown keys are errors, not ignored.
name: minimal
model: {embedded: smollm2}      # your own: {path: /models/CHECKPOINT}
target: {accelerator: cpu}
engine:
  cpu_dtype: auto               # bf16 where the CPU has bf16 instructions, else float32
  args: {max_model_len: 4096, enforce_eager: true, enable_prefix_caching: true}
candidate:                      # the configuration you want to roll out
  emulate_weights: {format: fp8_e4m3, granularity: per_channel}
quality:                        # gates: the candidate against the reference, item by item
  math:                         # sized by `detect`: enough items to catch the drop it forbids
    prompts: [short]
    max_drop: 0.2
    detect: {drop: 0.2}         # 67 items: a 20-point drop is caught 8 times in 10
  divergence: {sequences: 8, tokens: 16, max_mean_kld: 0.05, min_top1_agreement: 0.85}
perf:                           # runs only when every gate passed
  probes: {items: 11}           # graded answers while serving: with the lives', enough to
                                # show at most 15% broken (qgate plan)
  scenarios:
    - {name: chat, input_tokens: 256, output_tokens: 32, concurrency: 4, warmup: 1, requests: 8}
envelope: {max_broken: 0.15}    # every probe answer pooled: PASS when at most 15% broken is shown
"""

GPU_PROFILE = """\
# A minimal qgate profile (`qgate init --gpu`): one checkpoint on vLLM, bf16 against FP8.
# Fill in model.path (a local checkpoint folder; every file's sha256 goes in the report)
# and target, then:  qgate validate gpu.yaml  and  qgate run gpu.yaml
# Every key is in `qgate profile-reference`; unknown keys are errors, not ignored.
name: minimal-gpu
model: {path: /models/CHECKPOINT}
target: {accelerator: H200, count: 1}   # checked against the machine (MI325X, H100, ...)
engine:
  args: {dtype: bfloat16, tensor_parallel_size: 1, max_model_len: 8192}
candidate:                      # the configuration you want to roll out
  args: {quantization: fp8, kv_cache_dtype: fp8}
  # env: {VLLM_ROCM_USE_AITER: "1"}    # kernel switches go here (AMD: AITER)
quality:                        # gates: the candidate against the reference, item by item
  math: {max_drop: 0.02, detect: {drop: 0.02}}      # sized: 670 items per prompt form
  recall: {context_tokens: [1024, 8192], max_drop: 0.05, detect: {drop: 0.05}}  # 270 per length
  divergence: {sequences: 64, tokens: 128, max_mean_kld: 0.01, min_top1_agreement: 0.95}
perf:                           # runs only when every gate passed
  probes: {items: 8}            # graded answers while serving: with the lives', enough to
                                # show at most 10% broken in one block (qgate plan)
  scenarios:
    - {name: chat, input_tokens: 1024, output_tokens: 256, concurrency: [1, 16], requests: 64}
    - {name: agent, kind: multi_turn, conversations: 8, turns: 6, shared_prefix_tokens: 4096}
"""


@click.command("init")
@click.option(
    "--cpu",
    "kind",
    flag_value="cpu",
    default=True,
    help="The embedded CPU engine and model (runs as written) [default].",
)
@click.option("--gpu", "kind", flag_value="gpu", help="A GPU server with your own checkpoint.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the profile to this file (refused if it exists) instead of stdout.",
)
def init_cmd(kind: str, out: Path | None) -> None:
    """Print a short commented profile to start from."""
    text = CPU_PROFILE if kind == "cpu" else GPU_PROFILE
    if out is None:
        click.echo(text, nl=False)
        return
    if out.exists():
        raise BadInput(f"--out: {out} exists; qgate init does not overwrite files")
    atomic_write(out, text.encode())
    click.echo(f"wrote {out}; next: qgate validate {out}")
