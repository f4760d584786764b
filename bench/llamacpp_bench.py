#!/usr/bin/env python3
"""llama.cpp side of the Tessera vs llama.cpp speed comparison.

Run with the bench venv (llama-cpp-python built from source for this CPU):

    /opt/benchenv/bin/python bench/llamacpp_bench.py --model M.gguf \
        --threads 2 --prompt-tokens 512 --gen-tokens 128

What it measures (the same protocol `tessera bench latency` follows):
  * load the GGUF (n_ctx 1024, n_batch 512, n_threads = n_threads_batch = --threads,
    default mmap, no mlock, verbose off);
  * warm-up (unless --warmup 0): evaluate 8 prompt tokens + 1 single-token step, then
    drop that KV and reset llama.cpp's perf counters;
  * prompt: evaluate --prompt-tokens ids in batches of n_batch (one batch for 512);
  * decode: greedy (argmax of the raw logits), --gen-tokens steps, each step evaluates
    exactly one token (the token chosen from the previous logits) and takes the argmax;
  * prompt_tok_s / decode_tok_s come from llama.cpp's own counters
    (llama_perf_context: t_p_eval_ms / n_p_eval and t_eval_ms / n_eval); if they are not
    available, from wall clock around the evals ("timing_source" says which). Wall-clock
    rates are printed as well (*_wall_tok_s), they include the Python call overhead.
  * peak_rss_mib: resource.getrusage(RUSAGE_SELF).ru_maxrss (KiB on Linux) / 1024.

Prompt token ids (identical in both engines): ids[i] = 100 + (i * 7919) % M with
M = min(30000, n_vocab - 200), i = 0 .. prompt_tokens-1 (no BOS is prepended).
--prompt-ids-file PATH writes the ids used (JSON list) to PATH; --prompt-ids-from PATH
reads them instead (JSON list or whitespace-separated integers).

Prints exactly one JSON line on stdout.
"""
import argparse
import json
import os
import resource
import sys
import time


def prompt_ids_rule(n, n_vocab):
    m = min(30000, n_vocab - 200)
    if m <= 0:
        raise SystemExit(f"vocabulary too small ({n_vocab}) for the prompt-id rule")
    return [100 + (i * 7919) % m for i in range(n)]


def read_ids(path):
    with open(path) as f:
        text = f.read().strip()
    if text.startswith("["):
        return [int(x) for x in json.loads(text)]
    return [int(x) for x in text.split()]


def _system_info(llama_cpp):
    try:
        info = llama_cpp.llama_print_system_info()
        return info.decode() if isinstance(info, bytes) else str(info)
    except Exception:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--n-ctx", type=int, default=1024)
    ap.add_argument("--n-batch", type=int, default=512)
    ap.add_argument("--warmup", type=int, default=1, help="1: warm up before timing (default), 0: no warm-up")
    ap.add_argument("--prompt-ids-file", help="write the prompt ids used here (JSON list)")
    ap.add_argument("--prompt-ids-from", help="read the prompt ids from here instead of the rule")
    args = ap.parse_args()

    import llama_cpp
    import numpy as np

    if args.prompt_tokens + args.gen_tokens + 1 > args.n_ctx:
        raise SystemExit("prompt + gen tokens do not fit in n_ctx")

    t_load0 = time.perf_counter()
    llm = llama_cpp.Llama(
        model_path=args.model,
        n_ctx=args.n_ctx,
        n_batch=args.n_batch,
        n_ubatch=args.n_batch,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        logits_all=False,
        verbose=False,
    )
    load_s = time.perf_counter() - t_load0
    n_vocab = llm.n_vocab()

    if args.prompt_ids_from:
        ids = read_ids(args.prompt_ids_from)[: args.prompt_tokens]
        if len(ids) != args.prompt_tokens:
            raise SystemExit(f"{args.prompt_ids_from}: fewer than {args.prompt_tokens} ids")
    else:
        ids = prompt_ids_rule(args.prompt_tokens, n_vocab)
    if args.prompt_ids_file:
        with open(args.prompt_ids_file, "w") as f:
            json.dump(ids, f)

    ctx = llm._ctx.ctx
    have_perf = hasattr(llama_cpp, "llama_perf_context") and hasattr(llama_cpp, "llama_perf_context_reset")

    def argmax_last():
        # Raw logits of the last token of the last batch (Llama.eval requests logits for
        # the last token only when logits_all is off; recent llama-cpp-python versions no
        # longer copy them into llm.scores, so read them from the context).
        ptr = llama_cpp.llama_get_logits_ith(ctx, -1)
        return int(np.argmax(np.ctypeslib.as_array(ptr, shape=(n_vocab,))))

    if args.warmup:
        llm.reset()
        llm.eval(ids[:8])
        llm.eval([argmax_last()])
        argmax_last()  # reads the logits: synchronizes, so the step is counted before the reset
        llama_cpp.llama_synchronize(ctx)
        llm.reset()  # next eval removes KV from position 0 on (kv seq_rm in Llama.eval)
    if have_perf:
        llama_cpp.llama_perf_context_reset(ctx)

    llm.reset()
    t0 = time.perf_counter()
    llm.eval(ids)
    tok = argmax_last()
    t1 = time.perf_counter()
    out = []
    for _ in range(args.gen_tokens):
        llm.eval([tok])
        out.append(tok)
        tok = argmax_last()
    t2 = time.perf_counter()

    prompt_wall = args.prompt_tokens / (t1 - t0) if t1 > t0 else None
    decode_wall = args.gen_tokens / (t2 - t1) if args.gen_tokens and t2 > t1 else None
    prompt_tok_s, decode_tok_s, source = prompt_wall, decode_wall, "wall_clock"
    perf = {}
    if have_perf:
        d = llama_cpp.llama_perf_context(ctx)
        perf = {"t_p_eval_ms": d.t_p_eval_ms, "n_p_eval": d.n_p_eval, "t_eval_ms": d.t_eval_ms, "n_eval": d.n_eval}
        if d.n_p_eval == args.prompt_tokens and d.n_eval == args.gen_tokens and d.t_p_eval_ms > 0 and d.t_eval_ms > 0:
            prompt_tok_s = 1e3 * d.n_p_eval / d.t_p_eval_ms
            decode_tok_s = 1e3 * d.n_eval / d.t_eval_ms
            source = "llama_perf_context"
        else:
            source = "wall_clock (llama_perf_context counts did not match: %s)" % perf

    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    version = getattr(llama_cpp, "__version__", "unknown")
    res = {
        "engine": "llama.cpp",
        "version": f"llama-cpp-python {version}",
        "model": os.path.basename(args.model),
        "threads": args.threads,
        "prompt_tokens": args.prompt_tokens,
        "gen_tokens": args.gen_tokens,
        "prompt_tok_s": round(prompt_tok_s, 3) if prompt_tok_s else None,
        "decode_tok_s": round(decode_tok_s, 3) if decode_tok_s else None,
        "peak_rss_mib": round(peak_rss_mib, 1),
        "timing_source": source,
        "prompt_wall_tok_s": round(prompt_wall, 3) if prompt_wall else None,
        "decode_wall_tok_s": round(decode_wall, 3) if decode_wall else None,
        "load_s": round(load_s, 3),
        "warmup": bool(args.warmup),
        "first_gen_ids": out[:8],
        "system_info": _system_info(llama_cpp),
    }
    print(json.dumps(res))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
