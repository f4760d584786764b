#!/usr/bin/env bash
# vLLM's serving figures of SmolLM2 on this machine at several client concurrencies:
# random prompts of IN tokens, OUT generated tokens (ignore_eos), PROMPTS_PER_CLIENT
# requests per concurrent client. Usage: bench/serve_sweep.sh [OUTDIR] [CONCURRENCIES...]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/serve_common.sh
OUT=${1:-/tmp/tessera-serve-sweep}
shift || true
LEVELS=("$@")
[ ${#LEVELS[@]} -eq 0 ] && LEVELS=(1 16 64)
IN=${IN:-64}
OUTLEN=${OUTLEN:-64}
PER_CLIENT=${PROMPTS_PER_CLIENT:-2}
mkdir -p "$OUT"
MODEL=${MODEL:-$(scripts/default_model_path.sh)}
start_server "$OUT/server.log" "$MODEL" --served-model-name smollm2 --max-model-len 2048
for c in "${LEVELS[@]}"; do
  n=$((c * PER_CLIENT))
  [ "$n" -lt 8 ] && n=8
  echo "== concurrency $c: $n requests, $IN -> $OUTLEN tokens"
  "$BIN" bench serve --base-url "http://127.0.0.1:$PORT" --dataset random --random-input-len "$IN" \
    --random-output-len "$OUTLEN" --num-prompts "$n" --max-concurrency "$c" --seed "$c" \
    --output-json "$OUT/c$c.json" > "$OUT/c$c.txt" 2>&1
  python3 - "$OUT/c$c.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"  {r['completed']} ok, {r['failed']} failed; {r['request_throughput']:.2f} req/s, "
      f"{r['output_throughput']:.1f} output tok/s; TTFT mean/median/p99 {r['mean_ttft_ms']:.0f}/"
      f"{r['median_ttft_ms']:.0f}/{r['p99_ttft_ms']:.0f} ms; TPOT {r['mean_tpot_ms']:.1f}/{r['median_tpot_ms']:.1f}/"
      f"{r['p99_tpot_ms']:.1f} ms; ITL {r['mean_itl_ms']:.1f}/{r['median_itl_ms']:.1f}/{r['p99_itl_ms']:.1f} ms")
PY
done
stop_server
