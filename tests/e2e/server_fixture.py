"""Shared helpers of the end-to-end tests of `tessera serve` (docs/server.md).

Starts the server on a free port (`--port 0`), reads the port from the stderr line
`tessera: listening on http://HOST:PORT` (or, with `uds=PATH`, on a Unix socket:
`tessera: listening on unix:PATH`), keeps draining stderr into a log file so the pipe
never fills, and stops it with SIGTERM (the server must exit 0). The stderr lines are kept
(`lines()`; the access log's among them, one per answered request).

Environment: TESSERA_BIN (default SOURCE/build/bin/tessera), TESSERA_DEFAULT_MODEL (default:
scripts/default_model_path.sh), TESSERA_SOURCE_DIR (default: two levels above this file).
A missing binary, model or `openai` package skips the test program with exit code 77.
Server logs go to $TMPDIR/tessera-e2e-*.log; removed after a clean exit unless
TESSERA_E2E_KEEP_LOGS is set. The tessera processes get OMP_WAIT_POLICY=passive unless the
environment sets it (see child_env).
"""

from __future__ import annotations

import atexit
import http.client
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

SKIP_EXIT_CODE = 77
SERVED_MODEL_NAME = "smollm2"
MAX_MODEL_LEN = 2048
KV_CACHE_MEMORY = 268435456
LISTEN_RE = re.compile(r"tessera: listening on http://(\[[^\]]+\]|[^\s:/]+):(\d+)")
LISTEN_UNIX_RE = re.compile(r"tessera: listening on unix:(.+)$")
# A line of the access log (uvicorn's format): client ("" on a Unix socket), method, target,
# HTTP version, status, phrase.
ACCESS_RE = re.compile(r'^INFO:     (\S*) - "(\S+) (\S+) HTTP/(1\.[01])" (\d{3}) (.*)$')


def _die_with_parent() -> None:
    """preexec_fn: the server gets SIGKILL when the test process dies (Linux), so a killed
    test run (ctest timeout, Ctrl-C) leaves no server behind."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _exit_on_sigterm() -> None:
    # SIGTERM to the test process: run atexit handlers (they kill the servers).
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def kill_process_group(proc: subprocess.Popen | None) -> None:
    """SIGKILL to a still-running child started in its own process group, then reap it."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        pass


def child_env() -> dict[str, str]:
    """The environment of the tessera processes the tests start: OMP_WAIT_POLICY=passive unless
    set. By default libgomp's threads spin at every fork, join and barrier before they sleep;
    when ctest runs another OpenMP program beside the server on the same cores (engine_tests
    under `ctest -j2` on two cores), each side's spinning threads burn the time slices that
    the other side's threads need, and a step of the 135M model goes from ~0.02 s to ~1.3 s
    (a 32-token stream then outlasts a 30 s --shutdown-timeout). Passive threads sleep at
    once; alone, a decode step costs ~5 ms more."""
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "passive")
    return env


def skip(message: str) -> None:
    """Skips the whole test program (ctest SKIP_RETURN_CODE 77)."""
    print(f"SKIPPED: {message}", file=sys.stderr, flush=True)
    sys.exit(SKIP_EXIT_CODE)


def source_dir() -> str:
    d = os.environ.get("TESSERA_SOURCE_DIR")
    if d:
        return d
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tessera_bin() -> str:
    b = os.environ.get("TESSERA_BIN") or os.path.join(source_dir(), "build", "bin", "tessera")
    return b


