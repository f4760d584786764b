#!/usr/bin/env python3
"""HF `tokenizers` side of bench/tokenizer_vs_hf.sh: single-threaded encode_batch of the
corpus that bench_tokenizer --write-corpus wrote (set RAYON_NUM_THREADS=1 before running)."""
import json
import statistics
import sys
import time

from tokenizers import Tokenizer


def main():
    corpus, repeat, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    with open(corpus, encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    for path in paths:
        file = path if path.endswith(".json") else path.rstrip("/") + "/tokenizer.json"
        loads = []
        for _ in range(3):
            t0 = time.perf_counter()
            tok = Tokenizer.from_file(file)
            loads.append(time.perf_counter() - t0)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            enc = tok.encode_batch(docs, add_special_tokens=False)
            times.append(time.perf_counter() - t0)
        tokens = sum(len(e.ids) for e in enc)
        s = statistics.median(times)
        print(f"hf   {path:<40} load {statistics.median(loads):.3f} s  encode "
              f"{nbytes / 1e6 / s:.2f} MB/s  {tokens / s:.0f} tokens/s  ({tokens} tokens, "
              f"{nbytes / 1e6:.2f} MB, median of {repeat})", flush=True)


if __name__ == "__main__":
    main()
