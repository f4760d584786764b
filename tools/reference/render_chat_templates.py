#!/usr/bin/env python3
"""Golden renderings of real chat templates with Python jinja2, set up as transformers'
apply_chat_template does, for tests/chat/test_chat_template_golden.cc.

The environment is jinja2's ImmutableSandboxedEnvironment(trim_blocks=True,
lstrip_blocks=True) with the loopcontrols extension and a `{% generation %}` tag, HF's
tojson filter (json.dumps with ensure_ascii=False), raise_exception, strftime_now with a
fixed clock, dict and namespace globals. The variables are HF's: tools and documents
default to None, add_generation_prompt to False, bos_token/eos_token to the tokenizer's;
message keys with null values are dropped and a message's reasoning is offered under
reasoning_content and thinking (transformers 5.x).

Writes tests/data/chat_templates/conversations.json (the contexts) and one
<template>.json per template with, per conversation, the rendering or the fact that
jinja2 raised. With --check-transformers it also renders every case with transformers'
own render_jinja_template and fails on any difference (run it with a Python that has
transformers, e.g. /opt/refenv/bin/python).
"""

import argparse
import datetime
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOW = datetime.datetime(2025, 7, 10, 12, 0, 0)
NOW_ISO = "2025-07-10T12:00:00Z"

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}},
            "required": ["query"],
        },
    },
}


def conversations():
    """Named contexts covering the shapes chat templates branch on."""
    sys_msg = {"role": "system", "content": "You are a helpful assistant."}
    tool_call = {
        "id": "abc123xyz",
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}},
    }
    tool_call_str = {
        "id": "def456uvw",
        "type": "function",
        "function": {"name": "search", "arguments": "{\"query\": \"tessera engine\", \"max_results\": 3}"},
    }
    return {
        "single_user_gen": {
            "messages": [{"role": "user", "content": "Hello!"}],
            "add_generation_prompt": True,
        },
        "system_multiturn": {
            "messages": [
                sys_msg,
                {"role": "user", "content": "What is 2 + 2?"},
                {"role": "assistant", "content": "2 + 2 = 4."},
                {"role": "user", "content": "And times 3?"},
            ],
            "add_generation_prompt": True,
        },
        "multiturn_no_gen": {
            "messages": [
                {"role": "user", "content": "Hi there"},
                {"role": "assistant", "content": "Hello! How can I help?"},
                {"role": "user", "content": "Tell me a joke."},
                {"role": "assistant", "content": "Why did the chicken cross the road?"},
            ],
            "add_generation_prompt": False,
        },
        "non_ascii": {
            "messages": [
                {"role": "system", "content": "Réponds en français, s'il te plaît."},
                {"role": "user", "content": "你好，世界！ Ça va? 🚀 Ωmega — «quotes» \"double\" 'single'\ttab\\back"},
            ],
            "add_generation_prompt": True,
        },
        "tools_call": {
            "messages": [
                {"role": "user", "content": "What's the weather in Paris?"},
                {"role": "assistant", "content": "", "tool_calls": [tool_call]},
                {"role": "tool", "tool_call_id": "abc123xyz", "name": "get_weather", "content": "{\"temperature\": 22, \"sky\": \"sunny\"}"},
                {"role": "assistant", "content": "It is 22°C and sunny in Paris."},
                {"role": "user", "content": "Thanks!"},
            ],
            "tools": [WEATHER_TOOL, SEARCH_TOOL],
            "add_generation_prompt": True,
        },
        "tools_string_args": {
            "messages": [
                sys_msg,
                {"role": "user", "content": "Search for tessera."},
                {"role": "assistant", "content": None, "tool_calls": [tool_call_str]},
                {"role": "tool", "tool_call_id": "def456uvw", "content": "3 results found."},
            ],
            "tools": [SEARCH_TOOL],
            "add_generation_prompt": True,
        },
        "tools_no_calls": {
            "messages": [{"role": "user", "content": "Use a tool if needed: weather in Oslo?"}],
            "tools": [WEATHER_TOOL],
            "add_generation_prompt": True,
        },
        "reasoning": {
            "messages": [
                {"role": "user", "content": "Is 17 prime?"},
                {"role": "assistant", "content": "Yes, 17 is prime.", "reasoning_content": "17 has no divisors other than 1 and itself."},
                {"role": "user", "content": "And 21?"},
            ],
            "add_generation_prompt": True,
            "enable_thinking": True,
        },
        "thinking_disabled": {
            "messages": [{"role": "user", "content": "Quick answer: capital of Japan?"}],
            "add_generation_prompt": True,
            "enable_thinking": False,
        },
        "custom_special_tokens": {
            "messages": [
                {"role": "user", "content": "one"},
                {"role": "assistant", "content": "two"},
            ],
            "bos_token": "<BOS>",
            "eos_token": "<EOS>",
        },
        "bad_role_order": {
            "messages": [
                {"role": "assistant", "content": "I speak first."},
                {"role": "assistant", "content": "Twice."},
            ],
            "add_generation_prompt": False,
        },
    }


