"""LLM: vLLM's offline API (vllm.LLM) over Tessera's engine."""

from __future__ import annotations

import itertools
from typing import Any, Sequence

from tessera import _core
from tessera.outputs import RequestOutput, from_core
from tessera.sampling_params import SamplingParams

_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")

# vLLM's engine arguments that Tessera takes as they are, or whose vLLM default is the only
# value it runs today: any other value raises ValueError naming the argument.
_ONLY_DEFAULT = {
    "quantization": None,
    "tensor_parallel_size": 1,
    "pipeline_parallel_size": 1,
    "cpu_offload_gb": 0,
    "speculative_config": None,
    "enable_lora": False,
    "max_loras": 1,
    "tokenizer_mode": "auto",
    "skip_tokenizer_init": False,
    "revision": None,
    "tokenizer_revision": None,
    "hf_overrides": None,
}
# Accepted and without effect here (documented in docs/python.md).
_NO_EFFECT = ("trust_remote_code", "swap_space", "disable_custom_all_reduce", "download_dir",
              "compilation_config", "max_seq_len_to_capture", "disable_async_output_proc")


class LLM:
    """An engine for offline batches: `LLM(model=path).generate(prompts, SamplingParams(...))`."""

    def __init__(
        self,
        model: str,
        tokenizer: str | None = None,
        dtype: str = "auto",
        seed: int | None = 0,
        gpu_memory_utilization: float = 0.9,
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
        if dtype not in ("auto", "bfloat16"):
            # Tessera runs bf16 on CUDA and its own precision on the CPU today.
            raise ValueError(f"LLM: dtype={dtype!r} is not supported by Tessera yet (auto, bfloat16)")
        a = _core.EngineArgs()
        a.model = str(model)
        a.tokenizer = tokenizer or ""
        a.device = device
        a.gpu_memory_utilization = gpu_memory_utilization
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

    def generate(
        self,
        prompts: str | dict | Sequence[str | dict | list[int]],
        sampling_params: SamplingParams | Sequence[SamplingParams] | None = None,
        use_tqdm: bool = True,
        priority: list[int] | None = None,
    ) -> list[RequestOutput]:
        """One RequestOutput per prompt, in input order. Prompts: a string, a list of strings,
        {"prompt": text} or {"prompt_token_ids": [...]} (or a list of those)."""
        inputs = _normalize_prompts(prompts)
        if sampling_params is None:
            sampling_params = SamplingParams()
        if isinstance(sampling_params, SamplingParams):
            params = [sampling_params] * len(inputs)
        else:
            params = list(sampling_params)
            if len(params) != len(inputs):
                raise ValueError("The lengths of prompts and sampling_params must be the same.")
        if priority is not None and any(p != 0 for p in priority):
            raise ValueError("LLM.generate: priority is not supported by Tessera's offline API yet")
        core_params = [p._to_core(self._engine.max_model_len) for p in params]
        results = self._engine.generate(inputs, core_params)
        outputs = []
        for r, p in zip(results, params):
            if r.error:
                raise ValueError(r.error)
            outputs.append(from_core(r, self._decode_token, p.logprobs, p.prompt_logprobs,
                                     str(next(self._request_counter))))
        return outputs

    def _decode_token(self, token_id: int) -> str:
        return self._engine.decode([token_id])


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
