#!/usr/bin/env python3
"""A batch job of the kind users run offline through vLLM's Python API: N chat prompts that
share a fixed system prompt (~250 tokens) and a one-shot example, each with its own question
and context (~300 tokens), answered greedily with max_tokens=100 by one LLM.chat. Prints the
wall time of the chat call and the tokens it ran; --no-prefix-caching is the control.

  PYTHONPATH=build/python python3 bench/seed_batch_job.py --model M [--num-prompts 4482] \
      [--no-prefix-caching] [--output-json F]

The texts are words drawn from a fixed list under --seed, so every run sends the same prompts.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from tessera import LLM, SamplingParams

WORDS = ("river model engine table market signal window garden theory record pattern energy "
         "harbor lantern method option policy quarter reason season series shadow summer system "
         "teacher thought trouble village weather winter account balance captain chapter climate "
         "college context control country current distance economy element evening example factor "
         "feature figure finance history holiday husband journey justice kitchen library machine "
         "measure meeting memory message minute morning network officer opinion package partner "
         "patient payment picture pressure problem process product program project purpose quality "
         "question reading science section service society station student subject support surface "
         "teaching theater traffic training variety version village volume welcome witness writing").split()


def text(rng: random.Random, words: int) -> str:
    out = []
    for i in range(words):
        w = rng.choice(WORDS)
        out.append(w.capitalize() if i == 0 or out[-1].endswith(".") else w)
        if rng.random() < 0.08:
            out[-1] += "."
    return " ".join(out) + "."


def conversations(num_prompts: int, seed: int) -> list[list[dict]]:
    rng = random.Random(seed)
    system = "You are a careful assistant for a research team. " + text(rng, 225)
    example_q = "Context: " + text(rng, 120) + "\nQuestion: " + text(rng, 20)
    example_a = text(rng, 60)
    shared = [{"role": "system", "content": system}, {"role": "user", "content": example_q},
              {"role": "assistant", "content": example_a}]
    return [shared + [{"role": "user", "content": "Context: " + text(rng, 245) + "\nQuestion: " + text(rng, 25)}]
            for _ in range(num_prompts)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--num-prompts", type=int, default=4482)
    ap.add_argument("--max-tokens", type=int, default=100)
    ap.add_argument("--prefix-caching", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--max-model-len", type=int, default=4096)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output-json")
    args = ap.parse_args()

    t0 = time.perf_counter()
    llm = LLM(model=args.model, enable_prefix_caching=args.prefix_caching, max_model_len=args.max_model_len,
              gpu_memory_utilization=args.gpu_memory_utilization, device=args.device)
    load_s = time.perf_counter() - t0
    convs = conversations(args.num_prompts, args.seed)
    params = SamplingParams(temperature=0.0, max_tokens=args.max_tokens)
    start = time.perf_counter()
    outputs = llm.chat(convs, params, use_tqdm=False)
    wall = time.perf_counter() - start
    prompt_tokens = sum(len(o.prompt_token_ids) for o in outputs)
    cached = sum(o.num_cached_tokens or 0 for o in outputs)
    output_tokens = sum(len(c.token_ids) for o in outputs for c in o.outputs)
    print(f"prefix caching {'on' if args.prefix_caching else 'off'}: {len(outputs)} prompts in {wall:.1f} s "
          f"(load {load_s:.1f} s); prompt tokens {prompt_tokens} ({prompt_tokens / len(outputs):.0f} per prompt, "
          f"{cached} from the prefix cache), output tokens {output_tokens}; "
          f"{(prompt_tokens + output_tokens) / wall:.0f} tok/s")
    if args.output_json:
        with open(args.output_json, "w") as f:
            json.dump({"prefix_caching": args.prefix_caching, "num_prompts": len(outputs), "wall_s": wall,
                       "load_s": load_s, "prompt_tokens": prompt_tokens, "cached_tokens": cached,
                       "output_tokens": output_tokens}, f)


if __name__ == "__main__":
    main()
