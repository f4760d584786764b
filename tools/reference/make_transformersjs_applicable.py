#!/usr/bin/env python3
"""Decides which transformers.js tokenizer cases apply to our tokenizer.json files and writes
tests/data/tokenizer/transformersjs_applicable.json for tests/tokenizer/test_hf_transformersjs.cc.

A (model, tokenizer) pair applies when HF `tokenizers` on our file reproduces most (>= 80%)
of that model's expected ids: then the vocabularies are the same. The comparison mode is the
one that fits best: "special" (encode with special tokens == ids), "plain" (without special
tokens == ids) or "drop_first" (without special tokens == ids[1:], for a model whose
settings add a BOS that our file's post-processor does not). Within an applicable pair,
the cases HF itself reproduces are listed (the rest differ through the model's own settings,
e.g. a legacy SentencePiece flag, and are reported here, not tested).

    python3 tools/reference/make_transformersjs_applicable.py [SHARED_DATA]
"""
import json
import os
import sys

from tokenizers import Tokenizer


def matches(tok, case, mode):
    ids = case["ids"]
    if mode == "special":
        return tok.encode(case["text"], add_special_tokens=True).ids == ids
    got = tok.encode(case["text"], add_special_tokens=False).ids
    return got == (ids if mode == "plain" else ids[1:])


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "..", "shared", "data")
    cases_path = os.path.join(shared, "tokenizer-tests", "transformersjs",
                              "transformersjs-tokenizer-cases.json")
    with open(cases_path, encoding="utf-8") as f:
        families = json.load(f)
    tok_dir = os.path.join(shared, "tokenizers")
    toks = {d: Tokenizer.from_file(os.path.join(tok_dir, d, "tokenizer.json"))
            for d in sorted(os.listdir(tok_dir))
            if os.path.isfile(os.path.join(tok_dir, d, "tokenizer.json"))}
    out = []
    for family, models in families.items():
        for model, cases in models.items():
            for name, tok in toks.items():
                best = (None, [])
                for mode in ("special", "plain", "drop_first"):
                    ok = [c for c, v in cases.items() if matches(tok, v, mode)]
                    if len(ok) > len(best[1]):
                        best = (mode, ok)
                mode, ok = best
                if len(ok) < 0.8 * len(cases):
                    continue
                skipped = sorted(set(cases) - set(ok))
                print(f"{family}/{model} -> {name} ({mode}): {len(ok)}/{len(cases)} cases apply"
                      + (f"; not applicable: {skipped}" if skipped else ""))
                out.append({"family": family, "model": model, "tokenizer": name, "mode": mode,
                            "cases": ok})
    path = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "tokenizer",
                        "transformersjs_applicable.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
