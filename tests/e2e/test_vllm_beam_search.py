"""vLLM's `use_beam_search` (a request extra; `n` is the beam width) in `tessera serve`, read
through the official `openai` Python client (the vLLM extras' suite, test_vllm_extras.py, in a
file of its own):

- /v1/completions answers n choices per prompt, best first: the same sequences, text and
  finish reasons as the offline engine's beam search (`tessera generate --use-beam-search`,
  LLM::beam_search), every token's logprob the one the model gives that token after the
  choice's tokens before it, the same answer twice, and a best sequence at least as likely as
  the greedy one (beams of one length); n=1 is greedy.
- length_penalty ranks the choices by cum_logprob / len^length_penalty, len the prompt and the
  choice without a final EOS (vLLM's get_beam_search_score); it changes which comes first.
  include_stop_str_in_output keeps the EOS token in token_ids (never in the text).
- /v1/chat/completions: the same, streamed as vLLM streams it (each choice's role, then its
  whole text with its finish_reason in one chunk, then usage).
- vLLM's 400s: streaming on /v1/completions ("Streaming is not currently supported with beam
  search"), a width whose 2 * n logprobs pass --max-logprobs ("Requested sample logprobs of
  22, which is greater than max allowed: 20"); where vLLM takes the request (n > 1 at
  temperature 0, a seed), so does Tessera.
- A client that leaves mid-search ends it: no step runs after, the request is no longer in
  progress (GET /load), /health answers throughout, and the running and waiting gauges are
  back to 0.

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_vllm_beam_search.py [-k PATTERN]
Exit code 77: skipped (no binary with `serve`, no model, no `openai` package).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_fixture as sf  # noqa: E402

SERVER: sf.Server | None = None
CLIENT = None
NAME = sf.SERVED_MODEL_NAME
PROMPTS = ["The capital of France is", "My favourite food is"]
EOS = 2  # SmolLM2's <|im_end|>, the tokenizer's EOS


def setUpModule():
    global SERVER, CLIENT
    binary, model = sf.preflight(need_openai=True)
    import openai
    SERVER = sf.Server(binary, model, ["--enable-server-load-tracking"], name="beam_search")
    CLIENT = openai.OpenAI(base_url=SERVER.base_url + "/v1", api_key="unused", max_retries=0, timeout=300)


def tearDownModule():
    sf.stop_module_server(SERVER)


def beam(prompt, n: int, max_tokens: int, **extra):
    return CLIENT.completions.create(model=NAME, prompt=prompt, n=n, max_tokens=max_tokens, temperature=0,
                                     logprobs=1, extra_body={"use_beam_search": True, "return_token_ids": True,
                                                             **extra})


def tokens(choice) -> list[int]:
    return choice.model_extra["token_ids"]


def score(prompt_len: int, choice, length_penalty: float) -> float:
    """vLLM's get_beam_search_score of a choice with include_stop_str_in_output (EOS shown)."""
    n = prompt_len + len(tokens(choice)) - (1 if choice.finish_reason == "stop" else 0)
    return sum(choice.logprobs.token_logprobs) / max(n, 1) ** length_penalty


def error_of(route: str, body: dict) -> tuple[int, str]:
    status, payload, raw = SERVER.json_request("POST", route, dict(body, model=NAME))
    return status, (payload or {}).get("error", {}).get("message", raw.decode(errors="replace"))


def success_total() -> float:
    return sf.metric_value(SERVER.metrics_text(), "vllm:request_success_total") or 0.0


def server_load() -> int:
    """The completion and chat requests in progress (GET /load, --enable-server-load-tracking)."""
    status, body, raw = SERVER.json_request("GET", "/load")
    assert status == 200, (status, raw)
    return body["server_load"]


