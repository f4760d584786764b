"""use_tqdm's progress bar over finished requests, and Ctrl-C (SIGINT) during generate and
beam_search: the batch aborts, KeyboardInterrupt propagates and the LLM generates again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tessera import SamplingParams

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time", "Hello"]
# Different lengths: the requests finish at different steps.
PARAMS = [SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True) for n in (1, 4, 12, 24)]


class RecordingBar:
    """A tqdm-like class (vLLM's use_tqdm may be one) that records what it is told."""

    instances: list["RecordingBar"] = []

    def __init__(self, total, desc=None, **kwargs):
        self.total, self.desc, self.n, self.updates, self.closed = total, desc, 0, [], False
        RecordingBar.instances.append(self)

    def update(self, k):
        self.n += k
        self.updates.append(self.n)

    def close(self):
        self.closed = True


def test_the_bar_counts_finished_requests(llm):
    RecordingBar.instances.clear()
    outs = llm.generate(PROMPTS, PARAMS, use_tqdm=RecordingBar)
    (bar,) = RecordingBar.instances
    assert bar.total == len(PROMPTS) and bar.desc == "Processed prompts" and bar.closed
    assert bar.n == len(PROMPTS)
    assert bar.updates == sorted(bar.updates) and len(bar.updates) >= 3  # as requests finish, not at the end
    assert [len(o.outputs[0].token_ids) for o in outs] == [1, 4, 12, 24]


def test_tqdm_draws_on_stderr(llm, capsys):
    pytest.importorskip("tqdm")
    llm.generate(PROMPTS, PARAMS, use_tqdm=True)
    err = capsys.readouterr().err
    assert "Processed prompts" in err and f"{len(PROMPTS)}/{len(PROMPTS)}" in err
    llm.generate(PROMPTS, PARAMS, use_tqdm=False)
    assert capsys.readouterr().err == ""


def test_without_tqdm_there_is_no_bar_and_no_error(llm, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    outs = llm.generate(PROMPTS, PARAMS, use_tqdm=True)
    assert [len(o.outputs[0].token_ids) for o in outs] == [1, 4, 12, 24]
    assert "Processed prompts" not in capsys.readouterr().err


def test_an_exception_in_the_bar_aborts_the_batch_and_the_llm_goes_on(llm):
    class FailingBar(RecordingBar):
        def update(self, k):
            raise RuntimeError("bar failed")

    long = SamplingParams(temperature=0.0, max_tokens=200, ignore_eos=True)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="bar failed"):
        llm.generate(PROMPTS[:1] + PROMPTS, [PARAMS[0]] + [long] * len(PROMPTS), use_tqdm=FailingBar)
    aborted_after = time.monotonic() - start
    start = time.monotonic()
    again = llm.generate(PROMPTS, PARAMS, use_tqdm=False)
    assert [len(o.outputs[0].token_ids) for o in again] == [1, 4, 12, 24]
    full = llm.generate(PROMPTS, [long] * len(PROMPTS), use_tqdm=False)
    assert aborted_after < (time.monotonic() - start) / 2  # it stopped well before the long requests ended
    assert all(len(o.outputs[0].token_ids) == 200 for o in full)


SCRIPT = textwrap.dedent("""
    import json, sys, time
    from tessera import LLM, SamplingParams
    llm = LLM(model=sys.argv[1], device="cpu", max_model_len=1024, max_num_seqs=16, seed=0)
    print("GENERATING", flush=True)
    start = time.monotonic()
    try:
        llm.generate(["Once upon a time"] * 8, SamplingParams(temperature=0.0, max_tokens=1000, ignore_eos=True))
        print("FINISHED", flush=True)
    except KeyboardInterrupt:
        print("INTERRUPTED", time.monotonic() - start, flush=True)
    out = llm.generate(["The capital of France is"], SamplingParams(temperature=0.0, max_tokens=12))[0]
    print("AGAIN", json.dumps(out.outputs[0].token_ids), flush=True)
    llm.generate(["Once upon a time"] * 8, SamplingParams(temperature=0.0, max_tokens=1000, ignore_eos=True))
    print("NOT REACHED", flush=True)
""")


BEAM_SCRIPT = textwrap.dedent("""
    import sys, time
    from tessera import LLM, BeamSearchParams
    llm = LLM(model=sys.argv[1], device="cpu", max_model_len=1024, max_num_seqs=64, seed=0)
    print("SEARCHING", flush=True)
    start = time.monotonic()
    try:
        llm.beam_search(["Once upon a time"] * 4, BeamSearchParams(beam_width=8, max_tokens=900, ignore_eos=True))
        print("FINISHED", flush=True)
    except KeyboardInterrupt:
        print("INTERRUPTED", time.monotonic() - start, flush=True)
    out = llm.beam_search(["The capital of France is"], BeamSearchParams(beam_width=2, max_tokens=4))[0]
    print("AGAIN", len(out.sequences), flush=True)
""")


def test_ctrl_c_aborts_beam_search_between_steps(model_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen([sys.executable, "-c", BEAM_SCRIPT, model_path], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "SEARCHING"
        time.sleep(3)  # well into the search (4 prompts x 8 beams x 900 steps)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        line = proc.stdout.readline().split()
        assert line[:1] == ["INTERRUPTED"], proc.stderr.read()
        assert time.monotonic() - sent < 10
        assert proc.stdout.readline().split() == ["AGAIN", "2"]
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ctrl_c_aborts_generate_and_the_llm_generates_again(llm, model_path, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, model_path], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "GENERATING"
        time.sleep(3)  # well into the batch, far from its end (8 x 1000 tokens)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        line = proc.stdout.readline().split()
        assert line[:1] == ["INTERRUPTED"], proc.stderr.read()
        assert time.monotonic() - sent < 10
        again = proc.stdout.readline().split(maxsplit=1)
        assert again[0] == "AGAIN"
        ref = llm.generate(["The capital of France is"], SamplingParams(temperature=0.0, max_tokens=12),
                           use_tqdm=False)[0]
        assert json.loads(again[1]) == ref.outputs[0].token_ids
        # Uncaught, the interrupt ends the program as Python's KeyboardInterrupt does.
        time.sleep(3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert "NOT REACHED" not in out
        assert "KeyboardInterrupt" in err
        assert proc.returncode != 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
