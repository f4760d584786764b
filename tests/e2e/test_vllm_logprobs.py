"""vLLM's logprob details in `tessera serve`, read through the official `openai` Python client
and raw JSON (the vLLM extras' suite, test_vllm_extras.py, in a file of its own):

- Order: a completion's `top_logprobs` entry lists the position's own token first (the prompt
  token when echoed, the sampled one after), then the top K by rank, K or K + 1 entries; a
  chat token's `top_logprobs` list starts with the chosen token, K entries; `prompt_logprobs`
  entries start with the prompt token. vLLM's own tests read the first key as the token.
- -1 asks for the whole vocabulary (`logprobs`, `top_logprobs`, `prompt_logprobs`), allowed
  with `--max-logprobs -1`: every token id once, the probabilities summing to 1, the best
  equal to what a top-1 request reports; under the default `--max-logprobs 20` it is vLLM's
  400 naming the vocabulary's size.
- `logprob_token_ids`: each generated position's candidates are the chosen token and the
  listed ones (each once, the chosen first) in place of the top K, with the logprobs of the
  unmasked distribution (a whole-vocabulary request's values, though `allowed_token_ids`
  excludes them), in completions and chat, streamed or not; vLLM's 400s without logprobs,
  with beam search, for ids outside the vocabulary and for more than 128 ids.

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_vllm_logprobs.py [-k PATTERN]
Exit code 77: skipped (no binary with `serve`, no model, no `openai` package).
"""

from __future__ import annotations

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_fixture as sf  # noqa: E402

SERVER: sf.Server | None = None  # --max-logprobs -1
DEFAULT: sf.Server | None = None  # --max-logprobs as vLLM's default (20)
CLIENT = None
NAME = sf.SERVED_MODEL_NAME
MESSAGES = [{"role": "user", "content": "Name a colour."}]


def setUpModule():
    global SERVER, DEFAULT, CLIENT
    binary, model = sf.preflight(need_openai=True)
    import openai
    SERVER = sf.Server(binary, model, ["--max-logprobs", "-1", "--max-response-bytes", str(256 << 20)],
                       name="logprobs_all")
    DEFAULT = sf.Server(binary, model, [], name="logprobs_default")
    CLIENT = openai.OpenAI(base_url=SERVER.base_url + "/v1", api_key="unused", max_retries=0, timeout=300)


def tearDownModule():
    sf.stop_module_server(SERVER)
    sf.stop_module_server(DEFAULT)


def post(server, path, body):
    status, out, raw = server.json_request("POST", path, dict(body, model=NAME))
    assert status == 200, (status, raw[:500])
    return out


class OwnTokenFirstTest(unittest.TestCase):

    def test_completion_echo_and_sampled(self):
        for extra in ({}, {"return_tokens_as_token_ids": True}):
            body = post(SERVER, "/v1/completions", {"prompt": "Say 'Hello, world!'", "echo": True, "max_tokens": 6,
                                                    "temperature": 1, "seed": 3, "logprobs": 1, **extra})
            lp = body["choices"][0]["logprobs"]
            self.assertIsNone(lp["top_logprobs"][0])
            for i in range(1, len(lp["tokens"])):
                top = lp["top_logprobs"][i]
                self.assertEqual(next(iter(top)), lp["tokens"][i], (i, top))
                self.assertEqual(top[lp["tokens"][i]], lp["token_logprobs"][i])
                self.assertIn(len(top), (1, 2), top)

    def test_completion_k_or_k_plus_one(self):
        body = post(SERVER, "/v1/completions", {"prompt": "The weather today", "max_tokens": 8, "temperature": 1.5,
                                                "seed": 11, "logprobs": 3, "return_tokens_as_token_ids": True})
        lp = body["choices"][0]["logprobs"]
        reference = post(SERVER, "/v1/completions", {
            "prompt": "The weather today", "max_tokens": 8, "temperature": 1.5, "seed": 11, "logprobs": 5,
            "return_tokens_as_token_ids": True})["choices"][0]["logprobs"]
        self.assertEqual(lp["tokens"], reference["tokens"])
        for i, (token, top) in enumerate(zip(lp["tokens"], lp["top_logprobs"])):
            self.assertEqual(next(iter(top)), token)
            # The others: the top 3 by rank but the token itself, in rank order.
            ranked = sorted(reference["top_logprobs"][i].items(), key=lambda kv: -kv[1])
            top3 = [t for t, _ in ranked[:3]]
            self.assertEqual([t for t in top if t != token], [t for t in top3 if t != token], i)
            self.assertEqual(len(top), 3 if token in top3 else 4, (i, top))

    def test_chat_chosen_first(self):
        body = post(SERVER, "/v1/chat/completions", {"messages": MESSAGES, "max_tokens": 8, "temperature": 1.5,
                                                     "seed": 5, "logprobs": True, "top_logprobs": 3,
                                                     "return_tokens_as_token_ids": True})
        for entry in body["choices"][0]["logprobs"]["content"]:
            top = entry["top_logprobs"]
            self.assertEqual(len(top), 3)
            self.assertEqual(top[0]["token"], entry["token"])
            self.assertEqual(top[0]["logprob"], entry["logprob"])
            self.assertGreaterEqual(top[1]["logprob"], top[2]["logprob"])

    def test_prompt_logprobs_prompt_token_first(self):
        prompt = [504, 3575, 282, 4649, 314]
        body = post(SERVER, "/v1/completions", {"prompt": prompt, "max_tokens": 1, "prompt_logprobs": 2})
        positions = body["choices"][0]["prompt_logprobs"]
        self.assertIsNone(positions[0])
        for token, position in zip(prompt[1:], positions[1:]):
            self.assertEqual(next(iter(position)), str(token))
            others = [v["rank"] for k, v in position.items() if k != str(token)]
            self.assertEqual(others, sorted(others))


