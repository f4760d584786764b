"""Tool calling and reasoning in `tessera serve` (`--enable-auto-tool-choice --tool-call-parser
hermes`; a second server with `--reasoning-parser qwen3`), read as raw JSON and SSE and checked
by independent parsers (Python's `json`, `jsonschema`, `re`). SmolLM2-135M does not call tools by
itself, so the grammar engine makes it: `tool_choice` "required" and a named function are
enforced with the tools' schemas, and for "auto" a regex makes the model write a Hermes tool call,
which the parser must then find. For reasoning, a request template opens a think block and a
logit bias makes the model write nothing but the pieces of "</think>" until they form it.

- required: every reply is tool calls whose arguments parse and validate against their tool's
  parameters; parallel_tool_calls false gives one call;
- named: the call of that function, streamed with its name first and argument fragments after;
- auto: a Hermes call in the text comes back as tool_calls with finish_reason "tool_calls",
  streamed or not; a broken call comes back as content;
- reasoning: `reasoning` (vLLM's field) and content split at </think>, streamed or not, and a
  constraint (a regex) applies only after the reasoning;
- tool_choice errors are 400s in vLLM's words.

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_tool_calling.py [-k PATTERN]
Exit code 77: skipped (no binary, no model, no `openai` or `jsonschema` package).
"""

from __future__ import annotations

import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_fixture as sf  # noqa: E402

SERVER: sf.Server | None = None
THINKER: sf.Server | None = None  # --reasoning-parser qwen3
NAME = sf.SERVED_MODEL_NAME

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 12},
        "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": False}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the web",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "maxLength": 20},
        "limit": {"type": "integer", "minimum": 1, "maximum": 10}},
        "required": ["query"], "additionalProperties": False}}}
TOOLS = [WEATHER, SEARCH]
PARAMS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
HERMES_CALL = r'<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "[a-z]{2,8}", "unit": "celsius"\}\}\n</tool_call>'


