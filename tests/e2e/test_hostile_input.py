"""`tessera serve` against hostile and broken clients (raw sockets, http.client).

One server with short timeouts (--request-timeout 3 --keep-alive-timeout 5) and a 1 MiB body
limit. While the hostile requests run, a normal client thread keeps sending small completions;
every one of them must succeed. Every bad request must get a 4xx JSON error (or a close after
the timeout where a timeout is the point), never a 5xx; the server must stay up, and at the end
/metrics must show no running or waiting request and no KV cache in use.

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_hostile_input.py [-k PATTERN]
Exit code 77: skipped (no binary with `serve`, no model).
"""

from __future__ import annotations

import http.client
import json
import os
import select
import socket
import struct
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raw_http  # noqa: E402
import server_fixture as sf  # noqa: E402

REQUEST_TIMEOUT = 3
KEEP_ALIVE_TIMEOUT = 5
MAX_BODY = 1048576
SLACK = 4.0  # seconds allowed beyond a server timeout

SERVER: sf.Server | None = None
BACKGROUND = None
NAME = sf.SERVED_MODEL_NAME


def setUpModule():
    global SERVER, BACKGROUND
    binary, model = sf.preflight(need_openai=False)
    SERVER = sf.Server(binary, model, ["--request-timeout", str(REQUEST_TIMEOUT),
                                       "--keep-alive-timeout", str(KEEP_ALIVE_TIMEOUT),
                                       "--max-request-body-bytes", str(MAX_BODY)], name="hostile")
    BACKGROUND = raw_http.BackgroundClient(SERVER)
    BACKGROUND.start()


def tearDownModule():
    if BACKGROUND is not None:
        BACKGROUND.stop_event.set()
        BACKGROUND.join(120)
    sf.stop_module_server(SERVER)


def RawConn(timeout: float = 30.0) -> raw_http.RawConn:  # noqa: N802 (reads like the class)
    return raw_http.RawConn(SERVER, timeout)


def http_request(method: str, path: str, body: bytes, content_type="application/json"):
    with RawConn() as c:
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        c.send(head + body)
        return c.read_response(60)


