"""`tessera serve`'s error answers, API key, overload and shutdown, driven by the official
`openai` Python client and raw HTTP (docs/server.md); test_openai_server.py covers the
successful requests.

One server for the module (SmolLM2-135M-Instruct Q4_1, CPU); a second one with `--api-key`
for the authentication tests. Greedy outputs are compared with the offline CLI
(`tessera generate --json`), never with hard-coded strings (except "Paris", which this model
answers to "What is the capital of France?").

Run: TESSERA_BIN=build/bin/tessera python3 tests/e2e/test_openai_errors.py [-k PATTERN]
Exit code 77: skipped (no binary with `serve`, no model, no `openai` package).
"""

from __future__ import annotations

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_fixture as sf  # noqa: E402

openai = None  # imported after the preflight check
BIN = MODEL = None
SERVER: sf.Server | None = None
CLIENT = None
NAME = sf.SERVED_MODEL_NAME

PROMPT = "The quick brown fox"
CAPITAL_Q = [{"role": "user", "content": "What is the capital of France?"}]


def setUpModule():
    global SERVER, CLIENT, BIN, MODEL, openai
    BIN, MODEL = sf.preflight(need_openai=True)
    import openai as _openai
    openai = _openai
    SERVER = sf.Server(BIN, MODEL, name="openai-errors")
    CLIENT = openai.OpenAI(base_url=SERVER.base_url + "/v1", api_key="unused", max_retries=0,
                           timeout=120)


def tearDownModule():
    sf.stop_module_server(SERVER)


# ---- helpers -------------------------------------------------------------------------
def cli_generate(prompts: list[str], max_tokens: int, *extra: str) -> list[dict]:
    return sf.cli_generate(BIN, MODEL, prompts, max_tokens, *extra)


def tokenize(prompt: str) -> dict:
    status, body, raw = SERVER.json_request("POST", "/tokenize", {"model": NAME, "prompt": prompt})
    assert status == 200, (status, raw)
    return body


TOO_LONG_PROMPT = "hello " * 3000


