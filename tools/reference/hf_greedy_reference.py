#!/usr/bin/env python3
"""Greedy-decoding golden files from Hugging Face transformers (float32, CPU).

    python tools/reference/hf_greedy_reference.py --model tests/data/models/tiny-llama3 \
        --random-prompts --max-tokens 32 --top-k 10 --out tests/data/golden/hf-tiny-llama3.json
    python tools/reference/hf_greedy_reference.py --model M.gguf [--config-from HF_DIR] ...
    python tools/reference/hf_greedy_reference.py --model SmolLM2.Q4_1.gguf --text-prompts ...

--model is a transformers directory (config.json + model.safetensors) or a .gguf file, which
transformers loads with `gguf_file=` (it dequantizes every tensor to float32 with gguf-py and
un-permutes llama q/k rows). transformers' GGUF loader ignores some metadata; --config-from
HF_DIR supplies the config instead (the weights still come from the GGUF). The script refuses
to run without it where the GGUF config would be wrong: a rope_freqs tensor (llama3 rope
scaling), or attention.key_length != the head_dim transformers derives (qwen3).

Decoding: one forward over the prompt, then one token at a time with the KV cache; the next
token is argmax of the raw logits (no logits processors, EOS does not stop). logprobs are
log_softmax of those raw logits (computed in float64 from the float32 logits). At the end the
whole sequence is run once more without cache and its logits are compared with the
incremental ones (recorded as max_abs_logit_diff_full_vs_incremental).

--calibrate-dtype bfloat16: after the main run, the same prompts are decoded again with the model
loaded in that dtype (from_pretrained(dtype=...), which keeps rope's inv_freq in float32 as an
engine would; model.to(bfloat16) would round it too, about doubling the noise; the logits come
out in that dtype, and a GGUF's dequantized weights are rounded to it) and compared with
the main run by the CUDA test's criteria (tests/cuda/test_cuda_model.cc): tokens compared up to
the first divergence of each case, max |logprob diff| of the chosen token where both agree, and
at each first divergence whether each token is in the other's top-5. That is the noise level
of the dtype itself, recorded as summary.calibration and printed.

Output JSON: model, source, generator, transformers_version, torch_version, gguf_version,
dtype, max_tokens, top_k, cases[{prompt_token_ids, token_ids, logprobs [{"<id>": lp} top-K per
step], token_logprobs, top1_margins, prompt_text?, chat?}], plus summary statistics.
"""
import argparse
import datetime
import json
import math
import os
import sys

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TINY_PROMPT_LENGTHS = [1, 2, 5, 17, 33, 64, 100, 150]
TINY_PROMPT_SEED = 20240601
FIRST_NON_SPECIAL_ID = 3   # tiny models use the stories260K vocabulary: 0 <unk>, 1 <s>, 2 </s>
TINY_TOKENIZER_SIZE = 512  # ids >= 512 (tiny-qwen2 padding) are not real tokens

# Natural-text prompts for the real model (SmolLM2). "chat": apply the model's chat template.
TEXT_PROMPTS = [
    {"text": "The capital of France is", "chat": False},
    {"text": "Once upon a time, in a small village at the edge of a great forest, there lived", "chat": False},
    {"text": "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n", "chat": False},
    {"text": "What is the boiling point of water at sea level?", "chat": True},
    {"text": "Write a short poem about the ocean.", "chat": True},
    {"text": "Translate to French: I would like a cup of coffee, please.", "chat": True},
    {"text": "1, 2, 3, 5, 8, 13, 21,", "chat": False},
    {"text": (
        "The history of computing is longer than the history of computing hardware and modern "
        "computing technology and includes the history of methods intended for pen and paper or "
        "for chalk and slate, with or without the aid of tables. Digital computing is intimately "
        "tied to the representation of numbers. But long before abstractions like the number "
        "arose, there were mathematical concepts to serve the purposes of civilization. These "
        "concepts are implicit in concrete practices such as one-to-one correspondence, the basis "
        "of counting, comparison, measurement, and early forms of arithmetic. The earliest known "
        "tool for use in computation was the abacus, developed in the period between 2700 and 2300 "
        "BCE in Sumer. Summarize the paragraph above in one sentence."), "chat": True},
    {"text": ("Photosynthesis is the process by which green plants, algae and some bacteria convert "
              "light energy into chemical energy. During this process, carbon dioxide and water are "
              "combined to produce glucose and oxygen. The light-dependent reactions take place in the "
              "thylakoid membranes, while the Calvin cycle takes place in the stroma. In summary,"),
     "chat": False},
    {"text": "List three primary colors.", "chat": True},
]


