#!/usr/bin/env python3
"""Makes the tiny random test models in tests/data/models/ (HF safetensors + GGUF).

    python tools/reference/make_tiny_models.py [--out tests/data/models] [--only NAME ...]

Each model is a real transformers architecture (LlamaForCausalLM, MistralForCausalLM,
Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM), 2 layers, GQA, float32, saved with save_pretrained
(config.json + model.safetensors + generation_config.json). config.json is rewritten in the
classic form real checkpoints use ("rope_theta" + "rope_scaling" instead of transformers 5's
"rope_parameters"); the script checks that transformers reads the rewritten file back to the
same rope parameters.

Weights are drawn from numpy's PCG64 generator (seed fixed per model, independent of torch and
of transformers' own init code), so the files are reproducible byte for byte with the same numpy.
Every bias and every RMSNorm weight is random (not HF's zeros / ones), and the scales make
next-token distributions peaked, so greedy decoding is stable under fp32 rounding.

GGUF files follow llama.cpp's convert_hf_to_gguf.py conventions:
  * tensor names token_embd, blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,attn_q_norm,
    attn_k_norm,ffn_norm,ffn_gate,ffn_up,ffn_down}, output_norm, output (omitted when the
    embeddings are tied), biases as <name>.bias;
  * arch "llama": q/k weight rows permuted into llama.cpp's RoPE order (LlamaModel.permute);
    qwen2/qwen3 are not permuted;
  * llama3 rope scaling becomes the F32 tensor rope_freqs.weight [head_dim/2] (per-frequency
    divisors), as LlamaModel.generate_extra_tensors writes it; no rope.scaling.* keys;
  * norms (1-D tensors) stay F32 in every file type; Q8_0 quantizes every 2-D weight
    (convert_hf_to_gguf --outtype q8_0); Q4_0 / Q4_1 are "pure" (every 2-D weight, like
    llama-quantize --pure; real Q4_x files keep some tensors at higher precision);
  * the tokenizer is the 512-token Llama SentencePiece vocabulary of stories260K (copied from
    ../shared/data/models/stories260K/stories260K-f32.gguf, MIT), so llama.cpp can load the
    files. tiny-qwen2 has vocab_size 576 > 512 tokens: the list is padded with "[PAD<i>]"
    tokens of type UNUSED, as the converter does for padded vocabularies.
"""
import argparse
import json
import math
import os
import sys
import zlib

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STORIES_GGUF = os.path.join(REPO, "..", "shared", "data", "models", "stories260K", "stories260K-f32.gguf")

COMMON = dict(
    vocab_size=512,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=512,
    hidden_act="silu",
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=None,
)

LLAMA3_SCALING = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 64,
}

# name -> (transformers class, config overrides, GGUF variants (arch, [file types]))
MODELS = {
    "tiny-llama2": ("LlamaForCausalLM", dict(rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None,
                                             tie_word_embeddings=False), None),
    "tiny-llama3": ("LlamaForCausalLM", dict(rms_norm_eps=1e-5, rope_theta=500000.0, rope_scaling=LLAMA3_SCALING,
                                             tie_word_embeddings=False), ("llama", ["f32", "q8_0", "q4_0", "q4_1"])),
    "tiny-mistral": ("MistralForCausalLM", dict(rms_norm_eps=1e-5, rope_theta=1000000.0, sliding_window=None,
                                                tie_word_embeddings=False), None),
    "tiny-qwen2": ("Qwen2ForCausalLM", dict(vocab_size=576, rms_norm_eps=1e-6, rope_theta=1000000.0,
                                            use_sliding_window=False, sliding_window=None,
                                            tie_word_embeddings=False), ("qwen2", ["f32"])),
    "tiny-qwen3": ("Qwen3ForCausalLM", dict(head_dim=32, rms_norm_eps=1e-6, rope_theta=1000000.0,
                                            attention_bias=False, use_sliding_window=False, sliding_window=None,
                                            tie_word_embeddings=True), ("qwen3", ["f32"])),
    "tiny-smollm2": ("LlamaForCausalLM", dict(hidden_size=96, intermediate_size=192, num_attention_heads=6,
                                              num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=100000.0,
                                              rope_scaling=None, tie_word_embeddings=True), ("llama", ["f32"])),
    # Fused qkv_proj and gate_up_proj; no GGUF (Tessera runs Phi-3 from safetensors only).
    "tiny-phi3": ("Phi3ForCausalLM", dict(rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None,
                                          sliding_window=None, tie_word_embeddings=False), None),
}

