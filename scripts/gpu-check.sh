#!/usr/bin/env bash
# On the GPU machine: build everything (the CUDA sources too) with the development files
# carried in .gpu-deps (made here by scripts/gpu_deps.sh), then run the chosen stages; one
# log per step in LOGDIR and a one-line summary per step on stdout.
# Usage (through the device tool): scripts/gpu-check.sh LOGDIR [STAGE...]
# Stages (default: ops ctest):
#   cuda     cuda_tests natively (no sanitizer), timing tests aside
#   ops      cuda_devices, cuda_tests under compute-sanitizer memcheck (ops and the tiny
#            models vs transformers' goldens), bench_gemv, bench_decode_layer, bench_cuda_ops
#   ctest    the whole ctest suite
#   model8b  a random Llama-3.1-8B-shape checkpoint (tools/reference/make_random_llama8b.py,
#            kept in $MODEL8B between calls; the Llama 3.1 tokenizer from .gpu-data when
#            carried), transformers' greedy golden for it on the GPU (8 prompts x 64 tokens,
#            the bf16 weights run in fp32; transformers in bf16 against it as calibration, in
#            the golden's summary.calibration), and cuda_tests' whole-model check against it
#   bench8b  the issue's speed figures on that checkpoint: batch-1 decode, vLLM's latency
#            test, offline throughput (128 x 512 -> 256 and 1000 x 1000 -> 1000)
#   structured8b  (after weights8b) batch 64, 512 -> 256, with and without a JSON Schema per
#            request (bench/data/structured_long_schema.json), engine and CUDA profiles
#   serve8b  cold start of `tessera serve` (process start to /health 200) and `tessera bench
#            serve` 1000 -> 1000 tokens at concurrency 64
set -uo pipefail
cd "$(dirname "$0")/.."
OUTDIR=${1:?usage: scripts/gpu-check.sh LOGDIR [STAGE...]}
shift
LOG=$OUTDIR/logs  # packed into $OUTDIR/logs.tar.gz at exit (the device tool returns few files)
trap 'tar czf "$OUTDIR/logs.tar.gz" -C "$OUTDIR" logs' EXIT
STAGES=${*:-ops ctest}
mkdir -p "$LOG"
DEPS=$PWD/.gpu-deps/prefix/usr/lib/x86_64-linux-gnu
[ -d "$DEPS" ] || { echo "missing .gpu-deps: run scripts/gpu_deps.sh here and carry .gpu-deps"; exit 2; }
export PKG_CONFIG_PATH=$DEPS/pkgconfig
export LD_LIBRARY_PATH=$DEPS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
BUILD=${BUILD:-build-gpu}
BIN=$PWD/$BUILD/bin
MODEL8B=${MODEL8B:-/tmp/llama8b-random}
export TESSERA_TEST_DATA=$PWD/tests/data
# SmolLM2-135M's GGUF (98 MB) exceeds one call's carry: earlier calls of the same warm machine
# leave it at $SMOLLM2 (see scripts/gpu-smollm2-part.sh); its golden runs when it is there.
SMOLLM2=${SMOLLM2:-/tmp/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf}
[ -f "$SMOLLM2" ] && export TESSERA_DEFAULT_MODEL=$SMOLLM2

step() {  # step NAME COMMAND...: runs it with its output in LOG/NAME.log
  local name=$1 t0=$SECONDS rc=0
  shift
  "$@" > "$LOG/$name.log" 2>&1 || rc=$?
  echo "$name: exit $rc, $((SECONDS - t0)) s"
  return $rc
}
has() { [[ " $STAGES " == *" $1 "* ]]; }

nvidia-smi > "$LOG/nvidia-smi.txt" 2>&1
step configure cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  || { tail -30 "$LOG/configure.log"; exit 1; }
step build ninja -C "$BUILD" -j "$(nproc)" -k 0 || { grep -E "error|FAILED" "$LOG/build.log" | head -30; exit 1; }

