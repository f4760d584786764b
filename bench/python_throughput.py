#!/usr/bin/env python3
"""Offline throughput through the Python package, as `tessera bench throughput` measures it in
C++: N requests of random token ids (--input-len each, ids 100..20099 as the C++ benchmark
draws them), --output-len tokens each (ignore_eos, temperature 1), all given to one
LLM.generate. The ratio of the two figures is the binding's overhead (docs/benchmarks.md).

  PYTHONPATH=build/python python3 bench/python_throughput.py --model M --num-prompts 1000 \
      --input-len 1000 --output-len 1000 --max-model-len 4096 --max-num-seqs 512 \
      --max-num-batched-tokens 16384 --gpu-memory-utilization 0.95
"""

from __future__ import annotations

import argparse
import json
import random
import time

from tessera import LLM, SamplingParams


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--num-prompts", type=int, default=64)
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--max-model-len", type=int)
    ap.add_argument("--max-num-seqs", type=int)
    ap.add_argument("--max-num-batched-tokens", type=int)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output-json")
    args = ap.parse_args()

    llm = LLM(model=args.model, max_model_len=args.max_model_len, max_num_seqs=args.max_num_seqs,
              max_num_batched_tokens=args.max_num_batched_tokens,
              gpu_memory_utilization=args.gpu_memory_utilization, device=args.device)
    rng = random.Random(args.seed)
    prompts = [{"prompt_token_ids": [100 + rng.randrange(20000) for _ in range(args.input_len)]}
               for _ in range(args.num_prompts)]
    params = SamplingParams(temperature=1.0, top_p=1.0, ignore_eos=True, max_tokens=args.output_len, seed=args.seed)
    start = time.perf_counter()
    outputs = llm.generate(prompts, params, use_tqdm=False)
    elapsed = time.perf_counter() - start
    prompt_tokens = sum(len(o.prompt_token_ids) for o in outputs)
    output_tokens = sum(len(c.token_ids) for o in outputs for c in o.outputs)
    print(f"Throughput: {len(outputs) / elapsed:.2f} requests/s, {(prompt_tokens + output_tokens) / elapsed:.2f} "
          f"total tokens/s, {output_tokens / elapsed:.2f} output tokens/s")
    print(f"Total num prompt tokens: {prompt_tokens}\nTotal num output tokens: {output_tokens}")
    if args.output_json:
        with open(args.output_json, "w") as f:
            json.dump({"elapsed_time": elapsed, "num_requests": len(outputs), "prompt_tokens": prompt_tokens,
                       "output_tokens": output_tokens, "output_tokens_per_second": output_tokens / elapsed}, f)


if __name__ == "__main__":
    main()
