"""SamplingParams with vLLM's names, defaults and checks (vllm.SamplingParams)."""

from __future__ import annotations

from typing import Any

from tessera import _core

# vLLM's fields that Tessera has no effect for: accepted when left at vLLM's default, refused
# by name otherwise (so a program never silently gets something else than it asked for).
_DEFAULT_ONLY = {
    "best_of": None,
    "detokenize": True,
    "spaces_between_special_tokens": True,
    "truncate_prompt_tokens": None,
    "output_kind": None,
    "guided_decoding": None,
    "structured_outputs": None,
    "logits_processors": None,
    "extra_args": None,
}


def _count(k: int, vocab_size: int | None) -> int:
    """A logprobs count, vLLM's -1 made the vocabulary's size (1 while none is known)."""
    return (vocab_size or 1) if k == -1 else k


class SamplingParams:
    """How one request's tokens are chosen and when it stops. Bad values raise ValueError
    with the engine's own message (the server answers 400 with the same text)."""

    def __init__(
        self,
        n: int = 1,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        repetition_penalty: float = 1.0,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        min_p: float = 0.0,
        seed: int | None = None,
        stop: str | list[str] | None = None,
        stop_token_ids: list[int] | None = None,
        bad_words: list[str] | None = None,
        ignore_eos: bool = False,
        max_tokens: int | None = 16,
        min_tokens: int = 0,
        logprobs: int | None = None,
        prompt_logprobs: int | None = None,
        skip_special_tokens: bool = True,
        include_stop_str_in_output: bool = False,
        logit_bias: dict[int, float] | None = None,
        allowed_token_ids: list[int] | None = None,
        logprob_token_ids: list[int] | None = None,
        **unsupported: Any,
    ) -> None:
        for name, value in unsupported.items():
            if name not in _DEFAULT_ONLY:
                raise TypeError(f"SamplingParams got an unexpected keyword argument '{name}'")
            if value != _DEFAULT_ONLY[name]:
                raise ValueError(f"SamplingParams: {name}={value!r} is not supported by Tessera")
        self.n = n
        self.presence_penalty = presence_penalty
        self.frequency_penalty = frequency_penalty
        self.repetition_penalty = repetition_penalty
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.min_p = min_p
        self.seed = seed
        self.stop = [stop] if isinstance(stop, str) else list(stop or [])
        self.stop_token_ids = list(stop_token_ids or [])
        self.bad_words = list(bad_words or [])
        self.ignore_eos = ignore_eos
        self.max_tokens = max_tokens
        self.min_tokens = min_tokens
        self.logprobs = logprobs
        self.prompt_logprobs = prompt_logprobs
        self.skip_special_tokens = skip_special_tokens
        self.include_stop_str_in_output = include_stop_str_in_output
        self.logit_bias = dict(logit_bias or {})
        self.allowed_token_ids = list(allowed_token_ids) if allowed_token_ids is not None else None
        self.logprob_token_ids = list(logprob_token_ids) if logprob_token_ids else None
        self._to_core()  # checks every field now, as vLLM's constructor does

    def _to_core(self, max_model_len: int | None = None, vocab_size: int | None = None) -> _core.SamplingParams:
        p = _core.SamplingParams()
        try:
            p.n = self.n
            p.max_tokens = self.max_tokens if self.max_tokens is not None else (max_model_len or 2**62)
            p.min_tokens = self.min_tokens
            p.temperature = self.temperature
            # vLLM: top_k 0 or -1 both mean "all tokens".
            p.top_k = -1 if self.top_k in (0, -1) else self.top_k
            p.top_p = self.top_p
            p.min_p = self.min_p
            p.presence_penalty = self.presence_penalty
            p.frequency_penalty = self.frequency_penalty
            p.repetition_penalty = self.repetition_penalty
            p.logit_bias = {int(k): float(v) for k, v in self.logit_bias.items()}
            p.bad_words = self.bad_words
            p.allowed_token_ids = self.allowed_token_ids or []
            p.seed = self.seed
            p.ignore_eos = self.ignore_eos
            p.stop_token_ids = self.stop_token_ids
            p.stop = self.stop
            p.include_stop_str_in_output = self.include_stop_str_in_output
            p.skip_special_tokens = self.skip_special_tokens
            # vLLM's -1: every token of the vocabulary (its size known once a model is loaded).
            p.logprobs = 0 if self.logprobs is None else _count(self.logprobs, vocab_size)
            if self.logprob_token_ids:  # vLLM's: these tokens' logprobs (and the chosen one's) per position
                n = len(self.logprob_token_ids)
                if self.logprobs is not None and self.logprobs != n:
                    raise ValueError("When both logprobs and logprob_token_ids are set, logprobs must equal "
                                     f"len(logprob_token_ids). Got logprobs={self.logprobs}, "
                                     f"len(logprob_token_ids)={n}.")
                p.logprob_token_ids = self.logprob_token_ids
                p.logprobs = n
            p.prompt_logprobs = -1 if self.prompt_logprobs is None else _count(self.prompt_logprobs, vocab_size)
        except TypeError as e:  # a value of the wrong type (nanobind's conversion)
            raise ValueError(f"SamplingParams: {e}") from None
        if self.allowed_token_ids is not None and not self.allowed_token_ids:
            raise ValueError("allowed_token_ids is not None and empty!")
        error = p.validate()
        if error:
            raise ValueError(error)
        return p

    def clone(self) -> "SamplingParams":
        c = SamplingParams.__new__(SamplingParams)
        c.__dict__ = {k: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v)
                      for k, v in self.__dict__.items()}
        return c

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"SamplingParams({fields})"


class BeamSearchParams:
    """vLLM's BeamSearchParams (vllm.sampling_params) for LLM.beam_search: beam_width beams,
    at most max_tokens each; ranked by cum_logprob / len^length_penalty."""

    def __init__(self, beam_width: int, max_tokens: int, ignore_eos: bool = False, temperature: float = 0.0,
                 length_penalty: float = 1.0, include_stop_str_in_output: bool = False) -> None:
        self.beam_width = beam_width
        self.max_tokens = max_tokens
        self.ignore_eos = ignore_eos
        self.temperature = temperature
        self.length_penalty = length_penalty
        self.include_stop_str_in_output = include_stop_str_in_output

    def _to_core(self) -> _core.BeamSearchParams:
        p = _core.BeamSearchParams()
        try:
            p.beam_width = self.beam_width
            p.max_tokens = self.max_tokens
            p.ignore_eos = self.ignore_eos
            p.temperature = self.temperature
            p.length_penalty = self.length_penalty
        except TypeError as e:  # a value of the wrong type (nanobind's conversion)
            raise ValueError(f"BeamSearchParams: {e}") from None
        return p

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BeamSearchParams) and self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"BeamSearchParams({fields})"
