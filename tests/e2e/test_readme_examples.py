#!/usr/bin/env python3
"""Runs README.md's curl examples as written against `tessera serve` on the default model.

The examples name port 8000; the test serves on a free port and points them there. Each
example must exit 0 and answer what its route promises: JSON without an error, an SSE
stream that ends with [DONE], or Prometheus text. Exit 77 (skip) without the model, the
binary or curl.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

SOURCE = os.environ.get("TESSERA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("TESSERA_BIN", os.path.join(SOURCE, "build", "bin", "tessera"))
MODEL = os.environ.get("TESSERA_DEFAULT_MODEL", "")


def readme_curl_commands():
    lines = open(os.path.join(SOURCE, "README.md"), encoding="utf-8").read().splitlines()
    commands, current = [], None
    for line in lines:
        if current is None and line.startswith("curl "):
            current = line
        elif current is not None:
            current += "\n" + line
        if current is not None and not current.endswith("\\"):
            commands.append(current)
            current = None
    return commands


def start_server():
    proc = subprocess.Popen([BIN, "serve", MODEL, "--port", "0", "--served-model-name", "SmolLM2-135M-Instruct",
                             "--kv-cache-memory", str(256 << 20), "--max-model-len", "2048"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    port = []
    ready = threading.Event()

    def drain():
        for line in proc.stderr:
            m = re.search(r"listening on http://[\d.]+:(\d+)", line)
            if m and not port:
                port.append(int(m.group(1)))
                ready.set()
    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(120):
        proc.kill()
        raise SystemExit("server did not start")
    return proc, port[0]


def check_output(command, out):
    if "/metrics" in command:
        assert "vllm:generation_tokens_total" in out, out[:500]
    elif '"stream": true' in command:
        events = [l[len("data: "):] for l in out.splitlines() if l.startswith("data: ")]
        assert events and events[-1] == "[DONE]", out[-500:]
        text = "".join((json.loads(e)["choices"] or [{}])[0].get("delta", {}).get("content") or "" for e in events[:-1])
        assert text.strip(), "the stream carried no text"
    else:
        body = json.loads(out)
        assert "error" not in body, body
        if "/completions" in command:
            choice = body["choices"][0]
            text = choice.get("text", choice.get("message", {}).get("content"))
            assert text and text.strip(), body
            if "capital of France" in command and '"temperature": 0' in command:  # sampled answers vary
                assert "Paris" in text, text


def main():
    if not MODEL or not os.path.exists(MODEL) or not os.path.exists(BIN) or shutil.which("curl") is None:
        print("skip: needs the default model, the tessera binary and curl")
        return 77
    commands = readme_curl_commands()
    assert len(commands) >= 5, commands
    proc, port = start_server()
    failures = 0
    try:
        for command in commands:
            runnable = command.replace("localhost:8000", f"127.0.0.1:{port}")
            r = subprocess.run(["bash", "-c", runnable], capture_output=True, text=True, timeout=120)
            try:
                assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
                check_output(command, r.stdout)
                print(f"ok   {command.splitlines()[0]}")
            except (AssertionError, ValueError, KeyError) as e:
                failures += 1
                print(f"FAIL {command}\n     {e}")
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
        if code != 0:
            print(f"FAIL the server exited {code} on SIGTERM")
            failures += 1
    print(f"{len(commands) - failures}/{len(commands)} README examples passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
