"""Tessera's pytest harness for running vLLM's own OpenAI-server tests against `tessera serve`.

Tessera's own code (not copied from vLLM). `run_suite.sh` copies this file as the root
`conftest.py` of a scratch tree (default /tmp/vllm_suite/tree) that holds vLLM's test modules
unchanged (extracted from vLLM's source distribution; they never enter this repository).
It provides what those modules expect from vLLM's `tests/utils.py` and from `vllm` itself,
without importing vLLM (which needs CUDA and torch):

* `tests.utils.RemoteOpenAIServer`: starts `tessera serve` (TESSERA_BIN, default
  build/bin/tessera) on TESSERA_MODEL (default: scripts/default_model_path.sh, SmolLM2-135M-Instruct
  Q4_1) with the test's `vllm serve` flags mapped to Tessera's (`map_vllm_args`), and
  `--served-model-name` set to the model name the test asked for, so requests that name that
  model reach the one Tessera serves. A flag of a feature Tessera has not built that the
  module is about (prompt embeddings, multimodal, speculative decoding, sleep mode, structured
  outputs config, ...) skips the test as "needs an unbuilt feature: X"; LoRA, tool-parser and
  reasoning-parser flags are dropped instead (SOFT_UNBUILT_FLAGS) so the module's other tests
  run against the base model.
* `vllm.*` (and `torch.*`, `transformers.*`, not installed either): placeholder modules whose
  attributes are inert stubs, with real stand-ins for the few things HTTP tests use:
  `vllm.tokenizers.get_tokenizer` (a Hugging Face `tokenizers` BPE tokenizer built from the
  GGUF's own vocabulary and merges, and the GGUF's chat template rendered with jinja2 as
  transformers renders it), `vllm.version.__version__`,
  `vllm.config.ModelConfig(...).get_vocab_size()`, `vllm.envs`,
  `vllm.platforms.current_platform`, `vllm.utils.network_utils.get_open_port`,
  `transformers.AutoTokenizer.from_pretrained` (the same tokenizer), `torch.iinfo(torch.long)`.
* Test selection: tests that never start a server (in-process unit tests of vLLM's Python
  classes) are deselected and counted separately; tests whose parameters name a LoRA adapter,
  and those UNBUILT_TESTS lists, are skipped as needing an unbuilt feature.

Each server's stderr goes to $VLLM_SUITE_LOGS (default /tmp/vllm_suite/logs).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import inspect
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SUITE_DIR = Path(os.environ.get("VLLM_SUITE_DIR", "/tmp/vllm_suite"))
REPO_DIR = Path(os.environ.get("TESSERA_SOURCE_DIR", str(HERE.parent.parent)))
TESSERA_BIN = os.environ.get("TESSERA_BIN", str(REPO_DIR / "build" / "bin" / "tessera"))

LOG_DIR = Path(os.environ.get("VLLM_SUITE_LOGS", str(SUITE_DIR / "logs")))
# The context of SmolLM2-135M (the default model); a test's larger --max-model-len is clamped.
MODEL_CONTEXT = int(os.environ.get("TESSERA_MODEL_CONTEXT", "8192"))
KV_CACHE_MEMORY = os.environ.get("TESSERA_KV_CACHE_MEMORY", str(256 * 1024 * 1024))
VLLM_STUB_VERSION = os.environ.get("VLLM_STUB_VERSION", "0.33.0")

UNBUILT = "needs an unbuilt feature: "
FIXTURE = "[fixture limitation] "


@functools.lru_cache(maxsize=None)
def tessera_model() -> str:
    m = os.environ.get("TESSERA_MODEL")
    if m:
        return m
    out = subprocess.run(["bash", str(REPO_DIR / "scripts" / "default_model_path.sh")],
                         capture_output=True, text=True, timeout=120)
    return out.stdout.strip()


# ---------------------------------------------------------------------------------------------
# The tokenizer: SmolLM2's byte-level BPE, rebuilt from the GGUF with Hugging Face `tokenizers`
# ---------------------------------------------------------------------------------------------
class _Encoding(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError as e:
            raise AttributeError(name) from e


class GGUFTokenizer:
    """What vLLM's tests call on `get_tokenizer(...)`: encode/decode/chat templates."""

    def __init__(self, path: str):
        from gguf import GGUFReader
        from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

        r = GGUFReader(path)
        f = r.fields
        tokens = f["tokenizer.ggml.tokens"].contents()
        types_ = f["tokenizer.ggml.token_type"].contents()
        merges = [tuple(m.split(" ", 1)) for m in f["tokenizer.ggml.merges"].contents()]
        vocab = {t: i for i, t in enumerate(tokens)}
        tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
        # llama.cpp's "smollm" pre-tokenizer = HF SmolLM2's: single digits, then GPT-2's regex.
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(r"\p{N}"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ])
        tok.decoder = decoders.ByteLevel()
        special = [tokens[i] for i, t in enumerate(types_) if t in (3, 4)]
        tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in special])
        self._tok = tok
        self.vocab = vocab
        self.id_to_token = list(tokens)
        self.all_special_tokens = special
        self.all_special_ids = [vocab[s] for s in special]
        self.bos_token_id = int(f["tokenizer.ggml.bos_token_id"].contents())
        self.eos_token_id = int(f["tokenizer.ggml.eos_token_id"].contents())
        self.pad_token_id = int(f["tokenizer.ggml.padding_token_id"].contents())
        self.bos_token = tokens[self.bos_token_id]
        self.eos_token = tokens[self.eos_token_id]
        self.pad_token = tokens[self.pad_token_id]
        self.add_bos = bool(f["tokenizer.ggml.add_bos_token"].contents())
        self.chat_template = f["tokenizer.chat_template"].contents()
        self.name_or_path = path
        self.vocab_size = len(tokens)
        self.model_max_length = MODEL_CONTEXT

    def __len__(self):
        return len(self.id_to_token)

    def get_vocab(self):
        return dict(self.vocab)

    def encode(self, text, add_special_tokens=True, **_):
        ids = self._tok.encode(text, add_special_tokens=False).ids
        if add_special_tokens and self.add_bos:
            ids = [self.bos_token_id] + ids
        return ids

    def __call__(self, text, add_special_tokens=True, **kw):
        if isinstance(text, list):
            ids = [self.encode(t, add_special_tokens) for t in text]
        else:
            ids = self.encode(text, add_special_tokens)
        return _Encoding(input_ids=ids)

    def decode(self, ids, skip_special_tokens=False, **_):
        if isinstance(ids, int):
            ids = [ids]
        return self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def batch_decode(self, seqs, skip_special_tokens=False, **_):
        return [self.decode(s, skip_special_tokens) for s in seqs]

    def convert_ids_to_tokens(self, ids, skip_special_tokens=False):
        if isinstance(ids, int):
            return self.id_to_token[ids]
        return [self.id_to_token[i] for i in ids
                if not (skip_special_tokens and i in self.all_special_ids)]

    def convert_tokens_to_ids(self, toks):
        if isinstance(toks, str):
            return self.vocab.get(toks)
        return [self.vocab.get(t) for t in toks]

    def convert_tokens_to_string(self, toks):
        return self.decode(self.convert_tokens_to_ids(toks))

    def apply_chat_template(self, conversation, tools=None, chat_template=None,
                            add_generation_prompt=False, continue_final_message=False,
                            tokenize=True, return_dict=False, **kwargs):
        import jinja2
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message):
            raise jinja2.exceptions.TemplateError(message)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                            extensions=[loopcontrols])
        env.filters["tojson"] = lambda x, indent=None, ensure_ascii=False, **k: json.dumps(
            x, indent=indent, ensure_ascii=ensure_ascii)
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: time.strftime(fmt)
        template = env.from_string(chat_template or self.chat_template)
        text = template.render(messages=conversation, tools=tools,
                               add_generation_prompt=add_generation_prompt,
                               bos_token=self.bos_token, eos_token=self.eos_token, **kwargs)
        if continue_final_message and conversation:
            last = conversation[-1].get("content")
            if isinstance(last, str) and last.strip() in text:
                text = text[: text.rindex(last.strip()) + len(last.strip())]
        if not tokenize:
            return text
        ids = self.encode(text, add_special_tokens=False)
        return _Encoding(input_ids=ids) if return_dict else ids


