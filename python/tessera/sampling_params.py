"""SamplingParams with vLLM's names, defaults and checks (vllm.SamplingParams)."""

from __future__ import annotations

import copy
import json as _json
from dataclasses import dataclass
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
    "logits_processors": None,
    "extra_args": None,
}


@dataclass
class StructuredOutputsParams:
    """vLLM's StructuredOutputsParams (vllm.sampling_params): the output is constrained to
    exactly one of json (a JSON Schema: a dict, JSON text, or a pydantic model class), regex,
    choice, grammar (EBNF, GBNF style) or json_object. Bad values raise ValueError when
    constructed; whitespace_pattern, structural_tag and disable_additional_properties=True are
    not supported yet (ValueError)."""

    json: str | dict | None = None
    regex: str | None = None
    choice: list[str] | None = None
    grammar: str | None = None
    json_object: bool | None = None
    disable_any_whitespace: bool = False
    disable_additional_properties: bool = False
    whitespace_pattern: str | None = None
    structural_tag: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.json, type) and hasattr(self.json, "model_json_schema"):  # a pydantic model
            self.json = self.json.model_json_schema()
        kinds = [self.json is not None, self.regex is not None, self.choice is not None, self.grammar is not None,
                 bool(self.json_object), self.structural_tag is not None]
        if sum(kinds) > 1:  # vLLM's texts
            raise ValueError("You can only use one kind of structured outputs constraint "
                             f"but multiple are specified: {self.__dict__}")
        if sum(kinds) < 1:
            raise ValueError("You must use one kind of structured outputs constraint "
                             f"but none are specified: {self.__dict__}")
        for name in ("whitespace_pattern", "structural_tag"):
            if getattr(self, name) is not None:
                raise ValueError(f"StructuredOutputsParams: {name} is not supported by Tessera yet")
        if self.disable_additional_properties:
            raise ValueError("StructuredOutputsParams: disable_additional_properties=True is not supported by "
                             "Tessera yet")
        self._to_core()  # checks every field now

    def _schema_text(self) -> str:
        if isinstance(self.json, dict):
            try:
                return _json.dumps(self.json, ensure_ascii=False)
            except (TypeError, ValueError) as e:
                raise ValueError(f"StructuredOutputsParams: json is not JSON-serializable: {e}") from None
        if isinstance(self.json, str):
            try:
                schema = _json.loads(self.json)
            except ValueError as e:
                raise ValueError(f"StructuredOutputsParams: json is not valid JSON: {e}") from None
            if not isinstance(schema, dict):
                raise ValueError("StructuredOutputsParams: json must hold a JSON object (a JSON Schema)")
            return self.json
        raise ValueError("StructuredOutputsParams: json must be a dict, a str holding JSON or a pydantic model "
                         f"class, not {type(self.json).__name__}")

    def _to_core(self) -> _core.StructuredOutputsParams:
        p = _core.StructuredOutputsParams()
        for name in ("regex", "grammar"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"StructuredOutputsParams: {name} must be a str, not {type(value).__name__}")
        if self.choice is not None:
            if isinstance(self.choice, (str, bytes)) or not all(isinstance(c, str) for c in self.choice):
                raise ValueError("StructuredOutputsParams: choice must be a list of str")
            if not self.choice:
                raise ValueError("StructuredOutputsParams: choice must not be empty")
        if self.json is not None:
            p.json = self._schema_text()
        p.regex = self.regex
        p.choice = list(self.choice) if self.choice is not None else None
        p.grammar = self.grammar
        try:
            p.json_object = bool(self.json_object)
            p.disable_any_whitespace = self.disable_any_whitespace
        except TypeError as e:  # a value of the wrong type (nanobind's conversion)
            raise ValueError(f"StructuredOutputsParams: {e}") from None
        return p


@dataclass
class GuidedDecodingParams(StructuredOutputsParams):
    """vLLM's older name (SamplingParams(guided_decoding=...)), with its backend and
    disable_fallback fields, accepted without effect (the engine has one backend, xgrammar)."""

    backend: str | None = None
    disable_fallback: bool = False


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
        structured_outputs: StructuredOutputsParams | None = None,
        guided_decoding: StructuredOutputsParams | None = None,
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
        if guided_decoding is not None:  # vLLM's older name for the same field
            if structured_outputs is not None:
                raise ValueError("SamplingParams: give structured_outputs or guided_decoding, not both")
            structured_outputs = guided_decoding
        if structured_outputs is not None and not isinstance(structured_outputs, StructuredOutputsParams):
            raise ValueError("SamplingParams: structured_outputs must be a StructuredOutputsParams, not "
                             f"{type(structured_outputs).__name__}")
        self.structured_outputs = structured_outputs
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
            if self.structured_outputs is not None:
                p.structured_outputs = self.structured_outputs._to_core()
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
        c.__dict__ = {k: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict)
                          else copy.deepcopy(v) if isinstance(v, StructuredOutputsParams) else v)
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
