"""`tessera serve`'s HTTP transport against hostile clients: framing, limits, policy, half-close.

One server with short timeouts (--request-timeout 3 --keep-alive-timeout 5) and a 1 MiB body
limit. Each test sends raw bytes and checks the transport's answer: a refusal is one JSON
error (400, 403, 413, 415 or 431) and then the connection closes, with nothing of the bytes
after the refused head run as another request; no input may take the server down or grow its
memory past the limits; a client that half-closes its connection still gets its answer, and a
client that closes it still has its request aborted.

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_hostile_http.py [-k PATTERN]
Exit code 77: skipped (no binary with `serve`, no model).
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raw_http  # noqa: E402
import server_fixture as sf  # noqa: E402

REQUEST_TIMEOUT = 3
KEEP_ALIVE_TIMEOUT = 5
MAX_BODY = 1048576
MAX_HEADER = 65536  # the server's default header limit
SLACK = 4.0
NAME = sf.SERVED_MODEL_NAME
SMUGGLED = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"

SERVER: sf.Server | None = None


def setUpModule():
    global SERVER
    binary, model = sf.preflight(need_openai=False)
    SERVER = sf.Server(binary, model, ["--request-timeout", str(REQUEST_TIMEOUT),
                                       "--keep-alive-timeout", str(KEEP_ALIVE_TIMEOUT),
                                       "--max-request-body-bytes", str(MAX_BODY)], name="hostile-http")


def tearDownModule():
    sf.stop_module_server(SERVER)


def RawConn(timeout: float = 30.0) -> raw_http.RawConn:  # noqa: N802 (reads like the class)
    return raw_http.RawConn(SERVER, timeout)


def chunked(body: bytes, piece: int = 16) -> bytes:
    out = b""
    for i in range(0, len(body), piece):
        part = body[i:i + piece]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return out


def post_head(path: str = "/v1/completions", extra: bytes = b"", content_type: bytes | None = b"application/json",
              host: bytes = b"x", version: bytes = b"1.1") -> bytes:
    head = b"POST " + path.encode() + b" HTTP/" + version + b"\r\nHost: " + host + b"\r\n"
    if content_type is not None:
        head += b"Content-Type: " + content_type + b"\r\n"
    return head + extra + b"\r\n"


def read_final(c: raw_http.RawConn, timeout: float = 60.0):
    """The first non-1xx response; (status, headers, body, number of 1xx responses before it)."""
    deadline = time.monotonic() + timeout
    interim = 0
    while True:
        status, headers, body = c.read_response(max(0.1, deadline - time.monotonic()))
        if status >= 200:
            return status, headers, body, interim
        interim += 1


COMPLETION = json.dumps({"model": NAME, "prompt": "Hello", "max_tokens": 2, "temperature": 0}).encode()


class HostileHttpTest(unittest.TestCase):

    def tearDown(self):
        self.assertTrue(SERVER.alive(), f"the server died; log:\n{SERVER.log_tail()}")

    def assert_error(self, status, body, allowed, what):
        self.assertIn(status, allowed, f"{what}: status {status}, body {body[:300]!r}")
        sf.assert_error_shape(self, body, status, what)

    def assert_refused_and_closed(self, data: bytes, allowed=(400,), what: str = ""):
        """One JSON error for `data`, then the connection closes: nothing after the refused
        head (SMUGGLED, say) runs as a request of its own."""
        what = what or repr(data[:160])
        with RawConn() as c:
            c.send(data)
            outcome, _ = c.wait_outcome(REQUEST_TIMEOUT + SLACK)
            self.assertEqual(outcome[0], "response", f"{what}: {outcome}")
            self.assert_error(outcome[1], outcome[3], allowed, what)
            self.assertEqual(outcome[2].get("connection", "").lower(), "close", f"{what}: {outcome[2]}")
            after, _ = c.wait_outcome(REQUEST_TIMEOUT + SLACK)
            self.assertEqual(after[0], "closed", f"{what}: after the refusal: {after[:2]}")
        return outcome

    def assert_ok(self, data: bytes, what: str = ""):
        with RawConn() as c:
            c.send(data)
            status, _, body, _ = read_final(c, 60)
        self.assertEqual(status, 200, f"{what or data[:160]!r}: {body[:300]!r}")
        return body

    def health_ok(self):
        status, _, _ = SERVER.request("GET", "/health", timeout=30)
        self.assertEqual(status, 200)

    def send_until_answered(self, c: raw_http.RawConn, head: bytes, piece: bytes, total: int) -> int:
        """Sends head, then `piece` until `total` bytes or until the server answers or closes."""
        if not c.send(head):
            return 0
        sent = 0
        while sent < total:
            r, _, _ = select.select([c.sock], [], [], 0)
            if r or not c.send(piece):
                break
            sent += len(piece)
        return sent

    # -- 1: an exception while parsing ends the connection, not the process -----------------
    def test_long_trailer_field_does_not_crash(self):
        # Beast keeps field lengths in 16 bits and throws above; the session coroutine was
        # detached, so the exception left io_context::run() and aborted the process.
        body = chunked(COMPLETION)
        for size in (65534, 70000, 200000):
            data = (post_head(extra=b"Transfer-Encoding: chunked\r\n") + body + b"0\r\nX-Trailer: "
                    + b"a" * size + b"\r\n\r\n")
            with self.subTest(size=size):
                with RawConn() as c:
                    c.send(data)
                    outcome, _ = c.wait_outcome(REQUEST_TIMEOUT + SLACK)
                self.assertTrue(SERVER.alive(), f"trailer field of {size} bytes killed the server")
                self.assertEqual(outcome[0], "response", outcome)
                self.assert_error(outcome[1], outcome[3], (431,), f"trailer field of {size} bytes")
                self.health_ok()

    # -- 2: every part of a message is bounded --------------------------------------------
    def test_endless_chunk_line_is_bounded(self):
        # A chunk line that never ends (extension or size digits) was buffered without limit.
        cases = {"extension": (b"1;a=", b"x" * 65536), "size digits": (b"", b"0" * 65536),
                 "quoted extension": (b'1;a="', b"y" * 65536)}
        for name, (start, piece) in cases.items():
            with self.subTest(case=name):
                rss0 = SERVER.rss_mib()
                with RawConn() as c:
                    sent = self.send_until_answered(
                        c, post_head(extra=b"Transfer-Encoding: chunked\r\n") + start, piece, 64 << 20)
                    outcome, _ = c.wait_outcome(REQUEST_TIMEOUT + SLACK)
                    grown = SERVER.rss_mib() - rss0
                self.assertLess(sent, 8 << 20, f"{name}: the server read {sent} bytes of one chunk line")
                self.assertLess(grown, 32, f"{name}: RSS grew by {grown:.0f} MB")
                self.assertEqual(outcome[0], "response", f"{name}: no answer after {sent} bytes: {outcome}")
                self.assert_error(outcome[1], outcome[3], (400,), name)

    def test_chunk_extensions_total_is_bounded(self):
        # Short extensions on many chunks: each line is fine, their sum is not.
        body = b"".join(b"1;ext=" + b"e" * 100 + b"\r\n" + COMPLETION[i:i + 1] + b"\r\n"
                        for i in range(len(COMPLETION))) + b"0\r\n\r\n"
        self.assert_refused_and_closed(post_head(extra=b"Transfer-Encoding: chunked\r\n") + body + SMUGGLED,
                                       (400,), "chunk extensions of 8 KB in all")
        # A few short ones are fine.
        body = b"".join(b"%x;a=b\r\n" % len(p) + p + b"\r\n" for p in (COMPLETION[:10], COMPLETION[10:]))
        self.assert_ok(post_head(extra=b"Transfer-Encoding: chunked\r\nConnection: close\r\n") + body
                       + b"0;last\r\n\r\n")

    def test_trailer_section_is_bounded(self):
        # Thousands of trailer fields: buffered and kept without limit before.
        rss0 = SERVER.rss_mib()
        field = b"X-T: " + b"t" * 20000 + b"\r\n"
        with RawConn() as c:
            sent = self.send_until_answered(
                c, post_head(extra=b"Transfer-Encoding: chunked\r\n") + chunked(COMPLETION) + b"0\r\n",
                field, 64 << 20)
            outcome, _ = c.wait_outcome(REQUEST_TIMEOUT + SLACK)
            grown = SERVER.rss_mib() - rss0
        self.assertLess(sent, 8 << 20, f"the server read {sent} bytes of trailers")
        self.assertLess(grown, 32, f"RSS grew by {grown:.0f} MB")
        self.assertEqual(outcome[0], "response", f"no answer after {sent} bytes of trailers: {outcome}")
        self.assert_error(outcome[1], outcome[3], (431,), "64 MB of trailers")
        # Many small trailer fields, each well-formed.
        self.assert_refused_and_closed(post_head(extra=b"Transfer-Encoding: chunked\r\n") + chunked(COMPLETION)
                                       + b"0\r\n" + b"X-S: s\r\n" * 3000 + b"\r\n" + SMUGGLED, (431,),
                                       "3000 trailer fields")
        # Small trailers are read and dropped.
        self.assert_ok(post_head(extra=b"Transfer-Encoding: chunked\r\nConnection: close\r\n") + chunked(COMPLETION)
                       + b"0\r\nX-Checksum: 1\r\nAuthorization: Bearer nope\r\n\r\n")

    def test_too_many_header_fields(self):
        data = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n" + b"X-N: v\r\n" * 2000 + b"\r\n"
        self.assertLess(len(data), MAX_HEADER)
        self.assert_refused_and_closed(data, (431,), "2000 header fields in 16 KB")

    def test_chunk_framing_allowance(self):
        # 1-byte chunks: under the body limit, but 6 wire bytes per body byte. The whole
        # request may take head + body limit + trailers + a small framing allowance.
        piece = b"1\r\na\r\n"
        with RawConn() as c:
            sent = self.send_until_answered(
                c, post_head(extra=b"Transfer-Encoding: chunked\r\n"), piece * 4096,
                (MAX_BODY // 2) * len(piece))
            outcome, _ = c.wait_outcome(REQUEST_TIMEOUT + SLACK)
        self.assertEqual(outcome[0], "response", outcome)
        self.assert_error(outcome[1], outcome[3], (413,), f"1-byte chunks, {sent} bytes sent")
        # Small chunks of a normal body are fine.
        self.assert_ok(post_head(extra=b"Transfer-Encoding: chunked\r\nConnection: close\r\n")
                       + chunked(COMPLETION, 3) + b"0\r\n\r\n")

    # -- 3: a half-closed client still gets its answer -----------------------------------------
    def _half_closed(self, body: dict, version: bytes = b"1.1"):
        data = json.dumps(body).encode()
        with RawConn() as c:
            c.send(post_head(extra=b"Content-Length: %d\r\n" % len(data), version=version) + data)
            c.sock.shutdown(socket.SHUT_WR)
            status, headers, payload, interim = read_final(c, 120)
            outcome, _ = c.wait_outcome(SLACK)
        self.assertEqual(status, 200, payload[:300])
        self.assertEqual(outcome[0], "closed", "the connection stayed open after the answer to a "
                                               f"half-closed client: {outcome[:2]}")
        return headers, payload, interim

    def test_half_close_non_streaming(self):
        _, payload, _ = self._half_closed({"model": NAME, "prompt": "Once upon a time", "max_tokens": 32,
                                           "ignore_eos": True, "temperature": 0})
        self.assertEqual(json.loads(payload)["usage"]["completion_tokens"], 32)

    def test_half_close_streaming(self):
        _, payload, _ = self._half_closed({"model": NAME, "prompt": "Once upon a time", "max_tokens": 32,
                                           "ignore_eos": True, "temperature": 0, "stream": True})
        self.assertTrue(payload.endswith(b"data: [DONE]\n\n"), payload[-200:])
        self.assertIn(b'"finish_reason":"length"', payload.replace(b" ", b""), payload[-500:])

    def test_half_close_http10(self):
        # No interim response goes to an HTTP/1.0 client.
        _, payload, interim = self._half_closed({"model": NAME, "prompt": "Once upon a time", "max_tokens": 16,
                                                 "ignore_eos": True, "temperature": 0}, version=b"1.0")
        self.assertEqual(interim, 0)
        self.assertEqual(json.loads(payload)["usage"]["completion_tokens"], 16)

    def test_half_close_pipelined(self):
        # Two requests, then FIN: both are answered (the first says keep-alive), then close.
        a = json.dumps({"model": NAME, "prompt": "One", "max_tokens": 16, "ignore_eos": True}).encode()
        b = json.dumps({"model": NAME, "prompt": "Two", "max_tokens": 4, "ignore_eos": True}).encode()
        with RawConn() as c:
            c.send(post_head(extra=b"Content-Length: %d\r\n" % len(a)) + a
                   + post_head(extra=b"Content-Length: %d\r\n" % len(b)) + b)
            c.sock.shutdown(socket.SHUT_WR)
            s1, h1, p1, _ = read_final(c, 120)
            s2, h2, p2, _ = read_final(c, 120)
            outcome, _ = c.wait_outcome(SLACK)
        self.assertEqual((s1, s2), (200, 200), (p1[:200], p2[:200]))
        self.assertNotEqual(h1.get("connection", "").lower(), "close")
        self.assertEqual(json.loads(p1)["usage"]["completion_tokens"], 16)
        self.assertEqual(json.loads(p2)["usage"]["completion_tokens"], 4)
        self.assertEqual(outcome[0], "closed", outcome[:2])

    def test_half_close_chat(self):
        data = json.dumps({"model": NAME, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8,
                           "temperature": 0}).encode()
        with RawConn() as c:
            c.send(post_head("/v1/chat/completions", b"Content-Length: %d\r\n" % len(data)) + data)
            c.sock.shutdown(socket.SHUT_WR)
            status, _, payload, _ = read_final(c, 120)
        self.assertEqual(status, 200, payload[:300])
        self.assertIn("choices", json.loads(payload))

    # -- ...and a client that closed still has its request aborted ----------------------------
    def _abort_count(self):
        return sf.metric_value(SERVER.metrics_text(), "vllm:request_success_total", finished_reason="abort") or 0

    def _running_drops_to_zero(self, timeout=15.0):
        def idle():
            t = SERVER.metrics_text()
            return (sf.metric_value(t, "vllm:num_requests_running") == 0
                    and sf.metric_value(t, "vllm:num_requests_waiting") == 0)
        return sf.wait_for(idle, timeout, 0.2)

    def test_full_close_aborts(self):
        for stream, linger in ((False, False), (True, False), (False, True)):
            with self.subTest(stream=stream, reset=linger):
                aborts0 = self._abort_count()
                body = json.dumps({"model": NAME, "prompt": "Tell me a very long story.", "max_tokens": 1500,
                                   "ignore_eos": True, "temperature": 1, "seed": 3, "stream": stream}).encode()
                c = RawConn()
                c.send(post_head(extra=b"Content-Length: %d\r\n" % len(body)) + body)
                started = sf.wait_for(lambda: (sf.metric_value(SERVER.metrics_text(),
                                                               "vllm:num_requests_running") or 0) >= 1, 30)
                self.assertTrue(started, "the request never started running")
                if linger:
                    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                t0 = time.monotonic()
                c.close()
                self.assertTrue(self._running_drops_to_zero(), "a closed client's request still runs 15 s later")
                self.assertTrue(sf.wait_for(lambda: self._abort_count() - aborts0 >= 1, 5),
                                "request_success_total{finished_reason=abort} did not grow")
                self.assertLess(time.monotonic() - t0, 10)

    # -- 4: framing with one meaning (request smuggling) ---------------------------------------
    def test_transfer_encoding_other_than_chunked(self):
        cases = [b"Transfer-Encoding: gzip\r\n", b"Transfer-Encoding: chunked, gzip\r\n",
                 b"Transfer-Encoding: identity\r\n", b"Transfer-Encoding: \r\n",
                 b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
                 b"Transfer-Encoding: gzip, chunked\r\n", b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"]
        for te in cases:
            body = b"0\r\n\r\n" if te.rstrip().endswith(b"chunked") else b""
            with self.subTest(te=te):
                self.assert_refused_and_closed(post_head(extra=te) + body + SMUGGLED)

    def test_conflicting_lengths(self):
        cases = [b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
                 b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                 b"Transfer-Encoding: gzip\r\nContent-Length: 5\r\n",
                 b"Content-Length: 5\r\nContent-Length: 5\r\n", b"Content-Length: 5, 5\r\n",
                 b"Content-Length: 5\r\nContent-Length: 7\r\n"]
        for head in cases:
            with self.subTest(head=head):
                self.assert_refused_and_closed(post_head(extra=head) + b"0\r\n\r\n" + SMUGGLED)
        with self.subTest(case="Transfer-Encoding in HTTP/1.0"):
            self.assert_refused_and_closed(post_head(extra=b"Transfer-Encoding: chunked\r\n", version=b"1.0")
                                           + chunked(COMPLETION) + b"0\r\n\r\n")

    def test_host_rules(self):
        cases = {"no Host": b"GET /v1/models HTTP/1.1\r\n\r\n",
                 "two Hosts": b"GET /v1/models HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                 "Host with a path": b"GET /v1/models HTTP/1.1\r\nHost: a/b\r\n\r\n",
                 "Host with a space": b"GET /v1/models HTTP/1.1\r\nHost: a b\r\n\r\n",
                 "Host with userinfo": b"GET /v1/models HTTP/1.1\r\nHost: user@a\r\n\r\n"}
        for name, data in cases.items():
            with self.subTest(case=name):
                self.assert_refused_and_closed(data + SMUGGLED, what=name)
        # HTTP/1.0 needs no Host; an empty Host is valid; host:port and IPv6 literals are.
        for data in (b"GET /v1/models HTTP/1.0\r\n\r\n", b"GET /v1/models HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n",
                     b"GET /v1/models HTTP/1.1\r\nHost: [::1]:8000\r\nConnection: close\r\n\r\n",
                     b"GET /v1/models HTTP/1.1\r\nHost: my-host.example:80\r\nConnection: close\r\n\r\n"):
            with self.subTest(ok=data):
                self.assert_ok(data)

    def test_obs_fold(self):
        cases = {"folded field": b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n",
                 "folded with a tab": b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tb\r\n\r\n",
                 "folded Host": b"GET /v1/models HTTP/1.1\r\nHost:\r\n x\r\n\r\n",
                 "folded Content-Type": post_head(extra=b"Content-Length: %d\r\nX-A: 1\r\n  , text/plain\r\n"
                                                  % len(COMPLETION)) + COMPLETION,
                 "folded trailer": post_head(extra=b"Transfer-Encoding: chunked\r\n") + chunked(COMPLETION)
                 + b"0\r\nX-T: a\r\n b\r\n\r\n"}
        for name, data in cases.items():
            with self.subTest(case=name):
                self.assert_refused_and_closed(data + SMUGGLED, what=name)

    # -- 4: Origin and Content-Type policy -------------------------------------------------------
    def test_foreign_origin_refused(self):
        port = SERVER.port
        refused = [(b"x", b"http://evil.example"), (b"x", b"null"),
                   (b"127.0.0.1:%d" % port, b"http://127.0.0.1:1"),
                   (b"127.0.0.1:%d" % port, b"http://evil.example"),
                   # DNS rebinding: the page's origin matches the Host it sends.
                   (b"rebind.example:%d" % port, b"http://rebind.example:%d" % port),
                   (b"x", b"https://x")]
        for host, origin in refused:
            for data in (b"GET /v1/models HTTP/1.1\r\nHost: " + host + b"\r\nOrigin: " + origin + b"\r\n\r\n",
                         post_head(extra=b"Origin: " + origin + b"\r\nContent-Length: %d\r\n" % len(COMPLETION),
                                   host=host) + COMPLETION):
                with self.subTest(host=host, origin=origin, request=data[:4]):
                    outcome = self.assert_refused_and_closed(data + SMUGGLED, (403,))
                    self.assertEqual(json.loads(outcome[3])["error"]["type"], "PermissionDeniedError")
        with self.subTest(case="two Origins"):
            self.assert_refused_and_closed(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://127.0.0.1\r\n"
                                           b"Origin: http://evil.example\r\n\r\n", (403,))

    def test_same_host_origin_allowed(self):
        port = SERVER.port
        for host in (b"127.0.0.1:%d" % port, b"localhost:%d" % port, b"[::1]:%d" % port, b"LOCALHOST"):
            data = post_head(extra=b"Origin: http://" + host.lower() + b"\r\nConnection: close\r\n"
                             b"Content-Length: %d\r\n" % len(COMPLETION), host=host) + COMPLETION
            with self.subTest(host=host):
                self.assert_ok(data)

    def test_allowed_origins_flag(self):
        binary, model = sf.preflight()
        server = sf.Server(binary, model, ["--allowed-origins", "https://app.example"], name="origins")
        try:
            conn = lambda: raw_http.RawConn(server)  # noqa: E731
            for origin, ok in ((b"https://app.example", True), (b"HTTPS://APP.EXAMPLE", True),
                               (b"https://evil.example", False), (b"http://app.example", False)):
                with self.subTest(origin=origin), conn() as c:
                    c.send(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nOrigin: " + origin + b"\r\nConnection: close\r\n\r\n")
                    status, _, body = c.read_response(30)
                    self.assertEqual(status, 200 if ok else 403, body[:200])
        finally:
            self.assertEqual(server.stop(), 0)

    def test_content_type_must_be_json(self):
        refused = [b"text/plain", b"application/x-www-form-urlencoded", b"multipart/form-data; boundary=x",
                   b"application/jsonx", b"text/json", b"", None]
        for ct in refused:
            data = post_head(extra=b"Content-Length: %d\r\n" % len(COMPLETION), content_type=ct) + COMPLETION
            with self.subTest(content_type=ct):
                outcome = self.assert_refused_and_closed(data + SMUGGLED, (415,))
                self.assertEqual(json.loads(outcome[3])["error"]["type"], "UnsupportedMediaTypeError")
        with self.subTest(case="two Content-Types"):
            self.assert_refused_and_closed(post_head(extra=b"Content-Type: text/plain\r\nContent-Length: %d\r\n"
                                                     % len(COMPLETION)) + COMPLETION, (415,))
        with self.subTest(case="chunked text/plain"):
            self.assert_refused_and_closed(post_head(extra=b"Transfer-Encoding: chunked\r\n", content_type=b"text/plain")
                                           + chunked(COMPLETION) + b"0\r\n\r\n", (415,))
        with self.subTest(case="refused before the body arrives"):
            with RawConn() as c:
                c.send(post_head(extra=b"Content-Length: 100000\r\n", content_type=b"text/plain"))
                outcome, _ = c.wait_outcome(REQUEST_TIMEOUT)
            self.assertEqual(outcome[0], "response", outcome)
            self.assertEqual(outcome[1], 415)
        for ct in (b"application/json; charset=utf-8", b"Application/JSON", b"application/json ;charset=UTF-8"):
            with self.subTest(ok=ct):
                self.assert_ok(post_head(extra=b"Content-Length: %d\r\nConnection: close\r\n" % len(COMPLETION),
                                         content_type=ct) + COMPLETION)
        # No body, no Content-Type needed (the route answers; the transport does not refuse).
        with RawConn() as c:
            c.send(post_head(extra=b"Content-Length: 0\r\nConnection: close\r\n", content_type=None))
            status, _, payload = c.read_response(30)
        self.assert_error(status, payload, (400,), "empty POST without Content-Type")

    # -- the last test: the server is idle and well --------------------------------------------
    def test_zz_server_idle(self):
        self.health_ok()
        ok = sf.wait_for(lambda: all(sf.metric_value(SERVER.metrics_text(), k) == 0 for k in
                                     ("vllm:num_requests_running", "vllm:num_requests_waiting",
                                      "vllm:kv_cache_usage_perc")), 15.0, 0.2)
        self.assertTrue(ok, "requests or KV cache still in use")


if __name__ == "__main__":
    sf.preflight(need_openai=False)
    sf.run_tests()
