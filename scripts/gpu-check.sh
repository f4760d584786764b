#!/usr/bin/env bash
# On the GPU machine: configure and build everything (the CUDA sources too) with the
# development files carried in .gpu-deps (made here by scripts/gpu_deps.sh), then run the
# test suite; one log per step in LOGDIR and a one-line summary per step on stdout.
# Usage (through the device tool): scripts/gpu-check.sh "$OUT"
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=${1:?usage: scripts/gpu-check.sh LOGDIR}
mkdir -p "$LOG"
DEPS=$PWD/.gpu-deps/prefix/usr/lib/x86_64-linux-gnu
[ -d "$DEPS" ] || { echo "missing .gpu-deps: run scripts/gpu_deps.sh here and carry .gpu-deps"; exit 2; }
export PKG_CONFIG_PATH=$DEPS/pkgconfig
export LD_LIBRARY_PATH=$DEPS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
BUILD=${BUILD:-build-gpu}

step() {  # step NAME COMMAND...: runs it with its output in LOG/NAME.log
  local name=$1 t0=$SECONDS rc=0
  shift
  "$@" > "$LOG/$name.log" 2>&1 || rc=$?
  echo "$name: exit $rc, $((SECONDS - t0)) s"
  return $rc
}

nvidia-smi > "$LOG/nvidia-smi.txt" 2>&1
step configure cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  || { tail -30 "$LOG/configure.log"; exit 1; }
step build ninja -C "$BUILD" -j "$(nproc)" -k 0 || { grep -E "error|FAILED" "$LOG/build.log" | head -30; exit 1; }
step devices "$BUILD/bin/cuda_devices" && cat "$LOG/devices.log"
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step memcheck "$SANITIZER" --tool memcheck --error-exitcode 1 "$BUILD/bin/cuda_tests" \
  && grep -E "ERROR SUMMARY|PASSED|FAILED" "$LOG/memcheck.log" | tail -3
step bench_cuda_ops "$BUILD/bin/bench_cuda_ops" && cat "$LOG/bench_cuda_ops.log"
# Two OpenMP threads per test: 8 programs at once on 16 cores (all-core OpenMP each spins for minutes).
step ctest bash -c "cd '$BUILD' && OMP_NUM_THREADS=2 ctest --output-on-failure -j 8 --timeout 900" || tail -40 "$LOG/ctest.log"
grep -E "tests passed|Passed|Failed|Skipped|\*\*\*" "$LOG/ctest.log" | tail -20
