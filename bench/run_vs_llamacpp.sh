#!/usr/bin/env bash
# Tessera vs llama.cpp on one GGUF, same prompt ids, same thread count.
#
#   bench/run_vs_llamacpp.sh [MODEL] [THREADS=2] [PROMPT=512] [GEN=128] [REPEATS=3]
#
# MODEL defaults to scripts/default_model_path.sh (SmolLM2-135M-Instruct Q4_1).
# Runs, alternating, REPEATS times each:
#   build/bin/tessera bench latency --model MODEL --threads T --prompt-tokens P --gen-tokens G --json
#   $BENCH_PYTHON bench/llamacpp_bench.py   (same flags; BENCH_PYTHON=/opt/benchenv/bin/python)
# and prints the medians and the tessera/llama.cpp ratios. Both sides print one JSON line
# with engine, threads, prompt_tokens, gen_tokens, prompt_tok_s, decode_tok_s, peak_rss_mib.
# Environment: TESSERA (binary, default build/bin/tessera), BENCH_PYTHON, BENCH_LOG_DIR
# (keeps the raw JSON lines; default a temporary directory).
# Run it on a quiet machine: with THREADS == nproc and other processes busy, llama.cpp's
# OpenMP barriers stall on every op (seen: decode 74 -> 1.5 tok/s at load average 5 on 2
# cores), so the table prints the load average before and after.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL=${1:-$(bash scripts/default_model_path.sh)}
THREADS=${2:-2}
PROMPT=${3:-512}
GEN=${4:-128}
REPEATS=${5:-3}
TESSERA=${TESSERA:-build/bin/tessera}
BENCH_PYTHON=${BENCH_PYTHON:-/opt/benchenv/bin/python}
LOG_DIR=${BENCH_LOG_DIR:-$(mktemp -d)}
mkdir -p "$LOG_DIR"
RESULTS="$LOG_DIR/results.jsonl"
: > "$RESULTS"

[ -f "$MODEL" ] || { echo "model not found: $MODEL" >&2; exit 1; }
have_tessera=1
[ -x "$TESSERA" ] || { echo "warning: $TESSERA not built; llama.cpp side only" >&2; have_tessera=0; }
have_llamacpp=1
"$BENCH_PYTHON" -c 'import llama_cpp' 2>/dev/null || {
  echo "warning: llama_cpp not importable with $BENCH_PYTHON; tessera side only" >&2; have_llamacpp=0; }

run_one() {  # name, command...
  local name=$1; shift
  local out
  if out=$("$@" 2>"$LOG_DIR/$name.stderr"); then
    local line
    line=$(printf '%s\n' "$out" | grep '^{' | tail -n 1)
    if [ -n "$line" ]; then
      printf '%s\n' "$line" >> "$RESULTS"
      echo "  $line" >&2
      return
    fi
  fi
  echo "  $name run failed; stderr:" >&2
  tail -n 20 "$LOG_DIR/$name.stderr" >&2
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
echo "model: $MODEL  threads: $THREADS  prompt: $PROMPT  gen: $GEN  repeats: $REPEATS" >&2
for ((r = 1; r <= REPEATS; r++)); do
  echo "repeat $r/$REPEATS" >&2
  if [ $have_tessera = 1 ]; then
    # The same context as llama.cpp's side (n_ctx 1024, one sequence): both reserve their
    # KV cache at start.
    run_one "tessera-$r" "$TESSERA" bench latency --model "$MODEL" --num-iters 1 --threads "$THREADS" \
      --prompt-tokens "$PROMPT" --gen-tokens "$GEN" --max-model-len 1024 --max-num-seqs 1 --json
  fi
  if [ $have_llamacpp = 1 ]; then
    run_one "llamacpp-$r" "$BENCH_PYTHON" bench/llamacpp_bench.py --model "$MODEL" \
      --threads "$THREADS" --prompt-tokens "$PROMPT" --gen-tokens "$GEN"
  fi
done

CPU=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
python3 - "$RESULTS" "$MODEL" "$CPU" "$(nproc)" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$LOAD_BEFORE" "$LOAD_AFTER" <<'PY'
import json, statistics, sys, os
path, model, cpu, nproc, date, load_before, load_after = sys.argv[1:8]
rows = [json.loads(l) for l in open(path) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r.get("engine"), []).append(r)

def med(engine, key):
    vals = [r[key] for r in by.get(engine, []) if isinstance(r.get(key), (int, float))]
    return statistics.median(vals) if vals else None

def fmt(v, nd=1):
    return "-" if v is None else f"{v:.{nd}f}"

print(f"machine: {cpu or 'unknown CPU'}, nproc {nproc}; date: {date}")
print(f"load average before: {load_before}, after: {load_after}")
print(f"model: {os.path.basename(model)}")
any_row = rows[0] if rows else {}
print(f"threads {any_row.get('threads', '-')}, prompt {any_row.get('prompt_tokens', '-')} tokens, "
      f"gen {any_row.get('gen_tokens', '-')} tokens, medians of {max((len(v) for v in by.values()), default=0)} runs")
print()
print(f"{'engine':<10} {'version':<28} {'prompt tok/s':>13} {'decode tok/s':>13} {'peak RSS MiB':>13}")
for eng in ("tessera", "llama.cpp"):
    if eng not in by:
        continue
    ver = str(by[eng][-1].get("version", "?"))[:28]
    print(f"{eng:<10} {ver:<28} {fmt(med(eng, 'prompt_tok_s')):>13} {fmt(med(eng, 'decode_tok_s')):>13} "
          f"{fmt(med(eng, 'peak_rss_mib')):>13}")
t_p, l_p = med("tessera", "prompt_tok_s"), med("llama.cpp", "prompt_tok_s")
t_d, l_d = med("tessera", "decode_tok_s"), med("llama.cpp", "decode_tok_s")
if None not in (t_p, l_p, t_d, l_d):
    print(f"{'ratio':<10} {'tessera / llama.cpp':<28} {t_p / l_p:>13.2f} {t_d / l_d:>13.2f}")
PY
