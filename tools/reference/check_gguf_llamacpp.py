#!/usr/bin/env python3
"""Runs the tiny GGUF files through llama.cpp (llama-cpp-python) and compares its greedy
decoding with the transformers goldens: an independent check that the GGUF files follow
llama.cpp's conventions (tensor names, q/k permutation, rope_freqs, metadata, tokenizer).

    /opt/benchenv/bin/python tools/reference/check_gguf_llamacpp.py [GGUF GOLDEN] ...

Without arguments: every tests/data/models/*/*.gguf against tests/data/golden/hf-<stem>.json.
For each case: the prompt ids are evaluated in one batch, then one token at a time, always
feeding the golden token (teacher forcing), on llama.cpp's raw logits with an F32 KV cache.
Prints, per file: greedy tokens agreeing up to each case's first divergence, whether each
divergence is benign (each side's token in the other's top-K), max |dlogprob| of the golden
token on the agreeing prefixes and over all teacher-forced steps. F32 files are expected to agree (max |dlogprob| ~1e-4);
quantized ones differ more (llama.cpp quantizes activations to Q8 for the dot products).
"""
import glob
import json
import os
import sys

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


def run(gguf_path, golden_path, threads=2):
    import llama_cpp
    g = json.load(open(golden_path))
    llm = llama_cpp.Llama(model_path=gguf_path, n_ctx=512, n_batch=512, n_ubatch=512, n_threads=threads,
                          n_threads_batch=threads, logits_all=False, verbose=False,
                          type_k=0, type_v=0)  # F32 KV cache (default F16 costs ~1e-2 in logprobs)
    ctx = llm._ctx.ctx
    n_vocab = llm.n_vocab()

    def logits():
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1), shape=(n_vocab,)).copy()

    agree = total = 0
    maxd = maxd_tf = 0.0
    benign, bad = 0, 0
    for c in g["cases"]:
        llm.reset()
        llm.eval(c["prompt_token_ids"])
        diverged = False
        for i, want in enumerate(c["token_ids"]):
            lp = log_softmax(logits())
            got = int(np.argmax(lp))
            total += 1
            d = abs(float(lp[want]) - c["token_logprobs"][i])
            maxd_tf = max(maxd_tf, d)
            if not diverged and got != want:
                diverged = True
                top = set(int(t) for t in np.argsort(-lp)[: g["top_k"]])
                if want in top and str(got) in c["logprobs"][i]:
                    benign += 1
                else:
                    bad += 1
            if not diverged:
                agree += 1
                maxd = max(maxd, d)
            if i + 1 < len(c["token_ids"]):
                llm.eval([want])  # teacher forcing: always continue with the golden token
    return agree, total, benign, bad, maxd, maxd_tf


def main():
    pairs = []
    if len(sys.argv) > 1:
        a = sys.argv[1:]
        pairs = list(zip(a[0::2], a[1::2]))
    else:
        for f in sorted(glob.glob(os.path.join(REPO, "tests", "data", "models", "*", "*.gguf"))):
            stem = os.path.splitext(os.path.basename(f))[0]
            gp = os.path.join(REPO, "tests", "data", "golden", f"hf-{stem}.json")
            if os.path.exists(gp):
                pairs.append((f, gp))
    failed = 0
    for gguf_path, golden_path in pairs:
        agree, total, benign, bad, maxd, maxd_tf = run(gguf_path, golden_path)
        quant = not gguf_path.endswith("-f32.gguf")
        ok = bad == 0 and (quant or maxd < 1e-3)
        failed += not ok
        print(f"{os.path.basename(gguf_path):<28} {agree:4d}/{total} tokens agree, divergences: {benign} benign, "
              f"{bad} not in top-K; max |dlogprob| {maxd:.2e} (teacher-forced, all steps: {maxd_tf:.2e})"
              f"  {'ok' if ok else 'FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
