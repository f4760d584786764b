#!/usr/bin/env bash
# Alternated CPU runs of two tessera binaries on one model (default: SmolLM2-135M Q4_1),
# `bench latency` at llama.cpp's context (bench/run_vs_llamacpp.sh's command): one line per
# run, then the medians of prompt tok/s, decode tok/s and peak RSS (MiB) per binary.
# Usage: bench/cpu_ab.sh BINARY_A BINARY_B [RUNS=8] [MODEL]
set -euo pipefail
A=${1:?usage: bench/cpu_ab.sh BINARY_A BINARY_B [RUNS] [MODEL]}
B=${2:?usage: bench/cpu_ab.sh BINARY_A BINARY_B [RUNS] [MODEL]}
RUNS=${3:-8}
MODEL=${4:-$(bash "$(dirname "$0")/../scripts/default_model_path.sh")}
LOG=$(mktemp)
for _ in $(seq "$RUNS"); do
  for bin in "$A" "$B"; do
    "$bin" bench latency --model "$MODEL" --device cpu --threads 2 --num-iters 1 --prompt-tokens 512 \
      --gen-tokens 128 --max-model-len 1024 --max-num-seqs 1 --json 2> /dev/null | tail -1 |
      python3 -c "import json, sys; d = json.load(sys.stdin); print(sys.argv[1], d['prompt_tok_s'], d['decode_tok_s'], d['peak_rss_mib'])" "$bin" |
      tee -a "$LOG"
  done
done
python3 - "$LOG" "$A" "$B" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for b in sys.argv[2:]:
    r = [[float(v) for v in x[1:]] for x in rows if x[0] == b]
    print(f"{b}: medians of {len(r)}: prompt {statistics.median(x[0] for x in r):.1f} tok/s, "
          f"decode {statistics.median(x[1] for x in r):.1f} tok/s, peak RSS {statistics.median(x[2] for x in r):.1f} MiB")
PY
rm -f "$LOG"