class CompletionBeamSearchTest(unittest.TestCase):

    def test_same_sequences_as_the_offline_engine(self):
        resp = beam(PROMPTS, 3, 8)
        self.assertEqual(len(resp.choices), 6)
        offline = sf.cli_generate(SERVER.args[0], SERVER.args[2], PROMPTS, 8, "--use-beam-search", "-n", "3")
        for i, row in enumerate(offline):
            for k, want in enumerate(row["outputs"]):
                got = resp.choices[i * 3 + k]
                self.assertEqual(got.index, i * 3 + k)
                self.assertEqual(got.text, want["text"], f"prompt {i} beam {k}")
                self.assertEqual(got.finish_reason, want["finish_reason"])
                # Offline keeps the EOS token; the server shows it only when asked (vLLM).
                ids = want["token_ids"][:-1] if want["finish_reason"] == "stop" else want["token_ids"]
                self.assertEqual(tokens(got), ids)
                self.assertEqual(got.model_extra["prompt_token_ids"], row["prompt_token_ids"])
                if got.finish_reason == "stop":
                    self.assertEqual(got.stop_reason, EOS)
                else:
                    self.assertAlmostEqual(sum(got.logprobs.token_logprobs), want["cumulative_logprob"], places=4)
        # At least one beam of these ends early with EOS: both ends are covered.
        self.assertIn("stop", [c.finish_reason for c in resp.choices])
        again = beam(PROMPTS, 3, 8)
        self.assertEqual([c.text for c in again.choices], [c.text for c in resp.choices])
        self.assertEqual(resp.usage.completion_tokens, sum(len(tokens(c)) for c in resp.choices))
        self.assertEqual(resp.usage.prompt_tokens, sum(len(resp.choices[i * 3].model_extra["prompt_token_ids"])
                                                       for i in range(2)))

    def test_choices_are_what_the_model_scores(self):
        resp = beam(PROMPTS[0], 3, 8, include_stop_str_in_output=True)
        for c in resp.choices:
            prompt_ids = c.model_extra["prompt_token_ids"]
            # The choice as a prompt: the model's logprob of each of its tokens.
            check = CLIENT.completions.create(model=NAME, prompt=prompt_ids + tokens(c), echo=True, logprobs=0,
                                              max_tokens=1, temperature=0)
            want = check.choices[0].logprobs.token_logprobs[len(prompt_ids):len(prompt_ids) + len(tokens(c))]
            for a, b in zip(c.logprobs.token_logprobs, want):
                self.assertAlmostEqual(a, b, delta=2e-3)
            # The EOS token is never text.
            self.assertEqual(c.text, sf.cli_detokenize(SERVER.args[0], SERVER.args[2], [t for t in tokens(c) if t != EOS]))

    def test_best_beam_beats_greedy_and_width_one_is_greedy(self):
        prompt = "Once upon a time"
        greedy = CLIENT.completions.create(model=NAME, prompt=prompt, max_tokens=10, temperature=0, logprobs=1,
                                           extra_body={"ignore_eos": True})
        greedy_lp = sum(greedy.choices[0].logprobs.token_logprobs)
        resp = beam(prompt, 4, 10, ignore_eos=True)
        cums = [sum(c.logprobs.token_logprobs) for c in resp.choices]
        self.assertEqual([len(tokens(c)) for c in resp.choices], [10] * 4)
        self.assertEqual(cums, sorted(cums, reverse=True))  # one length: ranked by cum_logprob
        self.assertGreaterEqual(cums[0], greedy_lp - 1e-4)
        self.assertEqual(len({c.text for c in resp.choices}), 4)
        one = beam(prompt, 1, 10, ignore_eos=True)
        self.assertEqual(one.choices[0].text, greedy.choices[0].text)

    def test_length_penalty_ranks_the_choices(self):
        prompt_len = len(beam(PROMPTS[0], 1, 1).choices[0].model_extra["prompt_token_ids"])
        firsts = {}
        for lp in (0.0, 1.0, 4.0):
            resp = beam(PROMPTS[0], 3, 8, include_stop_str_in_output=True, length_penalty=lp)
            scores = [score(prompt_len, c, lp) for c in resp.choices]
            self.assertEqual(scores, sorted(scores, reverse=True), f"length_penalty {lp}")
            for c in resp.choices:
                if c.finish_reason == "stop":
                    self.assertEqual(tokens(c)[-1], EOS)  # include_stop_str_in_output
            firsts[lp] = resp.choices[0]
        # Without a penalty the short EOS-ended beam (higher cum_logprob) comes first; a steep one
        # puts a long one ahead.
        self.assertEqual(firsts[0.0].finish_reason, "stop")
        self.assertEqual(firsts[4.0].finish_reason, "length")

    def test_vllm_errors_and_what_vllm_accepts(self):
        body = {"prompt": "Hi", "max_tokens": 4, "use_beam_search": True}
        self.assertEqual(error_of("/v1/completions", dict(body, stream=True)),
                         (400, "Streaming is not currently supported with beam search"))
        chat_body = {k: v for k, v in body.items() if k != "prompt"}
        chat_body["messages"] = [{"role": "user", "content": "Hi"}]
        for route, b in (("/v1/completions", body), ("/v1/chat/completions", chat_body)):
            status, message = error_of(route, dict(b, n=11))
            self.assertEqual((status, message), (400, "Requested sample logprobs of 22, which is greater than max "
                                                      "allowed: 20"), route)
        self.assertEqual(error_of("/v1/completions", dict(body, length_penalty="long"))[0], 400)
        self.assertEqual(error_of("/v1/completions", dict(body, echo=True, logprobs=1))[0], 400)
        # Greedy sampling refuses n > 1; beam search takes it (and ignores a seed), as vLLM.
        self.assertEqual(error_of("/v1/completions", {"prompt": "Hi", "max_tokens": 4, "n": 3, "temperature": 0}),
                         (400, "n must be 1 when using greedy sampling, got 3."))
        a = beam("Hi", 3, 4, seed=1)
        b = beam("Hi", 3, 4, seed=2)
        self.assertEqual([c.text for c in a.choices], [c.text for c in b.choices])