# Standard deviations of the random weights (chosen so that top-1 is well separated).
STD_EMBED = 1.0        # token embeddings (untied)
STD_EMBED_TIED = 0.2   # token embeddings that are also the output projection
STD_QK = 0.20          # q_proj / k_proj: sharp attention, so RoPE (and its scaling) matters
STD_LINEAR = 0.10      # v / o / gate / up / down
STD_LM_HEAD = 0.5      # untied output projection
STD_BIAS = 0.3
# Final RMSNorm weight ~ mean * (1 + 0.2 randn): sets the logit scale. Tied models get small
# embeddings (else every token predicts itself) and a larger final norm instead.
FINAL_NORM_MEAN = 2.0
FINAL_NORM_MEAN_TIED = 4.0


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def build_config(cls_name, overrides):
    import transformers
    cfg_cls = {"LlamaForCausalLM": transformers.LlamaConfig, "MistralForCausalLM": transformers.MistralConfig,
               "Qwen2ForCausalLM": transformers.Qwen2Config, "Qwen3ForCausalLM": transformers.Qwen3Config,
               "Phi3ForCausalLM": transformers.Phi3Config}[cls_name]
    kw = dict(COMMON)
    kw.update(overrides)
    return cfg_cls(**kw)


def randomize(model, name, tied):
    """Overwrites every parameter with seeded numpy draws."""
    import torch
    rng = np.random.default_rng(seed_of(name))
    cfg = model.config
    qk_rows = (cfg.num_attention_heads + cfg.num_key_value_heads) * (cfg.hidden_size // cfg.num_attention_heads)
    with torch.no_grad():
        for pname, p in model.named_parameters():  # deterministic order; tied lm_head not listed twice
            shape = tuple(p.shape)
            if pname.endswith("norm.weight"):
                if pname == "model.norm.weight":
                    mean = FINAL_NORM_MEAN_TIED if tied else FINAL_NORM_MEAN
                    vals = mean * (1.0 + 0.2 * rng.standard_normal(shape))
                elif "q_norm" in pname or "k_norm" in pname:
                    vals = 2.0 + 0.3 * rng.standard_normal(shape)
                else:
                    vals = 1.0 + 0.2 * rng.standard_normal(shape)
            elif pname.endswith(".bias"):
                vals = STD_BIAS * rng.standard_normal(shape)
            elif pname == "model.embed_tokens.weight":
                vals = (STD_EMBED_TIED if tied else STD_EMBED) * rng.standard_normal(shape)
            elif pname == "lm_head.weight":
                vals = STD_LM_HEAD * rng.standard_normal(shape)
            elif pname.endswith(("q_proj.weight", "k_proj.weight")):
                vals = STD_QK * rng.standard_normal(shape)
            elif pname.endswith("qkv_proj.weight"):  # fused: q and k rows sharp, v rows plain
                vals = STD_LINEAR * rng.standard_normal(shape)
                vals[:qk_rows] *= STD_QK / STD_LINEAR
            elif pname.endswith(".weight") and p.dim() == 2:
                vals = STD_LINEAR * rng.standard_normal(shape)
            else:
                raise SystemExit(f"{name}: no rule for parameter {pname} {shape}")
            p.copy_(torch.from_numpy(vals.astype(np.float32)))


def legacy_config_json(path, cfg):
    """Rewrites config.json with rope_theta/rope_scaling (the form of real checkpoints)."""
    with open(path) as f:
        d = json.load(f)
    rp = d.pop("rope_parameters", None) or {}
    rp = dict(rp)
    theta = rp.pop("rope_theta", None)
    rtype = rp.get("rope_type", "default")
    out = {}
    for k, v in d.items():
        out[k] = v
    out["rope_theta"] = theta
    out["rope_scaling"] = None if rtype == "default" else rp
    out = dict(sorted(out.items()))
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")


def make_hf(name, out_dir):
    import torch
    import transformers
    cls_name, overrides, _ = MODELS[name]
    cfg = build_config(cls_name, overrides)
    torch.manual_seed(0)
    model = getattr(transformers, cls_name)(cfg).to(torch.float32).eval()
    randomize(model, name, cfg.tie_word_embeddings)
    if cfg.tie_word_embeddings:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    model.generation_config = transformers.GenerationConfig(bos_token_id=1, eos_token_id=2, do_sample=False)
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    model.save_pretrained(d, safe_serialization=True)
    legacy_config_json(os.path.join(d, "config.json"), cfg)
    for fn in os.listdir(d):
        os.chmod(os.path.join(d, fn), 0o644)
    # The rewritten config must mean the same thing to transformers.
    back = transformers.AutoConfig.from_pretrained(d)
    assert back.rope_parameters == cfg.rope_parameters, (back.rope_parameters, cfg.rope_parameters)
    reloaded = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32)
    sd0, sd1 = model.state_dict(), reloaded.state_dict()
    for k in sd0:
        assert torch.equal(sd0[k], sd1[k]), f"{name}: {k} changed on reload"
    return model, cfg, d


# ---------------------------------------------------------------- GGUF (llama.cpp conventions)

