#!/usr/bin/env python3
"""`tessera serve` under hostile requests: does anyone else notice?

  latency  For each hostile request of the suite (a request chat template rendering
           megabytes, an 8 MB prompt to tokenize, JSON nested 120,000 deep inside a string,
           prompt_logprobs amplification), sent again and again for --seconds: /health
           polled every 50 ms (p50/p99/max latency) and a concurrent greedy stream's
           inter-token latency, against the same stream with no hostile request.
  soak     --minutes of 64 normal streaming clients (greedy; some hang up at random) and
           one hostile request per second drawn from the suite: crashes, 5xx answers to
           normal clients, normal outputs that differ from their solo greedy outputs,
           /metrics once idle, and the server's idle RSS after a warm-up of the same mix
           (the start) against its idle RSS at the end.

Starts its own server (SmolLM2-135M-Instruct by default, `--trust-request-chat-template`
so the template case runs, a 16 MiB body limit) and prints the figures.

  python3 bench/serve_under_attack.py latency [--seconds 8]
  python3 bench/serve_under_attack.py soak [--minutes 10]
Environment: TESSERA_BIN, TESSERA_DEFAULT_MODEL (as the e2e tests).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import server_fixture as sf  # noqa: E402

NAME = sf.SERVED_MODEL_NAME


# ---- the hostile suite ---------------------------------------------------------------
def hostile_suite() -> dict[str, tuple[str, bytes]]:
    depth = 120_000
    deep_messages = [{"role": "user", "content": "hi"},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "c1", "type": "function",
                          "function": {"name": "f", "arguments": "[" * depth + "]" * depth}}]}]
    rnd = random.Random(7)
    words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9)))
             for _ in range(5000)]
    eight_mb = " ".join(rnd.choice(words) for _ in range(1_200_000))[:8_000_000]
    suite = {
        # 15 MB of template output, then tokenized as one long word: seconds of CPU.
        "template_15MB": ("/tokenize", {"messages": [{"role": "user", "content": "hi"}],
                                        "chat_template": "{% set s = 'x' * 1000000 %}"
                                                         "{% for i in range(15) %}{{ s }}{% endfor %}"}),
        "tokenize_8MB": ("/tokenize", {"prompt": eight_mb}),
        "tokenize_4MB_word": ("/tokenize", {"prompt": "x" * 4_000_000}),
        "deep_nesting_240KB": ("/v1/chat/completions", {"messages": deep_messages, "max_tokens": 1}),
        "deep_nesting_tokenize": ("/tokenize", {"messages": deep_messages}),
        # Not hostile: the same chat without the tool call, for what its prefill costs the stream.
        "control_chat": ("/v1/chat/completions", {"messages": deep_messages[:1], "max_tokens": 1}),
        "prompt_logprobs_n128": ("/v1/completions", {"prompt": "word " * 1500, "max_tokens": 1, "n": 128,
                                                     "prompt_logprobs": 20}),
        "prompt_logprobs_n4": ("/v1/completions", {"prompt": "word " * 1500, "max_tokens": 1, "n": 4,
                                                   "prompt_logprobs": 20}),
    }
    return {k: (path, json.dumps(body).encode()) for k, (path, body) in suite.items()}


def post(server: sf.Server, path: str, data: bytes, timeout: float = 300.0) -> int:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=timeout)
    try:
        conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def stream_tokens(server: sf.Server, prompt: str, max_tokens: int, stop_after: int | None = None,
                  timeout: float = 600.0) -> tuple[int, str, list[float]]:
    """Greedy streamed completion: (status, text, arrival times of content events). With
    stop_after, hangs up after that many events (a client that leaves)."""
    body = json.dumps({"model": NAME, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "ignore_eos": True, "stream": True}).encode()
    conn = http.client.HTTPConnection(server.host, server.port, timeout=timeout)
    text, times = [], []
    try:
        conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            resp.read()
            return resp.status, "", times
        for raw in resp:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data: {"):
                continue
            event = json.loads(line[6:])
            if "error" in event:
                return 599, "", times
            for choice in event["choices"]:
                text.append(choice["text"])
            times.append(time.monotonic())
            if stop_after is not None and len(times) >= stop_after:
                conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                return 200, "".join(text), times
        return 200, "".join(text), times
    finally:
        conn.close()


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def itl_ms(times: list[float]) -> list[float]:
    return [(b - a) * 1000 for a, b in zip(times, times[1:])]


# ---- latency ----------------------------------------------------------------------------
def run_latency(server: sf.Server, seconds: float) -> None:
    suite = hostile_suite()
    prompt = "Write a long story about a lighthouse keeper."

    def measure(case: str | None) -> dict:
        stop = threading.Event()
        health, statuses, durations = [], [], []

        def poll():
            while not stop.is_set():
                t = time.monotonic()
                status, _, _ = server.request("GET", "/health", timeout=60)
                health.append((time.monotonic() - t) * 1000)
                assert status == 200, status
                time.sleep(0.05)

        def attack():
            path, data = suite[case]
            while not stop.is_set():
                t = time.monotonic()
                statuses.append(post(server, path, data))
                durations.append(time.monotonic() - t)

        threads = [threading.Thread(target=poll)]
        if case:
            threads.append(threading.Thread(target=attack))
        for th in threads:
            th.start()
        time.sleep(0.5)
        deadline = time.monotonic() + seconds
        itls = []
        while time.monotonic() < deadline:
            _, _, times = stream_tokens(server, prompt, 64)
            itls += itl_ms(times)
        stop.set()
        for th in threads:
            th.join()
        return {"health": health, "itl": itls, "statuses": statuses, "durations": durations}

    base = measure(None)
    base_itl = statistics.median(base["itl"])
    print(f"{'case':24} {'requests':>8} {'status':>10} {'req s':>6} {'/health p50':>11} {'p99':>7} {'max':>7}"
          f" {'ITL p50':>8} {'ITL p90':>8} {'x base':>6}")

    def row(name, m):
        st = ",".join(sorted({str(s) for s in m["statuses"]})) or "-"
        dur = f"{statistics.median(m['durations']):.2f}" if m["durations"] else "-"
        itl50 = statistics.median(m["itl"])
        print(f"{name:24} {len(m['statuses']):>8} {st:>10} {dur:>6} {pct(m['health'], 0.5):>9.1f}ms"
              f" {pct(m['health'], 0.99):>5.1f}ms {max(m['health']):>5.1f}ms {itl50:>6.1f}ms"
              f" {pct(m['itl'], 0.9):>6.1f}ms {itl50 / base_itl:>6.2f}")
    row("(none)", base)
    for case in suite:
        row(case, measure(case))


# ---- soak -----------------------------------------------------------------------------
def run_soak(server: sf.Server, minutes: float, clients: int) -> None:
    suite = list(hostile_suite().items())
    prompts = [f"Story {i}: once upon a time, in a land of {w}," for i, w in
               enumerate(["mountains", "rivers", "robots", "dragons", "clocks", "islands", "bakers", "stars"])]
    max_tokens = 48
    # Solo greedy outputs, one request at a time.
    solo = {p: stream_tokens(server, p, max_tokens)[1] for p in prompts}
    stop = threading.Event()
    lock = threading.Lock()
    stats = {"completed": 0, "disconnected": 0, "mismatch": [], "5xx": 0, "other": [], "hostile": {}}
    rng = random.Random(1)

    def normal(seed: int):
        r = random.Random(seed)
        while not stop.is_set():
            p = r.choice(prompts)
            leave = r.random() < 0.1
            try:
                status, text, _ = stream_tokens(server, p, max_tokens, stop_after=r.randint(1, 20) if leave else None)
            except Exception as e:  # noqa: BLE001
                with lock:
                    stats["other"].append(repr(e))
                continue
            with lock:
                if status >= 500:
                    stats["5xx"] += 1
                elif status != 200:
                    stats["other"].append(status)
                elif leave:
                    stats["disconnected"] += 1
                elif text != solo[p]:
                    stats["mismatch"].append((p, text, solo[p]))
                else:
                    stats["completed"] += 1

    in_flight: list[threading.Thread] = []

    def one_hostile(name: str, path: str, data: bytes):
        try:
            outcome = post(server, path, data, timeout=900)
        except Exception as e:  # noqa: BLE001 - every outcome is recorded
            outcome = type(e).__name__
        with lock:
            stats["hostile"].setdefault(name, []).append(outcome)

    def hostile():
        while not stop.is_set():
            name, (path, data) = rng.choice(suite)
            t = time.monotonic()
            th = threading.Thread(target=one_hostile, args=(name, path, data), daemon=True)
            th.start()
            in_flight.append(th)
            stop.wait(max(0.0, 1.0 - (time.monotonic() - t)))

    def run_mix(seconds: float, samples: list[float] | None = None) -> None:
        """The mix for `seconds`, then everything it sent finished and the server idle."""
        stop.clear()
        workers = [threading.Thread(target=normal, args=(i,)) for i in range(clients)]
        for w in workers + [h := threading.Thread(target=hostile)]:
            w.start()
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds and server.alive():
            time.sleep(min(10.0, max(0.0, seconds - (time.monotonic() - t0))))
            if samples is not None:
                samples.append(server.rss_mib())
        stop.set()
        h.join()
        for w in workers:
            w.join(900)
        for th in in_flight:  # hostile requests still queued for the workers
            th.join(900)
        in_flight.clear()
        if server.alive():
            sf.wait_for(lambda: sf.metric_value(server.metrics_text(), "vllm:num_requests_running") == 0, 60)
        time.sleep(12)  # the workers hand freed heap pages back every 5 s

    # RSS is compared idle to idle. The warm-up runs the same mix first: what the first
    # requests make resident once and keep by design (the model's mmapped weight pages, the
    # step buffers at the size the configuration bounds them to) is there before the start.
    rss_fresh = server.rss_mib()
    warmup = min(120.0, minutes * 60 / 5)
    run_mix(warmup)
    rss_start = server.rss_mib()
    for k in ("completed", "disconnected", "5xx"):
        stats[k] = 0
    stats["mismatch"].clear()
    stats["other"].clear()
    stats["hostile"].clear()
    rss_samples: list[float] = []
    run_mix(minutes * 60, rss_samples)
    alive = server.alive()
    idle = {}
    if alive:
        time.sleep(1)
        text = server.metrics_text()
        idle = {k: sf.metric_value(text, k) for k in ("vllm:num_requests_running", "vllm:num_requests_waiting",
                                                       "vllm:kv_cache_usage_perc")}
    rss_end = server.rss_mib() if alive else float("nan")
    print(f"soak: {minutes:g} min, {clients} normal streaming clients (greedy, {max_tokens} tokens, 10% hang up), "
          f"one hostile request per second")
    print(f"server alive: {alive} (crashes: {0 if alive else 1})")
    print(f"normal: {stats['completed']} completed equal to their solo greedy output, {len(stats['mismatch'])} differ, "
          f"{stats['disconnected']} disconnected by design, {stats['5xx']} 5xx, other: {stats['other'][:5]}")
    for p, got, want in stats["mismatch"][:3]:
        print(f"  mismatch {p!r}: {got!r} != {want!r}")
    print("hostile: " + ", ".join(f"{k} {len(v)}x {sorted(set(map(str, v)))}" for k, v in sorted(stats["hostile"].items())))
    print(f"idle /metrics: {idle}")
    print(f"RSS idle: {rss_fresh:.1f} MiB fresh, {rss_start:.1f} MiB after {warmup:.0f} s of the mix (the start), "
          f"{rss_end:.1f} MiB at the end ({(rss_end / rss_start - 1) * 100:+.1f}%); "
          f"max during {max(rss_samples or [rss_end]):.1f} MiB")
    print("RSS each minute (MiB): " + " ".join(f"{v:.0f}" for v in rss_samples[5::6]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["latency", "soak"])
    ap.add_argument("--seconds", type=float, default=8.0, help="latency: seconds per case")
    ap.add_argument("--minutes", type=float, default=10.0, help="soak: minutes of hostile traffic")
    ap.add_argument("--clients", type=int, default=64, help="soak: normal streaming clients")
    ap.add_argument("--server-arg", action="append", default=[], help="extra `tessera serve` argument")
    args = ap.parse_args()
    binary, model = sf.preflight()
    server = sf.Server(binary, model, ["--trust-request-chat-template", "--max-request-body-bytes", str(16 << 20),
                                       "--max-num-seqs", "256", *args.server_arg], name="attack")
    try:
        if args.mode == "latency":
            run_latency(server, args.seconds)
        else:
            run_soak(server, args.minutes, args.clients)
    finally:
        rc = server.stop()
        print(f"SIGTERM: exit status {rc}")


if __name__ == "__main__":
    main()
