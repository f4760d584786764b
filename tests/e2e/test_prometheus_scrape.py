"""A real Prometheus server scrapes `tessera serve`'s GET /metrics; PromQL over vLLM's metric
names returns what the requests sent (docs/server.md, "Metrics").

One `tessera serve` (SmolLM2-135M-Instruct Q4_1, CPU) and one `prometheus` (Debian's package,
scripts/setup.sh) with a config of its own: scrape_interval 1s, one job scraping the server,
its TSDB in a temporary directory and its web API on a free port of 127.0.0.1 (a `prometheus`
service the package may have started on :9090 is neither used nor disturbed).

setUpModule sends two phases of requests (completions and a chat, streamed or not; most with
`ignore_eos` and a known `max_tokens`, so their token counts are exact; two that stop on their
first token): phase A before Prometheus starts, phase B once a scrape holds A's totals, so
that rate() over the bucket counters has two different samples. It then waits until a scrape
shows the server idle with every request counted. The tests only query Prometheus's HTTP API
(/api/v1/query, /api/v1/targets, /api/v1/targets/metadata) and its own /metrics.

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_prometheus_scrape.py [-k PATTERN]
Environment: PROMETHEUS_BIN (default: `prometheus` on PATH); TESSERA_E2E_KEEP_LOGS keeps
Prometheus's directory (config, log, TSDB) as it keeps the server's log.
Exit code 77: skipped (no binary with `serve`, no model, no `prometheus`).
"""

from __future__ import annotations

import atexit
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_fixture as sf  # noqa: E402

NAME = sf.SERVED_MODEL_NAME
JOB = "tessera"
SEL = f'model_name="{NAME}",engine="0"'  # every vLLM family carries these labels
WAIT = 60.0  # seconds for each thing awaited (start, first scrape, settled totals)

SERVER: sf.Server | None = None
PROM: "Prometheus | None" = None
SENT: "Sent | None" = None
SETUP_SECONDS = 0.0


def prometheus_bin() -> str | None:
    b = os.environ.get("PROMETHEUS_BIN") or shutil.which("prometheus")
    return b if b and os.path.isfile(b) and os.access(b, os.X_OK) else None


def preflight() -> tuple[str, str, str]:
    binary, model = sf.preflight()
    prom = prometheus_bin()
    if not prom:
        sf.skip("the `prometheus` binary is not installed (make setup: Debian package prometheus; "
                "or set PROMETHEUS_BIN)")
    return binary, model, prom


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def poll(what: str, check, timeout: float = WAIT, interval: float = 0.2):
    """Calls check() -> (done, detail) until done; returns detail, else fails naming `what`
    and the last detail."""
    deadline = time.monotonic() + timeout
    while True:
        done, detail = check()
        if done:
            return detail
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s; last seen: {detail}")
        time.sleep(interval)


