"""Structured outputs in `tessera serve`, read through the official `openai` Python client and raw
JSON, checked by independent parsers: every output that ends ("stop") parses with Python's `json`
and validates with `jsonschema`, matches its regex with `re.fullmatch`, or is one of its choices.
SmolLM2-135M samples at temperature 1, so what holds is the grammar's doing, not the model's:

- OpenAI's `response_format` (`json_schema`, `json_object`) in chat, streamed and not, n > 1;
- vLLM's `structured_outputs` (`json`, `regex`, `choice`, `grammar`) and its older `guided_*`
  names in completions;
- what the engine cannot enforce (`uniqueItems`, `not`, a regex that does not parse) is a 400
  naming it, and the server goes on serving.

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_structured_outputs.py [-k PATTERN]
Exit code 77: skipped (no binary with `serve`, no model, no `openai` or `jsonschema` package).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_fixture as sf  # noqa: E402

SERVER: sf.Server | None = None
CLIENT = None
NAME = sf.SERVED_MODEL_NAME

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "email": {"type": "string", "format": "email"},
        "role": {"enum": ["admin", "user", "guest"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
        "address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16},
                                                     "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                    "required": ["city", "zip"], "additionalProperties": False},
    },
    "required": ["name", "age", "role", "address"],
    "additionalProperties": False,
}


def setUpModule():
    global SERVER, CLIENT
    binary, model = sf.preflight(need_openai=True)
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        sf.skip("the jsonschema package is not installed")
    import openai
    SERVER = sf.Server(binary, model, [], name="structured")
    CLIENT = openai.OpenAI(base_url=SERVER.base_url + "/v1", api_key="unused", max_retries=0, timeout=300)


def tearDownModule():
    sf.stop_module_server(SERVER)


def post(path, body, status=200):
    got, out, raw = SERVER.json_request("POST", path, dict(body, model=NAME))
    assert got == status, (got, raw[:600])
    return out


class JsonSchemaTest(unittest.TestCase):

    def check_json(self, texts_and_reasons, schema):
        import jsonschema
        finished = 0
        for text, reason in texts_and_reasons:
            self.assertIn(reason, ("stop", "length"))
            if reason != "stop":
                continue
            finished += 1
            value = json.loads(text)
            jsonschema.validate(value, schema)
        self.assertGreater(finished, 0, texts_and_reasons)

    def test_response_format_json_schema_in_chat(self):
        resp = CLIENT.chat.completions.create(
            model=NAME, messages=[{"role": "user", "content": "Describe a person as JSON."}],
            response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON,
                                                                    "strict": True}},
            temperature=1.0, seed=5, n=4, max_tokens=400)
        self.assertEqual(len(resp.choices), 4)
        self.check_json([(c.message.content, c.finish_reason) for c in resp.choices], PERSON)

    def test_streamed_chat_deltas_join_into_valid_json(self):
        # Free whitespace may run a sample to max_tokens: the samples that end count.
        samples = []
        for seed in (1, 2, 3, 4, 5):
            stream = CLIENT.chat.completions.create(
                model=NAME, messages=[{"role": "user", "content": "A person, please."}],
                response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}},
                temperature=1.0, seed=seed, max_tokens=400, stream=True)
            text, reason = "", None
            for chunk in stream:
                for c in chunk.choices:
                    text += c.delta.content or ""
                    reason = c.finish_reason or reason
            samples.append((text, reason))
        self.check_json(samples, PERSON)

    def test_json_object(self):
        resp = CLIENT.chat.completions.create(
            model=NAME, messages=[{"role": "user", "content": "Any JSON object."}],
            response_format={"type": "json_object"}, temperature=1.0, seed=9, n=3, max_tokens=300)
        for c in resp.choices:
            if c.finish_reason == "stop":
                self.assertIsInstance(json.loads(c.message.content), dict)

    def test_compact_json_in_completions(self):
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"}},
                  "required": ["ok", "n"]}
        out = post("/v1/completions", {"prompt": "JSON:", "temperature": 1.0, "seed": 4, "n": 3, "max_tokens": 200,
                                       "structured_outputs": {"json": schema, "disable_any_whitespace": True}})
        self.check_json([(c["text"], c["finish_reason"]) for c in out["choices"]], schema)
        for c in out["choices"]:
            if c["finish_reason"] == "stop":  # json.dumps' layout: one space after ':' and ','
                self.assertEqual(c["text"], json.dumps(json.loads(c["text"])))


class RegexChoiceGrammarTest(unittest.TestCase):

    def test_regex_streamed_and_not(self):
        pattern = r"[A-Z][a-z]{2,8} [0-9]{1,3}(\.[0-9]{2})?"
        out = post("/v1/completions", {"prompt": "Item and price:", "temperature": 1.0, "seed": 2, "n": 4,
                                       "max_tokens": 40, "structured_outputs": {"regex": pattern}})
        for c in out["choices"]:
            self.assertEqual(c["finish_reason"], "stop", c)
            self.assertIsNotNone(re.fullmatch(pattern, c["text"]), c["text"])
        stream = CLIENT.completions.create(model=NAME, prompt="Item and price:", temperature=1.0, seed=3,
                                           max_tokens=40, stream=True, extra_body={"guided_regex": pattern})
        text = "".join(ch.choices[0].text for ch in stream if ch.choices)
        self.assertIsNotNone(re.fullmatch(pattern, text), text)

    def test_choice(self):
        choices = ["positive", "negative", "neutral \"mixed\""]
        for body in ({"structured_outputs": {"choice": choices}}, {"guided_choice": choices}):
            out = post("/v1/completions", {"prompt": "Sentiment:", "temperature": 1.0, "seed": 7, "n": 5,
                                           "max_tokens": 20, **body})
            for c in out["choices"]:
                self.assertIn(c["text"], choices)
                self.assertEqual(c["finish_reason"], "stop")

    def test_grammar(self):
        grammar = 'root ::= "SELECT " column (", " column)* " FROM " table\n' \
                  'column ::= "id" | "name" | "price"\ntable ::= "items" | "users"'
        pattern = r"SELECT (id|name|price)(, (id|name|price))* FROM (items|users)"
        out = post("/v1/completions", {"prompt": "SQL:", "temperature": 1.0, "seed": 5, "n": 3, "max_tokens": 60,
                                       "structured_outputs": {"grammar": grammar}})
        for c in out["choices"]:
            if c["finish_reason"] == "stop":
                self.assertIsNotNone(re.fullmatch(pattern, c["text"]), c["text"])


class RefusedTest(unittest.TestCase):

    def test_what_cannot_be_enforced_is_a_400_naming_it(self):
        for schema, named in (({"type": "array", "uniqueItems": True}, "uniqueItems"),
                              ({"type": "object", "properties": {"a": {"not": {"type": "null"}}}}, "not"),
                              ({"type": "integer", "if": {"minimum": 3}, "then": {"maximum": 9}}, "if")):
            out = post("/v1/chat/completions", {
                "messages": [{"role": "user", "content": "x"}], "max_tokens": 5,
                "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}}, 400)
            self.assertIn(named, out["error"]["message"])
        out = post("/v1/completions", {"prompt": "x", "max_tokens": 5, "structured_outputs": {"regex": "([a-z"}}, 400)
        self.assertIn("regex", out["error"]["message"])
        out = post("/v1/completions", {"prompt": "x", "max_tokens": 5, "guided_grammar": "root ::= ("}, 400)
        self.assertIn("grammar", out["error"]["message"])
        # Still serving.
        ok = post("/v1/completions", {"prompt": "x", "max_tokens": 3, "guided_choice": ["a", "b"]})
        self.assertIn(ok["choices"][0]["text"], ("a", "b"))


class HostileTest(unittest.TestCase):
    """Constraints built to hurt: each is a 400 naming the problem, and the server goes on."""

    def refused(self, body, named):
        t0 = time.monotonic()
        out = post("/v1/completions", dict(body, prompt="x", max_tokens=4), 400)
        print(f"  {named}: 400 in {time.monotonic() - t0:.3f} s", file=sys.stderr)
        self.assertIn(named, out["error"]["message"])

    def test_hostile_constraints(self):
        big_enum = {"enum": ["value_%06d" % i for i in range(70000)]}  # 1.1 MB
        self.refused({"structured_outputs": {"json": big_enum}}, "too large")
        defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(1000)}
        defs["d1000"] = {"type": "integer"}
        self.refused({"guided_json": {"$defs": defs, "$ref": "#/$defs/d0"}}, "$ref")
        cycle = {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
        self.refused({"guided_json": cycle}, "$ref")
        nested = {"type": "integer"}
        for _ in range(300):
            nested = {"type": "array", "items": nested}
        self.refused({"structured_outputs": {"json": nested}}, "deeper than 256")
        self.refused({"guided_regex": "a{1000}{1000}"}, "regex")
        self.refused({"guided_regex": "[a-z]" * 20000}, "too large")
        self.refused({"guided_grammar": "root ::= root"}, "admits no output")
        self.refused({"guided_grammar": 'root ::= "a" undefined_rule'}, "grammar")
        # Still serving, and what only looks dangerous is served: nested quantifiers, left
        # recursion (xgrammar's Earley parser takes it).
        out = post("/v1/completions", {"prompt": "x", "max_tokens": 12, "temperature": 1.0, "seed": 1,
                                       "guided_regex": "(a*)*b"})
        self.assertIsNotNone(re.fullmatch("(a*)*b", out["choices"][0]["text"]) or
                             out["choices"][0]["finish_reason"] == "length")
        out = post("/v1/completions", {"prompt": "x", "max_tokens": 30, "temperature": 1.0, "seed": 2,
                                       "guided_grammar": 'root ::= expr\nexpr ::= expr "+" term | term\n'
                                                         'term ::= [0-9]'})
        c = out["choices"][0]
        if c["finish_reason"] == "stop":
            self.assertIsNotNone(re.fullmatch(r"[0-9](\+[0-9])*", c["text"]), c["text"])


if __name__ == "__main__":
    unittest.main()
