"""vLLM's chat extras in `tessera serve`, read through raw JSON and the official `openai` client
(the vLLM extras' suite, test_vllm_extras.py, in a file of its own):

- POST /v1/chat/completions/batch: `messages` is a list of conversations; the reply is one chat
  completion whose choice i (index i) answers conversation i exactly as /v1/chat/completions
  answers it alone (text, token ids, logprobs, finish reason), usage summed; the chat fields
  apply to each (logprobs, return_token_ids, return_tokens_as_token_ids, logprob_token_ids,
  echo); streaming, tools, beam search, n > 1 and empty conversations are vLLM's 400s.
- `kv_transfer_params.prompt_token_ids` (a prefill server's rendered prompt, forwarded): the
  chat runs those ids instead of rendering its messages, so it answers as the request that
  rendered them did (greedy text, `prompt_token_ids`), streamed or not; ignored with `echo`;
  a malformed list is vLLM's 400.
- `--enable-per-request-metrics`: an unstreamed reply's top-level `metrics` holds vLLM's
  timings (time_to_first_token_ms, generation_time_ms, queue_time_ms, mean_itl_ms,
  tokens_per_second), consistent with each other and with the client's own clock; streamed,
  only the final usage chunk carries them (no mean_itl_ms for one token); without the flag,
  `metrics` is null and no chunk has it.

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_vllm_chat_extras.py [-k PATTERN]
Exit code 77: skipped (no binary with `serve`, no model, no `openai` package).
"""

from __future__ import annotations

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_fixture as sf  # noqa: E402

