#!/usr/bin/env bash
# Runs every built libFuzzer target BUILD_DIR/bin/fuzz_* for SECONDS each, starting from
# its seed corpus fuzz/corpus/<name>. Fails if any target crashes, leaks or times out.
#   usage: scripts/run_fuzz.sh BUILD_DIR SECONDS
# New inputs go to BUILD_DIR/corpus-work/<name> (kept between runs, so the repo corpus
# stays small); crash reproducers to BUILD_DIR/fuzz-artifacts/, logs to BUILD_DIR/fuzz-logs/.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build_dir=$1
seconds=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

shopt -s nullglob
targets=()
for bin in "$build_dir"/bin/fuzz_*; do
  [[ -f $bin && -x $bin ]] && targets+=("$bin")
done
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "run_fuzz: no fuzz_* binaries in $build_dir/bin (configure with -DTESSERA_FUZZ=ON)" >&2
  exit 1
fi

mkdir -p "$build_dir/fuzz-artifacts" "$build_dir/fuzz-logs"
failed=()
for bin in "${targets[@]}"; do
  name=$(basename "$bin")
  work="$build_dir/corpus-work/$name"
  mkdir -p "$work"
  if [[ -d $root/fuzz/corpus/$name ]]; then
    cp -f "$root/fuzz/corpus/$name"/* "$work"/ 2>/dev/null || true
  fi
  log="$build_dir/fuzz-logs/$name.log"
  echo "== $name: ${seconds}s, corpus $work ($(ls "$work" | wc -l) inputs)"
  start=$(date +%s)
  status=0
  # -timeout: one input taking this long is a hang; -rss_limit_mb: a parse that allocates
  # this much is a bug (counts must be bounded by the input size).
  "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 \
    -artifact_prefix="$build_dir/fuzz-artifacts/$name-" "$work" >"$log" 2>&1 || status=$?
  elapsed=$(( $(date +%s) - start ))
  if [[ $status -ne 0 ]]; then
    echo "!! $name FAILED (exit $status after ${elapsed}s); log: $log" >&2
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -20 >&2 || true
    failed+=("$name")
  else
    runs=$(grep -Eo "stat::number_of_executed_units: *[0-9]+" "$log" | grep -Eo "[0-9]+$" || echo "?")
    cov=$(grep -Eo "cov: [0-9]+" "$log" | tail -1 || true)
    echo "   ok: ${elapsed}s, $runs runs, $cov, corpus now $(ls "$work" | wc -l) inputs"
  fi
done

if [[ ${#failed[@]} -ne 0 ]]; then
  echo "run_fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
echo "run_fuzz: all ${#targets[@]} targets ran ${seconds}s without crashes"