class ErrorsTest(unittest.TestCase):

    def assert_client_error(self, exc_class, status, **kw):
        with self.assertRaises(exc_class) as cm:
            CLIENT.completions.create(**kw)
        self.assertEqual(cm.exception.status_code, status)
        return cm.exception

    def assert_raw_error(self, path, body, status, method="POST"):
        code, _, payload = SERVER.request(method, path, body)
        self.assertEqual(code, status, payload[:500])
        err = sf.assert_error_shape(self, payload, status, f"{method} {path} {str(body)[:100]}")
        self.assertEqual(err["type"], sf.ERROR_TYPES[status], err)
        return err

    def test_unknown_model(self):
        self.assert_client_error(openai.NotFoundError, 404, model="no-such-model", prompt="x",
                                 max_tokens=2)
        with self.assertRaises(openai.NotFoundError):
            CLIENT.chat.completions.create(model="no-such-model", messages=CAPITAL_Q, max_tokens=2)
        self.assert_raw_error("/v1/completions", {"model": "gpt-4", "prompt": "x"}, 404)
        self.assert_raw_error("/v1/chat/completions", {"model": "gpt-4", "messages": CAPITAL_Q}, 404)

    def test_unknown_route(self):
        with self.assertRaises(openai.NotFoundError) as cm:
            CLIENT.get("/no/such/route", cast_to=object)
        self.assertEqual(cm.exception.status_code, 404)
        self.assert_raw_error("/v1/nothing", None, 404, method="GET")
        self.assert_raw_error("/v2/completions", {"prompt": "x"}, 404)

    def test_wrong_method(self):
        self.assert_raw_error("/v1/completions", None, 405, method="GET")
        self.assert_raw_error("/v1/models", {}, 405, method="POST")

    def test_negative_max_tokens(self):
        self.assert_client_error(openai.BadRequestError, 400, model=NAME, prompt="x", max_tokens=-1)
        self.assert_raw_error("/v1/completions", {"prompt": "x", "max_tokens": -1}, 400)
        with self.assertRaises(openai.BadRequestError):
            CLIENT.chat.completions.create(model=NAME, messages=CAPITAL_Q, max_completion_tokens=-5)

    def test_negative_temperature(self):
        self.assert_client_error(openai.BadRequestError, 400, model=NAME, prompt="x", max_tokens=2,
                                 temperature=-1)
        self.assert_raw_error("/v1/chat/completions",
                              {"messages": CAPITAL_Q, "max_tokens": 2, "temperature": -1}, 400)

    def test_n_zero(self):
        self.assert_client_error(openai.BadRequestError, 400, model=NAME, prompt="x", max_tokens=2, n=0)
        self.assert_raw_error("/v1/chat/completions", {"messages": CAPITAL_Q, "max_tokens": 2, "n": 0}, 400)

    def test_n_with_greedy_sampling(self):
        # Greedy completions would all be the same: refused with vLLM's text.
        e = self.assert_client_error(openai.BadRequestError, 400, model=NAME, prompt="x", max_tokens=2, n=3,
                                     temperature=0)
        self.assertIn("n must be 1 when using greedy sampling, got 3", str(e))
        self.assert_raw_error("/v1/chat/completions",
                              {"messages": CAPITAL_Q, "max_tokens": 2, "n": 2, "temperature": 0}, 400)

    def test_validation_as_vllm_does_it(self):
        # A named tool_choice must name one of the request's tools, and needs tools.
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
        for kw, says in ((dict(tools=tools, tool_choice={"type": "function", "function": {"name": "nope"}}),
                          "does not match any of the specified `tools`"),
                         (dict(tool_choice={"type": "function", "function": {"name": "get_weather"}}),
                          "`tools` must be set"),
                         (dict(tools=tools, tool_choice={}), "Invalid value for `function`")):
            with self.assertRaises(openai.BadRequestError) as cm:
                CLIENT.chat.completions.create(model=NAME, messages=CAPITAL_Q, max_tokens=2, **kw)
            self.assertIn(says, str(cm.exception))
        # Seeds are 64-bit integers, read exactly; out of range, the bound broken by pydantic's
        # name for it (vLLM's test_long_seed reads those).
        for literal, bound in ((b"9223372036854775808", b"less_than_equal"),
                               (b"-9223372036854775809", b"greater_than_equal"),
                               (b"1e300", b"less_than_equal"), (b"-1e300", b"greater_than_equal")):
            code, _, raw = SERVER.request("POST", "/v1/completions",
                                          b'{"prompt": "x", "max_tokens": 1, "seed": ' + literal + b"}")
            self.assertEqual(code, 400, raw[:300])
            self.assertIn(bound, raw)
        for literal in (b"9223372036854775807", b"-9223372036854775808", b"1e17"):
            code, _, raw = SERVER.request("POST", "/v1/completions",
                                          b'{"prompt": "x", "max_tokens": 1, "seed": ' + literal + b"}")
            self.assertEqual(code, 200, (literal, raw[:300]))
        # No prompt, or an empty one: vLLM's words.
        e = self.assert_client_error(openai.BadRequestError, 400, model=NAME, prompt="", max_tokens=2)
        self.assertIn("Either prompt or prompt_embeds must be provided and non-empty.", str(e))
        # An empty prompt_embeds and no prompt is the same case (vLLM's test_prompt_validation).
        code, _, raw = SERVER.request("POST", "/v1/completions", {"prompt": None, "prompt_embeds": [], "max_tokens": 1})
        self.assertEqual(code, 400, raw[:300])
        self.assertIn(b"Either prompt or prompt_embeds must be provided and non-empty.", raw)
        code, _, raw = SERVER.request("POST", "/v1/completions", {"prompt_embeds": "AAAA", "max_tokens": 1})
        self.assertEqual(code, 400, raw[:300])
        self.assertIn(b"prompt_embeds is not supported", raw)

    def test_wrong_type(self):
        e = self.assert_client_error(openai.BadRequestError, 400, model=NAME, prompt="x",
                                     max_tokens="abc")
        err = self.assert_raw_error("/v1/completions", {"prompt": "x", "max_tokens": "abc"}, 400)
        if err["param"] is not None:
            self.assertEqual(err["param"], "max_tokens")
        self.assertIsNotNone(e)

    def test_prompt_longer_than_context(self):
        e = self.assert_client_error(openai.BadRequestError, 400, model=NAME,
                                     prompt=TOO_LONG_PROMPT, max_tokens=4)
        self.assertIn("2048", str(e))
        err = self.assert_raw_error("/v1/completions", {"prompt": TOO_LONG_PROMPT, "max_tokens": 4}, 400)
        self.assertIn("2048", err["message"])
        with self.assertRaises(openai.BadRequestError) as cm:
            CLIENT.chat.completions.create(model=NAME, max_tokens=4, messages=[
                {"role": "user", "content": TOO_LONG_PROMPT}])
        self.assertIn("2048", str(cm.exception))
        # Prompt + max_tokens over the context is an error as well.
        n = tokenize("hello " * 1000)["count"]
        self.assert_raw_error("/v1/completions",
                              {"prompt": "hello " * 1000, "max_tokens": sf.MAX_MODEL_LEN - n + 10}, 400)

    def test_bad_logit_bias(self):
        self.assert_client_error(openai.BadRequestError, 400, model=NAME, prompt="x", max_tokens=2,
                                 logit_bias={"abc": 5})
        self.assert_raw_error("/v1/completions",
                              {"prompt": "x", "max_tokens": 2, "logit_bias": {"abc": 5}}, 400)
        self.assert_raw_error("/v1/completions",
                              {"prompt": "x", "max_tokens": 2, "logit_bias": {"100": 1000}}, 400)
        self.assert_raw_error("/v1/completions",
                              {"prompt": "x", "max_tokens": 2, "logit_bias": {"999999999": 1}}, 400)

    def test_out_of_range_values(self):
        for field, value in (("logprobs", 21), ("top_p", 1.5), ("top_p", 0), ("presence_penalty", 3),
                             ("frequency_penalty", -2.5), ("logprobs", -1)):
            with self.subTest(field=field, value=value):
                self.assert_raw_error("/v1/completions",
                                      {"prompt": "x", "max_tokens": 2, field: value}, 400)
        self.assert_raw_error("/v1/chat/completions", {"messages": CAPITAL_Q, "max_tokens": 2,
                                                       "logprobs": True, "top_logprobs": 21}, 400)

    def test_bad_prompt_token_ids(self):
        self.assert_raw_error("/v1/completions", {"prompt": [10**9], "max_tokens": 2}, 400)
        self.assert_raw_error("/v1/completions", {"prompt": [-1], "max_tokens": 2}, 400)
        self.assert_raw_error("/v1/completions", {"prompt": [], "max_tokens": 2}, 400)
        self.assert_raw_error("/detokenize", {"tokens": [10**9]}, 400)

    def test_missing_required_fields(self):
        self.assert_raw_error("/v1/completions", {"max_tokens": 2}, 400)
        self.assert_raw_error("/v1/chat/completions", {"max_tokens": 2}, 400)
        self.assert_raw_error("/detokenize", {}, 400)

    def test_malformed_json(self):
        self.assert_raw_error("/v1/completions", b'{"prompt": "x",', 400)
        self.assert_raw_error("/v1/chat/completions", b"[1, 2]", 400)

    def test_server_still_serves_after_errors(self):
        resp = CLIENT.completions.create(model=NAME, prompt=PROMPT, max_tokens=3, temperature=0)
        self.assertEqual(resp.choices[0].text, cli_generate([PROMPT], 3)[0]["outputs"][0]["text"])


