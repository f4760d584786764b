"""Clients for the hostile-input tests: a well-behaved background client that must keep
getting answers, and a raw HTTP/1.1 connection that can send anything and read what comes
back (or notice the close)."""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_fixture as sf  # noqa: E402

NAME = sf.SERVED_MODEL_NAME


# ---- the normal client ---------------------------------------------------------------
class BackgroundClient(threading.Thread):
    """Keeps sending small completions (plain and streaming); records every outcome."""

    def __init__(self, server: sf.Server):
        super().__init__(daemon=True)
        self.server = server
        self.stop_event = threading.Event()
        self.paused = threading.Event()
        self.idle = threading.Event()
        self.results: list[tuple[str, object]] = []
        self.lock = threading.Lock()

    def run(self):
        i = 0
        while not self.stop_event.is_set():
            if self.paused.is_set():
                self.idle.set()
                time.sleep(0.05)
                continue
            self.idle.clear()
            i += 1
            stream = i % 3 == 0
            body = {"model": NAME, "prompt": f"Request {i}: the weather today is", "max_tokens": 4,
                    "temperature": 0, "stream": stream}
            try:
                status, _, payload = self.server.request("POST", "/v1/completions", body, timeout=60)
                ok = status == 200
                if ok and stream:
                    ok = payload.endswith(b"data: [DONE]\n\n")
                elif ok:
                    ok = "choices" in json.loads(payload)
                outcome = (status, None if ok else payload[:300])
            except Exception as e:  # noqa: BLE001 - every failure is recorded
                outcome = ("exception", repr(e))
            with self.lock:
                self.results.append((f"#{i} stream={stream}", outcome))
            time.sleep(0.1)
        self.idle.set()

    def pause(self, timeout=60.0):
        self.paused.set()
        self.idle.clear()
        if not self.idle.wait(timeout):
            raise AssertionError("the background client did not go idle")

    def resume(self):
        self.paused.clear()

    def failures(self):
        with self.lock:
            return [(name, o) for name, o in self.results if o[0] != 200 or o[1] is not None]


# ---- raw HTTP over a socket ----------------------------------------------------------
class Closed(Exception):
    pass


class RawConn:
    def __init__(self, server: sf.Server, timeout: float = 30.0):
        if server.uds:  # a server on a Unix socket (--uds)
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(server.uds)
        else:
            self.sock = socket.create_connection((server.host, server.port), timeout=timeout)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data: bytes) -> bool:
        """False when the server has closed or reset the connection."""
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            return False

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("deadline")
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(65536)
        except (ConnectionResetError, ConnectionAbortedError):
            chunk = b""
        if not chunk:
            raise Closed()
        self.buf += chunk

    def _read_until(self, marker: bytes, deadline: float) -> bytes:
        while marker not in self.buf:
            self._fill(deadline)
        head, self.buf = self.buf.split(marker, 1)
        return head

    def _read_exact(self, n: int, deadline: float) -> bytes:
        while len(self.buf) < n:
            self._fill(deadline)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_response(self, timeout: float = 60.0):
        """(status, headers, body); raises Closed on EOF/reset, socket.timeout on timeout."""
        deadline = time.monotonic() + timeout
        head = self._read_until(b"\r\n\r\n", deadline).decode("latin-1")
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise AssertionError(f"not an HTTP status line: {lines[0]!r}")
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if 100 <= status < 200 or status in (204, 304):
            body = b""  # no body, whatever the headers say
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self._read_until(b"\r\n", deadline).split(b";")[0], 16)
                if size == 0:
                    self._read_until(b"\r\n", deadline)  # no trailers expected
                    break
                body += self._read_exact(size, deadline)
                self._read_exact(2, deadline)
        elif "content-length" in headers:
            body = self._read_exact(int(headers["content-length"]), deadline)
        else:
            body = self.buf
            try:
                while True:
                    self._fill(deadline)
            except Closed:
                pass
            body, self.buf = self.buf, b""
        return status, headers, body

    def wait_outcome(self, timeout: float):
        """('response', status, headers, body) | ('closed',) | ('timeout',) and the elapsed time."""
        start = time.monotonic()
        try:
            r = self.read_response(timeout)
            return ("response",) + r, time.monotonic() - start
        except Closed:
            return ("closed",), time.monotonic() - start
        except socket.timeout:
            return ("timeout",), time.monotonic() - start
