"""vLLM's extras of the OpenAI API in `tessera serve`, read through the official `openai` Python
client:

- `--enable-prompt-tokens-details`: usage.prompt_tokens_details.cached_tokens reports the
  prompt tokens the prefix cache served, on /v1/completions and /v1/chat/completions,
  streaming or not. A prompt seen before hits every full block but the one holding its last
  token (which must run to give logits): cached_tokens = (prompt_tokens - 1) // block_size *
  block_size; a new prompt hits nothing. Without the flag the field is null
  (test_openai_server.py).
- `truncate_prompt_tokens` (request): only the prompt's last K tokens run (the first K with
  `truncation_side: "right"`; -1: up to the
  context); the answer equals that of the cut prompt sent as token ids.
- `stream_options.continuous_usage_stats` (with include_usage): every chunk carries usage,
  the prompt's tokens and its choice's tokens so far, ending at the final usage.
- `bad_words` (request): a word of the greedy answer, banned, is gone from the new answer
  (whose text until then is the same).
- `allowed_token_ids` (request): with one token allowed, the answer is that token repeated.
- `prompt_logprobs` (request): per prompt token null (the first) or the top entries and the
  prompt token, with ranks; the prompt token's logprob equals what echo + logprobs report.
  Not asked for, the field is there as null (completion choices, chat top level), as vLLM
  sends it.
- `return_token_ids` (request): the prompt's ids (`prompt_token_ids`: per completion choice;
  chat top level, streamed on the first chunk) and each choice's generated ids (`token_ids`,
  streamed per chunk), equal to /tokenize's ids and to the text they decode to.
- `echo` (chat): with `continue_final_message`, the reply starts with the assistant's prefix
  (streamed as its own chunk); after a generation prompt the last (user) message is not
  repeated.
- Values of another JSON type that vLLM's pydantic models coerce (`"logprobs": "true"`,
  `"top_logprobs": "2"`, `"temperature": "0"`) are taken as vLLM takes them.
- `POST /invocations` (SageMaker's route): a body with messages is a chat request, one with a
  prompt a completion request, the same answers as their own routes; anything else is a 400.
- ORCA load reports: a completion or chat request with `endpoint-load-metrics-format: TEXT`
  (or JSON) gets `endpoint-load-metrics` with the KV cache's usage and the waiting requests.
- `--enable-request-id-headers`: every response (errors and streams too) carries
  X-Request-Id, the client's or a new one; without the flag, none.
- `--enable-force-include-usage`: a stream ends with its usage chunk unasked, and every
  chunk carries the usage so far (vLLM's flag forces `continuous_usage_stats` too);
  `--enable-server-load-tracking`: GET /load counts the generation requests in progress;
  `--root-path P`: paths with the prefix P route as those without it.
- vLLM's serve flags: `--kv-cache-memory-bytes`, `--max-logprobs` (more gets vLLM's 400),
  `--revision main` with a local path (the path wins), flags without meaning here
  (`--disable-log-requests`, `--trust-remote-code`, ...) accepted; flags of
  features not built yet (`--enable-lora`, `--tool-call-parser`, ...) stop the start with
  their name; `--enable-tokenizer-info-endpoint` adds GET /tokenizer_info.
- `--return-tokens-as-token-ids` (server) / `return_tokens_as_token_ids` (request, which
  wins): logprob tokens named "token_id:N", N the generated id.
- `use_beam_search` (request, with `length_penalty`): its own file, test_vllm_beam_search.py.

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_vllm_extras.py [-k PATTERN]
Exit code 77: skipped (no binary with `serve`, no model, no `openai` package).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_fixture as sf  # noqa: E402

BLOCK = 16
SERVER: sf.Server | None = None
CLIENT = None
NAME = sf.SERVED_MODEL_NAME


def setUpModule():
    global SERVER, CLIENT
    binary, model = sf.preflight(need_openai=True)
    import openai
    SERVER = sf.Server(binary, model, ["--enable-prompt-tokens-details", "--block-size", str(BLOCK)],
                       name="vllm_extras")
    CLIENT = openai.OpenAI(base_url=SERVER.base_url + "/v1", api_key="unused", max_retries=0, timeout=120)


def tearDownModule():
    sf.stop_module_server(SERVER)


def long_prompt(tag: str) -> str:
    """A prompt of several blocks that no other test sends."""
    return (f"[{tag}] Write a short story about a lighthouse keeper who finds a message in a bottle, "
            "a map of an island that is not on any chart, and a key made of green glass. ") * 2


def expected_hit(prompt_tokens: int) -> int:
    return (prompt_tokens - 1) // BLOCK * BLOCK


def cached(usage) -> int:
    assert usage.prompt_tokens_details is not None, "prompt_tokens_details must be reported"
    return usage.prompt_tokens_details.cached_tokens


class PromptTokensDetailsTest(unittest.TestCase):

    def test_completion_repeat_hits_the_full_blocks(self):
        prompt = long_prompt("completion")
        first = CLIENT.completions.create(model=NAME, prompt=prompt, max_tokens=8, temperature=0)
        self.assertGreater(first.usage.prompt_tokens, 2 * BLOCK)
        self.assertEqual(cached(first.usage), 0)
        second = CLIENT.completions.create(model=NAME, prompt=prompt, max_tokens=8, temperature=0)
        self.assertEqual(second.usage.prompt_tokens, first.usage.prompt_tokens)
        self.assertEqual(cached(second.usage), expected_hit(first.usage.prompt_tokens))
        # The cached prefix gives the same greedy continuation.
        self.assertEqual(second.choices[0].text, first.choices[0].text)

    def test_completion_prompt_list_sums_its_prompts(self):
        seen, fresh = long_prompt("list-seen"), long_prompt("list-fresh")
        warm = CLIENT.completions.create(model=NAME, prompt=seen, max_tokens=1, temperature=0)
        resp = CLIENT.completions.create(model=NAME, prompt=[seen, fresh], max_tokens=4, temperature=0)
        self.assertEqual(cached(resp.usage), expected_hit(warm.usage.prompt_tokens))

    def test_completion_streaming_usage(self):
        prompt = long_prompt("completion-stream")
        first = CLIENT.completions.create(model=NAME, prompt=prompt, max_tokens=4, temperature=0)
        chunks = list(CLIENT.completions.create(model=NAME, prompt=prompt, max_tokens=4, temperature=0,
                                                stream=True, stream_options={"include_usage": True}))
        usage = chunks[-1].usage
        self.assertIsNotNone(usage)
        self.assertEqual(cached(usage), expected_hit(first.usage.prompt_tokens))

    def test_chat_repeat_and_streaming(self):
        messages = [{"role": "user", "content": long_prompt("chat")}]
        first = CLIENT.chat.completions.create(model=NAME, messages=messages, max_completion_tokens=6,
                                               temperature=0)
        hit = expected_hit(first.usage.prompt_tokens)
        self.assertGreater(hit, 0)
        # Other chats share the template's opening (its system prompt): at most those blocks.
        self.assertLess(cached(first.usage), hit)
        self.assertEqual(cached(first.usage) % BLOCK, 0)
        second = CLIENT.chat.completions.create(model=NAME, messages=messages, max_completion_tokens=6,
                                                temperature=0)
        self.assertEqual(cached(second.usage), hit)
        self.assertEqual(second.choices[0].message.content, first.choices[0].message.content)
        chunks = list(CLIENT.chat.completions.create(model=NAME, messages=messages, max_completion_tokens=6,
                                                     temperature=0, stream=True,
                                                     stream_options={"include_usage": True}))
        self.assertEqual(cached(chunks[-1].usage), hit)
        self.assertEqual(chunks[-1].usage.prompt_tokens, first.usage.prompt_tokens)


def tokenize(prompt: str) -> list[int]:
    status, body, raw = SERVER.json_request("POST", "/tokenize", {"model": NAME, "prompt": prompt})
    assert status == 200, (status, raw)
    return body["tokens"]


def tokenize_chat(messages: list[dict]) -> list[int]:
    status, body, raw = SERVER.json_request("POST", "/tokenize", {"model": NAME, "messages": messages})
    assert status == 200, (status, raw)
    return body["tokens"]


def detokenize_special(server, text: str) -> str:
    """text tokenized and decoded back with special tokens kept (a special token stays itself)."""
    status, body, raw = server.json_request("POST", "/tokenize", {"model": NAME, "prompt": text,
                                                                   "add_special_tokens": False})
    assert status == 200, (status, raw)
    status, out, raw = server.json_request("POST", "/detokenize", {"model": NAME, "tokens": body["tokens"]})
    assert status == 200, (status, raw)
    return out["prompt"]


def detokenize(tokens: list[int]) -> str:
    status, body, raw = SERVER.json_request("POST", "/detokenize", {"model": NAME, "tokens": tokens})
    assert status == 200, (status, raw)
    return body["prompt"]


class TruncatePromptTokensTest(unittest.TestCase):
    PROMPT = "Once upon a time in a small village by the sea, there lived an old fisherman who"

    def test_completion_keeps_the_last_tokens(self):
        ids = tokenize(self.PROMPT)
        self.assertGreater(len(ids), 8)
        cut = CLIENT.completions.create(model=NAME, prompt=self.PROMPT, max_tokens=8, temperature=0,
                                        extra_body={"truncate_prompt_tokens": 6})
        self.assertEqual(cut.usage.prompt_tokens, 6)
        ref = CLIENT.completions.create(model=NAME, prompt=ids[-6:], max_tokens=8, temperature=0)
        self.assertEqual(cut.choices[0].text, ref.choices[0].text)

    def test_truncation_side(self):
        ids = tokenize(self.PROMPT)
        for side, kept in (("right", ids[:4]), ("left", ids[-4:]), (None, ids[-4:])):
            status, body, raw = SERVER.json_request("POST", "/v1/completions", {
                "model": NAME, "prompt": ids, "max_tokens": 1, "temperature": 0, "return_token_ids": True,
                "truncate_prompt_tokens": 4, "truncation_side": side})
            self.assertEqual(status, 200, raw)
            self.assertEqual(body["choices"][0]["prompt_token_ids"], kept, side)
        chat = CLIENT.chat.completions.create(model=NAME, messages=[{"role": "user", "content": self.PROMPT}],
                                              max_completion_tokens=1, temperature=0,
                                              extra_body={"truncate_prompt_tokens": 3, "truncation_side": "right",
                                                          "return_token_ids": True})
        rendered = tokenize_chat([{"role": "user", "content": self.PROMPT}])
        self.assertEqual(chat.model_extra["prompt_token_ids"], rendered[:3])
        status, body, raw = SERVER.json_request("POST", "/v1/completions", {
            "model": NAME, "prompt": ids, "max_tokens": 1, "truncate_prompt_tokens": 4, "truncation_side": "middle"})
        self.assertEqual(status, 400, raw)
        self.assertEqual(body["error"]["param"], "truncation_side")

    def test_echo_shows_the_cut_prompt(self):
        ids = tokenize(self.PROMPT)
        resp = CLIENT.completions.create(model=NAME, prompt=self.PROMPT, max_tokens=3, temperature=0, echo=True,
                                         extra_body={"truncate_prompt_tokens": 5})
        self.assertTrue(resp.choices[0].text.startswith(detokenize(ids[-5:])), resp.choices[0].text)

    def test_short_prompt_and_minus_one_are_unchanged(self):
        n = len(tokenize(self.PROMPT))
        for k in (n, n + 5, -1):
            resp = CLIENT.completions.create(model=NAME, prompt=self.PROMPT, max_tokens=2, temperature=0,
                                             extra_body={"truncate_prompt_tokens": k})
            self.assertEqual(resp.usage.prompt_tokens, n, k)

    def test_chat(self):
        resp = CLIENT.chat.completions.create(model=NAME, messages=[{"role": "user", "content": self.PROMPT}],
                                              max_completion_tokens=4, temperature=0,
                                              extra_body={"truncate_prompt_tokens": 7})
        self.assertEqual(resp.usage.prompt_tokens, 7)

    def test_bad_values(self):
        for k, what in ((0, "at least 1"), (-2, "truncate_prompt_tokens"), (sf.MAX_MODEL_LEN + 1, "larger than"),
                        ("three", "truncate_prompt_tokens")):
            status, body, raw = SERVER.json_request("POST", "/v1/completions", {
                "model": NAME, "prompt": self.PROMPT, "max_tokens": 2, "truncate_prompt_tokens": k})
            self.assertEqual(status, 400, (k, raw))
            self.assertIn(what, body["error"]["message"], k)
            self.assertEqual(body["error"]["param"], "truncate_prompt_tokens", k)


class ContinuousUsageTest(unittest.TestCase):
    PROMPT = "List five colors:"

    def test_completion_chunks_count_up(self):
        chunks = list(CLIENT.completions.create(
            model=NAME, prompt=self.PROMPT, max_tokens=6, temperature=0, stream=True,
            stream_options={"include_usage": True, "continuous_usage_stats": True},
            extra_body={"ignore_eos": True}))
        prompt_tokens = len(tokenize(self.PROMPT))
        self.assertTrue(all(c.usage is not None for c in chunks))
        seen = [c.usage.completion_tokens for c in chunks if c.choices]
        self.assertEqual(seen, sorted(seen))
        self.assertEqual(seen[-1], 6)
        self.assertTrue(all(c.usage.prompt_tokens == prompt_tokens for c in chunks))
        self.assertTrue(all(c.usage.total_tokens == c.usage.prompt_tokens + c.usage.completion_tokens
                            for c in chunks))
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(chunks[-1].usage.completion_tokens, 6)

    def test_chat_per_choice(self):
        chunks = list(CLIENT.chat.completions.create(
            model=NAME, messages=[{"role": "user", "content": self.PROMPT}], max_completion_tokens=5, n=2,
            temperature=1, seed=3, stream=True,
            stream_options={"include_usage": True, "continuous_usage_stats": True},
            extra_body={"ignore_eos": True}))
        per_choice = {0: [], 1: []}
        for c in chunks[:-1]:
            self.assertIsNotNone(c.usage)
            per_choice[c.choices[0].index].append(c.usage.completion_tokens)
        for i in (0, 1):
            self.assertEqual(per_choice[i][0], 0, "the role chunk comes before any token")
            self.assertEqual(per_choice[i], sorted(per_choice[i]))
            self.assertEqual(per_choice[i][-1], 5)
        self.assertEqual(chunks[-1].usage.completion_tokens, 10)

    def test_needs_include_usage(self):
        chunks = list(CLIENT.completions.create(
            model=NAME, prompt=self.PROMPT, max_tokens=3, temperature=0, stream=True,
            stream_options={"include_usage": False, "continuous_usage_stats": True}))
        self.assertTrue(all(c.usage is None for c in chunks))


class BadWordsTest(unittest.TestCase):
    PROMPT = "The capital of France is"

    def test_banned_word_is_gone(self):
        first = CLIENT.completions.create(model=NAME, prompt=self.PROMPT, max_tokens=12, temperature=0)
        text = first.choices[0].text
        words = [w.strip(".,;:!?") for w in text.split()]
        word = next(w for w in words if len(w) >= 4 and w.isalpha())
        again = CLIENT.completions.create(model=NAME, prompt=self.PROMPT, max_tokens=12, temperature=0,
                                          extra_body={"bad_words": [word]})
        new_words = [w.strip(".,;:!?") for w in again.choices[0].text.split()]
        self.assertNotIn(word, new_words, (text, again.choices[0].text))
        cut = text.find(word)
        self.assertEqual(again.choices[0].text[:cut], text[:cut])
        chat = CLIENT.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "Name a color."}],
                                              max_completion_tokens=8, temperature=0)
        color = next(w.strip(".,;:!?") for w in chat.choices[0].message.content.split()
                     if len(w.strip(".,;:!?")) >= 3 and w.strip(".,;:!?").isalpha())
        banned = CLIENT.chat.completions.create(model=NAME, messages=[{"role": "user", "content": "Name a color."}],
                                                max_completion_tokens=8, temperature=0,
                                                extra_body={"bad_words": [color]})
        self.assertNotIn(color, [w.strip(".,;:!?") for w in banned.choices[0].message.content.split()])

    def test_bad_values(self):
        for value in ("Paris", [""], ["  "], [3]):
            status, body, raw = SERVER.json_request("POST", "/v1/completions", {
                "model": NAME, "prompt": self.PROMPT, "max_tokens": 2, "bad_words": value})
            self.assertEqual(status, 400, (value, raw))
            self.assertEqual(body["error"]["param"], "bad_words", value)


class AllowedTokenIdsTest(unittest.TestCase):

    def test_one_token_repeats(self):
        token = tokenize(" blue")[-1]
        for create, text_of in ((lambda **kw: CLIENT.completions.create(prompt="Colors:", **kw),
                                 lambda r: r.choices[0].text),
                                (lambda **kw: CLIENT.chat.completions.create(
                                    messages=[{"role": "user", "content": "Colors?"}], **kw),
                                 lambda r: r.choices[0].message.content)):
            resp = create(model=NAME, max_tokens=4, temperature=0.8, seed=1,
                          extra_body={"allowed_token_ids": [token], "ignore_eos": True})
            self.assertEqual(text_of(resp), detokenize([token] * 4))
            self.assertEqual(resp.usage.completion_tokens, 4)

    def test_bad_values(self):
        for value in ([], [-1], [10 ** 9], "3", [1.5]):
            status, body, raw = SERVER.json_request("POST", "/v1/completions", {
                "model": NAME, "prompt": "Colors:", "max_tokens": 2, "allowed_token_ids": value})
            self.assertEqual(status, 400, (value, raw))


class PromptLogprobsTest(unittest.TestCase):
    PROMPT = "The quick brown fox jumps over the lazy dog"

    def check_positions(self, ids, positions, k):
        self.assertEqual(len(positions), len(ids))
        self.assertIsNone(positions[0])
        for t in range(1, len(ids)):
            entries = positions[t]
            self.assertIn(str(ids[t]), entries, t)
            self.assertLessEqual(len(entries), k + 1)
            ranked = sorted(entries.values(), key=lambda e: e["rank"])
            self.assertEqual([e["logprob"] for e in ranked], sorted((e["logprob"] for e in ranked), reverse=True))
            for e in entries.values():
                self.assertLessEqual(e["logprob"], 1e-6)
                self.assertGreaterEqual(e["rank"], 1)
                self.assertIsInstance(e["decoded_token"], str)
            mine = entries[str(ids[t])]
            if mine["rank"] > k:  # outside the top k: below every one of them
                self.assertEqual(len(entries), k + 1)
                self.assertLessEqual(mine["logprob"], min(e["logprob"] for e in entries.values()))
        return [positions[t][str(ids[t])]["logprob"] for t in range(1, len(ids))]

    def test_completion(self):
        ids = tokenize(self.PROMPT)
        status, body, raw = SERVER.json_request("POST", "/v1/completions", {
            "model": NAME, "prompt": self.PROMPT, "max_tokens": 1, "temperature": 0, "prompt_logprobs": 2})
        self.assertEqual(status, 200, raw)
        mine = self.check_positions(ids, body["choices"][0]["prompt_logprobs"], 2)
        echo = CLIENT.completions.create(model=NAME, prompt=self.PROMPT, max_tokens=1, temperature=0, echo=True,
                                         logprobs=0)
        for a, b in zip(mine, echo.choices[0].logprobs.token_logprobs[1:len(ids)]):
            self.assertAlmostEqual(a, b, places=5)

    def test_chat(self):
        messages = [{"role": "user", "content": self.PROMPT}]
        status, body, raw = SERVER.json_request("POST", "/v1/chat/completions", {
            "model": NAME, "messages": messages, "max_tokens": 1, "prompt_logprobs": 0})
        self.assertEqual(status, 200, raw)
        status, tok, raw = SERVER.json_request("POST", "/tokenize", {
            "model": NAME, "messages": messages, "add_generation_prompt": True})
        self.check_positions(tok["tokens"], body["prompt_logprobs"], 0)
        self.assertEqual(len(body["prompt_logprobs"]), body["usage"]["prompt_tokens"])

    def test_bad_values(self):
        for extra in ({"prompt_logprobs": -1}, {"prompt_logprobs": 21}, {"prompt_logprobs": 1, "stream": True}):
            status, body, raw = SERVER.json_request("POST", "/v1/completions", {
                "model": NAME, "prompt": self.PROMPT, "max_tokens": 1, **extra})
            self.assertEqual(status, 400, (extra, raw))
            self.assertEqual(body["error"]["param"], "prompt_logprobs", extra)


class ReturnTokenIdsTest(unittest.TestCase):
    PROMPT = "The capital of France is"
    MESSAGES = [{"role": "user", "content": "Name a colour."}]

    def chat_prompt_ids(self):
        status, tok, raw = SERVER.json_request("POST", "/tokenize", {
            "model": NAME, "messages": self.MESSAGES, "add_generation_prompt": True})
        self.assertEqual(status, 200, raw)
        return tok["tokens"]

    def test_fields_not_asked_for_are_null(self):
        # vLLM serializes every field of its response models: those not asked for are null.
        status, body, raw = SERVER.json_request("POST", "/v1/completions", {
            "model": NAME, "prompt": self.PROMPT, "max_tokens": 2, "n": 2, "temperature": 1, "seed": 1})
        self.assertEqual(status, 200, raw)
        self.assertEqual(list(body), ["id", "object", "created", "model", "choices", "service_tier",
                                      "system_fingerprint", "usage", "kv_transfer_params", "metrics"])
        for choice in body["choices"]:
            self.assertEqual(list(choice), ["index", "text", "logprobs", "finish_reason", "stop_reason",
                                            "token_ids", "prompt_logprobs", "prompt_token_ids"])
            for key in ("token_ids", "prompt_logprobs", "prompt_token_ids"):
                self.assertIsNone(choice[key], key)
        status, body, raw = SERVER.json_request("POST", "/v1/chat/completions", {
            "model": NAME, "messages": self.MESSAGES, "max_tokens": 2})
        self.assertEqual(status, 200, raw)
        self.assertEqual(list(body), ["id", "object", "created", "model", "choices", "service_tier",
                                      "system_fingerprint", "usage", "prompt_logprobs", "prompt_token_ids",
                                      "kv_transfer_params", "metrics"])
        for key in ("prompt_logprobs", "prompt_token_ids", "service_tier", "kv_transfer_params", "metrics"):
            self.assertIsNone(body[key], key)
        self.assertIsNone(body["choices"][0]["token_ids"])

    def test_completion(self):
        resp = CLIENT.completions.create(model=NAME, prompt=self.PROMPT, max_tokens=6, n=2, temperature=1, seed=7,
                                         extra_body={"return_token_ids": True})
        ids = tokenize(self.PROMPT)
        generated = 0
        for choice in resp.choices:
            extra = choice.model_extra
            self.assertEqual(extra["prompt_token_ids"], ids)
            self.assertEqual(detokenize(extra["token_ids"]), choice.text)
            generated += len(extra["token_ids"])
        self.assertEqual(generated, resp.usage.completion_tokens)

    def test_completion_streamed(self):
        chunks = list(CLIENT.completions.create(model=NAME, prompt=self.PROMPT, max_tokens=6, temperature=0,
                                                stream=True, extra_body={"return_token_ids": True}))
        ids, text, prompt_ids = [], "", []
        for chunk in chunks:
            for choice in chunk.choices:
                extra = choice.model_extra
                if "prompt_token_ids" in extra:
                    self.assertEqual(prompt_ids, [], "prompt_token_ids comes once")
                    prompt_ids = extra["prompt_token_ids"]
                ids += extra["token_ids"]
                text += choice.text
        self.assertEqual(prompt_ids, tokenize(self.PROMPT))
        self.assertEqual(len(ids), 6)
        self.assertEqual(detokenize(ids), text)

    def test_chat(self):
        resp = CLIENT.chat.completions.create(model=NAME, messages=self.MESSAGES, max_tokens=5, temperature=0,
                                              extra_body={"return_token_ids": True})
        self.assertEqual(resp.model_extra["prompt_token_ids"], self.chat_prompt_ids())
        token_ids = resp.choices[0].model_extra["token_ids"]
        self.assertEqual(len(token_ids), resp.usage.completion_tokens)
        self.assertEqual(detokenize(token_ids), resp.choices[0].message.content)

    def test_chat_streamed(self):
        chunks = list(CLIENT.chat.completions.create(model=NAME, messages=self.MESSAGES, max_tokens=5,
                                                     temperature=0, stream=True,
                                                     extra_body={"return_token_ids": True}))
        self.assertEqual(chunks[0].model_extra["prompt_token_ids"], self.chat_prompt_ids())
        self.assertTrue(all("prompt_token_ids" not in c.model_extra for c in chunks[1:]))
        ids, text = [], ""
        for chunk in chunks:
            for choice in chunk.choices:
                ids += choice.model_extra.get("token_ids", [])
                text += choice.delta.content or ""
        self.assertEqual(len(ids), 5)
        self.assertEqual(detokenize(ids), text)

    def test_bad_value(self):
        status, body, raw = SERVER.json_request("POST", "/v1/completions", {
            "model": NAME, "prompt": self.PROMPT, "max_tokens": 1, "return_token_ids": "yes please"})
        self.assertEqual(status, 400, raw)
        self.assertEqual(body["error"]["param"], "return_token_ids")


class ChatEchoTest(unittest.TestCase):
    PREFIX = "The three primary colours are"
    MESSAGES = [{"role": "user", "content": "List the primary colours."},
                {"role": "assistant", "content": PREFIX}]

    def chat(self, **extra):
        return CLIENT.chat.completions.create(model=NAME, messages=self.MESSAGES, max_tokens=6, temperature=0,
                                              extra_body={"continue_final_message": True,
                                                          "add_generation_prompt": False, **extra})

    def test_continue_final_message_returns_the_prefix(self):
        plain = self.chat().choices[0].message.content
        echoed = self.chat(echo=True).choices[0].message.content
        self.assertEqual(echoed, self.PREFIX + plain)

    def test_streamed(self):
        plain = self.chat().choices[0].message.content
        chunks = list(CLIENT.chat.completions.create(
            model=NAME, messages=self.MESSAGES, max_tokens=6, temperature=0, stream=True,
            extra_body={"continue_final_message": True, "add_generation_prompt": False, "echo": True}))
        contents = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
        self.assertEqual(contents[0], self.PREFIX)
        self.assertEqual("".join(contents), self.PREFIX + plain)

    def test_after_a_generation_prompt_nothing_is_repeated(self):
        messages = [{"role": "user", "content": "Say hello."}]
        kw = dict(model=NAME, messages=messages, max_tokens=4, temperature=0)
        self.assertEqual(CLIENT.chat.completions.create(**kw, extra_body={"echo": True}).choices[0].message.content,
                         CLIENT.chat.completions.create(**kw).choices[0].message.content)


class LenientValuesTest(unittest.TestCase):

    def test_coerced_like_vllm(self):
        messages = [{"role": "user", "content": "Say hi."}]
        typed = CLIENT.chat.completions.create(model=NAME, messages=messages, max_tokens=3, temperature=0,
                                               logprobs=True, top_logprobs=2)
        status, body, raw = SERVER.json_request("POST", "/v1/chat/completions", {
            "model": NAME, "messages": messages, "max_tokens": "3", "temperature": "0", "logprobs": "true",
            "top_logprobs": "2"})
        self.assertEqual(status, 200, raw)
        self.assertEqual(body["choices"][0]["message"]["content"], typed.choices[0].message.content)
        self.assertEqual(len(body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]), 2)
        status, body, raw = SERVER.json_request("POST", "/v1/chat/completions", {
            "model": NAME, "messages": messages, "max_tokens": 3, "logprobs": "perhaps"})
        self.assertEqual(status, 400, raw)
        self.assertEqual(body["error"]["param"], "logprobs")


class InvocationsTest(unittest.TestCase):

    def test_routes_by_body(self):
        chat = {"model": NAME, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3, "temperature": 0}
        comp = {"model": NAME, "prompt": "The capital of France is", "max_tokens": 3, "temperature": 0}
        for body, route, kind in ((chat, "/v1/chat/completions", "chat.completion"),
                                  (comp, "/v1/completions", "text_completion")):
            status, via, raw = SERVER.json_request("POST", "/invocations", body)
            self.assertEqual(status, 200, raw)
            self.assertEqual(via["object"], kind)
            _, direct, _ = SERVER.json_request("POST", route, body)
            self.assertEqual(via["choices"], direct["choices"])
        status, body, raw = SERVER.json_request("POST", "/invocations", {"model": NAME, "input": "x"})
        self.assertEqual(status, 400, raw)
        self.assertIn("Cannot find suitable handler for request", body["error"]["message"])
        status, _, raw = SERVER.json_request("POST", "/invocations", dict(comp, max_tokens=-1))
        self.assertEqual(status, 400, raw)


class OrcaLoadReportTest(unittest.TestCase):

    def test_text_and_json(self):
        body = {"model": NAME, "prompt": "Hi", "max_tokens": 1}
        status, headers, raw = SERVER.request("POST", "/v1/completions", body,
                                              {"endpoint-load-metrics-format": "TEXT"})
        self.assertEqual(status, 200, raw)
        report = headers["endpoint-load-metrics"]
        self.assertTrue(report.startswith("TEXT named_metrics.kv_cache_usage_perc="), report)
        self.assertIn(", named_metrics.num_requests_waiting=", report)
        status, headers, raw = SERVER.request("POST", "/v1/chat/completions",
                                              {"model": NAME, "messages": [{"role": "user", "content": "Hi"}],
                                               "max_tokens": 1}, {"endpoint-load-metrics-format": "json"})
        self.assertEqual(status, 200, raw)
        kind, _, payload = headers["endpoint-load-metrics"].partition(" ")
        self.assertEqual(kind, "JSON")
        named = json.loads(payload)["named_metrics"]
        self.assertTrue(0.0 <= named["kv_cache_usage_perc"] <= 1.0)
        self.assertGreaterEqual(named["num_requests_waiting"], 0)
        _, headers, _ = SERVER.request("POST", "/v1/completions", body)
        self.assertNotIn("endpoint-load-metrics", headers)
        _, headers, _ = SERVER.request("POST", "/v1/completions", body, {"endpoint-load-metrics-format": "xml"})
        self.assertNotIn("endpoint-load-metrics", headers)


class DeploymentFlagsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        binary, model = sf.preflight(need_openai=True)
        cls.binary, cls.model = binary, model
        cls.server = sf.Server(binary, model, ["--enable-request-id-headers", "--enable-force-include-usage",
                                               "--enable-server-load-tracking", "--root-path", "/api/",
                                               # given twice: the last counts, as under vllm serve
                                               "--max-logprobs", "7", "--max-logprobs", "2", "--revision", "main",
                                               "--enable-tokenizer-info-endpoint", "--disable-log-requests",
                                               "--uvicorn-log-level", "warning", "--trust-remote-code"],
                               name="deployment_flags")

    @classmethod
    def tearDownClass(cls):
        sf.stop_module_server(cls.server)

    def test_echoed_or_made(self):
        body = {"model": NAME, "prompt": "Hi", "max_tokens": 2}
        status, headers, raw = self.server.request("POST", "/v1/completions", body, {"X-Request-Id": "job-42"})
        self.assertEqual(status, 200, raw)
        self.assertEqual(headers["x-request-id"], "job-42")
        status, headers, raw = self.server.request("POST", "/v1/completions", dict(body, stream=True),
                                                   {"X-Request-Id": "job-43"})
        self.assertEqual((status, headers["x-request-id"]), (200, "job-43"))
        status, headers, raw = self.server.request("POST", "/v1/completions", dict(body, max_tokens=-1),
                                                   {"X-Request-Id": "job-44"})
        self.assertEqual((status, headers["x-request-id"]), (400, "job-44"))
        _, a, _ = self.server.request("POST", "/v1/completions", body)
        _, b, _ = self.server.request("POST", "/v1/completions", body)
        self.assertTrue(a["x-request-id"] and b["x-request-id"] and a["x-request-id"] != b["x-request-id"])
        _, plain, _ = SERVER.request("POST", "/v1/completions", body, {"X-Request-Id": "job-45"})
        self.assertNotIn("x-request-id", plain)

    def test_forced_usage(self):
        status, _, raw = self.server.request("POST", "/v1/completions",
                                             {"model": NAME, "prompt": "Hi", "max_tokens": 3, "stream": True})
        self.assertEqual(status, 200, raw)
        events = sf.sse_json(raw)
        self.assertEqual(events[-1]["choices"], [])
        self.assertEqual(events[-1]["usage"]["completion_tokens"], 3)
        # vLLM's flag forces continuous_usage_stats too: every chunk counts the tokens so far.
        prompt_tokens = events[-1]["usage"]["prompt_tokens"]
        running = [e["usage"]["completion_tokens"] for e in events[:-1]]
        self.assertTrue(all(e["usage"]["prompt_tokens"] == prompt_tokens for e in events), events)
        self.assertEqual(running, sorted(running))
        self.assertEqual(running[-1], 3)
        status, _, raw = self.server.request("POST", "/v1/chat/completions",
                                             {"model": NAME, "messages": [{"role": "user", "content": "Hi"}],
                                              "max_completion_tokens": 3, "min_tokens": 3, "stream": True})
        self.assertEqual(status, 200, raw)
        events = sf.sse_json(raw)
        self.assertTrue(all(e["usage"] is not None for e in events), events)
        self.assertEqual(events[0]["usage"]["completion_tokens"], 0)
        self.assertEqual(events[-1]["usage"]["completion_tokens"], 3)
        _, _, raw = SERVER.request("POST", "/v1/completions",
                                   {"model": NAME, "prompt": "Hi", "max_tokens": 3, "stream": True})
        self.assertNotIn(b'"usage"', raw)

    def test_load_counts_requests_in_progress(self):
        self.assertEqual(self.server.json_request("GET", "/load")[1], {"server_load": 0})
        done = threading.Event()
        def long_request():
            self.server.request("POST", "/v1/completions", {"model": NAME, "prompt": "Tell a story.",
                                                           "max_tokens": 400, "ignore_eos": True})
            done.set()
        worker = threading.Thread(target=long_request)
        worker.start()
        seen = 0
        while not done.is_set() and seen == 0:
            seen = self.server.json_request("GET", "/load")[1]["server_load"]
        worker.join()
        self.assertEqual(seen, 1)
        self.assertEqual(self.server.json_request("GET", "/load")[1], {"server_load": 0})
        self.assertEqual(SERVER.request("GET", "/load")[0], 404)

    def test_max_logprobs(self):
        body = {"model": NAME, "prompt": "Hi", "max_tokens": 1}
        self.assertEqual(self.server.request("POST", "/v1/completions", dict(body, logprobs=2))[0], 200)
        status, payload, raw = self.server.json_request("POST", "/v1/completions", dict(body, logprobs=3))
        self.assertEqual(status, 400, raw)
        self.assertIn("Requested sample logprobs of 3, which is greater than max allowed: 2",
                      payload["error"]["message"])
        status, payload, raw = self.server.json_request("POST", "/v1/completions", dict(body, prompt_logprobs=5))
        self.assertEqual(status, 400, raw)
        self.assertIn("Requested prompt logprobs of 5", payload["error"]["message"])

    def test_kv_cache_memory_bytes_is_vllms_name(self):
        out = subprocess.run([self.binary, "generate", "--model", self.model, "--device", "cpu", "--prompt", "Hi",
                              "--max-tokens", "1", "--max-model-len", "1024", "--kv-cache-memory-bytes", str(64 << 20)],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-500:])
        self.assertIn("KV cache:", out.stderr)

    def test_flags_of_features_not_built_stop_the_start(self):
        for args, named in ((["--enable-lora"], "--enable-lora"), (["--speculative-config", "{}"], "--speculative-config"),
                            (["--ssl-keyfile", "/tmp/key.pem"], "--ssl-keyfile")):
            out = subprocess.run([self.binary, "serve", self.model, "--port", "0", *args], capture_output=True,
                                 text=True, timeout=60)
            self.assertNotEqual(out.returncode, 0, args)
            self.assertIn(named, out.stderr + out.stdout)
            self.assertIn("not support", out.stderr + out.stdout)

    def test_tool_flags_are_checked_at_start(self):
        for args, named in ((["--enable-auto-tool-choice"], "requires --tool-call-parser"),
                            (["--tool-call-parser", "nope"], "--tool-call-parser"),
                            (["--reasoning-parser", "nope"], "--reasoning-parser")):
            out = subprocess.run([self.binary, "serve", self.model, "--port", "0", *args], capture_output=True,
                                 text=True, timeout=60)
            self.assertNotEqual(out.returncode, 0, args)
            self.assertIn(named, out.stderr + out.stdout)

    def test_tokenizer_info(self):
        status, info, raw = self.server.json_request("GET", "/tokenizer_info")
        self.assertEqual(status, 200, raw)
        self.assertTrue(info["tokenizer_class"].endswith("Fast"), info)
        self.assertIn("{%", info["chat_template"])
        self.assertEqual(info["eos_token"], detokenize_special(self.server, info["eos_token"]))
        self.assertEqual(SERVER.request("GET", "/tokenizer_info")[0], 404)

    def test_root_path(self):
        for path, code in (("/api/v1/models", 200), ("/v1/models", 200), ("/apix/v1/models", 404),
                           ("/api", 404)):
            self.assertEqual(self.server.request("GET", path)[0], code, path)


class ReturnTokensAsTokenIdsTest(unittest.TestCase):
    PROMPT = "The capital of France is"

    @classmethod
    def setUpClass(cls):
        binary, model = sf.preflight(need_openai=True)
        cls.server = sf.Server(binary, model, ["--return-tokens-as-token-ids"], name="token_ids_names")

    @classmethod
    def tearDownClass(cls):
        sf.stop_module_server(cls.server)

    def completion(self, server, **extra):
        status, body, raw = server.json_request("POST", "/v1/completions", {
            "model": NAME, "prompt": self.PROMPT, "max_tokens": 4, "temperature": 0, "logprobs": 2,
            "return_token_ids": True, **extra})
        self.assertEqual(status, 200, raw)
        return body["choices"][0]

    def test_completion_tokens_name_their_ids(self):
        choice = self.completion(self.server)
        names = [f"token_id:{i}" for i in choice["token_ids"]]
        self.assertEqual(choice["logprobs"]["tokens"], names)
        for name, top in zip(names, choice["logprobs"]["top_logprobs"]):
            self.assertIn(name, top)
            self.assertTrue(all(k.startswith("token_id:") for k in top), top)
        # The request's own choice wins, either way.
        self.assertEqual(self.completion(self.server, return_tokens_as_token_ids=False)["logprobs"]["tokens"],
                         self.completion(SERVER)["logprobs"]["tokens"])
        self.assertEqual(self.completion(SERVER, return_tokens_as_token_ids=True)["logprobs"]["tokens"], names)

    def test_chat_tokens_name_their_ids(self):
        status, body, raw = self.server.json_request("POST", "/v1/chat/completions", {
            "model": NAME, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3, "temperature": 0,
            "logprobs": True, "top_logprobs": 2, "return_token_ids": True})
        self.assertEqual(status, 200, raw)
        choice = body["choices"][0]
        content = choice["logprobs"]["content"]
        self.assertEqual([e["token"] for e in content], [f"token_id:{i}" for i in choice["token_ids"]])
        for e in content:
            self.assertEqual(bytes(e["bytes"]).decode(), e["token"])
            self.assertTrue(all(t["token"].startswith("token_id:") for t in e["top_logprobs"]))



class VllmApiKeyTest(unittest.TestCase):
    """vLLM's server reads its key from VLLM_API_KEY when --api-key is not given."""

    def test_the_environments_key_is_required(self):
        binary, model = sf.preflight()
        saved = os.environ.get("VLLM_API_KEY")
        os.environ["VLLM_API_KEY"] = "abc-123"
        try:
            server = sf.Server(binary, model, [], name="vllm_api_key")
        finally:
            if saved is None:
                del os.environ["VLLM_API_KEY"]
            else:
                os.environ["VLLM_API_KEY"] = saved
        try:
            body = {"model": NAME, "prompt": "x", "max_tokens": 1}
            self.assertEqual(server.request("POST", "/v1/completions", body)[0], 401)
            self.assertEqual(server.request("POST", "/v1/completions", body,
                                            headers={"Authorization": "Bearer abc"})[0], 401)
            self.assertEqual(server.request("POST", "/v1/completions", body,
                                            headers={"Authorization": "Bearer abc-123"})[0], 200)
            self.assertEqual(server.request("GET", "/health")[0], 200)
        finally:
            sf.stop_module_server(server)

if __name__ == "__main__":
    sf.preflight(need_openai=True)
    sf.run_tests()