SERVER: sf.Server | None = None
NAME = sf.SERVED_MODEL_NAME
CONVERSATIONS = [[{"role": "user", "content": "Reply with exactly the word: alpha"}],
                 [{"role": "user", "content": "Reply with exactly the word: beta"}],
                 [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a fruit."}]]


def setUpModule():
    global SERVER
    binary, model = sf.preflight(need_openai=True)
    SERVER = sf.Server(binary, model, [], name="chat_extras")


def tearDownModule():
    sf.stop_module_server(SERVER)


def post(path, body, status=200):
    code, out, raw = SERVER.json_request("POST", path, dict(body, model=NAME))
    assert code == status, (code, raw[:500])
    return out


class BatchChatTest(unittest.TestCase):
    FIELDS = {"max_tokens": 8, "temperature": 0}

    def check_like_single(self, extra):
        batch = post("/v1/chat/completions/batch", {"messages": CONVERSATIONS, **self.FIELDS, **extra})
        self.assertEqual(batch["object"], "chat.completion")
        self.assertEqual([c["index"] for c in batch["choices"]], list(range(len(CONVERSATIONS))))
        prompt_tokens = completion_tokens = 0
        for conversation, choice in zip(CONVERSATIONS, batch["choices"]):
            single = post("/v1/chat/completions", {"messages": conversation, **self.FIELDS, **extra})
            want = single["choices"][0]
            for key in ("message", "logprobs", "finish_reason", "stop_reason", "token_ids"):
                self.assertEqual(choice[key], want[key], (key, extra))
            prompt_tokens += single["usage"]["prompt_tokens"]
            completion_tokens += single["usage"]["completion_tokens"]
        self.assertEqual(batch["usage"]["prompt_tokens"], prompt_tokens)
        self.assertEqual(batch["usage"]["completion_tokens"], completion_tokens)
        self.assertEqual(batch["usage"]["total_tokens"], prompt_tokens + completion_tokens)
        return batch

    def test_plain(self):
        batch = self.check_like_single({})
        self.assertTrue(all(c["message"]["content"] for c in batch["choices"]))
        self.assertTrue(all(c["logprobs"] is None for c in batch["choices"]))

    def test_logprobs_and_token_ids(self):
        batch = self.check_like_single({"logprobs": True, "top_logprobs": 1, "return_token_ids": True})
        for choice in batch["choices"]:
            self.assertEqual(len(choice["logprobs"]["content"]), len(choice["token_ids"]))
        batch = self.check_like_single({"logprobs": True, "top_logprobs": 2, "return_tokens_as_token_ids": True})
        entry = batch["choices"][0]["logprobs"]["content"][0]
        self.assertTrue(entry["token"].startswith("token_id:"))
        batch = self.check_like_single({"logprobs": True, "logprob_token_ids": [5000], "return_token_ids": True})
        for choice in batch["choices"]:
            first = choice["logprobs"]["content"][0]["top_logprobs"]
            self.assertEqual(len(first), 1 if choice["token_ids"][0] == 5000 else 2)

    def test_echo_and_continuation(self):
        conversations = [[{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi there"}]]
        batch = post("/v1/chat/completions/batch", {
            "messages": conversations, "echo": True, "add_generation_prompt": False,
            "continue_final_message": True, **self.FIELDS})
        self.assertTrue(batch["choices"][0]["message"]["content"].startswith("Hi there"))
        self.assertEqual(batch["choices"][0]["message"]["role"], "assistant")

    def test_vllms_400s(self):
        for extra, param in (({"stream": True}, "stream"),
                             ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
                             ({"use_beam_search": True}, "use_beam_search"), ({"n": 2, "temperature": 1}, "n"),
                             ({"messages": []}, "messages"), ({"messages": [[]]}, "messages"),
                             ({"messages": [[{"role": "user", "content": "x"}], []]}, "messages"),
                             ({"logprob_token_ids": [5]}, "logprob_token_ids")):
            body = {"messages": CONVERSATIONS, "max_tokens": 2, **extra}
            err = post("/v1/chat/completions/batch", body, status=400)
            self.assertEqual(err["error"]["param"], param, extra)
        status, _, _ = SERVER.request("GET", "/v1/chat/completions/batch")
        self.assertEqual(status, 405)


class ForwardedPromptTest(unittest.TestCase):
    ORIGINAL = [{"role": "user", "content": "Hello, how are you today?"}]
    OTHER = [{"role": "user", "content": "unrelated decode-side text"}]

    def test_round_trip(self):
        base = {"max_completion_tokens": 16, "temperature": 0, "return_token_ids": True}
        first = post("/v1/chat/completions", {"messages": self.ORIGINAL, **base})
        ids = first["prompt_token_ids"]
        forwarded = post("/v1/chat/completions", {"messages": self.OTHER, **base,
                                                  "kv_transfer_params": {"prompt_token_ids": ids}})
        self.assertEqual(forwarded["prompt_token_ids"], ids)
        self.assertEqual(forwarded["choices"][0]["message"]["content"], first["choices"][0]["message"]["content"])
        self.assertTrue(forwarded["choices"][0]["message"]["content"])
        code, _, raw = SERVER.request("POST", "/v1/chat/completions", dict(
            model=NAME, messages=self.OTHER, stream=True, kv_transfer_params={"prompt_token_ids": ids}, **base))
        self.assertEqual(code, 200, raw[:300])
        self.assertEqual(sf.sse_json(raw)[0]["prompt_token_ids"], ids)
        # With echo the messages are rendered (vLLM ignores the forwarded ids).
        echoed = post("/v1/chat/completions", {"messages": self.OTHER, **base, "echo": True,
                                               "kv_transfer_params": {"prompt_token_ids": ids}})
        self.assertNotEqual(echoed["prompt_token_ids"], ids)

    def test_malformed(self):
        for value in ([], [1, -2], "abc", [1.5]):
            err = post("/v1/chat/completions", {"messages": self.OTHER, "max_tokens": 1,
                                                "kv_transfer_params": {"prompt_token_ids": value}}, status=400)
            self.assertEqual(err["error"]["param"], "kv_transfer_params.prompt_token_ids", value)


class PerRequestMetricsTest(unittest.TestCase):
    KEYS = ("time_to_first_token_ms", "generation_time_ms", "queue_time_ms", "mean_itl_ms", "tokens_per_second")

    @classmethod
    def setUpClass(cls):
        binary, model = sf.preflight(need_openai=True)
        cls.server = sf.Server(binary, model, ["--enable-per-request-metrics"], name="per_request_metrics")

    @classmethod
    def tearDownClass(cls):
        sf.stop_module_server(cls.server)

    def check(self, metrics, tokens, wall_ms):
        self.assertEqual(set(metrics), set(self.KEYS) - ({"mean_itl_ms"} if tokens == 1 else set()))
        for key, value in metrics.items():
            self.assertGreaterEqual(value, 0.0, key)
        if tokens > 1:
            self.assertAlmostEqual(metrics["mean_itl_ms"] * (tokens - 1), metrics["generation_time_ms"], delta=1e-6)
        inference_ms = metrics["time_to_first_token_ms"] + metrics["generation_time_ms"]
        self.assertAlmostEqual(metrics["tokens_per_second"], tokens / inference_ms * 1e3,
                               delta=1e-6 * metrics["tokens_per_second"])
        self.assertLessEqual(metrics["queue_time_ms"] + inference_ms, wall_ms)

    def test_unstreamed(self):
        for path, body in (("/v1/chat/completions", {"messages": [{"role": "user", "content": "Count to four."}],
                                                     "max_completion_tokens": 4, "min_tokens": 4}),
                           ("/v1/completions", {"prompt": "Count to four:", "max_tokens": 4, "min_tokens": 4})):
            start = time.monotonic()
            code, out, raw = self.server.json_request("POST", path, dict(body, model=NAME, temperature=0))
            wall_ms = (time.monotonic() - start) * 1e3
            self.assertEqual(code, 200, raw[:300])
            self.check(out["metrics"], out["usage"]["completion_tokens"], wall_ms)
        plain = post("/v1/chat/completions", {"messages": CONVERSATIONS[0], "max_tokens": 2})
        self.assertIsNone(plain["metrics"])

    def test_streamed_usage_chunk_only(self):
        for path, body in (("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}],
                                                     "max_completion_tokens": 1, "min_tokens": 1}),
                           ("/v1/completions", {"prompt": "Hi", "max_tokens": 3, "min_tokens": 3})):
            start = time.monotonic()
            code, _, raw = self.server.request("POST", path, dict(body, model=NAME, stream=True,
                                                                  stream_options={"include_usage": True}))
            wall_ms = (time.monotonic() - start) * 1e3
            self.assertEqual(code, 200, raw[:300])
            events = sf.sse_json(raw)
            self.assertEqual(events[-1]["choices"], [])
            self.assertTrue(all("metrics" not in e for e in events[:-1]))
            self.check(events[-1]["metrics"], events[-1]["usage"]["completion_tokens"], wall_ms)
        code, _, raw = SERVER.request("POST", "/v1/completions", {"model": NAME, "prompt": "Hi", "max_tokens": 2,
                                                                  "stream": True,
                                                                  "stream_options": {"include_usage": True}})
        self.assertTrue(all("metrics" not in e for e in sf.sse_json(raw)))


if __name__ == "__main__":
    sf.preflight(need_openai=True)
    sf.run_tests()
