#!/usr/bin/env python3
"""Real prompt tails for tests/unit/test_reasoning_parsers.cc.

A reasoning parser decides its starting state from how the rendered prompt ends: a template
that opens the thinking block ("<think>\\n") means the reply starts inside the reasoning, one
that closes it (Qwen3's enable_thinking=false renders "<think>\\n\\n</think>\\n\\n") means the
reply is all content. This renders the templates we have with Python jinja2, set up as in
render_chat_templates.py, and writes per case the whole prompt, its tail after the last
assistant header and what that tail says about the thinking block ("open", "closed",
"none"). Templates we do not ship (Qwen3-2507 thinking, DeepSeek-V3.1) are written out by
hand from their published generation prompts and marked "handwritten".

Writes tests/data/reasoning/prompt_tails.json. Needs only jinja2.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jinja2

from render_chat_templates import REPO, make_env, render, special_token

# Where the generation prompt starts; the C++ parsers cut at the same headers.
ASSISTANT_HEADERS = ["<|im_start|>assistant", "<｜Assistant｜>"]

WEATHER_CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}

SINGLE = [{"role": "user", "content": "What is 2+2?"}]
WITH_SYSTEM = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2+2?"}]
# A finished earlier turn whose content still carries its thinking: templates strip or keep it.
MULTI_TURN = [
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "<think>\nThe user greets me.\n</think>\n\nHello!"},
    {"role": "user", "content": "What is 2+2?"},
]
# Qwen3 keeps the reasoning of assistant turns after the last user query (a tool loop).
TOOL_LOOP = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "reasoning_content": "I should call the tool.",
     "tool_calls": [WEATHER_CALL]},
    {"role": "tool", "content": '{"temp": 21}'},
]


def tail_after_header(prompt):
    cut = -1
    for h in ASSISTANT_HEADERS:
        i = prompt.rfind(h)
        if i >= 0 and i + len(h) > cut:
            cut = i + len(h)
    return prompt if cut < 0 else prompt[cut:]


def think_state(tail):
    o, c = tail.rfind("<think>"), tail.rfind("</think>")
    if o < 0 and c < 0:
        return "none"
    return "open" if o > c else "closed"


def load_template(shared, rel):
    path = os.path.join(shared, rel)
    with open(path, encoding="utf-8") as f:
        if rel.endswith(".json"):
            config = json.load(f)
            return config["chat_template"], special_token(config, "bos_token"), special_token(config, "eos_token")
        return f.read(), "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.path.join(REPO, "..", "shared", "data"), help="shared data dir")
    shared = ap.parse_args().shared
    env = make_env()
    r1_qwen = "chat-templates/jinja/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
    r1_llama = "chat-templates/jinja/deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja"
    qwen3 = "tokenizers/qwen3/tokenizer_config.json"
    dsv3 = "tokenizers/deepseek_v3/tokenizer_config.json"
    rendered = [
        ("r1_distill_qwen_single", r1_qwen, SINGLE, {}, "open"),
        ("r1_distill_qwen_system", r1_qwen, WITH_SYSTEM, {}, "open"),
        ("r1_distill_qwen_multi_turn", r1_qwen, MULTI_TURN, {}, "open"),
        ("r1_distill_llama_single", r1_llama, SINGLE, {}, "open"),
        ("qwen3_default", qwen3, SINGLE, {}, "none"),
        ("qwen3_thinking_true", qwen3, MULTI_TURN, {"enable_thinking": True}, "none"),
        ("qwen3_thinking_false", qwen3, SINGLE, {"enable_thinking": False}, "closed"),
        ("qwen3_thinking_false_multi_turn", qwen3, MULTI_TURN, {"enable_thinking": False}, "closed"),
        ("qwen3_tool_loop", qwen3, TOOL_LOOP, {}, "none"),
        ("deepseek_v3_multi_turn", dsv3, MULTI_TURN, {}, "none"),
    ]
    cases = []
    for name, rel, messages, kwargs, expect in rendered:
        source, bos, eos = load_template(shared, rel)
        context = {"messages": messages, "add_generation_prompt": True, **kwargs}
        result = render(env, source, context, bos, eos)
        if "error" in result:
            sys.exit(f"{name}: {result['error']}")
        prompt = result["output"]
        tail = tail_after_header(prompt)
        if think_state(tail) != expect:
            sys.exit(f"{name}: tail {tail!r} is {think_state(tail)}, expected {expect}")
        cases.append({"name": name, "source": rel, "kwargs": kwargs, "prompt": prompt, "tail": tail,
                      "think": expect})

    # Published generation prompts of templates not in shared data.
    qwen3_source, qwen3_bos, qwen3_eos = load_template(shared, qwen3)
    qwen3_prompt = render(env, qwen3_source, {"messages": SINGLE, "add_generation_prompt": True},
                          qwen3_bos, qwen3_eos)["output"]
    handwritten = [
        # Qwen3-*-Thinking-2507: the generation prompt is "<|im_start|>assistant\n<think>\n".
        ("qwen3_2507_thinking", qwen3_prompt + "<think>\n", "open"),
        # DeepSeek-V3.1: "<｜Assistant｜>" then "<think>" (thinking=True) or "</think>".
        ("deepseek_v31_thinking", "<｜begin▁of▁sentence｜><｜User｜>What is 2+2?<｜Assistant｜><think>", "open"),
        ("deepseek_v31_no_thinking", "<｜begin▁of▁sentence｜><｜User｜>What is 2+2?<｜Assistant｜></think>", "closed"),
    ]
    for name, prompt, expect in handwritten:
        tail = tail_after_header(prompt)
        assert think_state(tail) == expect, name
        cases.append({"name": name, "source": "handwritten", "kwargs": {}, "prompt": prompt, "tail": tail,
                      "think": expect})

    out = os.path.join(REPO, "tests", "data", "reasoning", "prompt_tails.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/reference/make_reasoning_cases.py", "jinja2_version": jinja2.__version__,
                   "assistant_headers": ASSISTANT_HEADERS, "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    for c in cases:
        print(f"{c['name']}: {c['think']} {c['tail']!r}")


if __name__ == "__main__":
    main()