@functools.lru_cache(maxsize=None)
def _tokenizer() -> GGUFTokenizer:
    return GGUFTokenizer(tessera_model())


def get_tokenizer(tokenizer_name=None, *args, **kwargs) -> GGUFTokenizer:
    # Every model name the tests use maps to the one model Tessera serves.
    return _tokenizer()


# ---------------------------------------------------------------------------------------------
# `vllm` placeholder modules
# ---------------------------------------------------------------------------------------------
class _StubMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _stub_class(f"{cls.__qualname__}.{name}")

    def __bool__(cls):
        return False

    def __getitem__(cls, item):
        return cls


class _StubBase(metaclass=_StubMeta):
    """An inert stand-in for a vLLM class or function: calls give inert objects."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _stub_class(f"{type(self).__qualname__}.{name}")()

    def __call__(self, *args, **kwargs):
        return _stub_class(f"{type(self).__qualname__}()")()

    def __bool__(self):
        return False

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __getitem__(self, item):
        return _stub_class(f"{type(self).__qualname__}[]")()


def _stub_class(qualname: str):
    return _StubMeta(qualname.rsplit(".", 1)[-1], (_StubBase,), {"__qualname__": qualname})


class _Platform:
    device_name = "cuda"
    device_type = "cuda"

    def __getattr__(self, name):
        if name.startswith("is_") or name.startswith("supports_") or name.startswith("has_"):
            return lambda *a, **k: name in ("is_cuda", "is_cuda_alike")
        if name == "device_count":
            return lambda *a, **k: 1
        return _stub_class(f"current_platform.{name}")()


class _ModelConfig(_StubBase):
    """vllm.config.ModelConfig as the HTTP tests use it: the served model's vocabulary size."""

    def __init__(self, model=None, **kwargs):
        self.model = model

    def get_vocab_size(self):
        return len(_tokenizer())


