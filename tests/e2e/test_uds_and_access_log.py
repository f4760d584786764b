"""`tessera serve` as a drop-in for `vllm serve` in two of uvicorn's jobs:

- `--uds PATH`: the server listens on a Unix socket instead of host:port, prints
  `tessera: listening on unix:PATH`, answers completions (plain, streamed, keep-alive) and
  /health over it, gives a half-closed client its answer and aborts a closed client's request;
  a stale socket file at PATH (left by a killed server) is replaced, a live server's socket is
  not taken over, a path that cannot work (too long, no such directory, not a socket, no
  permission) is a clear error with exit status 1, and SIGTERM removes the socket file.
- The access log, on by default: one line per answered request on stderr, in uvicorn's format
  (`INFO:     127.0.0.1:PORT - "POST /v1/completions HTTP/1.1" 200 OK`; a Unix-socket client
  has an empty address), for answers, errors, refusals of the transport and streams (when
  they start); the request target is escaped, so a client cannot forge or color log lines;
  lines of concurrent requests never interleave. `--disable-uvicorn-access-log` and
  `--uvicorn-log-level warning` turn it off, `--disable-access-log-for-endpoints /health,...`
  skips those paths, and an unknown log level is refused.

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_uds_and_access_log.py [-k PATTERN]
Exit code 77: skipped (no binary with `serve`, no model).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raw_http  # noqa: E402
import server_fixture as sf  # noqa: E402

NAME = sf.SERVED_MODEL_NAME
COMPLETION = {"model": NAME, "prompt": "The capital of France is", "max_tokens": 8, "temperature": 0,
              "ignore_eos": True}


def socket_dir() -> str:
    """A short directory for sockets (a Unix socket path holds at most 107 bytes)."""
    return tempfile.mkdtemp(prefix="tessera-uds-", dir="/tmp")


def make_stale_socket(path: str) -> str:
    """A socket file nobody listens on, as a killed server leaves it. Returns a second name of
    that file (a hard link: its inode stays taken, so a new file cannot get its number)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()
    os.link(path, path + ".stale")
    return path + ".stale"


def serve_fails(binary: str, model: str, *args: str) -> subprocess.CompletedProcess:
    """`tessera serve` that must fail to start: its exit status and output."""
    return subprocess.run([binary, "serve", model, "--kv-cache-memory", str(sf.KV_CACHE_MEMORY),
                           "--max-model-len", str(sf.MAX_MODEL_LEN), *args],
                          capture_output=True, text=True, timeout=120, env=sf.child_env())


def request_from(server: sf.Server, method: str, path: str, body=None, headers: dict | None = None):
    """One request on a new TCP connection: (status, payload, the client's port)."""
    conn = server.connection(60)
    conn.connect()
    port = conn.sock.getsockname()[1]
    hdrs = dict(headers or {})
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    try:
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        return resp.status, resp.read(), port
    finally:
        conn.close()


def wait_line(server: sf.Server, wanted: str, timeout: float = 10.0) -> bool:
    """Waits until stderr has the line `wanted` (the drain thread reads it a moment later)."""
    return bool(sf.wait_for(lambda: any(line.rstrip("\n") == wanted for line in server.lines()), timeout, 0.05))


def read_final(c: raw_http.RawConn, timeout: float = 120.0):
    """The final response on a raw connection, past interim 1xx ones."""
    while True:
        status, headers, body = c.read_response(timeout)
        if status >= 200:
            return status, headers, body


