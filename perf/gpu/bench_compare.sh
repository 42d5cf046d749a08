#!/bin/bash
# Run THERE after remote_setup.sh: the Llama-3-8B-shaped config-only model (vLLM dummy weights), one
# server per config (bf16 | fp8 = FP8 weights + FP8 KV), default compilation (torch.compile + CUDA
# graphs); on the same server, in turn: `vllm bench serve` (random 1024/128) and `qgate perf` (fixed
# 1024/128) at c=1 (24 requests) and c=16 (128 requests), 2 warm-ups each, each pair twice at c=1;
# then ttft_probe.py (which request field moves TTFT). Results: /tmp/bench -> $OUT/bench-<cfg>.tgz,
# summary lines on stdout. Usage: perf/gpu/bench_compare.sh [bf16] [fp8]; BUDGET (s) bounds the call;
# MODE=vb runs vllm bench alone (once per level), M=<folder> serves another config-only model.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); source "$HERE/env.sh"
M=${M:-/tmp/llama8b-cfg}; MODE=${MODE:-both}; R=/tmp/bench; mkdir -p $R; BUDGET=${BUDGET:-560}; S0=$SECONDS; PORT=8012
[ -f $M/config.json ] || python3 "$HERE/make_config_model.py" $M /tmp/tok
cfgs=("$@"); [ ${#cfgs[@]} = 0 ] && cfgs=(bf16 fp8)
vb() {  # vb CFG C N TAG
  vllm bench serve --backend openai --base-url http://127.0.0.1:$PORT --model llama8b --tokenizer $M \
    --dataset-name random --random-input-len 1024 --random-output-len 128 --ignore-eos --num-prompts $3 \
    --max-concurrency $2 --num-warmups 2 --percentile-metrics ttft,tpot,itl,e2el --disable-tqdm \
    --save-result --result-dir $R --result-filename vb_$1_c$2_$4.json > $R/vb_$1_c$2_$4.log 2>&1
  python3 -c "import json,sys; d=json.load(open('$R/vb_$1_c$2_$4.json')); print('  vllm bench $1 c=$2 $4: out tok/s %.1f  TTFT p50 %.2f  TPOT p50 %.3f  ITL p50 %.3f  E2E p50 %.1f  n=%d' % (d['output_throughput'], d['median_ttft_ms'], d['median_tpot_ms'], d['median_itl_ms'], d['median_e2el_ms'], d['completed']))" 2>&1 | tail -1
}
qp() {  # qp CFG C N TAG
  qgate perf --base-url http://127.0.0.1:$PORT/v1 --model llama8b --input-tokens 1024 --output-tokens 128 \
    --concurrency $2 --requests $3 --warmup 2 --gpus 1 --format json --out $R/qp_$1_c$2_$4.json --no-progress > $R/qp_$1_c$2_$4.log 2>&1
  python3 - $R/qp_$1_c$2_$4.json "$1 c=$2 $4" <<'PY' 2>&1 | tail -1
import json, sys
d = json.load(open(sys.argv[1]))
m = d["metrics"][0] if isinstance(d.get("metrics"), list) else d.get("metrics", d)
g = lambda k: (m.get(k) or {}).get("p50") if isinstance(m.get(k), dict) else m.get(k)
print(f"  qgate perf {sys.argv[2]}: out tok/s {m.get('output_throughput', float('nan')):.1f}  TTFT p50 {g('ttft_ms'):.2f}  "
      f"TPOT p50 {g('tpot_ms'):.3f}  ITL p50 {g('itl_ms'):.3f}  E2E p50 {g('e2e_ms'):.1f}")
PY
}
for cfg in "${cfgs[@]}"; do
  left=$((BUDGET - (SECONDS - S0))); [ $left -lt 200 ] && { echo "skip $cfg: only $left s left"; continue; }
  extra=(); [ $cfg = fp8 ] && extra=(--quantization fp8 --kv-cache-dtype fp8)
  t0=$SECONDS
  vllm serve $M --served-model-name llama8b --host 127.0.0.1 --port $PORT --max-model-len 4096 \
     --gpu-memory-utilization 0.85 --load-format dummy "${extra[@]}" > $R/vllm_$cfg.log 2>&1 &
  pid=$! ok=0
  for i in $(seq 1 $(( (left - 120) * 2 ))); do
    curl -sf http://127.0.0.1:$PORT/health >/dev/null 2>&1 && { ok=1; break; }; kill -0 $pid 2>/dev/null || break; sleep 0.5
  done
  echo "=== 8B dummy $cfg: healthy=$ok after $((SECONDS - t0)) s"
  grep -E "Initializing a V1 LLM engine|attention backend|FlashAttention version|Selected|scaling factor|q_scale|Model loading took|torch.compile|Graph capturing|KV cache size|Traceback|Error" $R/vllm_$cfg.log | cut -c1-260 | head -16
  if [ $ok = 1 ]; then
    if [ $MODE = vb ]; then vb $cfg 1 24 r1; vb $cfg 16 128 r1; else
      vb $cfg 1 24 r1; qp $cfg 1 24 r1; vb $cfg 1 24 r2; qp $cfg 1 24 r2
      vb $cfg 16 128 r1; qp $cfg 16 128 r1
    fi
    echo "  -- measured at $((SECONDS - S0)) s"
    [ $MODE != vb ] && [ $((BUDGET - (SECONDS - S0))) -gt 60 ] && python3 "$HERE/ttft_probe.py" http://127.0.0.1:$PORT/v1 llama8b 1024 128 6 > $R/probe_$cfg.json 2>$R/probe_$cfg.err \
      && python3 -c "import json; d=json.load(open('$R/probe_$cfg.json')); [print('  probe $cfg %-12s TTFT p50 %7.2f  TPOT p50 %.3f' % (k, v['ttft_ms_p50'], v['tpot_ms_p50'])) for k, v in d['variants'].items()]"
    tail -2 $R/probe_$cfg.err 2>/dev/null
  else tail -30 $R/vllm_$cfg.log | cut -c1-300; fi
  kill $pid 2>/dev/null; wait $pid 2>/dev/null
  for i in $(seq 1 60); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . || break; sleep 0.5; done
  tar -czf $OUT/bench-$cfg.tgz -C /tmp bench; echo "  -- $cfg done at $((SECONDS - S0)) s"
done
