#!/usr/bin/env python3
"""Writes a random-weight checkpoint of the Qwen2.5-7B-Instruct shape (bf16 safetensors), for
speed work on the GPU machine, where no model can be downloaded.

    python tools/reference/make_random_qwen25_7b.py --out /tmp/qwen25-7b-random [--tokenizer DIR]

transformers builds Qwen2ForCausalLM from Qwen2.5-7B-Instruct's config.json (hidden 3584,
28 layers, 28 heads, 4 KV heads, FFN 18944, biased q/k/v projections, vocab 152064,
rope_theta 1e6) with its own initialization (normal, std 0.02; norms 1) under a fixed torch
seed. --tokenizer copies tokenizer.json and tokenizer_config.json (with its chat template)
from DIR, e.g. ../shared/data/tokenizers/qwen3 (Qwen's byte-level BPE; 151,669 ids, within
the model's 152,064).
"""
import argparse
import os
import shutil

from make_random_llama8b import build_random_model, save_random_model

QWEN25_7B = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "hidden_act": "silu",
    "hidden_size": 3584,
    "initializer_range": 0.02,
    "intermediate_size": 18944,
    "max_position_embeddings": 32768,
    "max_window_layers": 28,
    "model_type": "qwen2",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 152064,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=28)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--tokenizer", help="a directory with tokenizer.json and tokenizer_config.json to copy")
    args = ap.parse_args()

    cfg = dict(QWEN25_7B, num_hidden_layers=args.layers, max_window_layers=args.layers)
    n = save_random_model(build_random_model(cfg, args.out, args.device, args.seed), cfg, args.out)
    if args.tokenizer:
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(args.tokenizer, name), os.path.join(args.out, name))
    print(f"wrote {args.out}: {n / 1e9:.2f} B parameters, bf16, seed {args.seed}")


if __name__ == "__main__":
    main()