def default_model() -> str | None:
    m = os.environ.get("TESSERA_DEFAULT_MODEL")
    if m:
        return m
    script = os.path.join(source_dir(), "scripts", "default_model_path.sh")
    if not os.path.exists(script):
        return None
    try:
        out = subprocess.run(["bash", script], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = out.stdout.strip()
    return path if out.returncode == 0 and path else None


def preflight(need_openai: bool = False) -> tuple[str, str]:
    """Returns (binary, model) or exits 77 when one of them (or `openai`) is missing."""
    binary = tessera_bin()
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        skip(f"tessera binary not found at {binary} (set TESSERA_BIN)")
    model = default_model()
    if not model or not os.path.isfile(model):
        skip(f"default model not found ({model!r}); set TESSERA_DEFAULT_MODEL or run `make setup`")
    try:
        out = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, timeout=60)
        help_text = out.stdout + out.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        skip(f"`{binary} serve --help` failed: {e}")
    if out.returncode != 0 or "--served-model-name" not in help_text:
        skip(f"{binary} has no `serve` subcommand yet")
    if need_openai:
        try:
            import openai  # noqa: F401
        except ImportError:
            skip("the `openai` Python package is not installed (pip install openai)")
    return binary, model


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a Unix socket (`tessera serve --uds PATH`); Host: localhost."""

    def __init__(self, path: str, timeout: float = 60.0):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.unix_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class Server:
    """One `tessera serve` process on a free port of 127.0.0.1, or on a Unix socket (`uds`)."""

    def __init__(self, binary: str, model: str, extra_args: list[str] | None = None,
                 name: str = "server", start_timeout: float = 120.0, uds: str | None = None):
        self.binary = binary
        self.model = model
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.uds = uds
        self.args = [binary, "serve", model, "--port", "0", "--host", self.host,
                     "--served-model-name", SERVED_MODEL_NAME,
                     "--kv-cache-memory", str(KV_CACHE_MEMORY),
                     "--max-model-len", str(MAX_MODEL_LEN)] + list(extra_args or [])
        if uds:
            self.args += ["--uds", uds]
        fd, self.log_path = tempfile.mkstemp(prefix=f"tessera-e2e-{name}-", suffix=".log")
        self._log = os.fdopen(fd, "w", buffering=1, errors="replace")
        self._log.write("$ " + " ".join(self.args) + "\n")
        self._lines: list[str] = []
        self._listening = threading.Event()
        _exit_on_sigterm()
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.PIPE, start_new_session=True,
                                     preexec_fn=_die_with_parent, env=child_env())
        atexit.register(self._kill_if_running)
        self._drain = threading.Thread(target=self._drain_stderr, daemon=True)
        self._drain.start()
        deadline = time.monotonic() + start_timeout
        while not self._listening.is_set():
            if self.proc.poll() is not None:
                self._drain.join(5)
                raise RuntimeError(f"tessera serve exited with {self.proc.returncode} before "
                                   f"listening; log {self.log_path}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self._kill_if_running()
                raise RuntimeError(f"no `tessera: listening on` line within {start_timeout} s; "
                                   f"log {self.log_path}:\n{self.log_tail()}")
            self._listening.wait(0.1)
        self.base_url = "http://localhost" if uds else f"http://{self.host}:{self.port}"

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in iter(self.proc.stderr.readline, b""):
            line = raw.decode("utf-8", "replace")
            self._lines.append(line)
            try:
                self._log.write(line)
            except ValueError:  # log closed
                pass
            if not self._listening.is_set():
                if self.uds:
                    if LISTEN_UNIX_RE.search(line):
                        self._listening.set()
                    continue
                m = LISTEN_RE.search(line)
                if m:
                    self.port = int(m.group(2))
                    self._listening.set()

    def lines(self) -> list[str]:
        """The stderr lines so far (all of them once stop() has returned)."""
        return list(self._lines)

    def access_log(self) -> list[re.Match]:
        """The access log's lines so far, parsed (ACCESS_RE)."""
        return [m for m in (ACCESS_RE.match(line.rstrip("\n")) for line in self.lines()) if m]

    def log_tail(self, n: int = 60) -> str:
        """The last n lines of stderr but the access log's (what explains a failure)."""
        return "".join([line for line in self._lines if not ACCESS_RE.match(line)][-n:])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_mib(self) -> float:
        """The server's resident memory (Linux)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        raise AssertionError("no VmRSS")

    def _kill_if_running(self) -> None:
        kill_process_group(self.proc)

    def stop(self, timeout: float = 40.0) -> int | None:
        """SIGTERM, waits up to `timeout` s; returns the exit status (None: had to SIGKILL)."""
        if self.proc.poll() is not None:
            rc = self.proc.returncode
        else:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                rc = None
                self._kill_if_running()
        self._drain.join(5)
        try:
            self._log.close()
        except OSError:
            pass
        if rc == 0 and not os.environ.get("TESSERA_E2E_KEEP_LOGS"):
            try:
                os.unlink(self.log_path)  # a clean run leaves nothing behind
            except OSError:
                pass
        return rc

    # ---- plain HTTP -------------------------------------------------------------------
    def request(self, method: str, path: str, body=None, headers: dict | None = None,
                timeout: float = 60.0) -> tuple[int, dict, bytes]:
        """One request on a fresh connection; `body` may be bytes, str or a JSON-able value."""
        conn = self.connection(timeout)
        hdrs = dict(headers or {})
        data = None
        if body is not None:
            if isinstance(body, bytes):
                data = body
            elif isinstance(body, str):
                data = body.encode()
            else:
                data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        try:
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            payload = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload
        finally:
            conn.close()

    def connection(self, timeout: float = 60.0) -> http.client.HTTPConnection:
        """A new (not yet connected) http.client connection to the server, TCP or Unix socket."""
        if self.uds:
            return UnixHTTPConnection(self.uds, timeout=timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def json_request(self, method: str, path: str, body=None, headers: dict | None = None,
                     timeout: float = 60.0):
        status, hdrs, payload = self.request(method, path, body, headers, timeout)
        try:
            parsed = json.loads(payload) if payload else None
        except ValueError:
            parsed = None
        return status, parsed, payload

    def metrics_text(self, headers: dict | None = None) -> str:
        status, _, payload = self.request("GET", "/metrics", headers=headers)
        if status != 200:
            raise AssertionError(f"GET /metrics -> {status}: {payload[:300]!r}")
        return payload.decode()


# ---- Prometheus text -----------------------------------------------------------------
_METRIC_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_sse(payload: bytes) -> list:
    """`data: ...` events of a text/event-stream body; `[DONE]` stays a string."""
    events = []
    for block in payload.decode().split("\n\n"):
        block = block.strip("\n")
        if not block:
            continue
        data = [line[len("data:"):].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if not data:
            continue
        text = "\n".join(data)
        events.append(text if text == "[DONE]" else json.loads(text))
    return events


def sse_json(payload: bytes) -> list[dict]:
    """The JSON events of a text/event-stream body, `[DONE]` left out."""
    return [e for e in parse_sse(payload) if e != "[DONE]"]


def parse_metrics(text: str) -> list[tuple[str, dict, float]]:
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _METRIC_LINE.match(line)
        if not m:
            continue
        labels = dict(_LABEL.findall(m.group(3) or ""))
        value = m.group(4)
        try:
            v = float(value)
        except ValueError:
            v = math.nan
        samples.append((m.group(1), labels, v))
    return samples


def metric_value(text: str, name: str, **labels) -> float | None:
    """Sum of the samples named `name` whose labels include `labels`; None if none match."""
    total = None
    for n, lab, v in parse_metrics(text):
        if n == name and all(lab.get(k) == val for k, val in labels.items()):
            total = (total or 0.0) + v
    return total


def metric_names(text: str) -> set[str]:
    return {n for n, _, _ in parse_metrics(text)}


def wait_for(predicate, timeout: float, interval: float = 0.1):
    """Polls predicate() until truthy or timeout; returns the last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def assert_error_shape(tc: unittest.TestCase, payload: bytes, status: int, what: str = "") -> dict:
    """`{"error": {"message": str, "type": str, "param": null|str, "code": status}}`."""
    try:
        body = json.loads(payload)
    except ValueError:
        tc.fail(f"{what}: error body is not JSON: {payload[:300]!r}")
    tc.assertIsInstance(body, dict, f"{what}: {body!r}")
    tc.assertIn("error", body, f"{what}: {body!r}")
    err = body["error"]
    tc.assertIsInstance(err, dict, f"{what}: {body!r}")
    for key in ("message", "type", "param", "code"):
        tc.assertIn(key, err, f"{what}: missing error.{key} in {body!r}")
    tc.assertIsInstance(err["message"], str, what)
    tc.assertTrue(err["message"], f"{what}: empty error message")
    tc.assertIsInstance(err["type"], str, what)
    tc.assertTrue(err["param"] is None or isinstance(err["param"], str), f"{what}: {body!r}")
    tc.assertEqual(err["code"], status, f"{what}: error.code != HTTP status in {body!r}")
    return err