class _Envs(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        defaults = {"VLLM_MAX_N_SEQUENCES": 16384}
        return defaults.get(name, False)


def _get_open_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _StubModule(types.ModuleType):
    def __call__(self, *args, **kwargs):  # a function imported by a lowercase name
        return _stub_class(f"{self.__name__}()")()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name[:1].islower() and name not in ("current_platform",):
            with contextlib.suppress(ImportError):
                return importlib.import_module(f"{self.__name__}.{name}")
        value = _stub_class(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


def _fill(mod: types.ModuleType) -> None:
    name = mod.__name__
    if name == "vllm":
        mod.__version__ = VLLM_STUB_VERSION
    elif name == "vllm.version":
        mod.__version__ = VLLM_STUB_VERSION
        mod.__version_tuple__ = tuple(int(x) for x in VLLM_STUB_VERSION.split("."))
    elif name in ("vllm.tokenizers", "vllm.transformers_utils.tokenizer"):
        mod.get_tokenizer = get_tokenizer
        mod.cached_get_tokenizer = get_tokenizer
    elif name == "vllm.config":
        mod.ModelConfig = _ModelConfig
    elif name == "vllm.platforms":
        mod.current_platform = _Platform()
    elif name == "vllm.utils.network_utils":
        mod.get_open_port = _get_open_port
    elif name == "torch":
        # test_long_seed takes int64's bounds from torch.iinfo(torch.long).
        mod.long = mod.int64 = "int64"
        mod.iinfo = lambda dtype: types.SimpleNamespace(min=-2**63, max=2**63 - 1)
    elif name == "transformers":
        auto = _stub_class("transformers.AutoTokenizer")
        auto.from_pretrained = staticmethod(get_tokenizer)
        mod.AutoTokenizer = auto


# Packages replaced by placeholders: vLLM itself, and torch / transformers (imported at the top of
# some modules for their in-process tests; not installed here).
STUBBED_PACKAGES = ("vllm", "torch", "transformers")


class _VllmFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".", 1)[0] in STUBBED_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        cls = _Envs if spec.name == "vllm.envs" else _StubModule
        mod = cls(spec.name)
        mod.__path__ = []
        return mod

    def exec_module(self, module):
        _fill(module)


sys.meta_path.insert(0, _VllmFinder())


# ---------------------------------------------------------------------------------------------
# vLLM flags -> tessera serve flags
# ---------------------------------------------------------------------------------------------
# Flags (and values) that ask for a feature Tessera has not built: the test is skipped.
UNBUILT_FLAGS = {
    "--enable-prompt-embeds": "prompt embeddings",
    "--speculative-config": "speculative decoding",
    "--limit-mm-per-prompt": "multimodal inputs", "--mm-processor-kwargs": "multimodal inputs",
    "--enable-sleep-mode": "sleep mode",
    "--watermark-config": "watermarking",
    "--skip-tokenizer-init": "serving without a tokenizer (--skip-tokenizer-init)",
    "--api-server-count": "several API server processes",
    "--data-parallel-size": "data parallelism",
    "--pipeline-parallel-size": "pipeline parallelism",
}
UNBUILT_FLAG_VALUES = {
    ("--load-format", "tensorizer"): "tensorizer weights",
    ("--convert", "embed"): "pooling models",
}
# vLLM flags that mean nothing for Tessera on the CPU (or that Tessera does not have and that
# do not change the wire behaviour the tests check): dropped with their values.
# Flags of unbuilt features that most tests of their modules do not exercise: dropped, so the
# server serves the base model alone. The tests that name a LoRA adapter (a parameter value
# containing "lora") are skipped at collection; those that need tool-call or reasoning parsing
# are listed in UNBUILT_TESTS.
SOFT_UNBUILT_FLAGS = {
    "--enable-lora": "LoRA", "--lora-modules": "LoRA", "--lora-module": "LoRA",
    "--max-lora-rank": "LoRA", "--max-loras": "LoRA", "--max-cpu-loras": "LoRA",
    "--fully-sharded-loras": "LoRA", "--lora-dtype": "LoRA",
    "--tool-parser-plugin": "tool-call parser plugins", "--tool-server": "tool servers (MCP)",
    "--reasoning-config": "reasoning budgets",
}
DROPPED_FLAGS = {"--tokenizer-mode", "--hf-overrides", "--load-format",
                 "--attention-backend", "--enable-metrics",
                 "--chat-template-content-format",
                 "--exclude-tools-when-tool-choice-none", "--show-hidden-metrics-for-version",
                 "--runner", "--enable-log-requests", "--enable-log-outputs",
                 "--compilation-config", "-O", "--kv-cache-dtype", "--swap-space",
                 "--distributed-executor-backend", "--worker-extension-cls",
                 "--middleware", "--max-log-len", "--model-impl"}


@functools.lru_cache(maxsize=None)
def tessera_flags() -> tuple[frozenset, dict]:
    """(flags `tessera serve --help` lists, {refused flag: reason})."""
    out = subprocess.run([TESSERA_BIN, "serve", "--help"], capture_output=True, text=True,
                         timeout=60)
    flags, refused = set(), {}
    for line in out.stdout.splitlines():
        m = re.match(r"\s+(-[-\w]+(?:,-[-\w]+)*)", line)
        if not m:
            continue
        names = [n for n in re.split(r"[,{}]", m.group(1)) if n.startswith("-")]
        flags.update(names)
        r = re.search(r"refused: (.*)", line)
        if r:
            for n in names:
                refused[n] = r.group(1)
    return frozenset(flags), refused


def _split_args(args: list[str]) -> list[tuple[str, list[str]]]:
    """[(flag, values)], a flag taking the following tokens that are not flags."""
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(args):
        a = str(args[i])
        i += 1
        if a.startswith("-") and "=" in a and a.startswith("--"):
            k, v = a.split("=", 1)
            out.append((k, [v]))
            continue
        vals = []
        while i < len(args) and not (str(args[i]).startswith("-") and
                                     not re.fullmatch(r"-\d+(\.\d+)?", str(args[i]))):
            vals.append(str(args[i]))
            i += 1
        out.append((a, vals))
    return out


def map_vllm_args(model: str, vllm_args: list[str]) -> tuple[str, list[str], list[str], str | None]:
    """(served name, tessera args, notes, unbuilt-feature reason or None)."""
    flags, refused = tessera_flags()
    served = model
    out: list[str] = []
    notes: list[str] = []
    have_kv = False
    pairs = _split_args(list(vllm_args))
    # A repeated flag's last value wins under both (argparse; tessera serve as vLLM).
    for flag, vals in pairs:
        if flag in UNBUILT_FLAGS:
            return served, out, notes, UNBUILT_FLAGS[flag]
        if vals and (flag, vals[0]) in UNBUILT_FLAG_VALUES:
            return served, out, notes, UNBUILT_FLAG_VALUES[(flag, vals[0])]
        if flag == "--tensor-parallel-size" and vals and vals[0] != "1":
            return served, out, notes, "tensor parallelism"
        if flag in SOFT_UNBUILT_FLAGS:
            notes.append(f"dropped {flag} {' '.join(vals)} ({SOFT_UNBUILT_FLAGS[flag]}: "
                         "not built)".replace("  ", " "))
            continue
        if flag in refused:
            return served, out, notes, f"{flag} ({refused[flag]})"
        if flag == "--model":
            served = vals[0] if vals else served
            continue
        if flag == "--served-model-name":
            served = vals[0]
            if len(vals) > 1:
                notes.append(f"--served-model-name {' '.join(vals)}: Tessera serves one name; "
                             f"using {vals[0]}")
            continue
        if flag == "--max-model-len" and vals:
            n = int(vals[0])
            if n > MODEL_CONTEXT:
                notes.append(f"--max-model-len {n} clamped to {MODEL_CONTEXT} (the model's)")
                vals = [str(MODEL_CONTEXT)]
        if flag == "--max-logprobs" and vals and (int(vals[0]) > 20 or int(vals[0]) < 0):
            # Whole-vocabulary logprobs make replies of ~100 MB; vLLM has no reply limit.
            notes.append("--max-response-bytes 1073741824 added (vLLM has no reply size limit)")
            out += ["--max-response-bytes", "1073741824"]
        # vLLM's engine arguments: tessera serve takes the values it runs (and refuses others,
        # which a test's server would not survive: those are dropped with a note).
        if flag == "--dtype" and vals and vals[0] not in ("auto", "bfloat16", "bf16"):
            notes.append(f"dropped --dtype {vals[0]} (Tessera computes in bfloat16 on CUDA, the "
                         "checkpoint's precision on the CPU)")
            continue
        if flag in ("--kv-cache-memory", "--kv-cache-memory-bytes"):
            have_kv = True
        if flag in DROPPED_FLAGS or flag not in flags:
            notes.append(f"dropped {flag} {' '.join(vals)}".rstrip())
            continue
        out += [flag, *vals]
    if not have_kv:
        out += ["--kv-cache-memory", KV_CACHE_MEMORY]
    return served, out, notes, None


# ---------------------------------------------------------------------------------------------
# RemoteOpenAIServer
# ---------------------------------------------------------------------------------------------
class RemoteOpenAIServer:
    """vLLM's tests/utils.py RemoteOpenAIServer, starting `tessera serve` instead."""

    DUMMY_API_KEY = "token-abc123"

    def __init__(self, model: str, vllm_serve_args: list[str], *, env_dict=None, seed=0,
                 auto_port: bool = True, max_wait_seconds: float | None = None,
                 override_hf_configs=None) -> None:
        vllm_serve_args = [str(a) for a in vllm_serve_args]
        if auto_port and "--uds" not in vllm_serve_args:
            if "-p" in vllm_serve_args or "--port" in vllm_serve_args:
                raise ValueError("You have manually specified the port when `auto_port=True`.")
            vllm_serve_args = vllm_serve_args + ["--port", str(_get_open_port())]
        if seed is not None:
            if "--seed" in vllm_serve_args:
                raise ValueError(f"You have manually specified the seed when `seed={seed}`.")
            vllm_serve_args = vllm_serve_args + ["--seed", str(seed)]
        self.model = model
        served, targs, self.notes, unbuilt = map_vllm_args(model, vllm_serve_args)
        if unbuilt:
            pytest.skip(UNBUILT + unbuilt)
        self.served_model_name = served
        parsed = dict(_split_args(vllm_serve_args))
        self.uds = (parsed.get("--uds") or [None])[0]
        if self.uds:
            self.host, self.port = None, None
        else:
            self.host = (parsed.get("--host") or ["127.0.0.1"])[0] or "127.0.0.1"
            self.port = int((parsed.get("--port") or ["8000"])[0])
        self._request_shutdown_timeout = float((parsed.get("--shutdown-timeout") or ["0"])[0])
        self.show_hidden_metrics = "--show-hidden-metrics-for-version" in parsed
        if "--host" not in targs and not self.uds:
            targs = targs + ["--host", self.host]
        self.args = [TESSERA_BIN, "serve", tessera_model(), "--served-model-name", served,
                     *targs]
        env = dict(os.environ)
        env.setdefault("OMP_WAIT_POLICY", "passive")
        if env_dict:
            env.update(env_dict)
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        test = os.environ.get("PYTEST_CURRENT_TEST", "server").split(" ")[0]
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", test)[-120:]
        self.log_path = LOG_DIR / f"{time.strftime('%H%M%S')}-{safe}.log"
        self._log = open(self.log_path, "w", buffering=1, errors="replace")
        self._log.write("$ " + " ".join(self.args) + "\n")
        for n in self.notes:
            self._log.write(f"# {n}\n")
        print(f"Launching tessera with: {' '.join(self.args)} ({'; '.join(self.notes)})")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=self._log, env=env, start_new_session=True)
        try:
            self._wait_for_server(url=self.url_for("health"), timeout=max_wait_seconds or 240)
        except Exception:
            self._shutdown()
            raise

    # -- life cycle --------------------------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self._shutdown()

    def _poll(self):
        return self.proc.poll()

    def _get_process_termination_timeout(self) -> float:
        # vLLM's: the engine's shutdown timeout (the request drain) plus 15 s.
        return self._request_shutdown_timeout + 15.0

    def _shutdown(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(self._request_shutdown_timeout + 45)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        with contextlib.suppress(Exception):
            self._log.write(f"# exit status {self.proc.returncode}\n")
            self._log.close()

    def _wait_for_server(self, *, url: str, timeout: float):
        import requests
        start = time.time()
        client = requests
        if self.uds:
            import httpx
            client = httpx.Client(transport=httpx.HTTPTransport(uds=self.uds))
        while True:
            try:
                if client.get(url).status_code == 200:
                    return
            except Exception:
                pass
            rc = self.proc.poll()
            if rc is not None:
                tail = self.log_path.read_text(errors="replace")[-3000:]
                if "not supported yet" in tail:
                    pytest.skip(UNBUILT + tail.strip().splitlines()[-1])
                raise RuntimeError(f"tessera serve exited with {rc}: {tail}")
            if time.time() - start > timeout:
                raise RuntimeError("Server failed to start in time.")
            time.sleep(0.2)

    # -- URLs and clients --------------------------------------------------------------------
    @property
    def url_root(self) -> str:
        return (f"http://{self.uds.split('/')[-1]}" if self.uds
                else f"http://{self.host}:{self.port}")

    def url_for(self, *parts: str) -> str:
        path = "/".join(part.strip("/") for part in parts if part)
        return f"{self.url_root}/{path}"

    def get_client(self, **kwargs):
        import openai
        kwargs.setdefault("timeout", 600)
        return openai.OpenAI(base_url=self.url_for("v1"), api_key=self.DUMMY_API_KEY,
                             max_retries=0, **kwargs)

    def get_async_client(self, **kwargs):
        import openai
        kwargs.setdefault("timeout", 600)
        return openai.AsyncOpenAI(base_url=self.url_for("v1"), api_key=self.DUMMY_API_KEY,
                                  max_retries=0, **kwargs)

    def get_client_anthropic(self, **kwargs):
        import anthropic
        kwargs.setdefault("timeout", 600)
        return anthropic.Anthropic(base_url=self.url_for(), api_key=self.DUMMY_API_KEY,
                                   max_retries=0, **kwargs)

    def get_async_client_anthropic(self, **kwargs):
        import anthropic
        kwargs.setdefault("timeout", 600)
        return anthropic.AsyncAnthropic(base_url=self.url_for(), api_key=self.DUMMY_API_KEY,
                                        max_retries=0, **kwargs)


class RemoteOpenAIServerCustom(RemoteOpenAIServer):
    """vLLM's variant runs vLLM's own server code in a child process with patched internals."""

    def __init__(self, *args, **kwargs):
        pytest.fail(FIXTURE + "RemoteOpenAIServerCustom runs vLLM's Python server in-process "
                    "(patched engine internals); no tessera equivalent")


RemoteVLLMServer = RemoteOpenAIServer


def _skip_decorator(reason):
    def deco(f=None, **_):
        if f is None or not callable(f):
            return lambda g: pytest.mark.skip(reason=reason)(g)
        return pytest.mark.skip(reason=reason)(f)
    return deco


def _make_tests_utils() -> types.ModuleType:
    mod = _StubModule("tests.utils")
    mod.__file__ = __file__
    mod.RemoteOpenAIServer = RemoteOpenAIServer
    mod.RemoteVLLMServer = RemoteVLLMServer
    mod.RemoteOpenAIServerCustom = RemoteOpenAIServerCustom
    mod.RemoteLaunchRenderServer = RemoteOpenAIServerCustom
    mod.VLLM_PATH = SUITE_DIR / "tree"
    mod.ROCM_EXTRA_ARGS = []
    mod.get_open_port = _get_open_port
    mod.multi_gpu_only = lambda num_gpus=2: _skip_decorator(UNBUILT + f"{num_gpus} GPUs")
    mod.multi_gpu_test = lambda num_gpus=2: _skip_decorator(UNBUILT + f"{num_gpus} GPUs")
    mod.requires_fp8 = _skip_decorator(UNBUILT + "FP8 weights")
    mod.large_gpu_mark = lambda min_gb: pytest.mark.skip(reason=f"needs a {min_gb} GB GPU")
    mod.single_gpu_only = lambda f=None: f if f is not None else (lambda g: g)
    return mod


import tests as _tests_pkg  # noqa: E402  (vLLM's `tests` package, beside this conftest)

_tests_utils = _make_tests_utils()
sys.modules["tests.utils"] = _tests_utils
_tests_pkg.utils = _tests_utils
_tests_conftest = _StubModule("tests.conftest")  # vLLM's root conftest needs torch; not loaded
sys.modules["tests.conftest"] = _tests_conftest
_tests_pkg.conftest = _tests_conftest


# ---------------------------------------------------------------------------------------------
# Test selection
# ---------------------------------------------------------------------------------------------
# Tests that start a server but whose requests need a feature Tessera has not built
# (node-id substring -> feature). Filled from the first run (see RESULTS.md).
UNBUILT_TESTS: dict[str, str] = {
    # reasoning budgets (thinking_token_budget, --reasoning-config)
    "test_thinking_token_budget.py": "reasoning budgets",
    "test_serving_chat.py::TestGPTOSS": "gpt-oss Harmony format (reasoning + tool-call parsers)",
    # LoRA: the test checks the adapters /v1/models lists
    "models/test_models.py::test_check_models": "LoRA adapters (listed in /v1/models)",
    # whole modules about APIs or features Tessera has not built
    "serve/lora/test_lora_adapters.py": "LoRA adapters (loading and unloading at runtime)",
    "test_sagemaker_lora_adapters.py": "LoRA adapters (SageMaker adapter routes)",
    "test_sagemaker_stateful_sessions.py": "SageMaker stateful sessions",
    "test_sagemaker_middleware_integration.py": "SageMaker customer middleware (Python plugins)",
    "openai/responses/": "Responses API (/v1/responses)",
    "anthropic/test_messages.py": "Anthropic Messages API (/v1/messages)",
    "cohere/test_chat_v2.py": "Cohere chat API (/v2/chat)",
    # pooling: the test needs a 200 from /v2/embed
    "test_optional_middleware.py::test_v2_endpoint_accepts_valid_api_token":
        "pooling models (/v2/embed)",
}


def _uses_server(item) -> bool:
    fn = getattr(item, "function", None)
    srcs = []
    with contextlib.suppress(Exception):
        srcs.append(inspect.getsource(fn))
    info = getattr(item, "_fixtureinfo", None)
    if info is not None:
        for defs in info.name2fixturedefs.values():
            for d in defs:
                with contextlib.suppress(Exception):
                    srcs.append(inspect.getsource(d.func))
    pat = re.compile(r"RemoteOpenAIServer|RemoteVLLMServer|url_for\(|get_async_client|"
                     r"get_client\(")
    return any(pat.search(s) for s in srcs)


def pytest_collection_modifyitems(session, config, items):
    keep, drop = [], []
    for item in items:
        if not _uses_server(item):
            drop.append(item)
            continue
        reason = None
        for pat, feat in UNBUILT_TESTS.items():
            if pat in item.nodeid:
                reason = feat
                break
        params = getattr(getattr(item, "callspec", None), "params", {})
        if reason is None and any("lora" in repr(v).lower() for v in params.values()):
            reason = "LoRA adapters (the request names an adapter)"
        if reason:
            item.add_marker(pytest.mark.skip(reason=UNBUILT + reason))
        keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
        path = os.environ.get("VLLM_SUITE_DESELECTED")
        if path:
            with open(path, "a") as f:
                for it in drop:
                    f.write(it.nodeid + "\n")


@pytest.fixture(scope="session")
def local_asset_server():
    pytest.skip(UNBUILT + "multimodal inputs (image/audio/video assets)")