class UnixSocketTest(unittest.TestCase):
    """A server on a Unix socket that replaced a stale socket file."""

    @classmethod
    def setUpClass(cls):
        cls.binary, cls.model = sf.preflight()
        cls.dir = socket_dir()
        cls.path = os.path.join(cls.dir, "tessera.sock")
        cls.stale = make_stale_socket(cls.path)
        cls.server = sf.Server(cls.binary, cls.model, name="uds", uds=cls.path)

    @classmethod
    def tearDownClass(cls):
        try:
            sf.stop_module_server(cls.server)
        finally:
            shutil.rmtree(cls.dir, ignore_errors=True)

    def test_listening_line_names_the_socket(self):
        lines = self.server.lines()
        self.assertIn(f"tessera: listening on unix:{self.path}\n", lines)
        self.assertFalse([line for line in lines if "listening on http://" in line], lines)

    def test_stale_socket_file_was_replaced(self):
        st = os.stat(self.path)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertFalse(os.path.samefile(self.path, self.stale), "the stale socket file is still there")
        self.assertEqual(self.server.request("GET", "/health")[0], 200)

    def test_health_and_its_access_line(self):
        status, _, payload = self.server.request("GET", "/health")
        self.assertEqual(status, 200, payload)
        # uvicorn names no client on a Unix socket: an empty address.
        self.assertTrue(wait_line(self.server, 'INFO:      - "GET /health HTTP/1.1" 200 OK'),
                        self.server.lines()[-10:])

    def test_completion(self):
        status, body, raw = self.server.json_request("POST", "/v1/completions", COMPLETION)
        self.assertEqual(status, 200, raw)
        self.assertEqual(body["usage"]["completion_tokens"], 8)
        offline = sf.cli_generate(self.binary, self.model, [COMPLETION["prompt"]], 8, "--ignore-eos")
        self.assertEqual(body["choices"][0]["text"], offline[0]["outputs"][0]["text"])
        self.assertTrue(wait_line(self.server, 'INFO:      - "POST /v1/completions HTTP/1.1" 200 OK'))

    def test_streamed_completion(self):
        status, _, payload = self.server.request("POST", "/v1/completions", dict(COMPLETION, stream=True))
        self.assertEqual(status, 200, payload)
        events = [line for line in payload.decode().split("\n\n") if line.startswith("data: ")]
        self.assertEqual(events[-1], "data: [DONE]")
        self.assertEqual(len(events), 8 + 1)

    def test_keep_alive(self):
        conn = self.server.connection(60)
        try:
            for i in range(3):
                conn.request("POST", "/v1/completions", body=json.dumps(dict(COMPLETION, max_tokens=2)),
                             headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                self.assertEqual(resp.status, 200, resp.read())
                resp.read()
                if i == 0:
                    first_socket = conn.sock
                self.assertIs(conn.sock, first_socket, "the connection was not kept alive")
        finally:
            conn.close()

    def test_half_closed_client_gets_its_answer(self):
        data = json.dumps(dict(COMPLETION, max_tokens=16)).encode()
        with raw_http.RawConn(self.server) as c:
            c.send(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(data) + data)
            c.sock.shutdown(socket.SHUT_WR)
            status, _, payload = read_final(c)
            outcome, _ = c.wait_outcome(10)
        self.assertEqual(status, 200, payload[:300])
        self.assertEqual(json.loads(payload)["usage"]["completion_tokens"], 16)
        self.assertEqual(outcome[0], "closed", outcome[:2])

    def test_closed_client_is_aborted(self):
        def metric(name, **labels):
            return sf.metric_value(self.server.metrics_text(), name, **labels) or 0
        for stream in (False, True):
            with self.subTest(stream=stream):
                aborts0 = metric("vllm:request_success_total", finished_reason="abort")
                body = json.dumps({"model": NAME, "prompt": "Tell me a very long story.", "max_tokens": 1500,
                                   "ignore_eos": True, "stream": stream}).encode()
                c = raw_http.RawConn(self.server)
                c.send(b"POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n" % len(body) + body)
                self.assertTrue(sf.wait_for(lambda: metric("vllm:num_requests_running") >= 1, 30))
                c.close()
                self.assertTrue(sf.wait_for(lambda: metric("vllm:num_requests_running") == 0, 15),
                                "a closed client's request still runs")
                self.assertTrue(sf.wait_for(
                    lambda: metric("vllm:request_success_total", finished_reason="abort") > aborts0, 5))

    def test_live_socket_is_not_taken_over(self):
        out = serve_fails(self.binary, self.model, "--uds", self.path)
        self.assertEqual(out.returncode, 1, out.stderr[-500:])
        self.assertIn(f"error: cannot listen on unix:{self.path}: another server is listening on it", out.stderr)
        self.assertNotIn("KV cache", out.stderr, "the check should come before loading the model")
        self.assertEqual(self.server.request("GET", "/health")[0], 200)


class UnixSocketStartAndStopTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.binary, cls.model = sf.preflight()
        cls.dir = socket_dir()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_paths_that_cannot_work_fail_before_loading(self):
        regular = os.path.join(self.dir, "regular-file")
        with open(regular, "w") as f:
            f.write("keep me")
        long_path = os.path.join(self.dir, "x" * 120)
        cases = ((long_path, f"the path is {len(long_path)} bytes long; a Unix socket path holds 1 to 107"),
                 (os.path.join(self.dir, "missing", "s.sock"), f"the directory {self.dir}/missing does not exist"),
                 (regular, "the path exists and is not a socket (not replacing it)"))
        for path, message in cases:
            with self.subTest(path=path):
                out = serve_fails(self.binary, self.model, "--uds", path)
                self.assertEqual(out.returncode, 1, out.stderr[-500:])
                self.assertIn(f"error: cannot listen on unix:{path}: {message}", out.stderr)
                self.assertNotIn("KV cache", out.stderr)
                self.assertNotIn("terminate", out.stderr)
        with open(regular) as f:
            self.assertEqual(f.read(), "keep me")

    def test_permission_denied_is_an_error(self):
        if os.geteuid() == 0:
            path = "/sys/tessera-test.sock"  # sysfs refuses socket files, even to root
        else:
            locked = os.path.join(self.dir, "locked")
            os.mkdir(locked, 0o500)
            path = os.path.join(locked, "s.sock")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.bind(path)
            os.unlink(path)
            self.skipTest(f"{path} can be bound here")
        except PermissionError:
            pass
        finally:
            probe.close()
        out = serve_fails(self.binary, self.model, "--uds", path)
        self.assertEqual(out.returncode, 1, out.stderr[-500:])
        self.assertRegex(out.stderr, rf"error: cannot listen on unix:{path}: (Permission denied|Operation not "
                                     r"permitted) \(may this user create files in ")

    def test_sigterm_removes_the_socket_file(self):
        path = os.path.join(self.dir, "term.sock")
        server = sf.Server(self.binary, self.model, name="uds_term", uds=path)
        try:
            self.assertEqual(server.request("GET", "/health")[0], 200)
            self.assertTrue(stat.S_ISSOCK(os.stat(path).st_mode))
        finally:
            rc = server.stop()
        self.assertEqual(rc, 0, server.log_tail())
        self.assertFalse(os.path.exists(path), "the socket file outlived the server")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with self.assertRaises(FileNotFoundError):
            probe.connect(path)
        probe.close()


class AccessLogTest(unittest.TestCase):
    """The default access log of a TCP server with two HTTP threads."""

    @classmethod
    def setUpClass(cls):
        cls.binary, cls.model = sf.preflight()
        cls.server = sf.Server(cls.binary, cls.model, ["--http-threads", "2"], name="access_log")

    @classmethod
    def tearDownClass(cls):
        sf.stop_module_server(cls.server)

    def expect_line(self, port: int, request_line: str, status: str):
        wanted = f'INFO:     127.0.0.1:{port} - "{request_line}" {status}'
        self.assertTrue(wait_line(self.server, wanted), f"no line {wanted!r} in:\n{''.join(self.server.lines()[-10:])}")

    def test_answers_and_errors(self):
        status, _, port = request_from(self.server, "POST", "/v1/completions", COMPLETION)
        self.assertEqual(status, 200)
        self.expect_line(port, "POST /v1/completions HTTP/1.1", "200 OK")
        status, _, port = request_from(self.server, "POST", "/v1/completions", dict(COMPLETION, max_tokens=-1))
        self.assertEqual(status, 400)
        self.expect_line(port, "POST /v1/completions HTTP/1.1", "400 Bad Request")
        status, _, port = request_from(self.server, "GET", "/v1/nothing?a=1&b=2")
        self.assertEqual(status, 404)
        self.expect_line(port, "GET /v1/nothing?a=1&b=2 HTTP/1.1", "404 Not Found")
        status, _, port = request_from(self.server, "GET", "/v1/completions")
        self.assertEqual(status, 405)
        self.expect_line(port, "GET /v1/completions HTTP/1.1", "405 Method Not Allowed")

    def test_refusals_of_the_transport(self):
        status, _, port = request_from(self.server, "POST", "/v1/completions", b"{}", {"Content-Type": "text/plain"})
        self.assertEqual(status, 415)
        self.expect_line(port, "POST /v1/completions HTTP/1.1", "415 Unsupported Media Type")
        status, _, port = request_from(self.server, "POST", "/tokenize", b"{}",
                                       {"Origin": "https://evil.example"})
        self.assertEqual(status, 403)
        self.expect_line(port, "POST /tokenize HTTP/1.1", "403 Forbidden")

    def test_stream_is_logged_when_it_starts(self):
        conn = self.server.connection(120)
        conn.connect()
        port = conn.sock.getsockname()[1]
        try:
            conn.request("POST", "/v1/completions", body=json.dumps(dict(COMPLETION, max_tokens=1000, stream=True)),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            self.assertTrue(resp.readline().startswith(b"data: "))
            self.expect_line(port, "POST /v1/completions HTTP/1.1", "200 OK")
            running = sf.metric_value(self.server.metrics_text(), "vllm:num_requests_running") or 0
            self.assertGreaterEqual(running, 1, "the line came only after the stream ended")
            rest = resp.read()
            self.assertTrue(rest.endswith(b"data: [DONE]\n\n"), rest[-200:])
        finally:
            conn.close()
        mine = [m for m in self.server.access_log() if m.group(1) == f"127.0.0.1:{port}"]
        self.assertEqual(len(mine), 1, mine)

    def test_request_target_is_escaped(self):
        raw_targets = (
            (b"/v1/models%0D%0AINFO:%20forged%1B[31m?x=%0A", 404, "/v1/models%0D%0AINFO%3A%20forged%1B%5B31m?x=%0A"),
            (b"/caf\xc3\xa9/\xff?q=\xfe", 404, "/caf%C3%A9/%FF?q=%FE"),
        )
        for target, code, logged in raw_targets:
            with raw_http.RawConn(self.server) as c:
                c.send(b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                port = c.sock.getsockname()[1]
                self.assertEqual(c.read_response(30)[0], code)
            self.expect_line(port, f"GET {logged} HTTP/1.1", "404 Not Found")
        # A raw control character is a malformed request line: refused, and no line for it.
        with raw_http.RawConn(self.server) as c:
            c.send(b"GET /\x1b[2J\x07 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            port = c.sock.getsockname()[1]
            self.assertEqual(c.read_response(30)[0], 400)
        self.assertEqual(self.server.request("GET", "/health")[0], 200)
        time.sleep(0.5)
        lines = self.server.lines()
        self.assertFalse([m for m in self.server.access_log() if m.group(1) == f"127.0.0.1:{port}"])
        for line in lines:
            self.assertFalse(any(ord(ch) < 0x20 for ch in line.rstrip("\n")), repr(line))
            if "forged" in line:
                self.assertRegex(line, sf.ACCESS_RE, "a forged line made it into the log")

    def test_storm_lines_are_whole(self):
        per_thread, threads = 150, 6
        failures = []

        def client(t):
            conn = self.server.connection(60)
            try:
                for i in range(per_thread):
                    conn.request("GET", f"/v1/models?storm={t}-{i}")
                    resp = conn.getresponse()
                    resp.read()
                    if resp.status != 200:
                        failures.append(resp.status)
            except Exception as e:  # noqa: BLE001 - recorded
                failures.append(repr(e))
            finally:
                conn.close()

        start = time.monotonic()
        workers = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.monotonic() - start
        self.assertEqual(failures, [])
        total = per_thread * threads

        def storm_lines():
            return [line for line in self.server.lines() if "storm=" in line]
        sf.wait_for(lambda: len(storm_lines()) >= total, 10)
        lines = storm_lines()
        self.assertEqual(len(lines), total)
        ids = set()
        for line in lines:
            m = sf.ACCESS_RE.match(line.rstrip("\n"))
            self.assertIsNotNone(m, f"a garbled line: {line!r}")
            self.assertEqual((m.group(2), m.group(5), m.group(6)), ("GET", "200", "OK"), line)
            ids.add(m.group(3))
        self.assertEqual(len(ids), total)
        print(f"\n{total} logged requests in {elapsed:.2f} s ({total / elapsed:.0f}/s)", file=sys.stderr)


class AccessLogFlagsTest(unittest.TestCase):
    """Each test runs a server of its own and reads its whole stderr after SIGTERM."""

    @classmethod
    def setUpClass(cls):
        cls.binary, cls.model = sf.preflight()

    def run_server(self, name: str, flags: list[str], requests) -> list:
        server = sf.Server(self.binary, self.model, flags, name=name)
        try:
            for method, path, body, code in requests:
                self.assertEqual(server.request(method, path, body)[0], code, (method, path))
        finally:
            rc = server.stop()
        self.assertEqual(rc, 0, server.log_tail())
        return server.access_log()

    MIXED = (("GET", "/health", None, 200), ("POST", "/v1/completions", COMPLETION, 200),
             ("POST", "/v1/completions", dict(COMPLETION, max_tokens=-1), 400), ("GET", "/v1/models", None, 200))

    def test_default_logs_every_request(self):
        # The control for the tests below: the same requests, each with its line.
        log = self.run_server("log_default", [], self.MIXED)
        self.assertEqual([(m.group(2), m.group(3), m.group(5)) for m in log],
                         [("GET", "/health", "200"), ("POST", "/v1/completions", "200"),
                          ("POST", "/v1/completions", "400"), ("GET", "/v1/models", "200")])

    def test_disable_uvicorn_access_log(self):
        self.assertEqual(self.run_server("log_disabled", ["--disable-uvicorn-access-log"], self.MIXED), [])

    def test_log_level_above_info(self):
        self.assertEqual(self.run_server("log_warning", ["--uvicorn-log-level", "warning"], self.MIXED), [])

    def test_excluded_endpoints(self):
        log = self.run_server("log_excluded", ["--disable-access-log-for-endpoints", "/health, /metrics"],
                              (("GET", "/health", None, 200), ("GET", "/health?probe=1", None, 200),
                               ("GET", "/metrics", None, 200), ("GET", "/healthz", None, 404),
                               ("GET", "/v1/models", None, 200)))
        self.assertEqual([m.group(3) for m in log], ["/healthz", "/v1/models"])

    def test_bad_log_level_is_refused(self):
        out = serve_fails(self.binary, self.model, "--uvicorn-log-level", "verbose")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("--uvicorn-log-level", out.stderr)
        self.assertIn("verbose not in {critical,debug,error,info,trace,warning}", out.stderr)
        self.assertNotIn("KV cache", out.stderr)


if __name__ == "__main__":
    sf.preflight()
    sf.run_tests()