class WholeVocabularyTest(unittest.TestCase):

    def check_distribution(self, ids_and_logprobs, best_logprob):
        ids = [i for i, _ in ids_and_logprobs]
        self.assertEqual(sorted(ids), list(range(len(ids))), "every token of the vocabulary once")
        self.assertGreater(len(ids), 1000)
        total = math.fsum(math.exp(lp) for _, lp in ids_and_logprobs)
        self.assertAlmostEqual(total, 1.0, delta=1e-3)
        self.assertAlmostEqual(max(lp for _, lp in ids_and_logprobs), best_logprob, places=4)
        return len(ids)

    def test_chat_top_logprobs_minus_one(self):
        base = {"messages": MESSAGES, "max_tokens": 1, "temperature": 0, "logprobs": True,
                "return_tokens_as_token_ids": True}
        one = post(SERVER, "/v1/chat/completions", dict(base, top_logprobs=1))
        best = one["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["logprob"]
        body = post(SERVER, "/v1/chat/completions", dict(base, top_logprobs=-1))
        top = body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        vocab = self.check_distribution([(int(t["token"].split(":")[1]), t["logprob"]) for t in top], best)
        # The default server: vLLM's 400, naming the vocabulary's size.
        status, err, raw = DEFAULT.json_request("POST", "/v1/chat/completions", dict(base, model=NAME, top_logprobs=-1))
        self.assertEqual(status, 400, raw[:300])
        self.assertIn(f"Requested sample logprobs of {vocab}, which is greater than max allowed: 20",
                      err["error"]["message"])

    def test_completion_logprobs_and_prompt_logprobs_minus_one(self):
        prompt = [504, 3575, 282]
        body = post(SERVER, "/v1/completions", {"prompt": prompt, "max_tokens": 1, "temperature": 0,
                                                "logprobs": -1, "prompt_logprobs": -1,
                                                "return_tokens_as_token_ids": True})
        choice = body["choices"][0]
        top = choice["logprobs"]["top_logprobs"][0]
        self.assertEqual(next(iter(top)), choice["logprobs"]["tokens"][0])
        vocab = self.check_distribution([(int(k.split(":")[1]), v) for k, v in top.items()],
                                        choice["logprobs"]["token_logprobs"][0])
        for token, position in zip(prompt[1:], choice["prompt_logprobs"][1:]):
            self.assertEqual(len(position), vocab)
            self.assertEqual(next(iter(position)), str(token))
            self.assertEqual(sorted(v["rank"] for v in position.values()), list(range(1, vocab + 1)))
        status, err, raw = DEFAULT.json_request("POST", "/v1/completions",
                                                {"model": NAME, "prompt": prompt, "max_tokens": 1,
                                                 "prompt_logprobs": -1})
        self.assertEqual(status, 400, raw[:300])
        self.assertIn(f"Requested prompt logprobs of {vocab}", err["error"]["message"])

    def test_other_negatives_are_refused(self):
        for body in ({"prompt": "x", "max_tokens": 1, "logprobs": -2},
                     {"prompt": "x", "max_tokens": 1, "prompt_logprobs": -3}):
            status, _, raw = SERVER.json_request("POST", "/v1/completions", dict(body, model=NAME))
            self.assertEqual(status, 400, raw[:300])


class LogprobTokenIdsTest(unittest.TestCase):
    PROMPT = "Hello"

    def whole_distribution(self):
        body = post(SERVER, "/v1/completions", {"prompt": self.PROMPT, "max_tokens": 1, "temperature": 0,
                                                "logprobs": -1, "return_tokens_as_token_ids": True})
        return body["choices"][0]["logprobs"]["top_logprobs"][0]

    def test_completion(self):
        whole = self.whole_distribution()
        for stream in (False, True):
            body = {"prompt": self.PROMPT, "max_tokens": 1, "temperature": 0, "logprobs": 5,
                    "logprob_token_ids": [5000, 42], "allowed_token_ids": [42],
                    "return_tokens_as_token_ids": True}
            if stream:
                chunks = list(CLIENT.completions.create(model=NAME, stream=True, **{
                    k: v for k, v in body.items() if k in ("prompt", "max_tokens", "temperature", "logprobs")},
                    extra_body={k: body[k] for k in ("logprob_token_ids", "allowed_token_ids",
                                                     "return_tokens_as_token_ids")}))
                tops = [t for c in chunks for ch in c.choices if ch.logprobs for t in ch.logprobs.top_logprobs]
                top = tops[0]
            else:
                top = post(SERVER, "/v1/completions", body)["choices"][0]["logprobs"]["top_logprobs"][0]
            self.assertEqual(list(top), ["token_id:42", "token_id:5000"], stream)
            for key, value in top.items():
                self.assertAlmostEqual(value, whole[key], places=4)

    def test_chat(self):
        whole = self.whole_distribution()  # the chat's prompt differs: only finiteness and shape here
        self.assertTrue(all(math.isfinite(v) for v in whole.values()))
        messages = [{"role": "user", "content": self.PROMPT}]
        for top_logprobs in (5, 3, None):
            body = {"messages": messages, "max_tokens": 1, "temperature": 0, "logprobs": True,
                    "logprob_token_ids": [100, 1000, 5000], "allowed_token_ids": [42],
                    "return_tokens_as_token_ids": True}
            if top_logprobs is not None:
                body["top_logprobs"] = top_logprobs
            content = post(SERVER, "/v1/chat/completions", body)["choices"][0]["logprobs"]["content"]
            names = [t["token"] for t in content[0]["top_logprobs"]]
            self.assertEqual(names, ["token_id:42", "token_id:100", "token_id:1000", "token_id:5000"], top_logprobs)
            self.assertTrue(all(math.isfinite(t["logprob"]) for t in content[0]["top_logprobs"]))
        chunks = list(CLIENT.chat.completions.create(
            model=NAME, messages=messages, max_tokens=1, temperature=0, logprobs=True, stream=True,
            extra_body={"logprob_token_ids": [5000], "allowed_token_ids": [42], "return_tokens_as_token_ids": True}))
        entries = [e for c in chunks for ch in c.choices if ch.logprobs for e in ch.logprobs.content]
        self.assertEqual({t.token for t in entries[0].top_logprobs}, {"token_id:42", "token_id:5000"})

    def test_vllms_400s(self):
        cases = (
            ("/v1/completions", {"prompt": "x", "max_tokens": 1, "logprob_token_ids": [5]},
             "when using `logprob_token_ids`, `logprobs` must be set."),
            ("/v1/chat/completions", {"messages": MESSAGES, "max_tokens": 1, "logprob_token_ids": [5]},
             "when using `logprob_token_ids`, `logprobs` must be set to true."),
            ("/v1/completions", {"prompt": "x", "max_tokens": 1, "logprobs": 1, "logprob_token_ids": [5],
                                 "use_beam_search": True}, "`logprob_token_ids` is not supported with beam search."),
            ("/v1/completions", {"prompt": "x", "max_tokens": 1, "logprobs": 1, "logprob_token_ids": [10 ** 6]},
             "out of vocabulary"),
            ("/v1/completions", {"prompt": "x", "max_tokens": 1, "logprobs": 1,
                                 "logprob_token_ids": list(range(129))}, "greater than max allowed: 128"),
        )
        for path, body, says in cases:
            status, err, raw = SERVER.json_request("POST", path, dict(body, model=NAME))
            self.assertEqual(status, 400, (body, raw[:300]))
            self.assertIn(says, err["error"]["message"])
            if says != "out of vocabulary":  # the engine's check names the field in its text
                self.assertEqual(err["error"]["param"], "logprob_token_ids")


if __name__ == "__main__":
    sf.preflight(need_openai=True)
    sf.run_tests()