def tiny_prompts(seed=TINY_PROMPT_SEED, lengths=TINY_PROMPT_LENGTHS, hi=TINY_TOKENIZER_SIZE):
    rng = np.random.default_rng(seed)
    return [[int(x) for x in rng.integers(FIRST_NON_SPECIAL_ID, hi, size=n)] for n in lengths]


def gguf_metadata(path):
    import gguf
    r = gguf.GGUFReader(path)
    arch = r.fields["general.architecture"].contents()
    fields = {k: f for k, f in r.fields.items()}

    def get(key, default=None):
        f = fields.get(key)
        if f is None:
            return default
        try:
            return f.contents()
        except Exception:
            return default
    types = sorted({t.tensor_type.name for t in r.tensors})
    names = {t.name for t in r.tensors}
    return arch, get, types, names


def load_model(args, dtype):
    import torch
    import transformers
    source = {}
    if args.model.endswith(".gguf"):
        d, f = os.path.dirname(os.path.abspath(args.model)), os.path.basename(args.model)
        arch, get, types, names = gguf_metadata(args.model)
        gcfg = transformers.AutoConfig.from_pretrained(d, gguf_file=f)
        problems = []
        if "rope_freqs.weight" in names and gcfg.rope_parameters.get("rope_type", "default") == "default":
            problems.append("the GGUF has rope_freqs (llama3 rope scaling) which transformers' GGUF loader ignores")
        kl = get(f"{arch}.attention.key_length")
        if kl is not None and getattr(gcfg, "head_dim", None) not in (None, kl):
            problems.append(f"{arch}.attention.key_length={kl} but transformers derives head_dim={gcfg.head_dim}")
        if kl is not None and getattr(gcfg, "head_dim", None) is None and kl != gcfg.hidden_size // gcfg.num_attention_heads:
            problems.append(f"{arch}.attention.key_length={kl} != hidden/heads")
        cfg = gcfg
        if args.config_from:
            cfg = transformers.AutoConfig.from_pretrained(args.config_from)
            for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                        "intermediate_size", "vocab_size", "tie_word_embeddings"):
                a, b = getattr(gcfg, key), getattr(cfg, key)
                if a != b:
                    raise SystemExit(f"--config-from {args.config_from}: {key}={b} but the GGUF says {a}")
            if abs(gcfg.rope_parameters["rope_theta"] - cfg.rope_parameters["rope_theta"]) > 1e-3:
                raise SystemExit("--config-from: rope_theta differs from the GGUF")
            if abs(gcfg.rms_norm_eps - cfg.rms_norm_eps) > 1e-9:
                raise SystemExit("--config-from: rms_norm_eps differs from the GGUF")
            source["config"] = f"{os.path.relpath(args.config_from, REPO)}/config.json (weights from the GGUF)"
        elif problems:
            raise SystemExit("transformers would misread this GGUF: " + "; ".join(problems) +
                             ". Pass --config-from <HF dir with the same model>.")
        model = transformers.AutoModelForCausalLM.from_pretrained(
            d, gguf_file=f, config=cfg, dtype=getattr(torch, dtype), attn_implementation="eager")
        source.update({"format": "gguf", "file": rel(args.model), "sha256": sha256(args.model),
                       "gguf_architecture": arch,
                       "tensor_types": types,
                       "loader": f"transformers from_pretrained(gguf_file=...): gguf-py dequantize to {dtype}"
                                 + (", llama q/k un-permuted" if arch == "llama" else "")})
    else:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            args.model, dtype=getattr(torch, dtype), attn_implementation="eager")
        source.update({"format": "safetensors", "dir": rel(args.model),
                       "loader": "transformers from_pretrained"})
    model.eval()
    source["class"] = type(model).__name__
    return model, source


