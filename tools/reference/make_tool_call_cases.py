#!/usr/bin/env python3
"""Reference cases for the JSON-carrying tool-call parsers (hermes, llama3_json, mistral,
deepseek_v3), for tests/unit/test_tool_parsers_json.cc.

The text of each case is what the model would generate for known tool calls: the assistant
turn is rendered with Python jinja2 through the real chat template (set up as transformers
does, see render_chat_templates.py), the prompt rendered without that turn (with the
generation prompt) is cut off the front, and the end-of-turn token off the back. The expected
calls are the ones put into the template, so the reference does not depend on any parser.
Broken variants (truncated, unclosed, malformed) expect the whole text back as content.

Arguments are compared as parsed JSON; `arguments_text` is the exact string vLLM returns:
json.dumps(arguments, ensure_ascii=False) for hermes, llama3_json and mistral's JSON list,
the raw text for mistral's [ARGS] form and for deepseek_v3.

DeepSeek-V3 has no template under chat-templates/jinja; `deepseek_v3_text` writes the tool
call part of the chat_template in DeepSeek-V3's tokenizer_config.json (deepseek-ai/DeepSeek-V3
on Hugging Face) by hand.

Writes tests/data/tool_calls/<parser>.json: [{"parser", "name", "source", "text",
"expected": {"tools_called", "content", "tool_calls": [{"name", "arguments",
"arguments_text"}]}}].
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from render_chat_templates import SEARCH_TOOL, make_env, render  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("TESSERA_SHARED_DATA", os.path.join(os.path.dirname(REPO), "shared", "data"))
TEMPLATES = os.path.join(SHARED, "chat-templates", "jinja")
OUT_DIR = os.path.join(REPO, "tests", "data", "tool_calls")

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"],
        },
    },
}
TOOLS = [WEATHER_TOOL, SEARCH_TOOL]

WEATHER = ("get_weather", {"city": "Paris", "unit": "celsius"})
SEARCH = ("search", {"query": "tessera inference engine", "max_results": 3})
NESTED = ("search", {
    "query": "東京の天気 ☀️ — \"quoted\" \\ back\nslash",
    "filters": {"lang": ["ja", "en"], "safe": True, "since": None, "weights": [0.5, -2, 1e-07, 1e16, 12345678901234567890]},
    "tab\tkey": "é\u0001",
    "empty": {},
    "list": [],
})
FLOATS = ("get_weather", {"a": 100.0, "b": 1e-05, "c": 0.0001, "d": -0.0, "e": 1e16, "f": 1e15, "g": 1.5e300, "h": 0.1})
CALL_IDS = ["abc123xyz", "def456uvw", "ghi789rst"]


def load(name):
    with open(os.path.join(TEMPLATES, name), encoding="utf-8") as f:
        return f.read()


def tool_call_messages(calls, content=None, string_args=False):
    msg = {"role": "assistant", "content": content, "tool_calls": []}
    for i, (name, args) in enumerate(calls):
        arguments = args if not string_args or isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        msg["tool_calls"].append({"id": CALL_IDS[i], "type": "function", "function": {"name": name, "arguments": arguments}})
    return msg


def generated(template, assistant, bos, eos, end_of_turn, tools=TOOLS):
    """The text the model generates for `assistant`: full rendering minus the prompt, minus
    the end-of-turn token."""
    env = make_env()
    source = load(template)
    user = [{"role": "user", "content": "What is the weather in Paris?"}]
    prompt = render(env, source, {"messages": user, "tools": tools, "add_generation_prompt": True}, bos, eos)
    full = render(env, source, {"messages": user + [assistant], "tools": tools}, bos, eos)
    if "error" in prompt or "error" in full:
        raise RuntimeError(f"{template}: {prompt.get('error') or full.get('error')}")
    prompt, full = prompt["output"], full["output"]
    assert full.startswith(prompt), f"{template}: the prompt is not a prefix of the conversation"
    text = full[len(prompt):]
    assert text.endswith(end_of_turn), f"{template}: {text!r} does not end with {end_of_turn!r}"
    return text[: len(text) - len(end_of_turn)]


def call(name, args, text=None):
    return {"name": name, "arguments": args, "arguments_text": text if text is not None else json.dumps(args, ensure_ascii=False)}


def case(parser, name, source, text, calls=None, content=None):
    """calls None: no tool call, the whole text is content."""
    if calls is None:
        expected = {"tools_called": False, "content": text, "tool_calls": []}
    else:
        expected = {"tools_called": True, "content": content, "tool_calls": calls}
    return {"parser": parser, "name": name, "source": source, "text": text, "expected": expected}


def truncate(text, marker, keep):
    """Text cut `keep` bytes into the part after `marker` (a call left unfinished)."""
    at = text.index(marker) + len(marker)
    return text[: at + keep]


# ---- hermes ----

# template: (short name, bos, eos, end of turn)
HERMES_TEMPLATES = {
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": ("Hermes-3", "<|begin_of_text|>", "<|im_end|>", "<|im_end|>\n"),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": ("Hermes-2-Pro", "<|begin_of_text|>", "<|im_end|>",
                                                            "<|im_end|>\n"),
    "Qwen-Qwen2.5-7B-Instruct.jinja": ("Qwen2.5", None, "<|im_end|>", "<|im_end|>\n"),
}


def hermes_cases():
    out = []
    for template, (short, bos, eos, eot) in HERMES_TEMPLATES.items():

        def gen(calls, content=None, string_args=False):
            return generated(template, tool_call_messages(calls, content, string_args), bos, eos, eot)

        text = gen([WEATHER])
        out.append(case("hermes", f"{short}: one call", template, text, [call(*WEATHER)]))
        text = gen([WEATHER, SEARCH])
        out.append(case("hermes", f"{short}: two calls", template, text, [call(*WEATHER), call(*SEARCH)]))
        text = gen([WEATHER, SEARCH, NESTED])
        out.append(case("hermes", f"{short}: three calls, nested unicode arguments", template, text,
                        [call(*WEATHER), call(*SEARCH), call(*NESTED)]))
        text = gen([FLOATS])
        out.append(case("hermes", f"{short}: float arguments", template, text, [call(*FLOATS)]))
        plain = generated(template, {"role": "assistant", "content": "It is sunny in Paris."}, bos, eos, eot)
        out.append(case("hermes", f"{short}: no call", template, plain))
        text = gen([WEATHER, SEARCH])
        out.append(case("hermes", f"{short}: truncated arguments", template,
                        truncate(text, '"arguments": ', 9)))
        out.append(case("hermes", f"{short}: second call truncated", template,
                        text[: text.rindex("</tool_call>") - 4]))
        # vLLM takes a final call without </tool_call> when its JSON is complete.
        unclosed = text[: text.rindex("</tool_call>")]
        out.append(case("hermes", f"{short}: last call without closing tag", template, unclosed,
                        [call(*WEATHER), call(*SEARCH)]))
        first_close = text.index("</tool_call>")
        out.append(case("hermes", f"{short}: first call without closing tag", template,
                        text[:first_close] + text[first_close + len("</tool_call>"):]))

    qwen = "Qwen-Qwen2.5-7B-Instruct.jinja"
    _, bos, eos, eot = HERMES_TEMPLATES[qwen]
    text = generated(qwen, tool_call_messages([WEATHER], "Let me check the weather."), bos, eos, eot)
    out.append(case("hermes", "Qwen: content before the call", qwen, text, [call(*WEATHER)],
                    content=text[: text.index("<tool_call>")]))
    text = generated(qwen, tool_call_messages([("search", ["a", 1, None])]), bos, eos, eot)
    out.append(case("hermes", "Qwen: arguments that are not an object", qwen, text, [call("search", ["a", 1, None])]))

    # Hermes 3 writes string arguments verbatim: compact, pretty, \u-escaped and odd-number
    # JSON all come back as json.dumps of the parsed value.
    hermes3 = "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"
    _, bos, eos, eot = HERMES_TEMPLATES[hermes3]
    for label, raw in [
        ("compact string arguments", '{"city":"Paris","days":[1,2,{"x":null}]}'),
        ("pretty string arguments", json.dumps(NESTED[1], indent=2, ensure_ascii=False)),
        ("ascii-escaped string arguments", json.dumps(NESTED[1], ensure_ascii=True)),
        ("number spellings", '{"x": 2.50, "y": 1E5, "z": -0, "w": 1e-7, "v": 0.30000000000000004, "u": -12e2}'),
        ("surrogate pair escape", '{"emoji": "\\ud83d\\ude00", "mixed": "a\\u00e9b\\/c"}'),
    ]:
        text = generated(hermes3, tool_call_messages([("search", raw)]), bos, eos, eot)
        args = json.loads(raw)
        out.append(case("hermes", f"Hermes-3: {label}", hermes3, text, [call("search", args)]))
    bad = generated(hermes3, tool_call_messages([("search", '{"city": "Paris",}')]), bos, eos, eot)
    out.append(case("hermes", "Hermes-3: trailing comma in arguments", hermes3, bad))

    one = generated(qwen, tool_call_messages([WEATHER]), *HERMES_TEMPLATES[qwen][1:])
    out.append(case("hermes", "text after the calls is dropped", qwen, one + "\nI will wait for the result.",
                    [call(*WEATHER)]))
    out.append(case("hermes", "text between calls is dropped", qwen,
                    one + "\nand also\n" + one, [call(*WEATHER), call(*WEATHER)]))
    # vLLM json.dumps whatever "arguments" holds, a JSON string or null included.
    out.append(case("hermes", "arguments given as a JSON string", "hand-written",
                    '<tool_call>\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}\n</tool_call>',
                    [call("get_weather", '{"city": "Paris"}')]))
    out.append(case("hermes", "null arguments", "hand-written",
                    '<tool_call>\n{"name": "get_weather", "arguments": null}\n</tool_call>', [call("get_weather", None)]))
    out.append(case("hermes", "name that is not a string", "hand-written",
                    '<tool_call>\n{"name": 7, "arguments": {}}\n</tool_call>'))
    out.append(case("hermes", "object without a name", "hand-written",
                    '<tool_call>\n{"function": "get_weather", "arguments": {}}\n</tool_call>'))
    out.append(case("hermes", "call without arguments", "hand-written",
                    '<tool_call>\n{"name": "get_weather"}\n</tool_call>'))
    out.append(case("hermes", "not JSON", "hand-written", "I could use <tool_call> tags here, but I won't."))
    out.append(case("hermes", "partial tag at the end", "hand-written", "Almost a call <tool_ca"))
    out.append(case("hermes", "empty reply", "hand-written", ""))
    return out


# ---- llama3_json ----

LLAMA_TEMPLATES = ["meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.3-70B-Instruct.jinja"]


def llama_cases():
    out = []
    for template in LLAMA_TEMPLATES:
        short = template.split("-", 1)[1].rsplit("-", 1)[0]

        def gen(calls):
            return generated(template, tool_call_messages(calls), "<|begin_of_text|>", "<|eot_id|>", "<|eot_id|>")

        weather, search, nested, floats = gen([WEATHER]), gen([SEARCH]), gen([NESTED]), gen([FLOATS])
        out.append(case("llama3_json", f"{short}: one call", template, weather, [call(*WEATHER)]))
        out.append(case("llama3_json", f"{short}: nested unicode arguments", template, nested, [call(*NESTED)]))
        out.append(case("llama3_json", f"{short}: float arguments", template, floats, [call(*FLOATS)]))
        # The templates render one call per turn; several are the same objects joined by "; ".
        out.append(case("llama3_json", f"{short}: two calls joined by ';'", template, weather + "; " + search,
                        [call(*WEATHER), call(*SEARCH)]))
        out.append(case("llama3_json", f"{short}: three calls joined by ';' without spaces", template,
                        ";".join([weather, nested, search]), [call(*WEATHER), call(*NESTED), call(*SEARCH)]))
        out.append(case("llama3_json", f"{short}: <|python_tag|> prefix", template, "<|python_tag|>" + weather,
                        [call(*WEATHER)]))
        out.append(case("llama3_json", f"{short}: leading whitespace", template, "\n " + weather, [call(*WEATHER)]))
        plain = generated(template, {"role": "assistant", "content": "It is sunny in Paris."},
                          "<|begin_of_text|>", "<|eot_id|>", "<|eot_id|>")
        out.append(case("llama3_json", f"{short}: no call", template, plain))
        out.append(case("llama3_json", f"{short}: text before the JSON", template, "Sure! " + weather))
        out.append(case("llama3_json", f"{short}: truncated", template, truncate(weather, '"parameters": ', 10)))
        out.append(case("llama3_json", f"{short}: second call truncated", template,
                        weather + "; " + truncate(search, '"parameters": ', 5)))

    template = LLAMA_TEMPLATES[0]
    out.append(case("llama3_json", "\"arguments\" instead of \"parameters\"", "hand-written",
                    '{"name": "get_weather", "arguments": {"city": "Paris"}}', [call("get_weather", {"city": "Paris"})]))
    out.append(case("llama3_json", "arguments before the name", "hand-written",
                    '{"parameters": {"query": "x", "n": [1, 2.0]}, "name": "search"}',
                    [call("search", {"query": "x", "n": [1, 2.0]})]))
    out.append(case("llama3_json", "JSON that is not a call", "hand-written", '{"answer": 42, "unit": "m"}'))
    out.append(case("llama3_json", "call without parameters", "hand-written", '{"name": "get_weather"}'))
    out.append(case("llama3_json", "builtin tool call (not JSON)", "hand-written",
                    '<|python_tag|>brave_search.call(query="weather in Paris")'))
    out.append(case("llama3_json", "text after the call is dropped", "hand-written",
                    '{"name": "search", "parameters": {"query": "q"}} Let me know.', [call("search", {"query": "q"})]))
    out.append(case("llama3_json", "empty reply", "hand-written", ""))
    return out


# ---- mistral ----

def mistral_cases():
    out = []
    nemo = "mistralai-Mistral-Nemo-Instruct-2407.jinja"
    list_templates = [nemo, "mistral/v7.jinja"]
    args_templates = ["mistral/v11.jinja", "mistral/v13.jinja"]

    # The v7+ templates splice |tojson|safe (Markup) into plain strings, which jinja2 then
    # HTML-escapes; arguments given as JSON strings (as OpenAI clients send them) go in verbatim.
    def gen(template, calls, content=None):
        return generated(template, tool_call_messages(calls, content, string_args=template != nemo),
                         "<s>", "</s>", "</s>")

    for template in list_templates:
        short = "Nemo" if template == nemo else "v7"
        one, two = gen(template, [WEATHER]), gen(template, [WEATHER, SEARCH, NESTED])
        out.append(case("mistral", f"{short}: one call", template, one, [call(*WEATHER)]))
        out.append(case("mistral", f"{short}: three calls, nested unicode arguments", template, two,
                        [call(*WEATHER), call(*SEARCH), call(*NESTED)]))
        out.append(case("mistral", f"{short}: float arguments", template, gen(template, [FLOATS]), [call(*FLOATS)]))
        out.append(case("mistral", f"{short}: truncated list", template, truncate(two, '"arguments": ', 12)))
        out.append(case("mistral", f"{short}: list never closed", template, two[:-1]))
        out.append(case("mistral", f"{short}: text after the list is dropped", template, one + " done",
                        [call(*WEATHER)]))
    text = gen("mistral/v7.jinja", [WEATHER], "Let me check.")
    out.append(case("mistral", "v7: content before the calls", "mistral/v7.jinja", text, [call(*WEATHER)],
                    content="Let me check."))
    plain = generated(nemo, {"role": "assistant", "content": "It is sunny in Paris."}, "<s>", "</s>", "</s>")
    out.append(case("mistral", "Nemo: no call", nemo, plain))

    for template in args_templates:
        short = template.split("/")[1].split(".")[0]
        calls = [WEATHER, SEARCH, NESTED]
        text = gen(template, calls)
        raw = [json.dumps(a, ensure_ascii=False) for _, a in calls]  # the strings given to the template
        out.append(case("mistral", f"{short}: one call", template, gen(template, [WEATHER]),
                        [call(WEATHER[0], WEATHER[1], raw[0])]))
        out.append(case("mistral", f"{short}: three calls", template, text,
                        [call(n, a, r) for (n, a), r in zip(calls, raw)]))
        text = gen(template, [SEARCH], "Searching now.")
        out.append(case("mistral", f"{short}: content before the call", template, text,
                        [call(SEARCH[0], SEARCH[1], raw[1])], content="Searching now."))
        # vLLM keeps [ARGS] arguments raw, so a truncated one is still a call; a piece
        # without '{' is no call at all.
        out.append(case("mistral", f"{short}: name without arguments", template,
                        gen(template, [WEATHER]).split("[ARGS]")[0]))
    out.append(case("mistral", "list item without arguments gets {}", "hand-written",
                    '[TOOL_CALLS][{"name": "get_weather"}]', [call("get_weather", {}, "{}")]))
    out.append(case("mistral", "list item without a name", "hand-written", '[TOOL_CALLS][{"arguments": {}}]'))
    out.append(case("mistral", "empty list", "hand-written", "[TOOL_CALLS][]"))
    out.append(case("mistral", "marker only", "hand-written", "Here you go [TOOL_CALLS]"))
    out.append(case("mistral", "partial marker at the end", "hand-written", "Tools: [TOOL_CAL"))
    return out


# ---- deepseek_v3 ----

DS_CALLS_BEGIN, DS_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_CALL_BEGIN, DS_CALL_END, DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


def deepseek_v3_text(calls, content=None, type_="function"):
    """DeepSeek-V3's chat template for an assistant turn with tool calls (arguments are the
    message's JSON strings, inserted verbatim), without the final <｜end▁of▁sentence｜>."""
    text = content or ""
    for i, (name, arguments) in enumerate(calls):
        one = DS_CALL_BEGIN + type_ + DS_SEP + name + "\n```json\n" + arguments + "\n```" + DS_CALL_END
        text += (DS_CALLS_BEGIN + one) if i == 0 else ("\n" + one)
    return text + DS_CALLS_END