ERROR_TYPES = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError",
               405: "MethodNotAllowed", 408: "RequestTimeout", 413: "RequestTooLarge",
               503: "ServiceUnavailableError"}


_cli_cache: dict = {}


def cli_generate(binary: str, model: str, prompts: list[str], max_tokens: int, *extra: str) -> list[dict]:
    """Greedy offline generation: one JSON object per prompt."""
    key = (binary, model, tuple(prompts), max_tokens, extra)
    if key not in _cli_cache:
        args = [binary, "generate", "--model", model, "--max-tokens", str(max_tokens),
                "--temperature", "0", "--json", "--disable-progress-bar",
                "--kv-cache-memory", str(KV_CACHE_MEMORY),
                "--max-model-len", str(MAX_MODEL_LEN), *extra]
        for p in prompts:
            args += ["--prompt", p]
        out = subprocess.run(args, capture_output=True, text=True, timeout=300, env=child_env())
        if out.returncode != 0:
            raise AssertionError(f"{args} failed ({out.returncode}): {out.stderr[-2000:]}")
        rows = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        assert len(rows) == len(prompts), out.stdout
        _cli_cache[key] = rows
    return _cli_cache[key]


def cli_detokenize(binary: str, model: str, tokens: list[int]) -> str:
    """The offline detokenizer (expectations do not depend on the server's /detokenize)."""
    out = subprocess.run([binary, "detokenize", "--tokenizer", model, "--jsonl"],
                         input=json.dumps({"ids": tokens}) + "\n", capture_output=True, text=True,
                         timeout=120, env=child_env())
    if out.returncode != 0:
        raise AssertionError(f"tessera detokenize failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.splitlines()[0])["text"]




def stop_module_server(server: "Server | None") -> None:
    """tearDownModule: the module's server must still be alive and exit 0 on SIGTERM."""
    if server is None:
        return
    alive = server.alive()
    rc = server.stop()
    if not alive or rc != 0:
        sys.stderr.write(f"server log {server.log_path}:\n{server.log_tail()}\n")
    if not alive:
        raise AssertionError(f"the server died during the tests (exit status {rc})")
    if rc != 0:
        raise AssertionError(f"SIGTERM: server exit status {rc} (expected 0; None = did not exit)")


def run_tests() -> None:
    """unittest.main with exit codes 0 (pass) / 1 (fail); skips were handled by preflight."""
    unittest.main(verbosity=2)