def llama_permute(w, n_head, n_head_kv):
    """convert_hf_to_gguf.py LlamaModel.permute."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2)
            .reshape(w.shape))


def hf_to_gguf_name(hf):
    import re
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    m = re.fullmatch(r"model\.layers\.(\d+)\.(.+)\.(weight|bias)", hf)
    if not m:
        raise SystemExit(f"unmapped tensor {hf}")
    bid, mod, kind = m.groups()
    table = {
        "input_layernorm": "attn_norm",
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "self_attn.q_norm": "attn_q_norm",
        "self_attn.k_norm": "attn_k_norm",
        "post_attention_layernorm": "ffn_norm",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
    }
    if mod not in table:
        raise SystemExit(f"unmapped tensor {hf}")
    return f"blk.{bid}.{table[mod]}.{kind}"


def llama3_rope_factors(cfg):
    """convert_hf_to_gguf.py LlamaModel.generate_extra_tensors (rope_freqs)."""
    rp = cfg.rope_parameters
    base = rp["rope_theta"]
    dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    factor = rp.get("factor", 8.0)
    low_freq_factor = rp.get("low_freq_factor", 1.0)
    high_freq_factor = rp.get("high_freq_factor", 4.0)
    old_context_len = rp.get("original_max_position_embeddings", 8192)
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            out.append(1)
        elif wavelen > low_freq_wavelen:
            out.append(factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def read_stories_tokenizer():
    import gguf
    r = gguf.GGUFReader(STORIES_GGUF)
    f = r.fields
    tokens = [bytes(f["tokenizer.ggml.tokens"].parts[i]).decode("utf-8") for i in f["tokenizer.ggml.tokens"].data]
    scores = [float(f["tokenizer.ggml.scores"].parts[i][0]) for i in f["tokenizer.ggml.scores"].data]
    types = [int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data]
    assert len(tokens) == 512
    return tokens, scores, types


FILE_TYPES = {  # name -> (GGML type for 2-D weights, general.file_type)
    "f32": ("F32", 0),
    "q8_0": ("Q8_0", 7),
    "q4_0": ("Q4_0", 2),
    "q4_1": ("Q4_1", 3),
}


def write_gguf(name, model, cfg, arch, ftype, path):
    import gguf
    qname, file_type = FILE_TYPES[ftype]
    qtype = gguf.GGMLQuantizationType[qname]
    w = gguf.GGUFWriter(path, arch)
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name(name)
    # TextModel.set_gguf_parameters
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(float(cfg.rope_parameters["rope_theta"]))
    w.add_layer_norm_rms_eps(float(cfg.rms_norm_eps))
    head_dim = getattr(cfg, "head_dim", None)
    if head_dim is not None:           # written when config.json carries head_dim
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    else:
        head_dim = cfg.hidden_size // cfg.num_attention_heads
    w.add_file_type(file_type)
    if arch == "llama":                # LlamaModel.set_gguf_parameters
        w.add_vocab_size(cfg.vocab_size)
        w.add_rope_dimension_count(head_dim)
    if qtype != gguf.GGMLQuantizationType.F32:
        w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    tokens, scores, types = read_stories_tokenizer()
    for i in range(len(tokens), cfg.vocab_size):  # padded vocabulary (tiny-qwen2)
        tokens.append(f"[PAD{i}]")
        scores.append(-1000.0)
        types.append(int(gguf.TokenType.UNUSED))
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    sd = model.state_dict()
    names = [k for k in sd if not (cfg.tie_word_embeddings and k == "lm_head.weight")]
    if cfg.rope_parameters.get("rope_type") == "llama3":
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(cfg))
    for hf in names:
        data = sd[hf].detach().cpu().numpy().astype(np.float32)
        if arch == "llama" and hf.endswith(("q_proj.weight", "q_proj.bias")):
            data = llama_permute(data, cfg.num_attention_heads, cfg.num_attention_heads)
        elif arch == "llama" and hf.endswith(("k_proj.weight", "k_proj.bias")):
            data = llama_permute(data, cfg.num_attention_heads, cfg.num_key_value_heads)
        gname = hf_to_gguf_name(hf)
        data = np.ascontiguousarray(data)
        if data.ndim >= 2 and qtype != gguf.GGMLQuantizationType.F32:
            q = gguf.quants.quantize(data, qtype)
            w.add_tensor(gname, q, raw_dtype=qtype)
        else:
            w.add_tensor(gname, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "models"))
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    import torch
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for name in MODELS:
        if args.only and name not in args.only:
            continue
        model, cfg, d = make_hf(name, args.out)
        print(f"{name}: {sum(p.numel() for p in model.parameters())} params -> {d}")
        gg = MODELS[name][2]
        if gg:
            arch, ftypes = gg
            for ft in ftypes:
                path = os.path.join(d, f"{name}-{ft}.gguf")
                write_gguf(name, model, cfg, arch, ft, path)
                print(f"  {os.path.basename(path)} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