def sha256(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def rel(p):
    p = os.path.abspath(p)
    return os.path.relpath(p, REPO) if p.startswith(REPO + os.sep) else p


def greedy(model, prompt_ids, max_tokens, top_k, device="cpu"):
    import torch
    with torch.no_grad():
        ids = torch.tensor([prompt_ids], dtype=torch.long, device=device)
        out = model(input_ids=ids, use_cache=True)
        past = out.past_key_values
        logits = out.logits[0, -1].float()
        gen, lps, tok_lps, margins, inc_logits = [], [], [], [], []
        for step in range(max_tokens):
            inc_logits.append(logits.clone())
            lp = torch.log_softmax(logits.double(), dim=-1)
            top = torch.topk(lp, top_k + 1)
            tid = int(torch.argmax(logits))
            # argmax of the logits must be the top of the logprobs (first index on ties)
            assert float(lp[tid]) == float(top.values[0]), "argmax mismatch"
            gen.append(tid)
            tok_lps.append(float(lp[tid]))
            margins.append(float(top.values[0] - top.values[1]))
            lps.append({str(int(i)): round(float(v), 6) for i, v in zip(top.indices[:top_k], top.values[:top_k])})
            if step + 1 == max_tokens:
                break
            out = model(input_ids=torch.tensor([[tid]], device=device), past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[0, -1].float()
        # Cross-check: one full forward over prompt + generated tokens (no cache).
        full = torch.tensor([prompt_ids + gen[:-1]], dtype=torch.long, device=device)
        fl = model(input_ids=full, use_cache=False).logits[0].float()
        n = len(prompt_ids)
        diff = max(float((fl[n - 1 + i] - inc_logits[i]).abs().max()) for i in range(len(gen)))
    return gen, lps, tok_lps, margins, diff


def compare_runs(ref_cases, cases):
    """The CUDA test's criteria, with ref_cases (the main run) in the role of the golden."""
    compared, max_diff, divergences = 0, 0.0, []
    top5 = lambda lps: sorted(lps, key=lps.get, reverse=True)[:5]
    for ci, (ref, c) in enumerate(zip(ref_cases, cases)):
        for i, (r, t) in enumerate(zip(ref["token_ids"], c["token_ids"])):
            if r == t:
                compared += 1
                max_diff = max(max_diff, abs(c["token_logprobs"][i] - ref["token_logprobs"][i]))
                continue
            divergences.append({"case": ci, "position": i, "main_token": r, "token": t,
                                "in_main_top5": str(t) in top5(ref["logprobs"][i]),
                                "main_in_top5": str(r) in top5(c["logprobs"][i]),
                                "main_top1_margin": ref["top1_margins"][i]})
            break
    return {"positions_compared": compared, "cases_diverged": len(divergences),
            "max_abs_logprob_diff": round(max_diff, 6),
            "all_divergences_within_top5": all(d["in_main_top5"] and d["main_in_top5"] for d in divergences),
            "divergences": divergences}


def decode_cases(model, cases_in, args):
    cases, all_margins, max_diff = [], [], 0.0
    for c in cases_in:
        gen, lps, tok_lps, margins, diff = greedy(model, c["prompt_token_ids"], args.max_tokens, args.top_k,
                                                  args.device)
        # sanity: the chosen token's logprob is the max of the top-K and is its first entry
        for step, (t, d, tl) in enumerate(zip(gen, lps, tok_lps)):
            best = max(d.values())
            assert abs(round(tl, 6) - best) < 1e-9 and str(t) in d and d[str(t)] == best, (step, t, d)
            assert all(v <= 0.0 for v in d.values())
        case = dict(c)
        case.update({"token_ids": gen, "logprobs": lps, "token_logprobs": [round(x, 6) for x in tok_lps],
                     "top1_margins": [round(m, 6) for m in margins],
                     "max_abs_logit_diff_full_vs_incremental": diff})
        cases.append(case)
        all_margins += margins
        max_diff = max(max_diff, diff)
        print(f"  prompt {len(c['prompt_token_ids']):4d} tokens -> {gen[:10]}... "
              f"min margin {min(margins):.4f}, {len(set(gen))} distinct tokens, full-vs-incremental {diff:.2e}",
              file=sys.stderr)
    return cases, np.array(all_margins), max_diff


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="transformers directory or .gguf file")
    ap.add_argument("--name", help="model name recorded in the JSON (default: from the path)")
    ap.add_argument("--config-from", help="HF directory whose config.json is used for a GGUF")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--random-prompts", action="store_true",
                   help=f"seeded random prompts of lengths {TINY_PROMPT_LENGTHS}, ids in [3, 512)")
    g.add_argument("--text-prompts", action="store_true",
                   help="the built-in natural-text prompts, tokenized by the model's own tokenizer")
    g.add_argument("--prompts-json", help="JSON file: list of token-id lists")
    ap.add_argument("--prompt-seed", type=int, default=TINY_PROMPT_SEED)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="torch device: cpu or cuda (large models)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                    help="weights and activations (float16: the reference of the engine's dtype half)")
    ap.add_argument("--random-vocab", type=int, default=TINY_TOKENIZER_SIZE,
                    help="--random-prompts draw ids in [3, this)")
    ap.add_argument("--calibrate-dtype", choices=["float32", "bfloat16", "float16"],
                    help="decode again in this dtype and record how far that is from the main run")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.calibrate_dtype and args.top_k < 5:
        ap.error("--calibrate-dtype needs --top-k >= 5 (the top-5 criterion)")

    import torch
    import transformers
    torch.set_num_threads(args.threads)
    model, source = load_model(args, args.dtype)
    model.to(args.device)

    cases_in = []
    if args.random_prompts:
        for p in tiny_prompts(args.prompt_seed, hi=args.random_vocab):
            cases_in.append({"prompt_token_ids": p})
        source["prompts"] = (f"numpy default_rng({args.prompt_seed}).integers(3, {args.random_vocab}, size=n) for n in "
                             f"{TINY_PROMPT_LENGTHS} (tools/reference/hf_greedy_reference.py tiny_prompts)")
    elif args.prompts_json:
        with open(args.prompts_json) as f:
            for p in json.load(f):
                cases_in.append({"prompt_token_ids": [int(x) for x in p]})
        source["prompts"] = rel(args.prompts_json)
    else:
        if not args.model.endswith(".gguf"):
            tok = transformers.AutoTokenizer.from_pretrained(args.model)
        else:
            tok = transformers.AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(args.model)),
                                                             gguf_file=os.path.basename(args.model))
        for tp in TEXT_PROMPTS:
            if tp["chat"]:
                text = tok.apply_chat_template([{"role": "user", "content": tp["text"]}],
                                               add_generation_prompt=True, tokenize=False)
                ids = tok(text, add_special_tokens=False).input_ids
            else:
                text = tp["text"]
                ids = tok(text).input_ids
            cases_in.append({"prompt_token_ids": [int(x) for x in ids], "prompt_text": text,
                             "user_text": tp["text"], "chat": tp["chat"]})
        source["prompts"] = ("built-in TEXT_PROMPTS tokenized by transformers' tokenizer from the same file "
                             f"({type(tok).__name__}); chat cases: apply_chat_template(add_generation_prompt=True, "
                             "tokenize=False) then tokenize without adding special tokens; others: tokenizer(text)")

    cases, m, max_diff = decode_cases(model, cases_in, args)
    calibration = None
    if args.calibrate_dtype:
        del model  # one model in memory at a time
        cal_model, _ = load_model(args, args.calibrate_dtype)
        cal_model.to(args.device)
        print(f"calibration run in {args.calibrate_dtype}:", file=sys.stderr)
        cal_cases, _, _ = decode_cases(cal_model, cases_in, args)
        calibration = {"dtype": args.calibrate_dtype, **compare_runs(cases, cal_cases)}
        for d in calibration["divergences"]:
            print(f"  case {d['case']} diverges at {d['position']}: {args.dtype} {d['main_token']} "
                  f"(margin {d['main_top1_margin']:.4f}), {args.calibrate_dtype} {d['token']}; "
                  f"in the other's top-5: {d['in_main_top5']} / {d['main_in_top5']}", file=sys.stderr)
        print(f"{args.calibrate_dtype} vs {args.dtype}: {calibration['positions_compared']} positions compared, "
              f"{calibration['cases_diverged']} of {len(cases)} cases diverged "
              f"(all within top-5: {calibration['all_divergences_within_top5']}), "
              f"max |logprob diff| {calibration['max_abs_logprob_diff']:.4f}", file=sys.stderr)

    name = args.name or (os.path.splitext(os.path.basename(args.model))[0] if args.model.endswith(".gguf")
                         else os.path.basename(os.path.normpath(args.model)))
    doc = {
        "model": name,
        "source": source,
        "generator": "tools/reference/hf_greedy_reference.py",
        "generated_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "gguf_version": _pkg_version("gguf"),
        "numpy_version": np.__version__,
        "dtype": args.dtype,
        "device": args.device,
        "attn_implementation": "eager",
        "decoding": "greedy argmax of raw logits, KV cache, never stops at EOS; logprobs = log_softmax(raw logits)",
        "max_tokens": args.max_tokens,
        "top_k": args.top_k,
        "summary": {
            "cases": len(cases),
            "mean_top1_margin": round(float(m.mean()), 4),
            "median_top1_margin": round(float(np.median(m)), 4),
            "min_top1_margin": round(float(m.min()), 6),
            "frac_steps_margin_below_0.1": round(float((m < 0.1).mean()), 4),
            "max_abs_logit_diff_full_vs_incremental": max_diff,
            "distinct_tokens_per_case": [len(set(c["token_ids"])) for c in cases],
            **({"calibration": calibration} if calibration else {}),
        },
        "cases": cases,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"{args.out}: {len(cases)} cases, top-1 margin mean {m.mean():.3f}, median {np.median(m):.3f}, "
          f"min {m.min():.4f}, <0.1 on {(m < 0.1).mean() * 100:.1f}% of steps", file=sys.stderr)


def _pkg_version(name):
    try:
        import importlib.metadata as md
        return md.version(name)
    except Exception:
        return None


if __name__ == "__main__":
    main()
