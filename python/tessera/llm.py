"""LLM: vLLM's offline API (vllm.LLM) over Tessera's engine."""

from __future__ import annotations

import itertools
import json
from typing import Any, Callable, Sequence

from tessera import _core, beam_search as _beam_search, hub as _hub
from tessera.beam_search import BeamSearchOutput
from tessera.outputs import RequestOutput, from_core
from tessera.sampling_params import BeamSearchParams, SamplingParams
from tessera.tokenizer import Tokenizer

_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")

# vLLM's engine arguments that Tessera takes as they are, or whose vLLM default is the only
# value it runs today: any other value raises ValueError naming the argument.
_ONLY_DEFAULT = {
    "quantization": None,
    "tensor_parallel_size": 1,
    "pipeline_parallel_size": 1,
    "speculative_config": None,
    "enable_lora": False,
    "max_loras": 1,
    "tokenizer_mode": "auto",
    "skip_tokenizer_init": False,
    "hf_overrides": None,
}
# Accepted and without effect here (documented in docs/python.md).
_NO_EFFECT = ("trust_remote_code", "swap_space", "disable_custom_all_reduce", "compilation_config", "max_seq_len_to_capture", "disable_async_output_proc")


class LLM:
    """An engine for offline batches: `LLM(model=path).generate(prompts, SamplingParams(...))`.
    model and tokenizer: local paths, or Hugging Face Hub names ("ORG/NAME") taken from the Hub's
    cache and downloaded into it when missing (revision, tokenizer_revision, download_dir)."""

    def __init__(
        self,
        model: str,
        tokenizer: str | None = None,
        dtype: str = "auto",
        seed: int | None = 0,
        gpu_memory_utilization: float = 0.9,
        cpu_offload_gb: float = 0,
        enforce_eager: bool = False,
        enable_prefix_caching: bool = True,
        max_model_len: int | None = None,
        max_num_seqs: int | None = None,
        max_num_batched_tokens: int | None = None,
        kv_cache_dtype: str = "auto",
        kv_cache_memory_bytes: int | None = None,
        kv_offloading_size: float | None = None,
        block_size: int | None = None,
        device: str = "auto",
        disable_log_stats: bool = True,
        revision: str | None = None,
        tokenizer_revision: str | None = None,
        download_dir: str | None = None,
        **kwargs: Any,
    ) -> None:
        for name, value in kwargs.items():
            if name in _NO_EFFECT:
                continue
            if name not in _ONLY_DEFAULT:
                raise TypeError(f"LLM got an unexpected keyword argument '{name}'")
            if value != _ONLY_DEFAULT[name]:
                raise ValueError(f"LLM: {name}={value!r} is not supported by Tessera yet")
        if dtype not in _DTYPES:
            raise ValueError(f"LLM: dtype must be one of {', '.join(_DTYPES)}, got {dtype!r}")
        a = _core.EngineArgs()
        a.model = str(model)
        a.tokenizer = str(tokenizer or "")
        a.revision = revision or ""
        a.tokenizer_revision = tokenizer_revision or ""
        a.download_dir = str(download_dir or "")
        _resolve_hub_names(a)
        a.device = device
        a.dtype = dtype
        a.gpu_memory_utilization = gpu_memory_utilization
        a.cpu_offload_gb = float(cpu_offload_gb)
        a.enforce_eager = enforce_eager
        a.enable_prefix_caching = enable_prefix_caching
        a.kv_cache_dtype = kv_cache_dtype
        a.seed = seed
        a.disable_log_stats = disable_log_stats
        a.disable_progress_bar = True
        # None: the engine's default.
        for field, value in (("max_model_len", max_model_len), ("max_num_seqs", max_num_seqs),
                             ("max_num_batched_tokens", max_num_batched_tokens),
                             ("kv_cache_memory", kv_cache_memory_bytes), ("kv_offloading_size", kv_offloading_size),
                             ("block_size", block_size)):
            if value is not None:
                setattr(a, field, value)
        self._engine = _core.LLM.create(a)
        self._request_counter = itertools.count()
        self._tokenizer: Tokenizer | None = None

    def generate(
        self,
        prompts: str | dict | Sequence[str | dict | list[int]],
        sampling_params: SamplingParams | Sequence[SamplingParams] | None = None,
        use_tqdm: bool | Callable[..., Any] = True,
        priority: list[int] | None = None,
    ) -> list[RequestOutput]:
        """One RequestOutput per prompt, in input order. Prompts: a string, a list of strings,
        {"prompt": text} or {"prompt_token_ids": [...]} (or a list of those). Ctrl-C aborts the
        batch (KeyboardInterrupt); the LLM stays usable."""
        inputs = _normalize_prompts(prompts)
        params = _params_per_prompt(sampling_params, len(inputs), "prompts")
        if priority is not None and any(p != 0 for p in priority):
            raise ValueError("LLM.generate: priority is not supported by Tessera's offline API yet")
        core_params = [p._to_core(self._engine.max_model_len, self._engine.vocab_size) for p in params]
        with _ProgressBar(use_tqdm, len(inputs)) as bar:
            results = self._engine.generate(inputs, core_params, bar.on_progress)
        return self._outputs(results, params)

    def chat(
        self,
        messages: list[dict] | list[list[dict]],
        sampling_params: SamplingParams | Sequence[SamplingParams] | None = None,
        use_tqdm: bool | Callable[..., Any] = True,
        lora_request: None = None,
        chat_template: str | None = None,
        chat_template_content_format: str = "auto",
        add_generation_prompt: bool = True,
        continue_final_message: bool = False,
        tools: list[dict] | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        mm_processor_kwargs: None = None,
    ) -> list[RequestOutput]:
        """Generates replies to one conversation ([{"role": ..., "content": ...}, ...]) or a list
        of them, each rendered by the model's chat template (or chat_template: its text or a
        path); one RequestOutput per conversation, whose prompt is the rendered text."""
        if lora_request is not None or mm_processor_kwargs is not None:
            raise ValueError("LLM.chat: lora_request and mm_processor_kwargs are not supported by Tessera yet")
        if chat_template_content_format not in ("auto", "string"):
            # Content parts reach the template as text (vLLM's "string" format).
            raise ValueError(f"LLM.chat: chat_template_content_format={chat_template_content_format!r} "
                             "is not supported by Tessera yet (auto, string)")
        batched = bool(messages) and isinstance(messages[0], (list, tuple))
        conversations = [json.dumps(list(c), ensure_ascii=False) for c in (messages if batched else [messages])]
        params = _params_per_prompt(sampling_params, len(conversations), "messages")
        core_params = [p._to_core(self._engine.max_model_len, self._engine.vocab_size) for p in params]
        with _ProgressBar(use_tqdm, len(conversations)) as bar:
            results = self._engine.chat(
                conversations, core_params, chat_template or "", add_generation_prompt, continue_final_message,
                json.dumps(tools, ensure_ascii=False) if tools is not None else "",
                json.dumps(chat_template_kwargs or {}, ensure_ascii=False), bar.on_progress)
        return self._outputs(results, params)

    def beam_search(
        self,
        prompts: Sequence[str | dict | list[int]],
        params: BeamSearchParams,
        lora_request: None = None,
        use_tqdm: bool = False,
        concurrency_limit: int | None = None,
    ) -> list[BeamSearchOutput]:
        """vLLM's beam search: one BeamSearchOutput per prompt, its beams best first. Every
        prompt's beams run in each step's batch (concurrency_limit has no effect; no progress
        bar). Ctrl-C aborts the search between engine steps (KeyboardInterrupt)."""
        if lora_request is not None:
            raise ValueError("LLM.beam_search: lora_request is not supported by Tessera yet")
        if not isinstance(params, BeamSearchParams):
            raise TypeError("LLM.beam_search: params must be a BeamSearchParams")
        inputs = _normalize_prompts(prompts)
        results = self._engine.beam_search(inputs, params._to_core())
        outputs = []
        for r in results:
            if r.error:
                raise ValueError(r.error)
            outputs.append(_beam_search.from_core(r, self._decode_token, lambda ids: self._engine.decode(ids, False),
                                                  params.include_stop_str_in_output))
        return outputs

    def get_tokenizer(self) -> Tokenizer:
        """The engine's tokenizer with transformers' encode / decode / apply_chat_template."""
        if self._tokenizer is None:
            self._tokenizer = Tokenizer(self._engine)
        return self._tokenizer

    def _outputs(self, results, params: list[SamplingParams]) -> list[RequestOutput]:
        outputs = []
        for r, p in zip(results, params):
            if r.error:
                raise ValueError(r.error)
            # logprob_token_ids: the chosen token and those asked for, none of them ranked.
            vocab = self._engine.vocab_size
            logprobs_k = 0 if p.logprob_token_ids else (vocab if p.logprobs == -1 else p.logprobs)
            prompt_k = vocab if p.prompt_logprobs == -1 else p.prompt_logprobs
            outputs.append(from_core(r, self._decode_token, logprobs_k, prompt_k,
                                     str(next(self._request_counter))))
        return outputs

    def _decode_token(self, token_id: int) -> str:
        return self._engine.decode([token_id])


