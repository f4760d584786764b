#!/usr/bin/env python3
"""Writes a vocabulary-only GGUF (tokenizer.ggml.*) from a byte-level BPE tokenizer.json.

Lets the GGUF tokenizer (src/tokenizer/gguf_tokenizer.cc) be checked against llama.cpp's
vectors that ship without a GGUF (ggml-vocab-llama-bpe/qwen2/deepseek-r1-qwen .inp/.out):
added tokens become control (special) or user-defined tokens, as llama.cpp's converter does.

Usage: /opt/refenv/bin/python tools/reference/hf_to_vocab_gguf.py TOKENIZER_JSON PRE OUT.gguf [BOS_ID]
  e.g. .../tokenizers/llama3_1/tokenizer.json llama-bpe /tmp/llama-bpe.gguf 128000
       .../tokenizers/qwen3/tokenizer.json qwen2 /tmp/qwen2.gguf
"""
import json
import sys

import gguf


def main():
    src, pre, out = sys.argv[1:4]
    tj = json.load(open(src, encoding="utf-8"))
    vocab = tj["model"]["vocab"]
    n = max(max(vocab.values()), max((t["id"] for t in tj["added_tokens"]), default=0)) + 1
    tokens = [f"[PAD{i}]" for i in range(n)]
    types = [1] * n  # normal
    for piece, i in vocab.items():
        tokens[i] = piece
    for t in tj["added_tokens"]:
        tokens[t["id"]] = t["content"]
        types[t["id"]] = 3 if t["special"] else 4  # control / user-defined
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    w = gguf.GGUFWriter(out, "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    if len(sys.argv) > 4:
        w.add_bos_token_id(int(sys.argv[4]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{out}: {n} tokens, {len(merges)} merges")


if __name__ == "__main__":
    main()