class GenerationTag(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}` renders its body (HF's AssistantTracker
    without the index tracking)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def strftime_now(fmt):
        return NOW.strftime(fmt)

    class Namespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                Namespace._check(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name, value):
            Namespace._check(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check(name):
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(f"underscore-prefixed namespace attribute {name!r}")

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = lambda *a, **k: dict(*a, **k)
    env.globals["namespace"] = Namespace
    return env


REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def normalize_message(m):
    m = {k: v for k, v in m.items() if v is not None}
    reasoning = next((m[k] for k in REASONING_FIELDS if m.get(k) is not None), None)
    if reasoning is not None:
        m = {"thinking": reasoning, **m, "reasoning_content": reasoning}
    return m


def hf_variables(context, bos, eos):
    variables = {}
    if bos is not None:
        variables["bos_token"] = bos
    if eos is not None:
        variables["eos_token"] = eos
    variables.update(tools=None, documents=None, add_generation_prompt=False)
    for k, v in context.items():
        variables[k] = [normalize_message(m) for m in v] if k == "messages" else v
    return variables


def render(env, source, context, bos, eos, hf=True):
    try:
        variables = hf_variables(context, bos, eos) if hf else context
        return {"output": env.from_string(source).render(**variables)}
    except Exception as e:  # jinja2 raised: the C++ engine must raise too
        return {"error": f"{type(e).__name__}: {e}"}


def special_token(config, key):
    v = config.get(key)
    if isinstance(v, dict):
        v = v.get("content")
    return v if isinstance(v, str) else None


def template_sources(shared):
    """(golden name, path relative to shared data, template text, bos, eos)."""
    out = []
    for path in sorted(glob.glob(os.path.join(shared, "chat-templates/jinja/*.jinja")) +
                       glob.glob(os.path.join(shared, "chat-templates/jinja/mistral/*.jinja"))):
        rel = os.path.relpath(path, shared)
        name = rel.replace("chat-templates/jinja/", "").replace("/", "_").removesuffix(".jinja")
        with open(path, encoding="utf-8") as f:
            out.append((name, rel, f.read(), "<s>", "</s>"))
    for path in sorted(glob.glob(os.path.join(shared, "tokenizers/*/tokenizer_config.json"))):
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        tmpl = config.get("chat_template")
        if isinstance(tmpl, list):
            tmpl = next((t["template"] for t in tmpl if t.get("name") == "default"), None)
        if not isinstance(tmpl, str):
            continue
        rel = os.path.relpath(path, shared)
        name = "tokenizer_" + os.path.basename(os.path.dirname(path))
        out.append((name, rel, tmpl, special_token(config, "bos_token"), special_token(config, "eos_token")))
    return out


def check_with_transformers(sources, convs, goldens):
    import transformers.utils.chat_template_utils as ctu

    class FixedDatetime(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return NOW

    ctu.datetime = FixedDatetime
    bad = 0
    for name, _, source, bos, eos in sources:
        for conv_name, ctx in convs.items():
            kwargs = {k: v for k, v in ctx.items() if k not in ("messages", "tools", "documents", "add_generation_prompt")}
            kwargs.setdefault("bos_token", bos) if bos is not None else None
            kwargs.setdefault("eos_token", eos) if eos is not None else None
            msgs = [{k: v for k, v in m.items() if v is not None} for m in ctx["messages"]]
            try:
                rendered, _ = ctu.render_jinja_template(
                    conversations=[msgs], tools=ctx.get("tools"), documents=ctx.get("documents"),
                    chat_template=source, add_generation_prompt=ctx.get("add_generation_prompt", False), **kwargs)
                got = {"output": rendered[0]}
            except Exception as e:
                got = {"error": f"{type(e).__name__}: {e}"}
            want = goldens[name]["results"][conv_name]
            if ("output" in got) != ("output" in want) or got.get("output") != want.get("output"):
                bad += 1
                print(f"MISMATCH vs transformers: {name} / {conv_name}", file=sys.stderr)
    print(f"transformers check: {bad} mismatches")
    return bad == 0


def hf_jinja_case_overrides(shared, env):
    """Cases of hf-jinja-cases.json (targets from huggingface.js) where Python jinja2
    itself renders differently: the C++ test expects Python's rendering there."""
    with open(os.path.join(shared, "chat-templates/hf-jinja-cases.json"), encoding="utf-8") as f:
        cases = json.load(f)
    overrides = {}
    for group in ("default", "custom"):
        for name, c in cases[group].items():
            out = render(env, c["chat_template"], c["data"], None, None, hf=False)
            if out.get("output") != c["target"]:
                overrides[name] = {"python_jinja2": out, "js_target": c["target"]}
    return overrides


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(REPO, "..", "shared", "data"), help="shared data dir")
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "chat_templates"))
    ap.add_argument("--check-transformers", action="store_true")
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    convs = conversations()
    env = make_env()
    sources = template_sources(args.shared)
    with open(os.path.join(args.out, "conversations.json"), "w", encoding="utf-8") as f:
        json.dump({"now": NOW_ISO, "jinja2_version": jinja2.__version__, "conversations": convs}, f,
                  ensure_ascii=False, indent=1)
        f.write("\n")
    goldens = {}
    for name, rel, source, bos, eos in sources:
        results = {c: render(env, source, ctx, bos, eos) for c, ctx in convs.items()}
        goldens[name] = {"template": rel, "bos_token": bos, "eos_token": eos, "results": results}
        with open(os.path.join(args.out, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(goldens[name], f, ensure_ascii=False, indent=1)
            f.write("\n")
        n_err = sum("error" in r for r in results.values())
        print(f"{name}: {len(results)} cases, {n_err} raise")
    import jinja_snippets
    snippets = [{"template": t, "result": render(env, t, jinja_snippets.CONTEXT, None, None, hf=False)}
                for t in jinja_snippets.SNIPPETS]
    with open(os.path.join(REPO, "tests", "data", "jinja_snippets.json"), "w", encoding="utf-8") as f:
        json.dump({"now": NOW_ISO, "context": jinja_snippets.CONTEXT, "snippets": snippets}, f,
                  ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"jinja_snippets: {len(snippets)} snippets, {sum('error' in s['result'] for s in snippets)} raise")

    overrides = hf_jinja_case_overrides(args.shared, env)
    with open(os.path.join(args.out, "hf_jinja_cases_python.json"), "w", encoding="utf-8") as f:
        json.dump(overrides, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"hf-jinja-cases where Python jinja2 differs from the JS target: {sorted(overrides)}")
    if args.check_transformers and not check_with_transformers(sources, convs, goldens):
        sys.exit(1)


if __name__ == "__main__":
    main()