def deepseek_cases():
    out = []
    src = "DeepSeek-V3 chat_template (tokenizer_config.json), written in make_tool_call_cases.py"
    as_text = [(n, json.dumps(a, ensure_ascii=False)) for n, a in [WEATHER, SEARCH, NESTED, FLOATS]]

    def calls_of(pairs):
        return [call(n, json.loads(a), a) for n, a in pairs]

    out.append(case("deepseek_v3", "one call", src, deepseek_v3_text(as_text[:1]), calls_of(as_text[:1])))
    out.append(case("deepseek_v3", "three calls, nested unicode arguments", src, deepseek_v3_text(as_text[:3]),
                    calls_of(as_text[:3])))
    out.append(case("deepseek_v3", "float arguments", src, deepseek_v3_text(as_text[3:]), calls_of(as_text[3:])))
    text = deepseek_v3_text(as_text[:2], content="Let me look that up.")
    out.append(case("deepseek_v3", "content before the calls", src, text, calls_of(as_text[:2]),
                    content="Let me look that up."))
    compact = [("search", '{"query":"x","n":[1,2]}')]
    out.append(case("deepseek_v3", "arguments kept verbatim", src, deepseek_v3_text(compact), calls_of(compact)))
    pretty = [("search", json.dumps(NESTED[1], indent=2, ensure_ascii=False))]
    out.append(case("deepseek_v3", "multi-line arguments", src, deepseek_v3_text(pretty), calls_of(pretty)))
    out.append(case("deepseek_v3", "no call", src, "It is sunny in Paris."))
    full = deepseek_v3_text(as_text[:2])
    out.append(case("deepseek_v3", "block without its end marker", src, full[: -len(DS_CALLS_END)],
                    calls_of(as_text[:2])))
    out.append(case("deepseek_v3", "text after the block is dropped", src, full + "\nDone.", calls_of(as_text[:2])))
    out.append(case("deepseek_v3", "truncated arguments", src, truncate(full, "```json\n", 7)))
    out.append(case("deepseek_v3", "second call unfinished", src, full[: full.rindex(DS_CALL_END)]))
    out.append(case("deepseek_v3", "name without the json fence", src,
                    DS_CALLS_BEGIN + DS_CALL_BEGIN + "function" + DS_SEP + "get_weather\n{}" + DS_CALL_END + DS_CALLS_END))
    out.append(case("deepseek_v3", "call type other than function", src, deepseek_v3_text(as_text[:1], type_="tool")))
    out.append(case("deepseek_v3", "empty block", src, DS_CALLS_BEGIN + DS_CALLS_END))
    out.append(case("deepseek_v3", "partial marker at the end", src, "Calling <｜tool▁calls"))
    return out


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    for parser, cases in [("hermes", hermes_cases()), ("llama3_json", llama_cases()),
                          ("mistral", mistral_cases()), ("deepseek_v3", deepseek_cases())]:
        path = os.path.join(OUT_DIR, f"{parser}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(cases, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(f"{path}: {len(cases)} cases")


if __name__ == "__main__":
    main()
