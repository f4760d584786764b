#!/usr/bin/env python3
"""Writes a random-weight checkpoint of the Llama-3.1-8B shape (bf16 safetensors), for speed
work and for comparisons with transformers on the GPU machine, where no model can be downloaded.

    python tools/reference/make_random_llama8b.py --out /tmp/llama8b-random [--layers 32] [--device cuda]

transformers builds LlamaForCausalLM from Llama-3.1-8B's config.json (hidden 4096, 32 layers,
32 heads, 8 KV heads, FFN 14336, vocab 128256, rope_theta 500000 with llama3 scaling) with its
own initialization (normal, std 0.02; norms 1) under a fixed torch seed, and saves it with
save_pretrained. config.json is then rewritten in the classic form of the real checkpoint
("rope_theta" + "rope_scaling"). --layers makes a shallower model of the same widths.
"""
import argparse
import json
import os

LLAMA31_8B = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": [128001, 128008, 128009],
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "vocab_size": 128256,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--seed", type=int, default=20261129)
    args = ap.parse_args()

    import torch
    import transformers
    cfg = dict(LLAMA31_8B, num_hidden_layers=args.layers)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    config = transformers.AutoConfig.from_pretrained(args.out)
    torch.manual_seed(args.seed)
    with torch.device(args.device):
        model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(args.out, max_shard_size="5GB")
    with open(os.path.join(args.out, "config.json"), "w") as f:  # the classic form, as shipped
        json.dump(cfg, f, indent=2)
    n = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.out}: {n / 1e9:.2f} B parameters, bf16")


if __name__ == "__main__":
    main()