class ShutdownTest(unittest.TestCase):
    """SIGTERM lets an in-flight request finish, then the server exits 0 (its own server)."""

    def test_sigterm_drains_in_flight_stream(self):
        server = sf.Server(BIN, MODEL, ["--shutdown-timeout", "30"], name="shutdown")
        try:
            client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="x", max_retries=0,
                                   timeout=120)
            stream = client.completions.create(model=NAME, prompt="Once upon a time", max_tokens=32,
                                               temperature=1, seed=8, stream=True,
                                               extra_body={"ignore_eos": True})
            it = iter(stream)
            first = next(it)
            server.proc.send_signal(sf.signal.SIGTERM)
            rest = list(it)
            chunks = [first] + rest
            finishes = [c.finish_reason for ch in chunks for c in ch.choices if c.finish_reason]
            self.assertEqual(finishes, ["length"], "the in-flight stream was not allowed to finish")
            self.assertEqual(sum(1 for ch in chunks for c in ch.choices if c.text), 32)
            rc = server.proc.wait(40)
            self.assertEqual(rc, 0)
            with self.assertRaises(OSError):
                sf.socket.create_connection((server.host, server.port), timeout=5).close()
        finally:
            rc = server.stop()
            if rc != 0:
                sys.stderr.write(f"shutdown server log:\n{server.log_tail()}\n")


class OverloadTest(unittest.TestCase):
    """More unfinished requests than --max-queued-requests: 503 in OpenAI's error shape, the
    openai client raises InternalServerError (its class for 5xx), and the server recovers."""

    def test_queue_limit_answers_503_then_recovers(self):
        server = sf.Server(BIN, MODEL, ["--max-queued-requests", "1"], name="overload")
        try:
            client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="x", max_retries=0, timeout=120)
            stream = client.completions.create(model=NAME, prompt="Once upon a time", max_tokens=24,
                                               temperature=0, stream=True, extra_body={"ignore_eos": True})
            it = iter(stream)
            next(it)  # the first request is running
            status, _, payload = server.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
            self.assertEqual(status, 503, payload[:300])
            err = sf.assert_error_shape(self, payload, 503, "overloaded")
            self.assertEqual(err["type"], "ServiceUnavailableError")
            with self.assertRaises(openai.InternalServerError) as cm:
                client.completions.create(model=NAME, prompt="x", max_tokens=2)
            self.assertEqual(cm.exception.status_code, 503)
            list(it)  # the first request finishes
            ok = sf.wait_for(lambda: server.request("POST", "/v1/completions",
                                                    {"prompt": "x", "max_tokens": 2})[0] == 200, 30)
            self.assertTrue(ok, "the server did not accept requests again")
        finally:
            self.assertEqual(server.stop(), 0)