# ---- the tests -----------------------------------------------------------------------
class HostileInputTest(unittest.TestCase):

    def tearDown(self):
        self.assertTrue(SERVER.alive(), f"the server died; log:\n{SERVER.log_tail()}")

    def assert_json_error(self, status, body, what, allowed=(400,)):
        self.assertLess(status, 500, f"{what}: 5xx {status} {body[:300]!r}")
        self.assertIn(status, allowed, f"{what}: status {status}, body {body[:300]!r}")
        if 400 <= status < 500:
            sf.assert_error_shape(self, body, status, what)

    def check_bad(self, path: str, body: bytes, allowed=(400,), method="POST"):
        what = f"{method} {path} {body[:120]!r}"
        try:
            status, headers, payload = http_request(method, path, body)
        except raw_http.Closed:
            self.fail(f"{what}: connection closed without a response")
        except socket.timeout:
            self.fail(f"{what}: no response within 60 s")
        self.assert_json_error(status, payload, what, allowed)
        return status, payload

    # -- JSON syntax and types ---------------------------------------------------------
    def test_malformed_json(self):
        bodies = [b"", b"{", b"}", b'{"prompt": "x",}', b'{"prompt": "x" "max_tokens": 2}',
                  b"{'prompt': 'x'}", b'{"prompt": "x"', b'{"prompt": "unterminated}',
                  b"nul", b"\x00\x01\x02", b'{"prompt": "x"} trailing', b'{"prompt": tru}',
                  b'{"prompt": "\\q"}', b'{"prompt": "\\u12"}', b'{"a":1,"a":}', b"\xef\xbb\xbf"]
        for path in ("/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"):
            for body in bodies:
                with self.subTest(path=path, body=body):
                    self.check_bad(path, body)

    def test_json_not_an_object(self):
        for path in ("/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"):
            for body in (b"[]", b'"prompt"', b"1", b"null", b"true", b'[{"prompt": "x"}]', b"-0.5e3"):
                with self.subTest(path=path, body=body):
                    self.check_bad(path, body)

    def test_wrong_field_types(self):
        msgs = [{"role": "user", "content": "hi"}]
        completions = [
            {"prompt": 5}, {"prompt": None}, {"prompt": True}, {"prompt": {"a": 1}},
            {"prompt": [1.5]}, {"prompt": [[1, "a"]]}, {"prompt": ["a", 1]}, {"prompt": [[]]},
            {"prompt": [["a"]]}, {"prompt": "x", "max_tokens": "abc"}, {"prompt": "x", "max_tokens": 1.5},
            {"prompt": "x", "max_tokens": [2]}, {"prompt": "x", "temperature": "hot"},
            {"prompt": "x", "temperature": [1]}, {"prompt": "x", "stop": {"a": 1}},
            {"prompt": "x", "stop": [1]}, {"prompt": "x", "stop": 5}, {"prompt": "x", "n": "many"},
            {"prompt": "x", "n": 1.5}, {"prompt": "x", "logit_bias": [1]},
            {"prompt": "x", "logit_bias": "x"}, {"prompt": "x", "logit_bias": {"5": "high"}},
            {"prompt": "x", "stream": "perhaps"}, {"prompt": "x", "stream": 2}, {"prompt": "x", "seed": "s"},
            {"prompt": "x", "echo": "maybe"}, {"prompt": "x", "logprobs": "many"},
            {"prompt": "x", "top_p": "x"}, {"prompt": "x", "top_k": "x"}, {"prompt": "x", "model": 5},
            {"prompt": "x", "stream": True, "stream_options": "x"},
            {"prompt": "x", "stream_options": {"include_usage": "x"}, "stream": True},
            {"prompt": "x", "stop_token_ids": "x"}, {"prompt": "x", "stop_token_ids": [1.5]},
            {"prompt": "x", "ignore_eos": "x"}, {"prompt": "x", "min_tokens": "x"},
            {"prompt": "x", "presence_penalty": {}},
        ]
        chat = [
            {"messages": "hi"}, {"messages": None}, {"messages": {"role": "user"}}, {"messages": [1]},
            {"messages": ["hi"]}, {"messages": [{"role": 5, "content": "x"}]},
            {"messages": [{"role": "user", "content": 5}]},
            {"messages": [{"role": "user", "content": {"text": "x"}}]},
            {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
            {"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
            {"messages": [{"role": "user", "content": [5]}]},
            {"messages": [{"content": "x"}]},
            {"messages": msgs, "max_completion_tokens": "x"}, {"messages": msgs, "logprobs": "x"},
            {"messages": msgs, "top_logprobs": "x", "logprobs": True}, {"messages": msgs, "tools": "x"},
            {"messages": msgs, "chat_template_kwargs": "x"}, {"messages": msgs, "chat_template_kwargs": [1]},
            {"messages": msgs, "stop": {"a": 1}}, {"messages": msgs, "n": "2x"},
            {"messages": msgs, "add_generation_prompt": "x"},
        ]
        tok = [{"prompt": 5}, {"prompt": ["x"]}, {"prompt": None}, {"prompt": "x", "add_special_tokens": "x"},
               {"messages": "x"}, {"messages": [1]}]
        detok = [{"tokens": "abc"}, {"tokens": [1.5]}, {"tokens": ["a"]}, {"tokens": [[1]]},
                 {"tokens": None}, {"tokens": 5}, {"tokens": [-1]}, {"tokens": [10 ** 12]},
                 {"tokens": [2 ** 64]}]
        for path, cases in (("/v1/completions", completions), ("/v1/chat/completions", chat),
                            ("/tokenize", tok), ("/detokenize", detok)):
            for case in cases:
                if path.startswith("/v1/"):
                    case = {"max_tokens": 2, **case} if "max_tokens" not in case else case
                with self.subTest(path=path, case=case):
                    self.check_bad(path, json.dumps(case).encode())

    # -- numbers -------------------------------------------------------------------------
    def test_negative_and_huge_numbers(self):
        msgs = [{"role": "user", "content": "hi"}]
        completions = [
            {"max_tokens": 10 ** 30}, {"max_tokens": -1}, {"max_tokens": -(10 ** 30)},
            {"max_tokens": 2 ** 63}, {"max_tokens": 2 ** 31}, {"max_tokens": 2 ** 32 + 2},
            {"n": 10 ** 9}, {"n": -1}, {"n": 2 ** 64}, {"top_k": -5}, {"logprobs": 1000},
            {"logprobs": -1}, {"temperature": -1}, {"temperature": -1e308},
            {"top_p": -0.5}, {"top_p": 2}, {"min_p": 2}, {"min_p": -1}, {"presence_penalty": 100},
            {"frequency_penalty": -100}, {"repetition_penalty": 0}, {"repetition_penalty": -1},
            {"min_tokens": -1}, {"min_tokens": 10 ** 6, "max_tokens": 4},
            {"logit_bias": {"5": 1000}}, {"logit_bias": {"5": -1e9}}, {"logit_bias": {"-1": 1}},
            {"logit_bias": {"99999999999999999999": 1}}, {"stop_token_ids": [-1]},
            {"stop_token_ids": [10 ** 20]}, {"prompt": [10 ** 20]}, {"prompt": [-5]},
            {"prompt": [[1, 2], [10 ** 9]]},
        ]
        for case in completions:
            body = {"prompt": "x", "max_tokens": 2, **case}
            with self.subTest(case=case):
                self.check_bad("/v1/completions", json.dumps(body).encode())
        chat = [{"max_completion_tokens": 10 ** 30}, {"max_completion_tokens": -3}, {"n": 10 ** 9},
                {"top_logprobs": 1000, "logprobs": True}, {"top_logprobs": -1, "logprobs": True},
                {"top_k": -5}]
        for case in chat:
            body = {"messages": msgs, "max_tokens": 2, **case}
            with self.subTest(chat=case):
                self.check_bad("/v1/chat/completions", json.dumps(body).encode())

    def test_ambiguous_numbers_never_5xx(self):
        # Valid JSON whose acceptance is the server's choice: 200 or 400, never a crash.
        for case in ({"seed": 2 ** 70}, {"seed": -(2 ** 70)}, {"seed": -1}, {"temperature": 1e300},
                     {"temperature": 5e-324}, {"top_k": 10 ** 12}, {"max_tokens": 0},
                     {"priority": 10 ** 30}, {"top_p": 1e-300}):
            body = {"prompt": "x", "max_tokens": 1, **case}
            with self.subTest(case=case):
                self.check_bad("/v1/completions", json.dumps(body).encode(), allowed=(200, 400))

    def test_nan_and_infinity_literals(self):
        for lit in (b"NaN", b"Infinity", b"-Infinity", b"nan", b"inf", b"1e999", b"-1e999",
                    b"1e-99999", b"0x10", b"+1", b".5", b"01"):
            for field in (b"temperature", b"max_tokens", b"top_p", b"seed"):
                body = b'{"prompt": "x", "max_tokens": 2, "' + field + b'": ' + lit + b"}"
                if field == b"max_tokens":
                    body = b'{"prompt": "x", "max_tokens": ' + lit + b"}"
                allowed = (400,)
                if lit == b"1e-99999":  # valid JSON: underflows to 0
                    allowed = (200, 400)
                with self.subTest(body=body):
                    self.check_bad("/v1/completions", body, allowed=allowed)

    # -- encodings -------------------------------------------------------------------------
    def test_invalid_utf8(self):
        bad = [b"\xff\xfe", b"\xc0\xaf", b"\xe4\xbd", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80",
               b"abc\x80def", b"\xf4\x90\x80\x80"]
        for seq in bad:
            cases = [
                ("/v1/completions", b'{"prompt": "' + seq + b'", "max_tokens": 2}'),
                ("/v1/completions", b'{"prompt": "x", "max_tokens": 2, "stop": "' + seq + b'"}'),
                ("/v1/completions", b'{"prompt": "x", "max_tokens": 2, "k' + seq + b'": 1}'),
                ("/v1/chat/completions",
                 b'{"messages": [{"role": "user", "content": "' + seq + b'"}], "max_tokens": 2}'),
                ("/tokenize", b'{"prompt": "' + seq + b'"}'),
                ("/v1/completions", b'{"prompt": "x", "max_tokens": 2, "model": "' + seq + b'"}'),
            ]
            for path, body in cases:
                with self.subTest(path=path, body=body):
                    self.check_bad(path, body)

    def test_lone_surrogate_escapes_never_5xx(self):
        for esc in (b"\\ud800", b"\\udfff", b"\\ud800\\u0041", b"\\u0000"):
            for path, body in (
                    ("/v1/completions", b'{"prompt": "a' + esc + b'b", "max_tokens": 1}'),
                    ("/tokenize", b'{"prompt": "a' + esc + b'b"}'),
                    ("/v1/chat/completions",
                     b'{"messages": [{"role": "user", "content": "' + esc + b'"}], "max_tokens": 1}')):
                with self.subTest(path=path, body=body):
                    self.check_bad(path, body, allowed=(200, 400))

    # -- large but well-formed requests ------------------------------------------------------
    def test_large_valid_fields(self):
        cases = [
            # (body, allowed statuses)
            ({"prompt": "x", "max_tokens": 2, "stop": ["s%d" % i for i in range(20000)]}, (200, 400)),
            ({"prompt": "x", "max_tokens": 2, "stop": "y" * 500_000}, (200, 400)),
            ({"prompt": "x", "max_tokens": 2, "logit_bias": {str(i): 1 for i in range(40000)}}, (200, 400)),
            ({"prompt": "x", "max_tokens": 2, "stop_token_ids": list(range(40000))}, (200, 400)),
            ({"prompt": ["a"] * 10000, "max_tokens": 1}, (400, 503)),
            ({"prompt": [[5] * 2] * 10000, "max_tokens": 1}, (400, 503)),
            ({"messages": [{"role": "user", "content": "hi"}] * 20000, "max_tokens": 1}, (400,)),
            ({"prompt": "x", "max_tokens": 1, "user": "u" * 500_000}, (200, 400)),
        ]
        for body, allowed in cases:
            path = "/v1/chat/completions" if "messages" in body else "/v1/completions"
            data = json.dumps(body).encode()
            self.assertLess(len(data), MAX_BODY)
            with self.subTest(body=data[:80]):
                start = time.monotonic()
                status, payload = self.check_bad(path, data, allowed=allowed)
                self.assertLess(time.monotonic() - start, 30, "took too long")
                if status == 503:
                    sf.assert_error_shape(self, payload, 503)

    def test_context_boundary(self):
        # prompt + max_tokens may fill the context exactly, not one token more. (A prompt of
        # max-model-len - 1 tokens would be exact too, but its prefill takes ~30 s on 2 cores.)
        status, body, raw = SERVER.json_request("POST", "/tokenize", {"prompt": "hello " * 3000})
        self.assertEqual(status, 200, raw)
        ids = body["tokens"]
        self.assertGreater(len(ids), sf.MAX_MODEL_LEN)
        prompt = ids[:100]
        fits = json.dumps({"prompt": prompt, "max_tokens": sf.MAX_MODEL_LEN - 100, "stream": True,
                           "ignore_eos": True}).encode()
        with RawConn() as c:  # accepted: read the first event, then leave (aborts it)
            c.send(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(fits) + fits)
            deadline = time.monotonic() + 60
            head = c._read_until(b"\r\n\r\n", deadline)
            self.assertIn(b" 200 ", head.split(b"\r\n")[0], head)
            while b"data: " not in c.buf:
                c._fill(deadline)
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        for prompt, max_tokens in ((ids[:100], sf.MAX_MODEL_LEN - 99), (ids[:sf.MAX_MODEL_LEN], 1),
                                   (ids[:sf.MAX_MODEL_LEN + 1], 1), (ids[:sf.MAX_MODEL_LEN - 1], 2)):
            with self.subTest(prompt_len=len(prompt), max_tokens=max_tokens):
                _, payload = self.check_bad("/v1/completions", json.dumps(
                    {"prompt": prompt, "max_tokens": max_tokens}).encode())
                self.assertIn(str(sf.MAX_MODEL_LEN), json.loads(payload)["error"]["message"])

    def test_many_object_keys_do_not_stall_the_server(self):
        # Just under the body limit, ~80k keys in one object: parsing must stay fast (no
        # quadratic key insertion) and must not hold up other connections.
        for field in ("extra", "logit_bias"):
            keys = {str(i): 1 for i in range(80000)}
            data = json.dumps({"prompt": "x", "max_tokens": 1, field: keys}).encode()
            while len(data) >= MAX_BODY:
                keys.popitem()
                data = json.dumps({"prompt": "x", "max_tokens": 1, field: keys}).encode()
            result = {}

            def big():
                t = time.monotonic()
                result["status"] = http_request("POST", "/v1/completions", data)[0]
                result["seconds"] = time.monotonic() - t
            th = threading.Thread(target=big)
            th.start()
            time.sleep(0.2)
            t = time.monotonic()
            status, _, _ = SERVER.request("GET", "/health", timeout=120)
            health = time.monotonic() - t
            th.join(120)
            with self.subTest(field=field, keys=len(keys)):
                self.assertEqual(status, 200)
                self.assertIn(result.get("status"), (200, 400))
                problems = []
                if health >= 2.0:
                    problems.append(f"GET /health waited {health:.1f} s behind the parse")
                if result["seconds"] >= 5.0:
                    problems.append(f"{len(keys)} keys in `{field}` ({len(data)} bytes): "
                                    f"{result['seconds']:.1f} s to answer")
                if problems:
                    self.fail("; ".join(problems))

    def test_expect_100_continue(self):
        body = json.dumps({"prompt": "Hello", "max_tokens": 2, "temperature": 0}).encode()
        with RawConn() as c:
            c.send(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
            r, _, _ = select.select([c.sock], [], [], 1.5)
            got_continue = False
            if r:
                status, _, _ = c.read_response(10)
                self.assertEqual(status, 100, "only 100 Continue may come before the body")
                got_continue = True
            c.send(body)
            status, _, payload = c.read_response(60)
        self.assertEqual(status, 200, payload[:300])
        if not got_continue:
            print("note: no `100 Continue` (curl waits 1 s for it on bodies over 1 KiB)", file=sys.stderr)

    def test_stream_then_request_on_one_connection(self):
        stream = json.dumps({"prompt": "Hello", "max_tokens": 3, "temperature": 0, "stream": True}).encode()
        with RawConn() as c:
            c.send(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(stream) + stream
                   + b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            status, headers, payload = c.read_response(60)
            self.assertEqual(status, 200)
            self.assertTrue(payload.endswith(b"data: [DONE]\n\n"), payload[-100:])
            status, _, _ = c.read_response(30)
            self.assertEqual(status, 200)

    def test_many_idle_connections(self):
        conns = []
        try:
            for _ in range(300):
                conns.append(RawConn())
            for c in conns[:100]:
                c.send(b"GET /hea")  # partial request lines
            status, _, payload = SERVER.request("POST", "/v1/completions",
                                                {"prompt": "Hi", "max_tokens": 2}, timeout=30)
            self.assertEqual(status, 200, payload[:200])
        finally:
            for c in conns:
                c.close()

    def test_burst_with_random_disconnects(self):
        body = json.dumps({"prompt": "Write a long poem about the sea.", "max_tokens": 200,
                           "ignore_eos": True, "temperature": 1, "stream": True}).encode()
        req = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body) + body)
        conns = [RawConn() for _ in range(12)]
        for c in conns:
            c.send(req)
        time.sleep(0.5)
        for i, c in enumerate(conns):
            if i % 3 == 0:
                c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()  # every one of them leaves; the final test checks nothing leaked
        status, _, payload = SERVER.request("POST", "/v1/completions",
                                            {"prompt": "Hi", "max_tokens": 2}, timeout=60)
        self.assertEqual(status, 200, payload[:200])

    # -- size and depth --------------------------------------------------------------------
    def test_deep_nesting(self):
        depth = 100_000
        cases = [
            ("/v1/completions", b"[" * depth + b"]" * depth, (400,)),
            ("/v1/completions", b'{"prompt": ' + b"[" * depth + b"]" * depth + b', "max_tokens": 2}', (400,)),
            ("/v1/completions", b'{"a":' * depth + b"1" + b"}" * depth, (400,)),
            ("/v1/chat/completions", b'{"messages": ' + b"[" * depth + b"]" * depth + b"}", (400,)),
            ("/v1/completions", b"[" * depth, (400,)),  # unterminated
            ("/tokenize", b'{"prompt": "x", "extra": ' + b"[" * depth + b"]" * depth + b"}", (200, 400)),
            ("/v1/completions", b'{"prompt": "x", "max_tokens": 1, "extra": '
             + b'{"a":' * depth + b"1" + b"}" * depth + b"}", (200, 400)),
        ]
        for path, body, allowed in cases:
            with self.subTest(path=path, body=body[:40]):
                self.assertLess(len(body), MAX_BODY)
                self.check_bad(path, body, allowed=allowed)

    def test_body_too_large(self):
        size = 10 * 1024 * 1024
        with RawConn() as c:
            head = (f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {size}\r\n\r\n").encode()
            c.send(head)
            chunk = b'{"prompt": "' + b"a" * 65536
            sent = 0
            outcome = None
            while sent < size:
                r, _, _ = select.select([c.sock], [], [], 0)
                if r:
                    break
                if not c.send(chunk[: min(len(chunk), size - sent)]):
                    break
                sent += len(chunk)
            outcome, elapsed = c.wait_outcome(30)
        self.assertEqual(outcome[0], "response", f"no 413 response (got {outcome[0]} after "
                                                 f"sending {sent} bytes)")
        self.assert_json_error(outcome[1], outcome[3], "10 MB body", allowed=(413,))
        self.assertEqual(sf.assert_error_shape(self, outcome[3], 413)["type"], "RequestTooLarge")
        # Just over the limit, sent completely.
        body = b'{"prompt": "' + b"b" * (MAX_BODY) + b'"}'
        status, _, payload = http_request("POST", "/v1/completions", body)
        self.assert_json_error(status, payload, "1 MiB + body", allowed=(413,))

    def test_chunked_body_too_large(self):
        with RawConn() as c:
            c.send(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n")
            piece = b"a" * 65536
            for _ in range(40):  # 2.5 MiB
                r, _, _ = select.select([c.sock], [], [], 0)
                if r or not c.send(b"%x\r\n" % len(piece) + piece + b"\r\n"):
                    break
            else:
                c.send(b"0\r\n\r\n")
            outcome, _ = c.wait_outcome(30)
        self.assertEqual(outcome[0], "response", outcome)
        self.assert_json_error(outcome[1], outcome[3], "chunked 2.5 MiB", allowed=(413,))

    def test_chunked_body_ok(self):
        body = json.dumps({"prompt": "Hello", "max_tokens": 2, "temperature": 0}).encode()
        with RawConn() as c:
            c.send(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
            for i in range(0, len(body), 7):
                piece = body[i:i + 7]
                c.send(b"%x\r\n" % len(piece) + piece + b"\r\n")
            c.send(b"0\r\n\r\n")
            status, _, payload = c.read_response(60)
        self.assertEqual(status, 200, payload[:300])
        self.assertIn("choices", json.loads(payload))

    # -- slow and lying clients -------------------------------------------------------------
    def assert_timeout_close(self, c: RawConn, what: str, started: float):
        outcome, _ = c.wait_outcome(REQUEST_TIMEOUT + SLACK + 6)
        elapsed = time.monotonic() - started
        self.assertNotEqual(outcome[0], "timeout",
                            f"{what}: still open {elapsed:.1f} s after the request began")
        if outcome[0] == "response":
            self.assert_json_error(outcome[1], outcome[3], what, allowed=(408,))
        self.assertLessEqual(elapsed, REQUEST_TIMEOUT + SLACK,
                             f"{what}: closed only after {elapsed:.1f} s")

    def test_content_length_lies(self):
        with RawConn() as c:
            start = time.monotonic()
            c.send(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: 1000\r\n\r\n" + b'{"prompt": "x"}')
            self.assert_timeout_close(c, "Content-Length 1000, 15 bytes sent", start)

    def test_half_sent_headers(self):
        with RawConn() as c:
            start = time.monotonic()
            c.send(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
            self.assert_timeout_close(c, "half-sent headers", start)

    def test_connect_and_say_nothing(self):
        with RawConn() as c:
            start = time.monotonic()
            outcome, _ = c.wait_outcome(KEEP_ALIVE_TIMEOUT + REQUEST_TIMEOUT + SLACK + 6)
            elapsed = time.monotonic() - start
            self.assertNotEqual(outcome[0], "timeout", f"silent connection open after {elapsed:.1f} s")
            if outcome[0] == "response":
                self.assert_json_error(outcome[1], outcome[3], "silent client", allowed=(408,))
            self.assertLessEqual(elapsed, max(REQUEST_TIMEOUT, KEEP_ALIVE_TIMEOUT) + SLACK)

    def test_slow_drip_client(self):
        request = (b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                   b"\r\nContent-Length: 30\r\n\r\n" + b'{"prompt": "x", "max_tokens":1}')
        with RawConn() as c:
            start = time.monotonic()
            result = None
            for byte in request:
                r, _, _ = select.select([c.sock], [], [], 1.0)  # one byte per second
                if r:
                    break
                if not c.send(bytes([byte])):
                    result = ("closed",)
                    break
                if time.monotonic() - start > REQUEST_TIMEOUT + SLACK + 4:
                    break
            if result is None:
                result, _ = c.wait_outcome(1.0)
            elapsed = time.monotonic() - start
            self.assertNotEqual(result[0], "timeout", f"drip client still served after {elapsed:.1f} s")
            if result[0] == "response":
                self.assert_json_error(result[1], result[3], "slow drip", allowed=(408,))
            self.assertLessEqual(elapsed, REQUEST_TIMEOUT + SLACK, f"closed after {elapsed:.1f} s")

    # -- not HTTP, broken HTTP ---------------------------------------------------------------
    def test_garbage_not_http(self):
        for data in (b"HELLO WORLD\r\n\r\n", b"GARBAGE\r\n\r\n", b"\r\n\r\n\r\n\r\nxyz\r\n\r\n",
                     b"GET\r\n\r\n", b"GET / HTTP/1.1 extra\r\n\r\n", b"GET / FTP/1.0\r\n\r\n",
                     b"POST /v1/completions HTTP/1.1\r\nno colon here\r\n\r\n"):
            with self.subTest(data=data):
                with RawConn() as c:
                    c.send(data)
                    outcome, _ = c.wait_outcome(REQUEST_TIMEOUT + SLACK)
                self.assertEqual(outcome[0], "response", f"{data!r}: {outcome}")
                self.assert_json_error(outcome[1], outcome[3], repr(data))

    def test_binary_garbage_never_5xx(self):
        tls_hello = bytes.fromhex("16030100a5010000a10303") + os.urandom(150)
        for data in (tls_hello, os.urandom(4096), b"\x00" * 1000, b"\xff" * 70000,
                     b"GET /\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
                     b"GET /health HTTP/1.1\r\nHost: x\r\nX: \x00\x01\r\n\r\n"):
            with self.subTest(data=data[:20]):
                with RawConn() as c:
                    c.send(data)
                    outcome, _ = c.wait_outcome(REQUEST_TIMEOUT + SLACK + 2)
                self.assertNotEqual(outcome[0], "timeout", repr(data[:40]))
                if outcome[0] == "response" and outcome[1] != 200:
                    self.assert_json_error(outcome[1], outcome[3], repr(data[:40]),
                                           allowed=tuple(range(400, 500)))

    def test_broken_framing(self):
        for head in (b"Content-Length: -1\r\n", b"Content-Length: abc\r\n",
                     b"Content-Length: 5\r\nContent-Length: 7\r\n",
                     b"Content-Length: 99999999999999999999999\r\n",
                     b"Transfer-Encoding: chunked\r\n", b"Transfer-Encoding: gzip\r\n"):
            body = b"zz\r\n{}\r\n0\r\n\r\n" if b"chunked" in head else b'{"prompt": "x"}'
            data = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n" + body
            with self.subTest(head=head):
                with RawConn() as c:
                    c.send(data)
                    outcome, _ = c.wait_outcome(REQUEST_TIMEOUT + SLACK + 2)
                self.assertNotEqual(outcome[0], "timeout", repr(head))
                if outcome[0] == "response":
                    self.assert_json_error(outcome[1], outcome[3], repr(head),
                                           allowed=tuple(range(400, 500)))

    def test_huge_headers_and_urls(self):
        for data in (b"GET /" + b"a" * 200_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
                     b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 200_000 + b"\r\n\r\n",
                     b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-H: v\r\n" * 20_000 + b"\r\n"):
            with self.subTest(data=data[:30]):
                with RawConn() as c:
                    c.send(data)
                    outcome, _ = c.wait_outcome(REQUEST_TIMEOUT + SLACK + 2)
                self.assertNotEqual(outcome[0], "timeout", repr(data[:40]))
                if outcome[0] == "response":
                    self.assert_json_error(outcome[1], outcome[3], repr(data[:40]),
                                           allowed=tuple(range(400, 500)))

    def test_odd_but_valid_requests(self):
        # HTTP/1.0 without Host; query strings; a path that tries to climb; HEAD.
        with RawConn() as c:
            c.send(b"GET /health HTTP/1.0\r\n\r\n")
            status, _, _ = c.read_response(30)
        self.assertEqual(status, 200)
        status, _, payload = http_request("GET", "/v1/models?x=1&y", b"")
        self.assertEqual(status, 200, payload[:200])
        status, _, payload = http_request("GET", "/../../../etc/passwd", b"")
        self.assert_json_error(status, payload, "path traversal", allowed=(400, 404))
        status, _, payload = http_request("DELETE", "/v1/completions", b"")
        self.assert_json_error(status, payload, "DELETE", allowed=(405,))

    # -- keep-alive ---------------------------------------------------------------------------
    def test_pipelined_keep_alive(self):
        tok = json.dumps({"prompt": "Hello world"}).encode()
        comp = json.dumps({"prompt": "Hello", "max_tokens": 2, "temperature": 0}).encode()
        bad = b'{"prompt": '
        reqs = [b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
                b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(tok) + tok,
                b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(bad) + bad,
                b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(comp) + comp,
                b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"]
        with RawConn() as c:
            c.send(b"".join(reqs))
            s1, _, b1 = c.read_response(60)
            s2, _, b2 = c.read_response(60)
            s3, _, b3 = c.read_response(60)
            s4, _, b4 = c.read_response(60)
            s5, _, b5 = c.read_response(60)
            self.assertEqual(s1, 200)
            self.assertEqual(s2, 200, b2)
            self.assertEqual(json.loads(b2)["count"], len(json.loads(b2)["tokens"]))
            self.assert_json_error(s3, b3, "pipelined malformed JSON")
            self.assertEqual(s4, 200, b4)
            self.assertIn("choices", json.loads(b4))
            self.assertEqual(s5, 200, b5)
            self.assertEqual(json.loads(b5)["data"][0]["id"], NAME)
            # Still usable after a short pause...
            time.sleep(1.0)
            self.assertTrue(c.send(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
            s6, _, _ = c.read_response(30)
            self.assertEqual(s6, 200)
            # ...and closed once idle for --keep-alive-timeout.
            start = time.monotonic()
            outcome, _ = c.wait_outcome(KEEP_ALIVE_TIMEOUT + SLACK + 6)
            elapsed = time.monotonic() - start
            self.assertEqual(outcome[0], "closed", f"{outcome} after {elapsed:.1f} s idle")
            self.assertLessEqual(elapsed, KEEP_ALIVE_TIMEOUT + SLACK)
            self.assertGreaterEqual(elapsed, min(REQUEST_TIMEOUT, KEEP_ALIVE_TIMEOUT) - 1.0,
                                    "idle keep-alive connection closed too early")

    def test_connection_close_honoured(self):
        with RawConn() as c:
            c.send(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            status, _, _ = c.read_response(30)
            self.assertEqual(status, 200)
            outcome, elapsed = c.wait_outcome(SLACK)
            self.assertEqual(outcome[0], "closed")

    # -- clients that disappear ------------------------------------------------------------------
    def _running_drops_to_zero(self, timeout=15.0):
        def idle():
            t = SERVER.metrics_text()
            return (sf.metric_value(t, "vllm:num_requests_running") == 0
                    and sf.metric_value(t, "vllm:num_requests_waiting") == 0)
        return sf.wait_for(idle, timeout, 0.2)

    def _abort_count(self):
        return sf.metric_value(SERVER.metrics_text(), "vllm:request_success_total",
                               finished_reason="abort") or 0

    def test_streaming_client_disconnects(self):
        BACKGROUND.pause()
        try:
            aborts0 = self._abort_count()
            conns = []
            body = json.dumps({"model": NAME, "prompt": "Tell me a very long story.", "max_tokens": 1500,
                               "ignore_eos": True, "temperature": 1, "seed": 1, "stream": True}).encode()
            for _ in range(3):
                c = RawConn()
                c.send(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n" % len(body) + body)
                conns.append(c)
            for c in conns:
                deadline = time.monotonic() + 60
                head = c._read_until(b"\r\n\r\n", deadline)
                self.assertIn(b" 200 ", head.split(b"\r\n")[0])
                while b"data: " not in c.buf:  # at least one event
                    c._fill(deadline)
            running = sf.metric_value(SERVER.metrics_text(), "vllm:num_requests_running")
            self.assertGreaterEqual(running, 1)
            for c in conns:
                c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.close()
            self.assertTrue(self._running_drops_to_zero(),
                            "streams of disconnected clients still running 15 s later")
            aborted = sf.wait_for(lambda: self._abort_count() - aborts0 >= 3, 5)
            self.assertTrue(aborted, "request_success_total{finished_reason=abort} did not grow by 3")
        finally:
            BACKGROUND.resume()

    def test_non_streaming_client_disconnects(self):
        BACKGROUND.pause()
        try:
            aborts0 = self._abort_count()
            body = json.dumps({"model": NAME, "prompt": "Tell me a very long story.", "max_tokens": 1500,
                               "ignore_eos": True, "temperature": 1, "seed": 2}).encode()
            c = RawConn()
            c.send(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(body) + body)
            started = sf.wait_for(lambda: (sf.metric_value(SERVER.metrics_text(),
                                                            "vllm:num_requests_running") or 0) >= 1, 30)
            self.assertTrue(started, "the request never started running")
            c.close()
            self.assertTrue(self._running_drops_to_zero(),
                            "the request of a disconnected non-streaming client still runs 15 s later")
            self.assertTrue(sf.wait_for(lambda: self._abort_count() - aborts0 >= 1, 5),
                            "request_success_total{finished_reason=abort} did not grow")
        finally:
            BACKGROUND.resume()

    def test_disconnect_before_body(self):
        for _ in range(5):
            with RawConn() as c:
                c.send(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        status, _, _ = SERVER.request("GET", "/health")
        self.assertEqual(status, 200)

    # -- the last test: everything is back to idle ---------------------------------------------------
    def test_zz_normal_client_unaffected_and_nothing_leaked(self):
        BACKGROUND.stop_event.set()
        BACKGROUND.join(120)
        self.assertFalse(BACKGROUND.is_alive(), "the background client hangs")
        with BACKGROUND.lock:
            total = len(BACKGROUND.results)
        self.assertGreaterEqual(total, 3, "the background client made too few requests")
        self.assertEqual(BACKGROUND.failures(), [], f"{len(BACKGROUND.failures())} of {total} failed")

        def idle():
            t = SERVER.metrics_text()
            vals = {k: sf.metric_value(t, k) for k in ("vllm:num_requests_running",
                                                       "vllm:num_requests_waiting",
                                                       "vllm:kv_cache_usage_perc")}
            return vals if all(v == 0 for v in vals.values()) else None
        ok = sf.wait_for(idle, 10.0, 0.2)
        t = SERVER.metrics_text()
        self.assertTrue(ok, "not idle: " + ", ".join(
            f"{k}={sf.metric_value(t, k)}" for k in ("vllm:num_requests_running",
                                                     "vllm:num_requests_waiting",
                                                     "vllm:kv_cache_usage_perc")))
        self.assertTrue(SERVER.alive())


if __name__ == "__main__":
    sf.preflight(need_openai=False)
    sf.run_tests()