def setUpModule():
    global SERVER
    binary, model = sf.preflight(need_openai=True)
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        sf.skip("the jsonschema package is not installed")
    global THINKER
    SERVER = sf.Server(binary, model, ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"], name="tools")
    THINKER = sf.Server(binary, model, ["--reasoning-parser", "qwen3", "--trust-request-chat-template"],
                        name="thinker")


def tearDownModule():
    sf.stop_module_server(SERVER)
    sf.stop_module_server(THINKER)


def chat(body, status=200, server=None):
    got, out, raw = (server or SERVER).json_request("POST", "/v1/chat/completions", dict(body, model=NAME),
                                                    timeout=300)
    assert got == status, (got, raw[:800])
    return out


def chat_stream(body, server=None):
    status, _, payload = (server or SERVER).request("POST", "/v1/chat/completions",
                                                    dict(body, model=NAME, stream=True), timeout=300)
    assert status == 200, payload[:800]
    return sf.sse_json(payload)


def merge_stream(events):
    """Per choice: reasoning, content, tool calls (by index: id, name, arguments), finish."""
    out = {}
    for e in events:
        for c in e["choices"]:
            st = out.setdefault(c["index"], {"reasoning": "", "content": "", "calls": {}, "finish": None,
                                             "names_sent": 0})
            d = c["delta"]
            st["reasoning"] += d.get("reasoning") or ""
            st["content"] += d.get("content") or ""
            for tc in d.get("tool_calls") or []:
                call = st["calls"].setdefault(tc["index"], {"id": None, "name": None, "arguments": ""})
                if tc.get("id"):
                    assert call["id"] is None, "a call's id sent twice"
                    call["id"] = tc["id"]
                    assert tc["type"] == "function"
                fn = tc.get("function") or {}
                if fn.get("name"):
                    assert call["name"] is None, "a call's name sent twice"
                    call["name"] = fn["name"]
                    st["names_sent"] += 1
                else:
                    assert call["name"] is not None, "arguments before the call's name"
                call["arguments"] += fn.get("arguments") or ""
            if c.get("finish_reason"):
                st["finish"] = c["finish_reason"]
    return out


class ToolChoiceTest(unittest.TestCase):

    def check_calls(self, calls, allowed_names):
        import jsonschema
        self.assertGreater(len(calls), 0)
        for call in calls:
            self.assertEqual(call["type"], "function")
            self.assertTrue(call["id"].startswith("chatcmpl-tool-"), call["id"])
            name = call["function"]["name"]
            self.assertIn(name, allowed_names)
            jsonschema.validate(json.loads(call["function"]["arguments"]), PARAMS[name])

    def test_required_gives_valid_calls(self):
        out = chat({"messages": MESSAGES, "tools": TOOLS, "tool_choice": "required", "n": 3, "temperature": 1.0,
                    "seed": 3, "max_tokens": 300})
        finished = 0
        for ch in out["choices"]:
            if ch["finish_reason"] != "stop":
                continue
            finished += 1
            self.assertEqual(ch["message"]["content"], "")
            self.check_calls(ch["message"]["tool_calls"], PARAMS.keys())
        self.assertGreater(finished, 0, out)

    def test_forced_calls_cut_short_have_no_call(self):
        # As vLLM (and OpenAI): a required or named call that max_tokens cuts has neither tool
        # calls nor content.
        for choice in ("required", {"type": "function", "function": {"name": "search"}}):
            ch = chat({"messages": MESSAGES, "tools": TOOLS, "tool_choice": choice, "max_tokens": 2})["choices"][0]
            self.assertEqual(ch["finish_reason"], "length")
            self.assertNotIn("tool_calls", ch["message"])
            self.assertEqual(ch["message"]["content"], "")

    def test_required_streams_each_call_as_it_closes(self):
        body = {"messages": MESSAGES, "tools": TOOLS, "tool_choice": "required", "temperature": 1.0, "seed": 11,
                "max_tokens": 300}
        ch = chat(body)["choices"][0]
        self.assertEqual(ch["finish_reason"], "stop", ch)
        events = chat_stream(body)
        streamed = merge_stream(events)[0]
        whole = ch["message"]["tool_calls"]
        self.assertEqual([streamed["calls"][i]["name"] for i in range(len(whole))],
                         [c["function"]["name"] for c in whole])
        self.assertEqual([streamed["calls"][i]["arguments"] for i in range(len(whole))],
                         [c["function"]["arguments"] for c in whole])
        self.assertEqual(streamed["content"], "")

    def test_required_without_parallel_calls_gives_one(self):
        out = chat({"messages": MESSAGES, "tools": TOOLS, "tool_choice": "required", "parallel_tool_calls": False,
                    "n": 3, "temperature": 1.0, "seed": 4, "max_tokens": 300})
        for ch in out["choices"]:
            if ch["finish_reason"] == "stop":
                self.assertEqual(len(ch["message"]["tool_calls"]), 1, ch)

    def test_named_function_whole_and_streamed(self):
        body = {"messages": MESSAGES, "tools": TOOLS, "temperature": 1.0, "seed": 5, "max_tokens": 200,
                "tool_choice": {"type": "function", "function": {"name": "search"}}}
        out = chat(body)
        ch = out["choices"][0]
        self.assertEqual(ch["finish_reason"], "stop")
        self.check_calls(ch["message"]["tool_calls"], ["search"])
        streamed = merge_stream(chat_stream(body))[0]
        self.assertEqual(streamed["names_sent"], 1)
        call = streamed["calls"][0]
        self.assertEqual(call["name"], "search")
        # Same seed, same tokens: the streamed arguments are the whole reply's.
        self.assertEqual(call["arguments"], ch["message"]["tool_calls"][0]["function"]["arguments"])

    def test_auto_finds_a_hermes_call(self):
        body = {"messages": MESSAGES, "tools": TOOLS, "temperature": 1.0, "seed": 6, "max_tokens": 100,
                "structured_outputs": {"regex": HERMES_CALL}}
        out = chat(body)
        ch = out["choices"][0]
        self.assertEqual(ch["finish_reason"], "tool_calls", ch)
        self.assertIsNone(ch["message"]["content"])
        self.check_calls(ch["message"]["tool_calls"], ["get_weather"])
        args = json.loads(ch["message"]["tool_calls"][0]["function"]["arguments"])
        self.assertEqual(args["unit"], "celsius")
        streamed = merge_stream(chat_stream(body))[0]
        self.assertEqual(streamed["finish"], "tool_calls")
        self.assertEqual(streamed["content"].strip(), "")
        self.assertEqual([c["name"] for c in streamed["calls"].values()], ["get_weather"])
        self.assertEqual(json.loads(streamed["calls"][0]["arguments"]), args)

    def test_broken_call_is_content(self):
        # Cut inside the arguments: no call, the text as it came, and the server goes on.
        body = {"messages": MESSAGES, "tools": TOOLS, "temperature": 1.0, "seed": 7, "max_tokens": 60,
                "structured_outputs": {"regex": r'<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "[a-z]{3}'}}
        ch = chat(body)["choices"][0]
        self.assertNotIn("tool_calls", ch["message"])
        self.assertTrue(ch["message"]["content"].startswith("<tool_call>"), ch)
        self.assertEqual(ch["finish_reason"], "stop")
        # Streamed, a call whose name went out before the text broke cannot be taken back (as
        # vLLM's): what was sent is that call's name and the start of its arguments.
        streamed = merge_stream(chat_stream(body))[0]
        if streamed["calls"]:
            self.assertEqual([c["name"] for c in streamed["calls"].values()], ["get_weather"])
            self.assertTrue(ch["message"]["content"].startswith(streamed["content"]))
        else:
            self.assertEqual(streamed["content"], ch["message"]["content"])

    def test_tool_choice_none_leaves_text_alone(self):
        body = {"messages": MESSAGES, "tools": TOOLS, "tool_choice": "none", "temperature": 1.0, "seed": 6,
                "max_tokens": 100, "structured_outputs": {"regex": HERMES_CALL}}
        ch = chat(body)["choices"][0]
        self.assertNotIn("tool_calls", ch["message"])
        self.assertTrue(ch["message"]["content"].startswith("<tool_call>"))

    def test_tool_choice_errors(self):
        for body, words in (
                ({"tool_choice": "required"}, "`tools` must be set"),
                ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
                 "does not match any of the specified `tools`"),
                ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice must be"),
                ({"tools": TOOLS, "tool_choice": "required", "response_format": {"type": "json_object"}},
                 "not both"),
                ({"tools": [{"type": "function", "function": {"description": "no name"}}]}, "function.name")):
            with self.subTest(body=body):
                out = chat(dict(body, messages=MESSAGES, max_tokens=5), status=400)
                self.assertIn(words, out["error"]["message"])
        self.assertTrue(SERVER.alive())


