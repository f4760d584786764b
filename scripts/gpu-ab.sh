#!/usr/bin/env bash
# Same-lease A/B of two revisions on the GPU machine (leases differ by ~3%, so only runs of
# one lease compare; docs/benchmarks.md). Three steps:
#   here:    scripts/gpu-ab.sh pack OLD_REV NEW_REV   -> build-ab/{old,new}.tar.gz (git archive,
#            without tests/data, fuzz/ and docs/; the device's copy of the tree supplies those)
#   device:  scripts/gpu-ab.sh build                  (carry .gpu-deps .gpu-data build-ab; both
#            revisions built side by side, NEW with scripts/gpu-check.sh's `cuda weights8b`)
#   device:  scripts/gpu-ab.sh bench [ROUNDS]         (the next call, same warm machine: the
#            bench8b commands, NEW and OLD alternated; 1000 x 1000 once each if time is left,
#            unless SKIP_1000=1)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=/tmp/ab
case "${1:-}" in
pack)
  OLD=${2:?usage: scripts/gpu-ab.sh pack OLD_REV NEW_REV}
  NEW=${3:?usage: scripts/gpu-ab.sh pack OLD_REV NEW_REV}
  mkdir -p build-ab
  for pair in "old $OLD" "new $NEW"; do
    set -- $pair
    git archive --format=tar.gz -o "build-ab/$1.tar.gz" "$2" -- . ':!tests/data' ':!fuzz' ':!docs'
  done
  ls -la build-ab/*.tar.gz
  ;;
build)
  OUT=${OUT:?run through the device tool}
  for v in old new; do
    rm -rf "$WORK/$v" && mkdir -p "$WORK/$v" && tar xzf "build-ab/$v.tar.gz" -C "$WORK/$v"
    ln -s "$ROOT/tests/data" "$WORK/$v/tests/data"
    ln -s "$ROOT/.gpu-deps" "$WORK/$v/.gpu-deps"
    [ -d "$ROOT/.gpu-data" ] && ln -s "$ROOT/.gpu-data" "$WORK/$v/.gpu-data"
  done
  DEPS=$ROOT/.gpu-deps/prefix/usr/lib/x86_64-linux-gnu
  (cd "$WORK/old" && PKG_CONFIG_PATH=$DEPS/pkgconfig LD_LIBRARY_PATH=$DEPS \
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTESSERA_TESTS=OFF \
    > "$OUT/old_configure.log" 2>&1 && ninja -C build -j 6 -k 0 tessera > "$OUT/old_build.log" 2>&1
   echo "old build: exit $?") &
  mkdir -p "$OUT/new"
  (cd "$WORK/new" && bash scripts/gpu-check.sh "$OUT/new" cuda weights8b)
  wait
  ls -la "$WORK/old/build/bin/tessera" "$WORK/new/build-gpu/bin/tessera"
  ;;
bench)
  OUT=${OUT:?run through the device tool}
  ROUNDS=${2:-2}
  export LD_LIBRARY_PATH=$ROOT/.gpu-deps/prefix/usr/lib/x86_64-linux-gnu
  M=/tmp/llama8b-random
  declare -A BIN=([new]=$WORK/new/build-gpu/bin/tessera [old]=$WORK/old/build/bin/tessera)
  T0=$SECONDS
  run() {  # run VARIANT NAME ARGS...: one line of its figures
    local v=$1 name=$2 t=$SECONDS log
    shift 2
    log=$OUT/${name}_${v}_$SECONDS.log
    "${BIN[$v]}" "$@" > "$log" 2>&1
    echo "$name $v ($((SECONDS - t)) s): $(grep -hE 'Avg latency|Throughput|^decode' "$log" | tr '\n' ' ' | cut -c1-300)"
  }
  for _ in $(seq "$ROUNDS"); do
    for v in new old; do
      run $v decode_b1 bench latency --model $M --max-model-len 4096 --batch-size 1 --input-len 128 --output-len 256 --num-iters 3
      run $v latency_b8 bench latency --model $M --max-model-len 4096 --batch-size 8 --input-len 32 --output-len 128 \
        --num-iters 10 --num-iters-warmup 3
      run $v throughput_512 bench throughput --model $M --max-model-len 4096 --num-prompts 128 --input-len 512 \
        --output-len 256 --max-num-batched-tokens 8192
    done
  done
  for v in new old; do
    [ "${SKIP_1000:-0}" = 1 ] && break
    [ $((SECONDS - T0)) -gt 350 ] && break  # one call may run 10 minutes
    run $v throughput_1000 bench throughput --model $M --max-model-len 4096 --num-prompts 1000 --input-len 1000 \
      --output-len 1000 --max-num-seqs 512 --max-num-batched-tokens 16384 --gpu-memory-utilization 0.95
  done
  ;;
*)
  echo "usage: scripts/gpu-ab.sh pack OLD_REV NEW_REV | build | bench [ROUNDS]" >&2
  exit 2
  ;;
esac
