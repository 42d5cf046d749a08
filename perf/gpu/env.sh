# Sourced THERE (the device machine) by every script here: where the payload was installed and the
# environment every vLLM start needs on the lent hosts.
export PYTHONPATH=/tmp/site:/tmp/qgate-src PATH=/tmp/site/bin:$PATH QGATE_CACHE_DIR=${QGATE_CACHE_DIR:-/tmp/qcache}
# NVLink multicast must stay off on these shared hosts (/work/.library/device/KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# VLLM_USE_FLASHINFER_SAMPLER=0: flashinfer is not carried; without it vLLM 0.26 imports it at model load
# (v1/worker/gpu/sample/sampler.py:52 -> ModuleNotFoundError, seen on the H200).
export HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 PYTHONUNBUFFERED=1 VLLM_USE_FLASHINFER_SAMPLER=0
export OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