def _resolve_hub_names(a) -> None:
    """Hub names in a.model / a.tokenizer become local paths: through huggingface_hub when it
    is installed, else the engine's resolver (with its progress bar on stderr)."""
    model = _hub.resolve(a.model, a.revision, a.download_dir, tokenizer_only=False)
    tokenizer = _hub.resolve(a.tokenizer, a.tokenizer_revision, a.download_dir, tokenizer_only=True)
    if model is not None and tokenizer is not None:
        a.model, a.tokenizer = model, tokenizer
        return
    a.disable_progress_bar = False
    resolved = _core.resolve_model_sources(a)
    a.model, a.tokenizer = resolved.model, resolved.tokenizer


class _ProgressBar:
    """tqdm's bar counting finished requests, as vLLM shows it (none without tqdm installed).
    use_tqdm: True, False, or a tqdm-like class to use instead."""

    def __init__(self, use_tqdm: bool | Callable[..., Any], total: int) -> None:
        self._bar = None
        if not use_tqdm or total == 0:
            return
        factory = use_tqdm if callable(use_tqdm) else None
        if factory is None:
            try:
                from tqdm.auto import tqdm as factory
            except ImportError:
                return
        self._bar = factory(total=total, desc="Processed prompts", dynamic_ncols=True)
        self._total = total

    @property
    def on_progress(self) -> Callable[[int], None] | None:
        return None if self._bar is None else self._advance

    def _advance(self, finished: int) -> None:
        if finished > self._bar.n:
            self._bar.update(finished - self._bar.n)

    def __enter__(self) -> "_ProgressBar":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._bar is None:
            return
        if exc_type is None:
            self._advance(self._total)
        self._bar.close()


def _params_per_prompt(sampling_params, count: int, what: str) -> list[SamplingParams]:
    if sampling_params is None:
        sampling_params = SamplingParams()
    if isinstance(sampling_params, SamplingParams):
        return [sampling_params] * count
    params = list(sampling_params)
    if len(params) != count:
        raise ValueError(f"The lengths of {what} and sampling_params must be the same.")
    return params


def _normalize_prompts(prompts) -> list[str | list[int]]:
    if isinstance(prompts, (str, dict)):
        prompts = [prompts]
    out: list[str | list[int]] = []
    for p in prompts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict):
            if "prompt_token_ids" in p:
                out.append([int(t) for t in p["prompt_token_ids"]])
            elif "prompt" in p:
                out.append(str(p["prompt"]))
            else:
                raise ValueError("a prompt dict needs 'prompt' or 'prompt_token_ids'")
        elif isinstance(p, (list, tuple)) and all(isinstance(t, int) for t in p):
            out.append([int(t) for t in p])
        else:
            raise TypeError(f"unsupported prompt type: {type(p).__name__}")
    return out
