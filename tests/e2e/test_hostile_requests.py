"""`tessera serve` against requests that are valid HTTP and JSON but built to crash, stall or
starve it: JSON nested inside strings, reply amplification, request-supplied templates,
sequence counts, priorities, CPU-heavy work beside /health, configurations that would hang.
Each test fails on the server before issue 21's fixes.

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_hostile_requests.py [-k PATTERN]
Exit code 77: skipped (no binary with `serve`, no model).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raw_http  # noqa: E402
import server_fixture as sf  # noqa: E402

SERVER: sf.Server | None = None


def setUpModule():
    global SERVER
    binary, model = sf.preflight(need_openai=False)
    SERVER = sf.Server(binary, model, name="requests")


def tearDownModule():
    sf.stop_module_server(SERVER)


class RequestClassesTest(unittest.TestCase):

    def tearDown(self):
        self.assertTrue(SERVER.alive(), f"the server died; log:\n{SERVER.log_tail()}")

    def check_bad(self, path: str, body: bytes, allowed=(400,)):
        what = f"POST {path} {body[:120]!r}"
        try:
            status, _, payload = SERVER.request("POST", path, body, timeout=60)
        except (ConnectionError, socket.timeout) as e:
            self.fail(f"{what}: no response ({e!r})")
        self.assertLess(status, 500, f"{what}: 5xx {status} {payload[:300]!r}")
        self.assertIn(status, allowed, f"{what}: status {status}, body {payload[:300]!r}")
        if status >= 400:
            sf.assert_error_shape(self, payload, status, what)
        return status, payload

    def test_json_nested_inside_strings(self):
        # Tool-call arguments are JSON text that the server parses again for the template:
        # 240 KB of brackets there once overflowed the stack (parse, then recursive copies).
        depth = 120_000
        messages = [{"role": "user", "content": "hi"},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "c1", "type": "function",
                          "function": {"name": "f", "arguments": "[" * depth + "]" * depth}}]},
                     {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
        for path, body in (("/tokenize", {"messages": messages}),
                           ("/v1/chat/completions", {"messages": messages, "max_tokens": 1}),
                           ("/tokenize", {"messages": [dict(messages[1], tool_calls=[{"id": "c1", "type": "function",
                               "function": {"name": "f", "arguments": '{"a": ' + "[" * depth + "]" * depth + "}"}}])]})):
            with self.subTest(path=path):
                status, payload = self.check_bad(path, json.dumps(body).encode(), allowed=(200, 400))
                self.assertTrue(SERVER.alive())

    def test_null_content_renders_as_empty(self):
        # As vLLM: content null (a user turn, an assistant turn that only calls tools) is "".
        for messages in ([{"role": "user", "content": None}],
                         [{"role": "user", "content": "What is 2+2?"},
                          {"role": "assistant", "content": None, "tool_calls": [
                              {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2}'}}]},
                          {"role": "tool", "tool_call_id": "c1", "content": "4"}],
                         [{"role": "user"}]):
            with self.subTest(messages=messages):
                status, body, raw = SERVER.json_request("POST", "/v1/chat/completions",
                                                        {"messages": messages, "max_tokens": 2, "temperature": 0})
                self.assertEqual(status, 200, raw[:300])
                with_empty = [dict(m, content="") if m.get("content") is None else m for m in messages]
                _, a, _ = SERVER.json_request("POST", "/tokenize", {"messages": messages})
                _, b, _ = SERVER.json_request("POST", "/tokenize", {"messages": with_empty})
                self.assertEqual(a["tokens"], b["tokens"])

    def test_request_chat_template_needs_trust(self):
        # A template sent by the client is code: refused unless the server trusts them.
        tmpl = "{% for i in range(1000000) %}{{ 'x' * 32 }}{% endfor %}"
        msgs = [{"role": "user", "content": "hi"}]
        for path, body in (("/v1/chat/completions", {"messages": msgs, "chat_template": tmpl, "max_tokens": 1}),
                           ("/tokenize", {"messages": msgs, "chat_template": tmpl})):
            with self.subTest(path=path):
                _, payload = self.check_bad(path, json.dumps(body).encode())
                err = json.loads(payload)["error"]
                self.assertEqual(err["param"], "chat_template")
                self.assertIn("--trust-request-chat-template", err["message"])

    def test_prompt_logprobs_amplification_refused_up_front(self):
        # 10 KB of prompt with prompt_logprobs=20 and n=128 once built a 362 MB reply on the
        # I/O thread. The reply's size follows from the request: 400 before any work.
        prompt = "word " * 1500
        body = {"prompt": prompt, "max_tokens": 1, "n": 128, "prompt_logprobs": 20}
        start = time.monotonic()
        _, payload = self.check_bad("/v1/completions", json.dumps(body).encode())
        self.assertIn("--max-response-bytes", json.loads(payload)["error"]["message"])
        self.assertLess(time.monotonic() - start, 10, "the refusal came after the work")
        # Within the limit, every choice carries the same prompt_logprobs, serialized once.
        status, out, raw = SERVER.json_request("POST", "/v1/completions",
                                               {"prompt": "The sky is blue.", "max_tokens": 1, "n": 3,
                                                "prompt_logprobs": 2})
        self.assertEqual(status, 200, raw[:300])
        firsts = [c["prompt_logprobs"] for c in out["choices"]]
        self.assertEqual(firsts[0], firsts[1])
        self.assertEqual(firsts[0], firsts[2])
        self.assertIsNone(firsts[0][0])

    def test_prompt_logprobs_memory_is_handed_back(self):
        # Prompt logprobs need a full-vocabulary logits row per prompt token: 1,500 tokens of
        # SmolLM2 are ~300 MB for one step. That peak once stayed with the process for good.
        status, _, raw = SERVER.json_request("POST", "/v1/completions", {"prompt": "Once upon", "max_tokens": 2})
        self.assertEqual(status, 200, raw[:300])
        before = SERVER.rss_mib()
        status, out, raw = SERVER.json_request("POST", "/v1/completions",
                                               {"prompt": "word " * 1500, "max_tokens": 1, "prompt_logprobs": 1},
                                               timeout=300)
        self.assertEqual(status, 200, raw[:300])
        self.assertGreater(len(out["choices"][0]["prompt_logprobs"]), 1000)
        time.sleep(1)
        grown = SERVER.rss_mib() - before
        self.assertLess(grown, 120, f"RSS stayed {grown:.0f} MiB above where it was")

    def test_priority_needs_the_priority_policy(self):
        # Any client could starve everyone with priority -1000000 (lower runs first).
        for path, body in (("/v1/completions", {"prompt": "x", "max_tokens": 1, "priority": -1000000}),
                           ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                                     "max_tokens": 1, "priority": 5})):
            with self.subTest(path=path):
                _, payload = self.check_bad(path, json.dumps(body).encode())
                self.assertEqual(json.loads(payload)["error"]["param"], "priority")
        status, _, raw = SERVER.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 1, "priority": 0})
        self.assertEqual(status, 200, raw[:300])

    def test_sequences_per_request_are_bounded(self):
        # One 10 KB request once put 131,072 sequences (1,024 prompts x n=128) in the engine.
        for prompts, n in ((["a"] * 1024, 128), (["a"] * 200, 8), ([[5, 6]] * 1000, 2)):
            with self.subTest(prompts=len(prompts), n=n):
                _, payload = self.check_bad("/v1/completions", json.dumps(
                    {"prompt": prompts, "n": n, "max_tokens": 1}).encode())
                self.assertIn("sequences", json.loads(payload)["error"]["message"])

    def test_allowed_token_ids_hold_under_min_tokens(self):
        # The only allowed token is a stop token and min_tokens masks stop tokens: every token
        # was masked, and one outside the allowed set came out.
        _, tok, _ = SERVER.json_request("POST", "/tokenize", {"prompt": " blue", "add_special_tokens": False})
        token = tok["tokens"][0]
        _, text, _ = SERVER.json_request("POST", "/detokenize", {"tokens": [token]})
        for extra in ({"stop_token_ids": [token]}, {"ignore_eos": True}):
            body = {"prompt": "The sky is", "max_tokens": 4, "min_tokens": 4, "temperature": 0,
                    "allowed_token_ids": [token], "logprobs": 0, **extra}
            status, out, raw = SERVER.json_request("POST", "/v1/completions", body)
            with self.subTest(**extra):
                self.assertEqual(status, 200, raw[:300])
                tokens = out["choices"][0]["logprobs"]["tokens"]
                self.assertTrue(tokens, out)
                self.assertEqual(set(tokens), {text["prompt"]}, out)

    def test_text_offset_counts_characters(self):
        # OpenAI's text_offset indexes the text as characters (Python str), not UTF-8 bytes.
        prompt = "Café ☕ naïve façade — ok"
        status, out, raw = SERVER.json_request("POST", "/v1/completions", {
            "prompt": prompt, "echo": True, "logprobs": 0, "max_tokens": 3, "temperature": 0})
        self.assertEqual(status, 200, raw[:300])
        lp = out["choices"][0]["logprobs"]
        self.assertEqual(lp["text_offset"][0], 0)
        for i in range(1, len(lp["tokens"])):
            self.assertEqual(lp["text_offset"][i], lp["text_offset"][i - 1] + len(lp["tokens"][i - 1]), lp)
        # Streamed: the first generated token starts after the echoed prompt's characters.
        status, _, payload = SERVER.request("POST", "/v1/completions", {
            "prompt": prompt, "echo": True, "logprobs": 0, "max_tokens": 2, "temperature": 0, "stream": True})
        self.assertEqual(status, 200)
        events = [json.loads(line[6:]) for line in payload.decode().split("\n")
                  if line.startswith("data: {")]
        offsets = [e["choices"][0]["logprobs"]["text_offset"] for e in events
                   if e["choices"] and e["choices"][0]["logprobs"]]
        self.assertTrue(offsets, events)
        self.assertEqual(offsets[0][0], len(prompt))


def _poll_health_while(server: sf.Server, work) -> tuple[object, list[float]]:
    """Runs work() in a thread while polling /health every 50 ms; (work's result, latencies)."""
    result = {}

    def run():
        result["value"] = work()
    th = threading.Thread(target=run)
    th.start()
    latencies = []
    while th.is_alive():
        t = time.monotonic()
        status, _, _ = server.request("GET", "/health", timeout=120)
        latencies.append(time.monotonic() - t)
        assert status == 200, status
        time.sleep(0.05)
    th.join()
    return result.get("value"), latencies


class OffloadedWorkTest(unittest.TestCase):
    """CPU-heavy requests (a request template rendering for seconds, a multi-megabyte prompt
    to tokenize) run on the worker pool: /health keeps answering at once meanwhile."""

    @classmethod
    def setUpClass(cls):
        binary, model = sf.preflight(need_openai=False)
        cls.server = sf.Server(binary, model, ["--trust-request-chat-template",
                                               "--max-request-body-bytes", str(16 << 20)], name="offload")

    @classmethod
    def tearDownClass(cls):
        sf.stop_module_server(cls.server)

    def check_responsive(self, path, body, allowed):
        data = json.dumps(body).encode()
        start = time.monotonic()
        (status, _, payload), latencies = _poll_health_while(
            self.server, lambda: self.server.request("POST", path, data, timeout=300))
        took = time.monotonic() - start
        self.assertIn(status, allowed, payload[:300])
        self.assertTrue(self.server.alive())
        worst = max(latencies)
        # The work takes seconds; on the I/O thread /health waited for all of it.
        self.assertLess(worst, min(1.0, took / 2), f"/health waited {worst:.2f} s behind a {took:.1f} s request")
        return status, payload

    def test_rendering_template_does_not_stall_io(self):
        # 8 MB rendered, then tokenized as one long word: seconds of CPU.
        tmpl = "{% set s = 'x' * 1000000 %}{% for i in range(8) %}{{ s }}{% endfor %}"
        self.check_responsive("/tokenize", {"messages": [{"role": "user", "content": "hi"}], "chat_template": tmpl},
                              (200,))
        # A runaway template ends at its step limit.
        tmpl = "{% for i in range(100000) %}{% for j in range(100) %}{{ 'xxxxxxxxxx' }}{% endfor %}{% endfor %}"
        status, _, payload = self.server.request("POST", "/tokenize", {
            "messages": [{"role": "user", "content": "hi"}], "chat_template": tmpl})
        self.assertEqual(status, 400, payload[:300])
        self.assertIn("step limit", json.loads(payload)["error"]["message"])

    def test_tokenizing_megabytes_does_not_stall_io(self):
        self.check_responsive("/tokenize", {"prompt": "x" * 4_000_000}, (200,))


class AdmissionTest(unittest.TestCase):
    """--max-queued-requests counts sequences (prompts x n), not requests."""

    @classmethod
    def setUpClass(cls):
        binary, model = sf.preflight(need_openai=False)
        cls.server = sf.Server(binary, model, ["--max-queued-requests", "8"], name="admission")

    @classmethod
    def tearDownClass(cls):
        sf.stop_module_server(cls.server)

    def test_n_counts_against_the_queue(self):
        body = {"prompt": "x", "max_tokens": 1}
        status, payload = self.server.request("POST", "/v1/completions", dict(body, n=9))[::2]
        self.assertEqual(status, 503, payload[:300])
        sf.assert_error_shape(self, payload, 503)
        status, payload = self.server.request("POST", "/v1/completions", dict(body, prompt=["a", "b", "c"], n=3))[::2]
        self.assertEqual(status, 503, payload[:300])
        status, payload = self.server.request("POST", "/v1/completions", dict(body, prompt=["a", "b"], n=4))[::2]
        self.assertEqual(status, 200, payload[:300])
        # Eight sequences in flight: one more is one too many.
        long = json.dumps({"prompt": ["a", "b"], "n": 4, "max_tokens": 1000, "ignore_eos": True,
                           "stream": True}).encode()
        with raw_http.RawConn(self.server) as c:
            c.send(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(long) + long)
            deadline = time.monotonic() + 60
            c._read_until(b"\r\n\r\n", deadline)
            while b"data: " not in c.buf:
                c._fill(deadline)
            status, payload = self.server.request("POST", "/v1/completions", body)[::2]
            self.assertEqual(status, 503, payload[:300])
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


class ConfigurationTest(unittest.TestCase):
    """Flag combinations that would admit a request that can never run are refused at start."""

    def test_budget_below_context_without_chunked_prefill(self):
        binary, model = sf.preflight(need_openai=False)
        args = [binary, "serve", model, "--port", "0", "--max-model-len", "2048",
                "--kv-cache-memory", str(sf.KV_CACHE_MEMORY), "--no-enable-chunked-prefill",
                "--max-num-batched-tokens", "512"]
        out = subprocess.run(args, capture_output=True, text=True, timeout=120, env=sf.child_env())
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("max_num_batched_tokens (512) is smaller than max_model_len (2048)", out.stderr)


if __name__ == "__main__":
    sf.preflight(need_openai=False)
    sf.run_tests()
