#!/usr/bin/env bash
# Soak: SmolLM2 under CONCURRENCY streaming clients that disconnect at random, for DURATION
# seconds. Reports the serving figures, every HTTP status seen (5xx must be 0), the server's
# RSS every 10 s (flat after warm-up), and, once idle, the KV blocks in use (must be 0).
# Usage: bench/serve_soak.sh [DURATION=300] [CONCURRENCY=256] [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/serve_common.sh
DURATION=${1:-300}
CONCURRENCY=${2:-256}
OUT=${3:-/tmp/tessera-serve-soak}
mkdir -p "$OUT"
MODEL=${MODEL:-$(scripts/default_model_path.sh)}
start_server "$OUT/server.log" "$MODEL" --served-model-name smollm2 --max-model-len 2048 \
  --kv-cache-memory $((1 << 30)) --max-num-seqs 256
URL=http://127.0.0.1:$PORT
( while kill -0 "$SERVER_PID" 2> /dev/null; do
    echo "$(date +%s) $(server_rss_mib)" >> "$OUT/rss.txt"
    sleep 10
  done ) &
SAMPLER=$!
"$BIN" bench serve --base-url "$URL" --dataset random --random-input-len 64 --random-output-len 48 \
  --random-range-ratio 0.5 --num-prompts 2000 --max-concurrency "$CONCURRENCY" --duration "$DURATION" \
  --disconnect-prob 0.2 --output-json "$OUT/soak.json" | tee "$OUT/soak.txt"
sleep 2
echo "== after the soak, idle"
for m in num_requests_running num_requests_waiting kv_cache_usage_perc num_preemptions_total; do
  echo "vllm:$m $(metric vllm:$m)"
done
kill "$SAMPLER" 2> /dev/null || true
echo "== RSS (MiB) every 10 s"
awk 'NR == 1 { t0 = $1 } { printf "%4d s %s\n", $1 - t0, $2 }' "$OUT/rss.txt"
stop_server
