#!/usr/bin/env bash
# Single-threaded encode throughput and load time: ours (bench_tokenizer) vs HF `tokenizers`
# on the same deterministic ~10 MB corpus. Runs alternate (ours, HF, ours, HF, ...) because
# the machine is shared and noisy; each line is a median over --repeat passes.
#   bench/tokenizer_vs_hf.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${2:-3}
DATA=${TESSERA_SHARED_DATA:-../shared/data}/tokenizers
PY=${PYTHON:-python3}
CORPUS=$(mktemp /tmp/tokenizer_corpus.XXXXXX.jsonl)
trap 'rm -f "$CORPUS"' EXIT
"$BUILD/bin/bench_tokenizer" --write-corpus "$CORPUS" --mb 10
TOKS=("$DATA/llama3_1" "$DATA/qwen3")
ARGS=()
for t in "${TOKS[@]}"; do ARGS+=(--tokenizer "$t"); done
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r"
  "$BUILD/bin/bench_tokenizer" --corpus "$CORPUS" --repeat 3 "${ARGS[@]}"
  RAYON_NUM_THREADS=1 "$PY" bench/hf_tokenizer_bench.py "$CORPUS" 3 "${TOKS[@]}"
done
echo "== load time of the largest tokenizer.json (gemma3, 33 MB)"
"$BUILD/bin/bench_tokenizer" --corpus "$CORPUS" --repeat 1 --tokenizer "$DATA/gemma3" | sed 's/  encode.*//'
RAYON_NUM_THREADS=1 "$PY" bench/hf_tokenizer_bench.py "$CORPUS" 1 "$DATA/gemma3" | sed 's/  encode.*//'
