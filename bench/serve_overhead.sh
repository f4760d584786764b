#!/usr/bin/env bash
# Server overhead without a model: `tessera serve --fake-engine` emits one token per running
# request per step as fast as asked (the prompt's tokens, repeated), so everything measured
# is the server: queues, detokenization, JSON, SSE and sockets.
#   1. Streamed tokens per CPU-second of the server (64 concurrent streams, long outputs).
#   2. 5,000 concurrent open streams: all complete, and the running count reaches 5,000.
# Usage: bench/serve_overhead.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/serve_common.sh
OUT=${1:-/tmp/tessera-serve-overhead}
mkdir -p "$OUT"
MODEL=${MODEL:-$(scripts/default_model_path.sh)}
start_server "$OUT/server.log" "$MODEL" --fake-engine --served-model-name fake --max-num-seqs 8192 \
  --max-model-len 100000 --max-queued-requests 20000 --http-threads "${HTTP_THREADS:-1}"
URL=http://127.0.0.1:$PORT

echo "== 1. streamed tokens per server CPU-second (64 streams x 4000 tokens)"
cpu0=$(server_cpu_seconds)
"$BIN" bench serve --base-url "$URL" --dataset random --random-input-len 16 --random-output-len 4000 \
  --num-prompts 256 --max-concurrency 64 --output-json "$OUT/throughput.json" | tee "$OUT/throughput.txt"
cpu1=$(server_cpu_seconds)
python3 - "$OUT/throughput.json" "$cpu0" "$cpu1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cpu = float(sys.argv[3]) - float(sys.argv[2])
tokens = r["total_output_tokens"]
print(f"server CPU time {cpu:.2f} s for {tokens} streamed tokens: {tokens / cpu:,.0f} tokens per CPU-second")
print(f"wall: {r['output_throughput']:,.0f} tokens/s over {r['duration']:.1f} s (client and server share the 2 cores)")
PY

stop_server
# Every step now serves all 5,000 streams; paced at one step per 100 ms (50,000 tokens/s) so
# the streams stay open together instead of the first ones finishing before the last connect.
start_server "$OUT/server2.log" "$MODEL" --fake-engine --fake-step-interval-ms 100 --served-model-name fake \
  --max-num-seqs 8192 --max-model-len 100000 --max-queued-requests 20000 --http-threads "${HTTP_THREADS:-1}"
URL=http://127.0.0.1:$PORT
echo "== 2. 5,000 concurrent open streams (5,000 requests x 300 tokens, all at once, one step per 100 ms)"
( peak=0
  while kill -0 "$SERVER_PID" 2> /dev/null; do
    n=$(metric vllm:num_requests_running); n=${n%.*}
    [ -n "$n" ] && [ "$n" -gt "$peak" ] && peak=$n && echo "$peak" > "$OUT/peak_running"
    sleep 0.5
  done ) &
SAMPLER=$!
"$BIN" bench serve --base-url "$URL" --dataset random --random-input-len 16 --random-output-len 300 \
  --num-prompts 5000 --max-concurrency 5000 --request-timeout 600 --output-json "$OUT/streams.json" | tee "$OUT/streams.txt"
sleep 1
echo "peak vllm:num_requests_running during the run: $(cat "$OUT/peak_running" 2> /dev/null || echo 0)"
echo "server RSS: $(server_rss_mib) MiB"
kill "$SAMPLER" 2> /dev/null || true
stop_server