class Prometheus:
    """One `prometheus` process scraping `target` every second; its files in a temp dir."""

    def __init__(self, binary: str, target: str):
        self.binary = binary
        self.dir = tempfile.mkdtemp(prefix="tessera-e2e-prometheus-")
        self.config = os.path.join(self.dir, "prometheus.yml")
        self.log_path = os.path.join(self.dir, "prometheus.log")
        with open(self.config, "w") as f:
            f.write("global:\n"
                    "  scrape_interval: 1s\n"
                    "  scrape_timeout: 1s\n"
                    "  evaluation_interval: 1s\n"
                    "scrape_configs:\n"
                    f"  - job_name: {JOB}\n"
                    "    metrics_path: /metrics\n"
                    "    static_configs:\n"
                    f"      - targets: ['{target}']\n")
        self.proc: subprocess.Popen | None = None
        self._log = open(self.log_path, "ab")
        atexit.register(self.kill)
        sf._exit_on_sigterm()
        # The port is free when picked but may be taken before prometheus binds it: retry.
        for attempt in range(3):
            self.port = free_port()
            self.base_url = f"http://127.0.0.1:{self.port}"
            args = [binary, f"--config.file={self.config}",
                    f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
                    f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1h"]
            self._log.write(("$ " + " ".join(args) + "\n").encode())
            self._log.flush()
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log,
                                         stderr=self._log, start_new_session=True,
                                         preexec_fn=sf._die_with_parent, cwd=self.dir)
            if self._wait_ready():
                return
            if "address already in use" not in self.log_tail().lower():
                break
        rc = self.proc.poll() if self.proc is not None else None
        raise RuntimeError(f"prometheus did not become ready within {WAIT:.0f} s (exit status {rc}); "
                           f"log {self.log_path}:\n{self.log_tail()}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.base_url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return True
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.1)
        self.kill()
        return False

    def log_tail(self, n: int = 30) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def get(self, path: str, params: dict | None = None):
        """GET of Prometheus's API: the JSON `data` of a success, else an AssertionError."""
        url = self.base_url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                body = json.loads(r.read())
        except urllib.error.HTTPError as e:  # 400/422: a bad query, with Prometheus's message
            raise AssertionError(f"GET {url} -> {e.code}: {e.read()[:500]!r}") from None
        if body.get("status") != "success":
            raise AssertionError(f"GET {url}: {body}")
        return body["data"]

    def query(self, promql: str) -> list[dict]:
        data = self.get("/api/v1/query", {"query": promql})
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        assert data["resultType"] == "vector", data
        return data["result"]

    def value(self, promql: str) -> float | None:
        """The value of a query that returns one series; None for an empty result."""
        result = self.query(promql)
        if not result:
            return None
        if len(result) != 1:
            raise AssertionError(f"{promql}: {len(result)} series, expected one: {result}")
        return float(result[0]["value"][1])

    def by_label(self, promql: str, label: str) -> dict[str, float]:
        return {r["metric"].get(label, ""): float(r["value"][1]) for r in self.query(promql)}

    def own_metrics(self) -> str:
        with urllib.request.urlopen(self.base_url + "/metrics", timeout=10) as r:
            return r.read().decode()

    def target(self) -> dict | None:
        active = self.get("/api/v1/targets", {"state": "active"})["activeTargets"]
        for t in active:
            if t["labels"].get("job") == JOB:
                return t
        return None

    def kill(self) -> None:
        sf.kill_process_group(self.proc)

    def stop(self) -> None:
        """SIGTERM (SIGKILL after 10 s), then removes the directory unless logs are kept."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        try:
            self._log.close()
        except OSError:
            pass
        if not os.environ.get("TESSERA_E2E_KEEP_LOGS"):
            shutil.rmtree(self.dir, ignore_errors=True)


# ---- requests ------------------------------------------------------------------------
class Sent:
    """What the requests sent and what the server answered (usage), summed."""

    def __init__(self):
        self.completions = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.max_tokens = 0
        self.reasons: dict[str, int] = {}
        self.generated: list[int] = []       # per completion
        self.latency: list[float] = []       # client-side seconds per request, phase B only
        self.phase = "A"


def post(path: str, body: dict) -> tuple[dict, list[str], float]:
    """One request; returns (usage, [finish_reason], seconds). A stream is read to [DONE]."""
    t0 = time.monotonic()
    status, _, payload = SERVER.request("POST", path, body, timeout=120)
    seconds = time.monotonic() - t0
    if status != 200:
        raise AssertionError(f"POST {path} {body} -> {status}: {payload[:500]!r}")
    if not body.get("stream"):
        resp = json.loads(payload)
        return resp["usage"], [c["finish_reason"] for c in resp["choices"]], seconds
    if not payload.endswith(b"data: [DONE]\n\n"):
        raise AssertionError(f"POST {path}: stream did not end with [DONE]: {payload[-300:]!r}")
    usage, reasons = None, []
    for line in payload.decode().split("\n"):
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[len("data: "):])
        for c in event.get("choices") or []:
            if c.get("finish_reason"):
                reasons.append(c["finish_reason"])
        if event.get("usage"):
            usage = event["usage"]
    if usage is None:
        raise AssertionError(f"POST {path}: no usage event with include_usage: {payload[-300:]!r}")
    return usage, reasons, seconds


def send(kind: str, max_tokens: int, stream: bool, stop_first: str | None = None) -> None:
    """A completion ("cmpl") or chat ("chat") request of one choice. With `stop_first` (a
    one-token string) only that token may be generated and it is the stop string: the choice
    ends "stop" after exactly one token; else `ignore_eos`: "length" after max_tokens."""
    body: dict = {"model": NAME, "max_tokens": max_tokens, "temperature": 0, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    if kind == "cmpl":
        path = "/v1/completions"
        body["prompt"] = f"Request {SENT.completions} of the Prometheus test: one, two, three"
    else:
        path = "/v1/chat/completions"
        body["messages"] = [{"role": "user", "content": f"Count to ten, request {SENT.completions}."}]
    if stop_first is None:
        body["ignore_eos"] = True
        want_tokens, want_reason = max_tokens, "length"
    else:
        body["allowed_token_ids"] = [STOP_TOKEN_ID]
        body["stop"] = [stop_first]
        want_tokens, want_reason = 1, "stop"
    usage, reasons, seconds = post(path, body)
    # What the server answered; the metrics are then checked against these sums.
    assert reasons == [want_reason], (body, reasons)
    assert usage["completion_tokens"] == want_tokens, (body, usage)
    SENT.completions += 1
    SENT.prompt_tokens += usage["prompt_tokens"]
    SENT.generation_tokens += usage["completion_tokens"]
    SENT.generated.append(usage["completion_tokens"])
    SENT.max_tokens += max_tokens
    SENT.reasons[want_reason] = SENT.reasons.get(want_reason, 0) + 1
    if SENT.phase == "B":
        SENT.latency.append(seconds)


STOP_STRING = ","
STOP_TOKEN_ID: int | None = None


def counted() -> tuple[bool, dict]:
    """Whether the latest scrape holds every request sent so far, the server idle."""
    seen = {
        "generation_tokens": PROM.value(f"vllm:generation_tokens_total{{{SEL}}}"),
        "completions": PROM.value(f"sum(vllm:request_success_total{{{SEL}}})"),
        "running": PROM.value(f"vllm:num_requests_running{{{SEL}}}"),
        "waiting": PROM.value(f"vllm:num_requests_waiting{{{SEL}}}"),
    }
    want = {"generation_tokens": SENT.generation_tokens, "completions": SENT.completions,
            "running": 0, "waiting": 0}
    if seen == want:
        return True, seen
    # Not there yet: what the server itself says now tells a slow scrape from a wrong metric.
    text = SERVER.metrics_text()
    direct = {"generation_tokens": sf.metric_value(text, "vllm:generation_tokens_total"),
              "completions": sf.metric_value(text, "vllm:request_success_total"),
              "running": sf.metric_value(text, "vllm:num_requests_running"),
              "waiting": sf.metric_value(text, "vllm:num_requests_waiting")}
    return False, {"prometheus": seen, "want": want, "tessera /metrics": direct,
                   "target": PROM.target()}


def cleanup() -> None:
    """Module cleanup (runs even when setUpModule fails): Prometheus, then the server."""
    if PROM is not None:
        PROM.stop()
    sf.stop_module_server(SERVER)


def setUpModule():
    global SERVER, PROM, SENT, STOP_TOKEN_ID, SETUP_SECONDS
    binary, model, prom = preflight()
    unittest.addModuleCleanup(cleanup)
    SERVER = sf.Server(binary, model, name="prometheus")
    status, tok, raw = SERVER.json_request("POST", "/tokenize", {"model": NAME, "prompt": STOP_STRING,
                                                                  "add_special_tokens": False})
    assert status == 200 and len(tok["tokens"]) == 1, (status, raw)
    STOP_TOKEN_ID = tok["tokens"][0]
    SENT = Sent()
    t0 = time.monotonic()
    # Phase A: before Prometheus runs; its first scrape already sees non-zero counters.
    send("cmpl", 5, stream=False)
    send("cmpl", 6, stream=True)
    send("cmpl", 8, stream=False, stop_first=STOP_STRING)
    PROM = Prometheus(prom, f"{SERVER.host}:{SERVER.port}")
    t1 = time.monotonic()
    poll("Prometheus's first successful scrape of tessera",
         lambda: (lambda t: (t is not None and t["health"] == "up", t))(PROM.target()))
    poll("a scrape with phase A's requests counted", counted)
    t2 = time.monotonic()
    # Phase B: between two scrapes, so rate() over the window sees the buckets grow.
    SENT.phase = "B"
    send("cmpl", 4, stream=False)
    send("chat", 7, stream=True)
    send("chat", 3, stream=False)
    send("cmpl", 8, stream=True, stop_first=STOP_STRING)
    poll("a scrape with phase B's requests counted and the server idle", counted)
    SETUP_SECONDS = time.monotonic() - t0  # every request ran inside this time
    sys.stderr.write(f"setup: phase A {t1 - t0:.1f} s, Prometheus start to first counted scrape "
                     f"{t2 - t1:.1f} s, phase B to counted scrape {time.monotonic() - t2:.1f} s\n")


def bucket_bounds(promql: str) -> list[float]:
    """The `le` bounds of a classic histogram's _bucket series, as Prometheus parsed them."""
    return sorted(float(r["metric"]["le"]) for r in PROM.query(promql))