class ChatBeamSearchTest(unittest.TestCase):
    MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]

    def chat(self, **extra):
        return CLIENT.chat.completions.create(model=NAME, messages=self.MESSAGES, n=3, max_tokens=12, temperature=0,
                                              logprobs=True, top_logprobs=2,
                                              extra_body={"use_beam_search": True, **extra})

    def test_choices_best_first_and_streamed_as_vllm(self):
        # With the EOS token shown, each choice's logprobs give its score.
        shown = self.chat(include_stop_str_in_output=True)
        self.assertEqual([c.index for c in shown.choices], [0, 1, 2])
        scores = []
        for c in shown.choices:
            self.assertIn(c.finish_reason, ("stop", "length"))
            entries = c.logprobs.content
            self.assertLessEqual(max(len(e.top_logprobs) for e in entries), 2)
            text_entries = entries[:-1] if c.finish_reason == "stop" else entries
            self.assertEqual("".join(e.token for e in text_entries), c.message.content)
            scores.append(sum(e.logprob for e in entries) / (shown.usage.prompt_tokens + len(text_entries)))
        self.assertEqual(scores, sorted(scores, reverse=True))
        resp = self.chat()
        self.assertEqual([c.message.content for c in resp.choices], [c.message.content for c in shown.choices])
        self.assertEqual(len({c.message.content for c in resp.choices}), 3)
        self.assertEqual(resp.usage.completion_tokens, shown.usage.completion_tokens -
                         sum(c.finish_reason == "stop" for c in shown.choices))
        # Streamed: each choice's role, then each choice's whole answer in one chunk.
        chunks = list(CLIENT.chat.completions.create(
            model=NAME, messages=self.MESSAGES, n=3, max_tokens=12, temperature=0, stream=True,
            stream_options={"include_usage": True}, extra_body={"use_beam_search": True}))
        roles = [ch.choices[0].index for ch in chunks[:3]]
        self.assertEqual(roles, [0, 1, 2])
        self.assertTrue(all(ch.choices[0].delta.role == "assistant" for ch in chunks[:3]))
        answers = chunks[3:6]
        self.assertEqual([(ch.choices[0].index, ch.choices[0].delta.content, ch.choices[0].finish_reason)
                          for ch in answers],
                         [(c.index, c.message.content, c.finish_reason) for c in resp.choices])
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(chunks[-1].usage.completion_tokens, resp.usage.completion_tokens)
        self.assertEqual(len(chunks), 7)


class DisconnectTest(unittest.TestCase):

    def test_client_leaving_ends_the_search(self):
        body = json.dumps({"model": NAME, "prompt": "Tell me a long story.", "max_tokens": 400, "n": 4,
                           "use_beam_search": True, "temperature": 0, "ignore_eos": True}).encode()
        before = success_total()
        sock = socket.create_connection((SERVER.host, SERVER.port), timeout=30)
        try:
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body) + body)
            # Each step is one request per beam: the search is under way once steps finish.
            self.assertTrue(sf.wait_for(lambda: success_total() >= before + 8, 60), "the search never started")
            t0 = time.monotonic()
            self.assertEqual(SERVER.request("GET", "/health")[0], 200)
            self.assertLess(time.monotonic() - t0, 2.0, "/health waited on the search")
        finally:
            sock.close()

        def settled():
            a = success_total()
            time.sleep(1.5)
            text = SERVER.metrics_text()
            return (a == success_total() and sf.metric_value(text, "vllm:num_requests_running") == 0
                    and sf.metric_value(text, "vllm:num_requests_waiting") == 0)
        self.assertTrue(sf.wait_for(settled, 20), "steps went on after the client left")
        # Ended, not stalled: the handler is gone.
        self.assertTrue(sf.wait_for(lambda: server_load() == 0, 5), "the search's request is still in progress")
        # 400 steps of 4 beams would be 1600 requests.
        self.assertLess(success_total() - before, 400)
        self.assertEqual(SERVER.request("GET", "/health")[0], 200)
        self.assertEqual(len(beam("Hi", 2, 2).choices), 2)


if __name__ == "__main__":
    sf.run_tests()
