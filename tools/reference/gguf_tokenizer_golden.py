#!/usr/bin/env python3
"""Golden token ids for a GGUF-embedded tokenizer, from HF transformers' GGUF conversion.

transformers rebuilds a `tokenizers` tokenizer from the GGUF's tokenizer.ggml.* metadata
(AutoTokenizer.from_pretrained(dir, gguf_file=...)); its ids are an independent reference
for src/tokenizer/gguf_tokenizer.cc. The conversion ignores tokenizer.ggml.pre, so for
pre = "smollm" the script restores SmolLM2's own pre-tokenizer (individual digits, then
ByteLevel), as in its tokenizer.json; otherwise "4 ½" would pre-tokenize as GPT-2's. Texts: llama.cpp's vocabulary test inputs plus a few
chat-shaped ones. Output: one JSON object per line {"text", "ids", "ids_with_special"}.

Usage: /opt/refenv/bin/python tools/reference/gguf_tokenizer_golden.py \
         "$(scripts/default_model_path.sh)" tests/data/tokenizer/smollm2_gguf_golden.jsonl --smollm
"""
import json
import os
import sys

from tokenizers import pre_tokenizers
from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
INP = os.path.join(HERE, "..", "..", "..", "shared", "data", "tokenizer-tests", "llamacpp-vocab",
                   "ggml-vocab-gpt-2.gguf.inp")
EXTRA = [
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "def f(x):\n    return x ** 2  # square\n",
    "Prices: $1,234.56 (approx.) — 50% off!!!",
    "Ünïcödé, 中文, русский, العربية, emoji 🦙🚀👍🏽",
    "<|endoftext|>text after end",
]


def main():
    gguf_path, out_path = sys.argv[1], sys.argv[2]
    tok = AutoTokenizer.from_pretrained(os.path.dirname(gguf_path), gguf_file=os.path.basename(gguf_path))
    if "--smollm" in sys.argv:
        tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ])
    with open(INP, encoding="utf-8") as f:
        texts = f.read().split("\n__ggml_vocab_test__\n")[:-1]
    texts += EXTRA
    with open(out_path, "w", encoding="utf-8") as out:
        for t in texts:
            row = {
                "text": t,
                "ids": tok(t, add_special_tokens=False)["input_ids"],
                "ids_with_special": tok(t, add_special_tokens=True)["input_ids"],
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(texts)} cases to {out_path}")


if __name__ == "__main__":
    main()