if has ops; then
  step devices "$BIN/cuda_devices" && cat "$LOG/devices.log"
  SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  step memcheck "$SANITIZER" --tool memcheck --error-exitcode 1 "$BIN/cuda_tests" \
    --gtest_filter='-*CudaHfReference*:CudaGemv*:*Timing*'
  grep -E "ERROR SUMMARY|PASSED|FAILED" "$LOG/memcheck.log" | tail -12
  # The GEMV sweep is long under memcheck: its small shapes (every variant) there, all of it natively.
  step memcheck_gemv "$SANITIZER" --tool memcheck --error-exitcode 1 "$BIN/cuda_tests" --gtest_filter='CudaGemv.MatchesCpuOnSmallShapes:CudaGemv.GraphCapture*:CudaGemv.EveryVariantAndPdl'
  grep -E "ERROR SUMMARY|PASSED|FAILED" "$LOG/memcheck_gemv.log" | tail -4
  step gemv_tests "$BIN/cuda_tests" --gtest_filter='CudaGemv*:*Timing*'
  grep -E "PASSED|FAILED|Failure|us per call|µs" "$LOG/gemv_tests.log" | head -20
  step bench_gemv "$BIN/bench_gemv" && grep -v "^$" "$LOG/bench_gemv.log" | tail -40
  step bench_decode_layer "$BIN/bench_decode_layer" && cat "$LOG/bench_decode_layer.log"
  step models_vs_hf "$BIN/cuda_tests" --gtest_filter='*CudaHfReference*'
  grep -E "on CUDA|PASSED|FAILED" "$LOG/models_vs_hf.log" | tail -25
  step bench_cuda_ops "$BIN/bench_cuda_ops" && cat "$LOG/bench_cuda_ops.log"
fi

if has ctest; then
  # Two OpenMP threads per test: 8 programs at once on 16 cores.
  step ctest bash -c "cd '$BUILD' && OMP_NUM_THREADS=2 ctest --output-on-failure -j 8 --timeout 900" || tail -40 "$LOG/ctest.log"
  grep -E "tests passed|Passed|Failed|Skipped|\*\*\*" "$LOG/ctest.log" | tail -20
fi

if has cuda; then  # every CUDA test natively (no sanitizer): ops, GEMVs, tiny models
  step cuda_tests "$BIN/cuda_tests" --gtest_filter='-*Timing*'
  grep -E "on CUDA|PASSED|FAILED" "$LOG/cuda_tests.log" | tail -20
fi

if has quick; then  # the whole-model checks on the tiny models (and SmolLM2) and the GEMM test, no sanitizer
  step quick_tests "$BIN/cuda_tests" --gtest_filter='*CudaHfReference*tiny*:*CudaHfReference*smollm2_135m*:CudaOps.Gemm*'
  grep -E "on CUDA|PASSED|FAILED" "$LOG/quick_tests.log" | tail -20
fi

if has weights8b; then  # only the random checkpoint (for bench8b / serve8b)
  [ -f "$MODEL8B/model.safetensors.index.json" ] \
    || step make_model8b python3 tools/reference/make_random_llama8b.py --out "$MODEL8B" || tail -20 "$LOG/make_model8b.log"
  [ -d .gpu-data/llama3_1 ] && cp .gpu-data/llama3_1/tokenizer*.json "$MODEL8B/"
  if [ -f .gpu-data/l3gz/tokenizer.json.gz ]; then  # the compressed copy, small enough to carry with .gpu-deps
    gunzip -c .gpu-data/l3gz/tokenizer.json.gz > "$MODEL8B/tokenizer.json"
    cp .gpu-data/l3gz/tokenizer_config.json "$MODEL8B/"
  fi
fi

if has structured8b; then  # batch 64 under a JSON Schema per request vs free, alternated twice
  for round in 1 2; do
    for mode in free schema; do
      extra=()
      [ $mode = schema ] && extra=(--structured-json bench/data/structured_long_schema.json)
      step "structured_${mode}_$round" "$BIN/tessera" bench throughput --model "$MODEL8B" --max-model-len 4096 \
        --num-prompts 64 --input-len 512 --output-len 256 --profile engine,cuda "${extra[@]}"
      grep -E "Throughput|profile|output tokens" "$LOG/structured_${mode}_$round.log" | cut -c1-400
    done
  done
fi