class ReasoningTest(unittest.TestCase):
    # A template whose generation prompt opens a think block (as DeepSeek-R1's and Qwen3-2507's do).
    OPEN_THINK = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}<think>\n"

    def think_end_bias(self):
        status, out, raw = THINKER.json_request("POST", "/tokenize", {"model": NAME, "prompt": "</think>",
                                                                      "add_special_tokens": False})
        self.assertEqual(status, 200, raw)
        self.assertGreater(len(out["tokens"]), 0)
        return {str(t): 100 for t in out["tokens"]}

    def test_reasoning_then_constrained_content(self):
        body = {"messages": MESSAGES, "chat_template": self.OPEN_THINK, "temperature": 1.0, "seed": 8,
                "max_tokens": 400, "logit_bias": self.think_end_bias(),
                "structured_outputs": {"regex": "[a-z]{3,10}"}}
        ch = chat(dict(body, return_token_ids=True), server=THINKER)["choices"][0]
        msg = ch["message"]
        self.assertEqual(ch["finish_reason"], "stop", ch)
        # The whole output: free pieces up to "</think>" (which the regex alone forbids), then
        # the regex's text; the parser splits it there.
        status, out, raw = THINKER.json_request("POST", "/detokenize", {"model": NAME, "tokens": ch["token_ids"]})
        self.assertEqual(status, 200, raw)
        text = out["prompt"]
        self.assertIn("</think>", text)
        reasoning, _, content = text.partition("</think>")
        self.assertEqual(msg["reasoning"], reasoning or None)
        self.assertEqual(msg["content"], content.replace("<|im_end|>", ""))
        self.assertIsNotNone(re.fullmatch(r"[a-z]{3,10}", msg["content"]), msg)
        streamed = merge_stream(chat_stream(body, server=THINKER))[0]
        self.assertEqual(streamed["reasoning"], msg["reasoning"] or "")
        self.assertEqual(streamed["content"], msg["content"])

    def test_no_think_block_is_all_content(self):
        body = {"messages": MESSAGES, "temperature": 1.0, "seed": 9, "max_tokens": 20}
        msg = chat(body, server=THINKER)["choices"][0]["message"]
        self.assertIsNone(msg["reasoning"])
        self.assertTrue(msg["content"])

    def test_include_reasoning_false_drops_it(self):
        body = {"messages": MESSAGES, "chat_template": self.OPEN_THINK, "temperature": 1.0, "seed": 8,
                "max_tokens": 400, "logit_bias": self.think_end_bias(), "include_reasoning": False,
                "structured_outputs": {"regex": "[a-z]{3,10}"}}
        msg = chat(body, server=THINKER)["choices"][0]["message"]
        self.assertIsNone(msg["reasoning"])
        self.assertIsNotNone(re.fullmatch(r"[a-z]{3,10}", msg["content"]), msg)


if __name__ == "__main__":
    unittest.main()
