"""`tessera serve` driven by the official `openai` Python client (docs/server.md).

One server for the module (SmolLM2-135M-Instruct Q4_1, CPU); a second one with `--api-key`
for the authentication tests. Greedy outputs are compared with the offline CLI
(`tessera generate --json`), never with hard-coded strings (except "Paris", which this model
answers to "What is the capital of France?").

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_openai_server.py [-k PATTERN]
Exit code 77: skipped (no binary with `serve`, no model, no `openai` package).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_fixture as sf  # noqa: E402

openai = None  # imported after the preflight check
BIN = MODEL = None
SERVER: sf.Server | None = None
CLIENT = None
NAME = sf.SERVED_MODEL_NAME

PROMPT = "The quick brown fox"
CAPITAL_Q = [{"role": "user", "content": "What is the capital of France?"}]


def setUpModule():
    global SERVER, CLIENT, BIN, MODEL, openai
    BIN, MODEL = sf.preflight(need_openai=True)
    import openai as _openai
    openai = _openai
    SERVER = sf.Server(BIN, MODEL, name="openai")
    CLIENT = openai.OpenAI(base_url=SERVER.base_url + "/v1", api_key="unused", max_retries=0,
                           timeout=120)


def tearDownModule():
    sf.stop_module_server(SERVER)


# ---- helpers -------------------------------------------------------------------------
def cli_generate(prompts: list[str], max_tokens: int, *extra: str) -> list[dict]:
    return sf.cli_generate(BIN, MODEL, prompts, max_tokens, *extra)


def cli_detokenize(tokens: list[int]) -> str:
    return sf.cli_detokenize(BIN, MODEL, tokens)


_greedy_cache: dict = {}


def greedy_completion(prompt, max_tokens: int):
    key = (json.dumps(prompt), max_tokens)
    if key not in _greedy_cache:
        _greedy_cache[key] = CLIENT.completions.create(model=NAME, prompt=prompt,
                                                        max_tokens=max_tokens, temperature=0)
    return _greedy_cache[key]


def tokenize(prompt: str, add_special_tokens: bool = True) -> dict:
    status, body, raw = SERVER.json_request("POST", "/tokenize", {
        "model": NAME, "prompt": prompt, "add_special_tokens": add_special_tokens})
    assert status == 200, (status, raw)
    return body


def detokenize(tokens: list[int]) -> str:
    status, body, raw = SERVER.json_request("POST", "/detokenize", {"model": NAME, "tokens": tokens})
    assert status == 200, (status, raw)
    return body["prompt"]


def pick_stop_string(text: str) -> str:
    """A 4-character substring from the middle of `text` with something besides whitespace."""
    for i in range(len(text) // 2, len(text) - 4):
        s = text[i:i + 4]
        if s.strip() and "\ufffd" not in s and text.find(s) > 0:
            return s
    raise AssertionError(f"no usable stop string in {text!r}")


# ---- completions ---------------------------------------------------------------------
class CompletionsTest(unittest.TestCase):

    def test_greedy_matches_offline_cli(self):
        max_tokens = 16
        resp = greedy_completion(PROMPT, max_tokens)
        cli = cli_generate([PROMPT], max_tokens)[0]
        self.assertEqual(resp.object, "text_completion")
        self.assertEqual(resp.model, NAME)
        self.assertTrue(resp.id)
        self.assertEqual(len(resp.choices), 1)
        choice = resp.choices[0]
        self.assertEqual(choice.index, 0)
        self.assertEqual(choice.text, cli["outputs"][0]["text"])
        self.assertEqual(choice.finish_reason, cli["outputs"][0]["finish_reason"])
        usage = resp.usage
        self.assertEqual(usage.prompt_tokens, len(cli["prompt_token_ids"]))
        tok = tokenize(PROMPT)
        self.assertEqual(tok["count"], usage.prompt_tokens)
        self.assertEqual(tok["tokens"], cli["prompt_token_ids"])
        self.assertEqual(usage.completion_tokens, len(cli["outputs"][0]["token_ids"]))
        self.assertLessEqual(usage.completion_tokens, max_tokens)
        self.assertEqual(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens)
        self.assertIsNone(usage.prompt_tokens_details)  # without --enable-prompt-tokens-details
        if usage.completion_tokens == max_tokens:
            self.assertEqual(choice.finish_reason, "length")

    def test_finish_reason_length_with_ignore_eos(self):
        resp = CLIENT.completions.create(model=NAME, prompt="Hi", max_tokens=7, temperature=1,
                                         seed=3, extra_body={"ignore_eos": True})
        self.assertEqual(resp.usage.completion_tokens, 7)
        self.assertEqual(resp.choices[0].finish_reason, "length")

    def test_default_max_tokens_is_16(self):
        resp = CLIENT.completions.create(model=NAME, prompt="Once upon a time", temperature=1,
                                         seed=5, extra_body={"ignore_eos": True})
        self.assertEqual(resp.usage.completion_tokens, 16)
        self.assertEqual(resp.choices[0].finish_reason, "length")

    def test_model_field_may_be_absent(self):
        status, body, raw = SERVER.json_request("POST", "/v1/completions", {
            "prompt": PROMPT, "max_tokens": 4, "temperature": 0})
        self.assertEqual(status, 200, raw)
        self.assertEqual(body["choices"][0]["text"], cli_generate([PROMPT], 4)[0]["outputs"][0]["text"])

    def test_streaming_equals_non_streaming(self):
        max_tokens = 16
        full = greedy_completion(PROMPT, max_tokens)
        stream = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=max_tokens,
                                           temperature=0, stream=True,
                                           stream_options={"include_usage": True})
        chunks = list(stream)  # the client stops at [DONE]
        self.assertGreaterEqual(len(chunks), 2)
        text, finishes, usage_chunks = "", [], []
        for i, chunk in enumerate(chunks):
            if chunk.usage is not None:
                usage_chunks.append(i)
            for c in chunk.choices:
                self.assertEqual(c.index, 0)
                text += c.text or ""
                if c.finish_reason is not None:
                    finishes.append(i)
        self.assertEqual(text, full.choices[0].text)
        self.assertEqual(len(finishes), 1, "exactly one finish_reason")
        # The usage chunk is the last one and has no choices; the finish comes before it.
        self.assertEqual(usage_chunks, [len(chunks) - 1])
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(finishes[0], len(chunks) - 2)
        last_choice = chunks[finishes[0]].choices[0]
        self.assertEqual(last_choice.finish_reason, full.choices[0].finish_reason)
        u = chunks[-1].usage
        self.assertEqual((u.prompt_tokens, u.completion_tokens, u.total_tokens),
                         (full.usage.prompt_tokens, full.usage.completion_tokens,
                          full.usage.total_tokens))

    def test_streaming_wire_format(self):
        status, headers, payload = SERVER.request("POST", "/v1/completions", {
            "model": NAME, "prompt": PROMPT, "max_tokens": 5, "temperature": 0, "stream": True})
        self.assertEqual(status, 200, payload[:300])
        self.assertTrue(headers.get("content-type", "").startswith("text/event-stream"), headers)
        self.assertTrue(payload.endswith(b"data: [DONE]\n\n"), payload[-200:])
        events = sf.parse_sse(payload)
        self.assertEqual(events[-1], "[DONE]")
        self.assertEqual(events.count("[DONE]"), 1)
        for e in events[:-1]:
            self.assertIsInstance(e, dict)
            self.assertEqual(e.get("object"), "text_completion")
            self.assertNotIn("usage", {k for k, v in e.items() if v is not None},
                             "no usage without stream_options.include_usage")
        text = "".join(c.get("text") or "" for e in events[:-1] for c in e["choices"])
        self.assertEqual(text, cli_generate([PROMPT], 5)[0]["outputs"][0]["text"])

    def test_prompt_list_of_strings(self):
        prompts = ["Hello, my name is", "The capital of France is"]
        cli = cli_generate(prompts, 6)
        for attempt in range(3):  # the response must wait for every prompt's choices, every time
            resp = CLIENT.completions.create(model=NAME, prompt=prompts, max_tokens=6, temperature=0)
            self.assertEqual([c.index for c in resp.choices], [0, 1])
            self.assertEqual([c.text for c in resp.choices], [r["outputs"][0]["text"] for r in cli],
                             f"attempt {attempt}")
            self.assertEqual([c.finish_reason for c in resp.choices],
                             [r["outputs"][0]["finish_reason"] for r in cli], f"attempt {attempt}")
            self.assertEqual(resp.usage.prompt_tokens, sum(len(r["prompt_token_ids"]) for r in cli))
            self.assertEqual(resp.usage.completion_tokens,
                             sum(len(r["outputs"][0]["token_ids"]) for r in cli))

    def test_prompt_list_of_strings_streaming(self):
        prompts = ["Hello, my name is", "The capital of France is", "Once upon a time"]
        cli = cli_generate(prompts, 6)
        chunks = list(CLIENT.completions.create(model=NAME, prompt=prompts, max_tokens=6,
                                                temperature=0, stream=True,
                                                stream_options={"include_usage": True}))
        texts = {i: "" for i in range(len(prompts))}
        finishes = {i: [] for i in range(len(prompts))}
        for chunk in chunks:
            for c in chunk.choices:
                self.assertIn(c.index, texts)
                self.assertEqual(finishes[c.index], [], f"choice {c.index} continued after its finish")
                texts[c.index] += c.text or ""
                if c.finish_reason is not None:
                    finishes[c.index].append(c.finish_reason)
        self.assertEqual([texts[i] for i in range(len(prompts))],
                         [r["outputs"][0]["text"] for r in cli])
        self.assertEqual([finishes[i] for i in range(len(prompts))],
                         [[r["outputs"][0]["finish_reason"]] for r in cli])
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(chunks[-1].usage.completion_tokens,
                         sum(len(r["outputs"][0]["token_ids"]) for r in cli))

    def test_prompt_as_token_ids(self):
        ids = tokenize(PROMPT)["tokens"]
        self.assertTrue(ids and all(isinstance(t, int) for t in ids))
        resp = CLIENT.completions.create(model=NAME, prompt=ids, max_tokens=8, temperature=0)
        self.assertEqual(len(resp.choices), 1)
        self.assertEqual(resp.choices[0].text, greedy_completion(PROMPT, 8).choices[0].text)
        self.assertEqual(resp.usage.prompt_tokens, len(ids))

    def test_prompt_as_list_of_token_id_lists(self):
        prompts = ["Hello, my name is", "The capital of France is"]
        ids = [tokenize(p)["tokens"] for p in prompts]
        resp = CLIENT.completions.create(model=NAME, prompt=ids, max_tokens=6, temperature=0)
        cli = cli_generate(prompts, 6)
        self.assertEqual([c.index for c in resp.choices], [0, 1])
        self.assertEqual([c.text for c in resp.choices], [r["outputs"][0]["text"] for r in cli])
        self.assertEqual([c.finish_reason for c in resp.choices],
                         [r["outputs"][0]["finish_reason"] for r in cli])
        self.assertEqual(resp.usage.prompt_tokens, sum(len(i) for i in ids))

    def test_n_choices_per_prompt_indexing(self):
        # OpenAI numbers the choices prompt-major: index = prompt_index * n + j. echo identifies
        # the prompt of every choice.
        prompts = ["Once upon a time", "In a galaxy far away"]
        n = 2
        resp = CLIENT.completions.create(model=NAME, prompt=prompts, n=n, max_tokens=4,
                                         temperature=1, seed=11, echo=True)
        self.assertEqual(len(resp.choices), n * len(prompts))
        by_index = sorted(resp.choices, key=lambda c: c.index)
        self.assertEqual([c.index for c in by_index], list(range(n * len(prompts))))
        for c in by_index:
            self.assertIn(c.finish_reason, ("stop", "length"), f"choice {c.index}")
            self.assertTrue(c.text.startswith(prompts[c.index // n]),
                            f"choice {c.index}: {c.text!r} should continue {prompts[c.index // n]!r}")

    def test_seed_reproducible(self):
        kw = dict(model=NAME, prompt="My favourite colour is", max_tokens=12, temperature=1,
                  seed=1234)
        a = CLIENT.completions.create(**kw).choices[0].text
        b = CLIENT.completions.create(**kw).choices[0].text
        self.assertEqual(a, b)
        # Also while streaming.
        c = "".join(ch.text for chunk in CLIENT.completions.create(**kw, stream=True)
                    for ch in chunk.choices)
        self.assertEqual(a, c)

    def test_different_seeds_differ(self):
        texts = {CLIENT.completions.create(model=NAME, prompt="My favourite colour is",
                                           max_tokens=12, temperature=1, seed=s).choices[0].text
                 for s in (1, 2, 3, 4, 5)}
        self.assertGreaterEqual(len(texts), 2, texts)

    def test_logprobs(self):
        max_tokens = 8
        resp = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=max_tokens,
                                         temperature=0, logprobs=3)
        choice = resp.choices[0]
        lp = choice.logprobs
        self.assertIsNotNone(lp)
        n = resp.usage.completion_tokens
        self.assertGreater(n, 0)
        self.assertEqual(len(lp.tokens), n)
        self.assertEqual(len(lp.token_logprobs), n)
        self.assertEqual(len(lp.top_logprobs), n)
        self.assertEqual("".join(lp.tokens), choice.text)
        cli = cli_generate([PROMPT], max_tokens, "--logprobs", "3")[0]["outputs"][0]
        self.assertEqual(choice.text, cli["text"])
        for i, (tok, logprob, top) in enumerate(zip(lp.tokens, lp.token_logprobs, lp.top_logprobs)):
            self.assertIsInstance(top, dict)
            self.assertGreaterEqual(len(top), 3, f"token {i}: {top}")
            self.assertLessEqual(len(top), 4, f"token {i}: {top}")
            self.assertLessEqual(logprob, 1e-6)
            for v in top.values():
                self.assertLessEqual(v, 1e-6)
            # Greedy: the chosen token is the most likely one.
            self.assertIn(tok, top)
            self.assertAlmostEqual(top[tok], logprob, places=5)
            self.assertAlmostEqual(logprob, max(top.values()), places=4, msg=f"token {i}: {top}")
            # The same number as the offline engine.
            cli_lp = cli["logprobs"][i][str(cli["token_ids"][i])]
            self.assertAlmostEqual(logprob, cli_lp, delta=1e-3, msg=f"token {i}")

    def test_logprobs_zero(self):
        resp = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=4, temperature=0,
                                         logprobs=0)
        lp = resp.choices[0].logprobs
        self.assertEqual(len(lp.token_logprobs), resp.usage.completion_tokens)
        for top in lp.top_logprobs or []:
            self.assertLessEqual(len(top or {}), 1)

    def test_streaming_logprobs(self):
        chunks = list(CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=6,
                                                temperature=0, logprobs=2, stream=True))
        tokens, lps = [], []
        for chunk in chunks:
            for c in chunk.choices:
                if c.logprobs is not None:
                    tokens += c.logprobs.tokens or []
                    lps += c.logprobs.token_logprobs or []
        full = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=6, temperature=0,
                                         logprobs=2)
        self.assertEqual(tokens, full.choices[0].logprobs.tokens)
        for a, b in zip(lps, full.choices[0].logprobs.token_logprobs):
            self.assertAlmostEqual(a, b, places=4)

    def test_echo(self):
        resp = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=4, temperature=0,
                                         echo=True)
        text = resp.choices[0].text
        self.assertTrue(text.startswith(PROMPT), text)
        self.assertEqual(text, PROMPT + greedy_completion(PROMPT, 4).choices[0].text)

    def test_echo_with_logprobs(self):
        resp = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=3, temperature=0,
                                         echo=True, logprobs=1)
        lp = resp.choices[0].logprobs
        n = resp.usage.prompt_tokens + resp.usage.completion_tokens
        self.assertEqual(len(lp.tokens), n)
        self.assertEqual(len(lp.token_logprobs), n)
        self.assertEqual("".join(lp.tokens), resp.choices[0].text)
        self.assertIsNone(lp.token_logprobs[0], "nothing predicts the first prompt token")
        for v in lp.token_logprobs[1:]:
            self.assertLessEqual(v, 1e-6)

    def test_stop_string(self):
        full = greedy_completion(PROMPT, 24).choices[0].text
        self.assertGreaterEqual(len(full), 12, full)
        stop = pick_stop_string(full)
        expected = full[:full.find(stop)]
        resp = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=24, temperature=0,
                                         stop=stop)
        self.assertEqual(resp.choices[0].text, expected, f"stop={stop!r}, greedy={full!r}")
        self.assertEqual(resp.choices[0].finish_reason, "stop")
        self.assertLess(resp.usage.completion_tokens, 24)
        # A list of stop strings; one never occurs.
        resp = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=24, temperature=0,
                                         stop=["qqqzzzqqq", stop])
        self.assertEqual(resp.choices[0].text, expected)
        self.assertEqual(resp.choices[0].finish_reason, "stop")
        # vLLM's include_stop_str_in_output.
        resp = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=24, temperature=0,
                                         stop=stop, extra_body={"include_stop_str_in_output": True})
        self.assertEqual(resp.choices[0].text, expected + stop)
        self.assertEqual(resp.choices[0].finish_reason, "stop")

    def test_stop_string_streaming(self):
        full = greedy_completion(PROMPT, 24).choices[0].text
        stop = pick_stop_string(full)
        expected = full[:full.find(stop)]
        chunks = list(CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=24,
                                                temperature=0, stop=stop, stream=True))
        text = "".join(c.text or "" for chunk in chunks for c in chunk.choices)
        finishes = [c.finish_reason for chunk in chunks for c in chunk.choices
                    if c.finish_reason is not None]
        self.assertEqual(text, expected, f"stop={stop!r}, greedy={full!r}")
        self.assertEqual(finishes, ["stop"])

    def test_stop_token_ids(self):
        cli = cli_generate([PROMPT], 16)[0]["outputs"][0]
        ids = cli["token_ids"]
        self.assertGreaterEqual(len(ids), 6)
        target = ids[4]
        first = ids.index(target)
        resp = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=16, temperature=0,
                                         extra_body={"stop_token_ids": [target]})
        self.assertEqual(resp.choices[0].finish_reason, "stop")
        self.assertEqual(resp.usage.completion_tokens, first + 1)
        # Whether the stop token's text is kept is the engine's rule: the same as offline.
        # (vLLM drops it unless include_stop_str_in_output.)
        offline = cli_generate([PROMPT], 16, "--stop-token-ids", str(target))[0]["outputs"][0]
        self.assertEqual(offline["token_ids"], ids[:first + 1])
        self.assertEqual(resp.choices[0].text, offline["text"])
        self.assertTrue(offline["text"].startswith(cli_detokenize(ids[:first])))
        stop_reason = (resp.choices[0].model_extra or {}).get("stop_reason", target)
        self.assertEqual(stop_reason, target)

    def test_logit_bias(self):
        paris = tokenize(" Paris", add_special_tokens=False)["tokens"]
        self.assertEqual(len(paris), 1, paris)
        resp = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=4, temperature=0,
                                         logit_bias={str(paris[0]): 100})
        self.assertEqual(resp.choices[0].text, cli_detokenize(paris * 4))
        # A strong negative bias on the greedy first token changes the first token.
        greedy_ids = cli_generate([PROMPT], 16)[0]["outputs"][0]["token_ids"]
        resp = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=1, temperature=0,
                                         logit_bias={str(greedy_ids[0]): -100})
        self.assertNotEqual(resp.choices[0].text, cli_detokenize(greedy_ids[:1]))

    def test_sampling_extras_accepted(self):
        resp = CLIENT.completions.create(
            model=NAME, prompt=PROMPT, max_tokens=5, temperature=0.8, top_p=0.9, seed=1,
            presence_penalty=0.5, frequency_penalty=0.5, user="e2e",
            extra_body={"top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1, "min_tokens": 5,
                        "skip_special_tokens": True, "priority": 0})
        self.assertEqual(resp.usage.completion_tokens, 5)  # min_tokens == max_tokens
        self.assertEqual(len(resp.choices), 1)


# ---- chat ----------------------------------------------------------------------------
_chat_cache: dict = {}


def greedy_chat(messages, max_tokens: int = 32, **kw):
    key = (json.dumps(messages), max_tokens, json.dumps(kw, sort_keys=True))
    if key not in _chat_cache:
        _chat_cache[key] = CLIENT.chat.completions.create(
            model=NAME, messages=messages, max_completion_tokens=max_tokens, temperature=0, **kw)
    return _chat_cache[key]


def tokenize_messages(messages, **kw) -> dict:
    status, body, raw = SERVER.json_request("POST", "/tokenize", {
        "model": NAME, "messages": messages, "add_generation_prompt": True, **kw})
    assert status == 200, (status, raw)
    return body


class ChatTest(unittest.TestCase):

    def test_capital_of_france(self):
        resp = greedy_chat(CAPITAL_Q)
        self.assertEqual(resp.object, "chat.completion")
        self.assertEqual(resp.model, NAME)
        self.assertEqual(len(resp.choices), 1)
        msg = resp.choices[0].message
        self.assertEqual(msg.role, "assistant")
        self.assertIn("Paris", msg.content)
        self.assertIn(resp.choices[0].finish_reason, ("stop", "length"))
        self.assertLessEqual(resp.usage.completion_tokens, 32)
        self.assertEqual(resp.usage.prompt_tokens, tokenize_messages(CAPITAL_Q)["count"])
        self.assertEqual(resp.usage.total_tokens,
                         resp.usage.prompt_tokens + resp.usage.completion_tokens)

    def test_streaming_equals_non_streaming(self):
        full = greedy_chat(CAPITAL_Q)
        chunks = list(CLIENT.chat.completions.create(
            model=NAME, messages=CAPITAL_Q, max_completion_tokens=32, temperature=0, stream=True,
            stream_options={"include_usage": True}))
        choice_chunks = [c for c in chunks if c.choices]
        self.assertTrue(choice_chunks)
        self.assertEqual(choice_chunks[0].choices[0].delta.role, "assistant")
        for c in chunks:
            self.assertEqual(c.object, "chat.completion.chunk")
        content = "".join(c.choices[0].delta.content or "" for c in choice_chunks)
        self.assertEqual(content, full.choices[0].message.content)
        finishes = [i for i, c in enumerate(choice_chunks) if c.choices[0].finish_reason]
        self.assertEqual(finishes, [len(choice_chunks) - 1])
        self.assertEqual(choice_chunks[-1].choices[0].finish_reason, full.choices[0].finish_reason)
        self.assertIsNotNone(chunks[-1].usage)
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(chunks[-1].usage.completion_tokens, full.usage.completion_tokens)
        self.assertEqual(chunks[-1].usage.prompt_tokens, full.usage.prompt_tokens)

    def test_n2(self):
        resp = CLIENT.chat.completions.create(model=NAME, messages=CAPITAL_Q, n=2,
                                              max_completion_tokens=8, temperature=1, seed=9)
        self.assertEqual(sorted(c.index for c in resp.choices), [0, 1])
        for c in resp.choices:
            self.assertEqual(c.message.role, "assistant")
            self.assertIsInstance(c.message.content, str)
            self.assertIn(c.finish_reason, ("stop", "length"))
        self.assertLessEqual(resp.usage.completion_tokens, 16)

    def test_n2_streaming(self):
        chunks = list(CLIENT.chat.completions.create(
            model=NAME, messages=CAPITAL_Q, n=2, max_completion_tokens=6, temperature=1, seed=9,
            stream=True))
        finishes = {0: 0, 1: 0}
        roles = {}
        for chunk in chunks:
            for c in chunk.choices:
                self.assertIn(c.index, (0, 1))
                if c.index not in roles:
                    roles[c.index] = c.delta.role
                if c.finish_reason:
                    finishes[c.index] += 1
        self.assertEqual(roles, {0: "assistant", 1: "assistant"})
        self.assertEqual(finishes, {0: 1, 1: 1})

    def test_max_completion_tokens_and_max_tokens(self):
        resp = CLIENT.chat.completions.create(model=NAME, messages=CAPITAL_Q,
                                              max_completion_tokens=5, temperature=1, seed=2,
                                              extra_body={"ignore_eos": True})
        self.assertEqual(resp.usage.completion_tokens, 5)
        self.assertEqual(resp.choices[0].finish_reason, "length")
        resp = CLIENT.chat.completions.create(model=NAME, messages=CAPITAL_Q, max_tokens=3,
                                              temperature=1, seed=2, extra_body={"ignore_eos": True})
        self.assertEqual(resp.usage.completion_tokens, 3)
        self.assertEqual(resp.choices[0].finish_reason, "length")

    def test_system_and_developer_roles(self):
        for role in ("system", "developer"):
            instruction = "You are a terse assistant. Answer in one word."
            messages = [{"role": role, "content": instruction}] + CAPITAL_Q
            resp = CLIENT.chat.completions.create(model=NAME, messages=messages,
                                                  max_completion_tokens=8, temperature=0)
            self.assertEqual(resp.choices[0].message.role, "assistant")
            tok = tokenize_messages(messages)
            self.assertEqual(resp.usage.prompt_tokens, tok["count"], role)
            rendered = cli_detokenize(tok["tokens"])
            self.assertIn(instruction, rendered, f"{role} message missing from the prompt")
            self.assertIn("What is the capital of France?", rendered)

    def test_multi_turn(self):
        messages = CAPITAL_Q + [{"role": "assistant", "content": "Paris."},
                                {"role": "user", "content": "And of Italy?"}]
        resp = CLIENT.chat.completions.create(model=NAME, messages=messages,
                                              max_completion_tokens=8, temperature=0)
        self.assertEqual(resp.usage.prompt_tokens, tokenize_messages(messages)["count"])
        self.assertIn("Paris.", cli_detokenize(tokenize_messages(messages)["tokens"]))

    def test_content_parts_equal_plain_string(self):
        parts = [{"role": "user",
                  "content": [{"type": "text", "text": "What is the capital of France?"}]}]
        a = greedy_chat(CAPITAL_Q)
        b = CLIENT.chat.completions.create(model=NAME, messages=parts, max_completion_tokens=32,
                                           temperature=0)
        self.assertEqual(b.usage.prompt_tokens, a.usage.prompt_tokens)
        self.assertEqual(b.choices[0].message.content, a.choices[0].message.content)

    def test_chat_template_kwargs_accepted(self):
        a = greedy_chat(CAPITAL_Q)
        b = CLIENT.chat.completions.create(
            model=NAME, messages=CAPITAL_Q, max_completion_tokens=32, temperature=0,
            extra_body={"chat_template_kwargs": {"enable_thinking": False}})
        # SmolLM2's template ignores enable_thinking: the same prompt, the same answer.
        self.assertEqual(b.usage.prompt_tokens, a.usage.prompt_tokens)
        self.assertEqual(b.choices[0].message.content, a.choices[0].message.content)

    def test_tools_accepted(self):
        tools = [{"type": "function", "function": {
            "name": "get_weather", "description": "Weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"]}}}]
        resp = CLIENT.chat.completions.create(model=NAME, messages=CAPITAL_Q, tools=tools,
                                              tool_choice="none", max_completion_tokens=4, temperature=0)
        self.assertEqual(resp.choices[0].message.role, "assistant")
        self.assertLessEqual(resp.usage.completion_tokens, 4)
        # "auto" (the default with tools) needs a tool parser, as vLLM says (tests/e2e/test_tool_calling.py
        # runs one).
        with self.assertRaises(openai.BadRequestError) as e:
            CLIENT.chat.completions.create(model=NAME, messages=CAPITAL_Q, tools=tools, max_completion_tokens=4)
        self.assertIn("--enable-auto-tool-choice", str(e.exception))

    def test_logprobs(self):
        resp = CLIENT.chat.completions.create(model=NAME, messages=CAPITAL_Q,
                                              max_completion_tokens=8, temperature=0,
                                              logprobs=True, top_logprobs=2)
        content = resp.choices[0].logprobs.content
        self.assertEqual(len(content), resp.usage.completion_tokens)
        joined = "".join(c.token for c in content)
        answer = resp.choices[0].message.content
        if joined != answer:
            # An end-of-sequence token is counted (and may have an entry) but is not content.
            self.assertEqual(resp.choices[0].finish_reason, "stop")
            self.assertTrue(joined.startswith(answer), (joined, answer))
            self.assertEqual("".join(c.token for c in content[:-1]), answer)
        for i, c in enumerate(content):
            self.assertIsInstance(c.token, str)
            self.assertLessEqual(c.logprob, 1e-6)
            self.assertGreaterEqual(len(c.top_logprobs), 2, f"token {i}")
            self.assertLessEqual(len(c.top_logprobs), 3, f"token {i}")
            best = max(t.logprob for t in c.top_logprobs)
            for t in c.top_logprobs:
                self.assertLessEqual(t.logprob, 1e-6)
            self.assertAlmostEqual(c.logprob, best, places=4, msg=f"token {i}: greedy is the argmax")
            self.assertIn(c.token, [t.token for t in c.top_logprobs])

    def test_logprobs_without_top(self):
        resp = CLIENT.chat.completions.create(model=NAME, messages=CAPITAL_Q,
                                              max_completion_tokens=4, temperature=0, logprobs=True)
        content = resp.choices[0].logprobs.content
        self.assertEqual(len(content), resp.usage.completion_tokens)
        for c in content:
            self.assertLessEqual(c.logprob, 1e-6)
        resp = CLIENT.chat.completions.create(model=NAME, messages=CAPITAL_Q,
                                              max_completion_tokens=4, temperature=0)
        self.assertIsNone(resp.choices[0].logprobs)


# ---- tokenizer, models, health, version, metrics ---------------------------------------
class EndpointsTest(unittest.TestCase):

    def test_tokenize_detokenize_round_trip(self):
        text = "Hello world! Ünïcödé 你好 🙂 tabs\tand\nnewlines"
        tok = tokenize(text, add_special_tokens=False)
        self.assertEqual(tok["count"], len(tok["tokens"]))
        self.assertEqual(tok["max_model_len"], sf.MAX_MODEL_LEN)
        self.assertIsNone(tok["token_strs"])
        self.assertTrue(all(isinstance(t, int) for t in tok["tokens"]))
        self.assertEqual(detokenize(tok["tokens"]), text)
        # Special tokens (the chat template's) come back as the offline detokenizer writes them.
        chat_ids = tokenize_messages(CAPITAL_Q)["tokens"]
        self.assertEqual(detokenize(chat_ids), cli_detokenize(chat_ids))
        status, body, raw = SERVER.json_request("POST", "/tokenize", {
            "prompt": text, "add_special_tokens": False, "return_token_strs": True})
        self.assertEqual(status, 200, raw)
        self.assertEqual(body["tokens"], tok["tokens"])
        self.assertIsInstance(body["token_strs"], list)
        self.assertEqual(len(body["token_strs"]), len(tok["tokens"]))
        self.assertTrue(all(isinstance(s, str) for s in body["token_strs"]))

    def test_tokenize_messages(self):
        tok = tokenize_messages(CAPITAL_Q)
        self.assertEqual(tok["count"], len(tok["tokens"]))
        rendered = cli_detokenize(tok["tokens"])
        self.assertIn("What is the capital of France?", rendered)
        without = tokenize_messages(CAPITAL_Q, chat_template_kwargs={})
        self.assertEqual(without["tokens"], tok["tokens"])
        status, body, raw = SERVER.json_request("POST", "/tokenize", {
            "messages": CAPITAL_Q, "add_generation_prompt": False})
        self.assertEqual(status, 200, raw)
        self.assertLess(body["count"], tok["count"], "the generation prompt adds tokens")
        self.assertEqual(tok["tokens"][:body["count"]], body["tokens"])

    def test_models(self):
        models = CLIENT.models.list()
        self.assertEqual([m.id for m in models.data], [NAME])
        status, body, raw = SERVER.json_request("GET", "/v1/models")
        self.assertEqual(status, 200, raw)
        self.assertEqual(body["object"], "list")
        self.assertEqual(len(body["data"]), 1)
        m = body["data"][0]
        self.assertEqual(m["id"], NAME)
        self.assertEqual(m["object"], "model")
        self.assertEqual(m["owned_by"], "tessera")
        self.assertEqual(m["max_model_len"], sf.MAX_MODEL_LEN)
        self.assertIsInstance(m["created"], int)
        self.assertEqual(m["root"], MODEL)

    def test_health(self):
        status, _, payload = SERVER.request("GET", "/health")
        self.assertEqual(status, 200)
        self.assertEqual(payload, b"")

    def test_version(self):
        status, body, raw = SERVER.json_request("GET", "/version")
        self.assertEqual(status, 200, raw)
        self.assertIsInstance(body.get("version"), str)
        self.assertTrue(body["version"])

    def test_metrics(self):
        text = SERVER.metrics_text()
        names = sf.metric_names(text)
        for g in ("vllm:num_requests_running", "vllm:num_requests_waiting",
                  "vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total",
                  "vllm:prefix_cache_hits_total", "vllm:prompt_tokens_total",
                  "vllm:generation_tokens_total", "vllm:num_preemptions_total"):
            self.assertIn(g, names)
            self.assertIsNotNone(sf.metric_value(text, g, model_name=NAME, engine="0"), f"{g}{{model_name, engine}}")
        # Tessera's own families keep their prefix.
        self.assertIn("tessera:kv_offload_stores_total", names)
        for h in ("vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                  "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds"):
            for suffix in ("_bucket", "_sum", "_count"):
                self.assertIn(h + suffix, names)
        usage = sf.metric_value(text, "vllm:kv_cache_usage_perc", model_name=NAME)
        self.assertTrue(0.0 <= usage <= 1.0, usage)

    def test_metrics_parse_as_prometheus_reads_them(self):
        try:
            from prometheus_client.parser import text_string_to_metric_families
        except ImportError:
            self.skipTest("prometheus_client is not installed (make setup)")
        families = {f.name: f for f in text_string_to_metric_families(SERVER.metrics_text())}
        # The client names counters without _total and histograms without their suffixes.
        for name, kind in (("vllm:num_requests_running", "gauge"), ("vllm:generation_tokens", "counter"),
                           ("vllm:request_success", "counter"), ("vllm:time_to_first_token_seconds", "histogram"),
                           ("vllm:request_params_n", "histogram"), ("vllm:iteration_tokens_total", "histogram"),
                           ("vllm:cache_config_info", "gauge"), ("tessera:kv_offload_stores", "counter")):
            self.assertIn(name, families)
            self.assertEqual(families[name].type, kind, name)
            for sample in families[name].samples:
                self.assertEqual(sample.labels["model_name"], NAME)
                self.assertEqual(sample.labels["engine"], "0")

    def test_metrics_counters_increase(self):
        before = SERVER.metrics_text()
        p0 = sf.metric_value(before, "vllm:prompt_tokens_total") or 0.0
        g0 = sf.metric_value(before, "vllm:generation_tokens_total") or 0.0
        s0 = sf.metric_value(before, "vllm:request_success_total", finished_reason="length") or 0
        e0 = sf.metric_value(before, "vllm:e2e_request_latency_seconds_count") or 0
        sizes = ("vllm:request_prompt_tokens_sum", "vllm:request_generation_tokens_sum",
                 "vllm:request_params_max_tokens_sum", "vllm:request_params_n_sum")
        times = ("vllm:request_prefill_time_seconds_count", "vllm:request_decode_time_seconds_count",
                 "vllm:request_inference_time_seconds_count")
        steps0 = sf.metric_value(before, "vllm:iteration_tokens_total_count") or 0
        sum0 = sf.metric_value(before, "vllm:iteration_tokens_total_sum") or 0
        v0 = {k: sf.metric_value(before, k) or 0 for k in sizes + times}
        resp = CLIENT.completions.create(model=NAME, prompt="Counting tokens: one two", max_tokens=5,
                                         temperature=1, seed=4, extra_body={"ignore_eos": True})
        self.assertEqual(resp.choices[0].finish_reason, "length")

        def done():
            # The request's counters, and its last step's observation, which the engine loop
            # records after it hands out the request's final output.
            t = SERVER.metrics_text()
            return t if ((sf.metric_value(t, "vllm:request_success_total", finished_reason="length") or 0) >= s0 + 1
                         and (sf.metric_value(t, "vllm:iteration_tokens_total_count") or 0) >= steps0 + 5) else None
        after = sf.wait_for(done, 5.0) or SERVER.metrics_text()
        self.assertEqual(sf.metric_value(after, "vllm:prompt_tokens_total") - p0,
                         resp.usage.prompt_tokens)
        self.assertEqual(sf.metric_value(after, "vllm:generation_tokens_total") - g0,
                         resp.usage.completion_tokens)
        self.assertEqual(sf.metric_value(after, "vllm:request_success_total",
                                         finished_reason="length") - s0, 1)
        self.assertEqual(sf.metric_value(after, "vllm:e2e_request_latency_seconds_count") - e0, 1)
        self.assertEqual(sf.metric_value(after, "vllm:num_requests_running"), 0)
        grown = {k: sf.metric_value(after, k) - v0[k] for k in sizes + times}
        self.assertEqual(grown, {"vllm:request_prompt_tokens_sum": resp.usage.prompt_tokens,
                                 "vllm:request_generation_tokens_sum": 5, "vllm:request_params_max_tokens_sum": 5,
                                 "vllm:request_params_n_sum": 1, **{k: 1 for k in times}})
        # vLLM's count: one step with the prompt's computed tokens and the first token (the prompt
        # is shorter than a block: no prefix hit), then four steps of one token.
        self.assertEqual(sf.metric_value(after, "vllm:iteration_tokens_total_count") - steps0, 5)
        self.assertEqual(sf.metric_value(after, "vllm:iteration_tokens_total_sum") - sum0, resp.usage.prompt_tokens + 5)
        info = [lab for n, lab, v in sf.parse_metrics(after) if n == "vllm:cache_config_info"]
        self.assertEqual(len(info), 1)
        self.assertEqual(info[0]["block_size"], "16")
        self.assertEqual(info[0]["enable_prefix_caching"], "True")
        self.assertGreater(int(info[0]["num_gpu_blocks"]), 0)
        # Token buckets step 1-2-5 up to the context.
        bounds = [lab["le"] for n, lab, _ in sf.parse_metrics(after) if n == "vllm:request_prompt_tokens_bucket"]
        # Written as vLLM's exporter (prometheus_client) writes float bounds.
        self.assertEqual(bounds[:4], ["1.0", "2.0", "5.0", "10.0"])
        self.assertEqual(bounds[-2:], ["2000.0", "+Inf"])


    def test_prefix_cache_counters(self):
        # A prompt of several KV blocks, sent twice: the second finds the first's blocks.
        prompt = ("The history of the city begins with a small settlement on the river bank, "
                  "where farmers and traders met every week to exchange grain, cloth and salt. ") * 3
        n = tokenize(prompt)["count"]
        self.assertGreaterEqual(n, 64)
        before = SERVER.metrics_text()
        q0 = sf.metric_value(before, "vllm:prefix_cache_queries_total")
        h0 = sf.metric_value(before, "vllm:prefix_cache_hits_total")
        for _ in range(2):
            CLIENT.completions.create(model=NAME, prompt=prompt, max_tokens=1, temperature=0)
        after = sf.wait_for(lambda: (lambda t: t if sf.metric_value(
            t, "vllm:prefix_cache_queries_total") >= q0 + 2 * n - 1 else None)(SERVER.metrics_text()), 5)
        self.assertTrue(after, "prefix_cache_queries_total did not grow by the prompt tokens")
        hits = sf.metric_value(after, "vllm:prefix_cache_hits_total") - h0
        self.assertGreaterEqual(hits, 32, "the repeated prompt found no cached block")
        self.assertLess(hits, n)


# ---- errors --------------------------------------------------------------------------
if __name__ == "__main__":
    sf.preflight(need_openai=True)
    sf.run_tests()