if has model8b; then
  [ -f "$MODEL8B/config.json" ] && [ -f "$MODEL8B/model.safetensors.index.json" ] \
    || step make_model8b python3 tools/reference/make_random_llama8b.py --out "$MODEL8B" || tail -20 "$LOG/make_model8b.log"
  [ -d .gpu-data/llama3_1 ] && cp .gpu-data/llama3_1/tokenizer*.json "$MODEL8B/"
  GOLDEN=$MODEL8B/hf-llama8b-random.json
  [ -f "$GOLDEN" ] || step hf_golden8b python3 tools/reference/hf_greedy_reference.py --model "$MODEL8B" --random-prompts \
    --random-vocab 128256 --max-tokens 64 --top-k 10 --device cuda --dtype float32 --calibrate-dtype bfloat16 \
    --threads 16 --out "$GOLDEN" \
    || tail -20 "$LOG/hf_golden8b.log"
  cp "$GOLDEN" "$OUTDIR/"
  # transformers itself in float16 (the reference of --dtype half), with its distance from float32.
  GOLDEN16=$MODEL8B/hf-llama8b-random-fp16.json
  [ -f "$GOLDEN16" ] || step hf_golden8b_fp16 python3 tools/reference/hf_greedy_reference.py --model "$MODEL8B" \
    --random-prompts --random-vocab 128256 --max-tokens 64 --top-k 10 --device cuda --dtype float16 \
    --calibrate-dtype float32 --threads 16 --out "$GOLDEN16" || tail -20 "$LOG/hf_golden8b_fp16.log"
  [ -f "$GOLDEN16" ] && cp "$GOLDEN16" "$OUTDIR/"
  step model8b_vs_hf env TESSERA_CUDA_GOLDENS="$GOLDEN:$GOLDEN16" "$BIN/cuda_tests" --gtest_filter='*CudaHfReference*llama8b*'
  grep -E "on CUDA|OK \]|FAILED|HF top-5|error" "$LOG/model8b_vs_hf.log" | cut -c1-700 | head -20
fi

if has bench8b; then
  T="$BIN/tessera"
  [ "${SKIP_OPS:-0}" = 1 ] || step ops_b1 "$T" bench latency --profile ops --model "$MODEL8B" --max-model-len 4096 \
    --batch-size 1 --input-len 128 --output-len 64 --num-iters 1 && grep "CUDA ops" "$LOG/ops_b1.log"
  [ "${SKIP_OPS:-0}" = 1 ] || step ops_b128 "$T" bench latency --profile ops --model "$MODEL8B" --max-model-len 4096 \
    --batch-size 128 --input-len 512 --output-len 32 --num-iters 1 --max-num-batched-tokens 8192 \
    && grep "CUDA ops" "$LOG/ops_b128.log"
  true
  PROFILE="--profile ${PROFILE:-cuda}"  # PROFILE=engine,cuda adds the host's phases
  step decode_b1 "$T" bench latency $PROFILE --model "$MODEL8B" --max-model-len 4096 --batch-size 1 --input-len 128 \
    --output-len 256 --num-iters 3 && tail -6 "$LOG/decode_b1.log"
  step latency_b8 "$T" bench latency $PROFILE --model "$MODEL8B" --max-model-len 4096 --batch-size 8 --input-len 32 \
    --output-len 128 --num-iters 10 --num-iters-warmup 3 && tail -6 "$LOG/latency_b8.log"
  step throughput_512 "$T" bench throughput $PROFILE --model "$MODEL8B" --max-model-len 4096 --num-prompts 128 \
    --input-len 512 --output-len 256 --max-num-batched-tokens 8192
  grep -E "Throughput|preemptions|profile" "$LOG/throughput_512.log"
  [ "${SKIP_1000:-0}" = 1 ] || step throughput_1000 timeout 240 "$T" bench throughput $PROFILE --model "$MODEL8B" --max-model-len 4096 --num-prompts 1000 \
    --input-len 1000 --output-len 1000 --max-num-seqs 512 --max-num-batched-tokens 16384 --gpu-memory-utilization 0.95
  [ "${SKIP_1000:-0}" = 1 ] || grep -E "Throughput|preemptions|profile" "$LOG/throughput_1000.log"
fi

if has serve8b; then
  T="$BIN/tessera"
  PORT=8011
  t0=$(date +%s%N)
  # SERVE_ARGS: more options for the server (e.g. --no-async-scheduling).
  "$T" serve "$MODEL8B" --port $PORT --max-model-len 4096 ${SERVE_ARGS:-} > "$LOG/serve8b.log" 2>&1 &
  SERVER=$!
  until curl -sf "http://127.0.0.1:$PORT/health" > /dev/null; do
    kill -0 $SERVER 2> /dev/null || { echo "server died"; tail -20 "$LOG/serve8b.log"; break; }
    sleep 0.02
  done
  echo "cold start (process start to /health 200): $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  grep -E "CUDA device|KV cache" "$LOG/serve8b.log"
  [ "${BENCH_SERVE:-1}" = 1 ] && step bench_serve8b "$T" bench serve --base-url "http://127.0.0.1:$PORT" --dataset random --random-input-len 1000 \
    --random-output-len 1000 --num-prompts 320 --max-concurrency 64 --request-rate inf \
    --output-json "$LOG/bench_serve8b.json"
  [ "${BENCH_SERVE:-1}" = 1 ] && grep -E "Mean|Median|P99|throughput" "$LOG/bench_serve8b.log" | head -20
  kill -TERM $SERVER; wait $SERVER
fi