class PrometheusScrapeTest(unittest.TestCase):
    def test_target_up_without_scrape_errors(self):
        self.assertEqual(PROM.value(f'up{{job="{JOB}"}}'), 1.0)
        t = PROM.target()
        self.assertIsNotNone(t, "no active target for the job")
        self.assertEqual(t["health"], "up", t)
        self.assertEqual(t["lastError"], "", t)
        self.assertEqual(t["scrapeUrl"], f"{SERVER.base_url}/metrics")
        # Samples Prometheus parsed but did not store: none. (A parse error fails the whole
        # scrape: health "down" above.)
        own = PROM.own_metrics()
        for name in ("prometheus_target_scrapes_sample_duplicate_timestamp_total",
                     "prometheus_target_scrapes_sample_out_of_order_total",
                     "prometheus_target_scrapes_sample_out_of_bounds_total",
                     "prometheus_target_scrapes_exceeded_sample_limit_total",
                     "prometheus_target_scrapes_exceeded_body_size_limit_total"):
            self.assertEqual(sf.metric_value(own, name), 0.0, name)
        # Every sample line of /metrics became a sample of the scrape.
        lines = len(sf.parse_metrics(SERVER.metrics_text()))
        self.assertEqual(PROM.value(f'scrape_samples_scraped{{job="{JOB}"}}'), lines)
        self.assertEqual(PROM.value(f'scrape_samples_post_metric_relabeling{{job="{JOB}"}}'), lines)

    def test_token_counters_are_exact(self):
        self.assertEqual(PROM.value(f'vllm:generation_tokens_total{{model_name="{NAME}"}}'),
                         SENT.generation_tokens)
        self.assertEqual(PROM.value(f'vllm:prompt_tokens_total{{model_name="{NAME}"}}'),
                         SENT.prompt_tokens)
        # The per-completion and per-request histograms hold the same sums.
        self.assertEqual(PROM.value(f"vllm:request_generation_tokens_sum{{{SEL}}}"), SENT.generation_tokens)
        self.assertEqual(PROM.value(f"vllm:request_generation_tokens_count{{{SEL}}}"), SENT.completions)
        self.assertEqual(PROM.value(f"vllm:request_prompt_tokens_sum{{{SEL}}}"), SENT.prompt_tokens)
        self.assertEqual(PROM.value(f"vllm:request_params_max_tokens_sum{{{SEL}}}"), SENT.max_tokens)
        self.assertEqual(PROM.value(f"vllm:request_params_n_sum{{{SEL}}}"), SENT.completions)

    def test_request_success_by_finished_reason(self):
        got = PROM.by_label(f"sum by (finished_reason) (vllm:request_success_total{{{SEL}}})",
                            "finished_reason")
        self.assertEqual(got, {"stop": SENT.reasons["stop"], "length": SENT.reasons["length"],
                               "abort": 0.0})
        self.assertEqual(SENT.reasons, {"stop": 2, "length": 5})

    def test_idle_gauges(self):
        self.assertEqual(PROM.value(f"vllm:num_requests_running{{{SEL}}}"), 0.0)
        self.assertEqual(PROM.value(f"vllm:num_requests_waiting{{{SEL}}}"), 0.0)
        usage = PROM.value(f"vllm:kv_cache_usage_perc{{{SEL}}}")
        self.assertTrue(0.0 <= usage <= 1.0, usage)
        info = PROM.query(f"vllm:cache_config_info{{{SEL}}}")
        self.assertEqual(len(info), 1, info)
        self.assertEqual(float(info[0]["value"][1]), 1.0)
        self.assertEqual(info[0]["metric"]["block_size"], "16")

    def test_e2e_latency_median_from_rate(self):
        n = PROM.value(f"vllm:e2e_request_latency_seconds_count{{{SEL}}}")
        self.assertEqual(n, SENT.completions)
        q = PROM.value("histogram_quantile(0.5, sum by (le) "
                       f"(rate(vllm:e2e_request_latency_seconds_bucket{{{SEL}}}[1m])))")
        self.assertIsNotNone(q, "histogram_quantile over rate() gave no series")
        self.assertTrue(math.isfinite(q) and q > 0, f"median e2e latency {q}")
        # The window's observations are phase B's requests, each at most its client-side time:
        # the median lies at or below the first bucket bound above the slowest of them.
        bounds = bucket_bounds(f"vllm:e2e_request_latency_seconds_bucket{{{SEL}}}")
        self.assertEqual(bounds[-1], math.inf)
        limit = min(b for b in bounds if b >= max(SENT.latency))
        self.assertLessEqual(q, limit, f"client-side latencies {SENT.latency}, bounds {bounds}")
        # All completions: a positive sum, below the set-up's time (the requests ran one by one).
        total = PROM.value(f"vllm:e2e_request_latency_seconds_sum{{{SEL}}}")
        self.assertGreater(total, 0.0)
        self.assertLess(total, SETUP_SECONDS)

    def test_generation_tokens_median_from_buckets(self):
        # histogram_quantile over the cumulative counters themselves: the median completion's
        # length lies in the bucket that holds the true median.
        q = PROM.value(f"histogram_quantile(0.5, sum by (le) (vllm:request_generation_tokens_bucket{{{SEL}}}))")
        bounds = bucket_bounds(f"vllm:request_generation_tokens_bucket{{{SEL}}}")
        median = sorted(SENT.generated)[(len(SENT.generated) - 1) // 2]
        upper = min(b for b in bounds if b >= median)
        lower = max([0.0] + [b for b in bounds if b < median])
        self.assertTrue(lower < q <= upper, f"median {q}, expected in ({lower}, {upper}] "
                                            f"(completions of {SENT.generated} tokens)")
        # Each bucket counts the completions at or below its bound.
        got = {float(r["metric"]["le"]): float(r["value"][1]) for r in
               PROM.query(f"vllm:request_generation_tokens_bucket{{{SEL}}}")}
        want = {b: float(sum(1 for g in SENT.generated if g <= b)) for b in got}
        self.assertEqual(got, want)

    def test_metadata_types(self):
        # The types Prometheus read from the # TYPE lines of the scrape.
        meta = {m["metric"]: m["type"] for m in
                PROM.get("/api/v1/targets/metadata", {"match_target": f'{{job="{JOB}"}}'})}
        for name, kind in (("vllm:num_requests_running", "gauge"), ("vllm:kv_cache_usage_perc", "gauge"),
                           ("vllm:cache_config_info", "gauge"),
                           ("vllm:e2e_request_latency_seconds", "histogram"),
                           ("vllm:time_to_first_token_seconds", "histogram"),
                           ("vllm:iteration_tokens_total", "histogram")):
            self.assertEqual(meta.get(name), kind, name)
        untyped = sorted(n for n, k in meta.items() if n.startswith(("vllm:", "tessera:")) and k not in
                         ("gauge", "counter", "histogram"))
        self.assertEqual(untyped, [])

    def test_promtool_finds_only_vllms_own_naming(self):
        # promtool's lint of the exposition: a parse error fails; its only findings are the
        # names vLLM itself exports (colons in vllm:* / tessera:*, and vLLM's histogram named
        # vllm:iteration_tokens_total).
        promtool = shutil.which("promtool") or os.path.join(os.path.dirname(PROM.binary), "promtool")
        if not os.path.exists(promtool):
            self.skipTest("promtool is not installed")
        done = subprocess.run([promtool, "check", "metrics"], input=SERVER.metrics_text().encode(),
                              capture_output=True, timeout=60)
        report = (done.stdout + done.stderr).decode()
        self.assertIn(done.returncode, (0, 3), report)  # 3: lint findings, 1: unreadable
        unexpected = [line for line in report.splitlines() if line.strip()
                      and not line.endswith("metric names should not contain ':'")
                      and line != 'vllm:iteration_tokens_total non-counter metrics should not have "_total" suffix']
        self.assertEqual(unexpected, [], report)

    def test_counter_metadata_under_the_sample_name(self):
        # vLLM's exposition (prometheus_client) writes `# TYPE vllm:generation_tokens_total
        # counter` before `vllm:generation_tokens_total{...}`, so Prometheus files the counter's
        # type under the series name that queries use.
        for name in ("vllm:generation_tokens_total", "vllm:prompt_tokens_total",
                     "vllm:request_success_total"):
            meta = PROM.get("/api/v1/targets/metadata",
                            {"match_target": f'{{job="{JOB}"}}', "metric": name})
            self.assertEqual([m["type"] for m in meta], ["counter"], name)


if __name__ == "__main__":
    preflight()
    sf.run_tests()