class ApiKeyTest(unittest.TestCase):
    KEY = "sk-tessera-e2e-secret"
    SECOND_KEY = "sk-tessera-e2e-other"

    @classmethod
    def setUpClass(cls):
        cls.server = sf.Server(BIN, MODEL, ["--api-key", cls.KEY, "--api-key", cls.SECOND_KEY], name="apikey")

    @classmethod
    def tearDownClass(cls):
        alive = cls.server.alive()
        rc = cls.server.stop()
        if not alive or rc != 0:
            sys.stderr.write(f"api-key server log {cls.server.log_path}:\n{cls.server.log_tail()}\n")
        assert alive, "the --api-key server died"
        assert rc == 0, f"--api-key server: SIGTERM exit status {rc}"

    def client(self, key):
        return openai.OpenAI(base_url=self.server.base_url + "/v1", api_key=key, max_retries=0,
                             timeout=120)

    def test_wrong_key(self):
        with self.assertRaises(openai.AuthenticationError) as cm:
            self.client("wrong").completions.create(model=NAME, prompt="x", max_tokens=2)
        self.assertEqual(cm.exception.status_code, 401)
        with self.assertRaises(openai.AuthenticationError):
            self.client("wrong").models.list()

    def test_missing_key_raw(self):
        # vLLM's guarded prefixes (/v1, /v2, /inference, /cohere) and /invocations, which generates.
        for method, path, body in (("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2}),
                                   ("POST", "/v1/chat/completions", {"messages": CAPITAL_Q}),
                                   ("GET", "/v1/models", None), ("GET", "/v1/no-such-route", None),
                                   ("POST", "/invocations", {"prompt": "x", "max_tokens": 2}),
                                   ("POST", "/v2/chat", {}), ("POST", "/inference/v1/generate", {})):
            with self.subTest(path=path):
                status, _, payload = self.server.request(method, path, body)
                self.assertEqual(status, 401, payload[:300])
                err = sf.assert_error_shape(self, payload, 401, path)
                self.assertEqual(err["type"], "AuthenticationError")
        status, _, payload = self.server.request("GET", "/v1/models",
                                                 headers={"Authorization": "Bearer " + self.KEY + "x"})
        self.assertEqual(status, 401)
        status, _, payload = self.server.request("GET", "/v1/models",
                                                 headers={"Authorization": self.KEY})
        self.assertEqual(status, 401, "the key without `Bearer ` is not accepted")
        status, _, payload = self.server.request("GET", "/v1/models",
                                                 headers={"Authorization": "Basic " + self.KEY})
        self.assertEqual(status, 401, "another scheme is not accepted")

    def test_open_routes_as_vllm(self):
        # Outside the guarded prefixes vLLM asks for no key: Prometheus scrapes /metrics and
        # gateways call /tokenize and /version without one.
        for method, path, body in (("GET", "/metrics", None), ("GET", "/version", None),
                                   ("POST", "/tokenize", {"prompt": "x"})):
            with self.subTest(path=path):
                status, _, payload = self.server.request(method, path, body)
                self.assertEqual(status, 200, payload[:300])

    def test_scheme_in_any_case_and_every_key(self):
        for header in ("Bearer " + self.KEY, "bearer " + self.KEY, "BEARER " + self.KEY,
                       "Bearer " + self.SECOND_KEY):
            with self.subTest(header=header):
                status, _, payload = self.server.request("GET", "/v1/models", headers={"Authorization": header})
                self.assertEqual(status, 200, payload[:300])

    def test_right_key(self):
        c = self.client(self.KEY)
        resp = c.completions.create(model=NAME, prompt=PROMPT, max_tokens=3, temperature=0)
        self.assertEqual(resp.choices[0].text, cli_generate([PROMPT], 3)[0]["outputs"][0]["text"])
        self.assertEqual([m.id for m in c.models.list().data], [NAME])
        status, _, _ = self.server.request("GET", "/metrics",
                                           headers={"Authorization": "Bearer " + self.KEY})
        self.assertEqual(status, 200)

    def test_health_and_ping_without_key(self):
        # Liveness probes alike: neither needs the key (load balancers poll them).
        for method, path in (("GET", "/health"), ("GET", "/ping"), ("POST", "/ping")):
            with self.subTest(method=method, path=path):
                status, _, payload = self.server.request(method, path)
                self.assertEqual(status, 200, payload[:300])
                self.assertEqual(payload, b"")


if __name__ == "__main__":
    sf.preflight(need_openai=True)
    sf.run_tests()
