"""Outputs with vLLM's class and attribute names (vllm.outputs, vllm.logprobs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass
class Logprob:
    """One token's log-probability at a position: its value, its rank in the distribution
    (1: the most likely; None where only "outside the top K" is known) and its text."""

    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


# Per position, token id -> Logprob (the top K, plus the chosen token when outside them).
PositionLogprobs = dict[int, Logprob]


@dataclass
class RequestMetrics:
    arrival_time: float
    first_token_time: float | None
    finished_time: float | None

    @property
    def time_to_first_token(self) -> float | None:
        return None if self.first_token_time is None else self.first_token_time - self.arrival_time


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[PositionLogprobs] | None
    finish_reason: str | None = None
    # The stop string or stop token id that ended it; None at EOS or the length limit.
    stop_reason: int | str | None = None

    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    prompt_logprobs: list[PositionLogprobs | None] | None
    outputs: list[CompletionOutput]
    finished: bool
    metrics: RequestMetrics | None = None
    num_cached_tokens: int = 0
    encoder_prompt: str | None = None
    encoder_prompt_token_ids: list[int] | None = None
    lora_request: None = None
    kv_transfer_params: None = None
    multi_modal_placeholders: dict = field(default_factory=dict)


def _position(entries, decode: Callable[[int], str], ranked: int) -> PositionLogprobs:
    """One position's (id, logprob) pairs, best first; the first `ranked` are the top K."""
    out: PositionLogprobs = {}
    for i, (token, logprob) in enumerate(entries):
        if token not in out:
            out[token] = Logprob(logprob, i + 1 if i < ranked else None, decode(token))
    return out


def from_core(r, decode: Callable[[int], str], logprobs_k: int | None, prompt_logprobs_k: int | None,
              request_id: str) -> RequestOutput:
    """A RequestOutput from the engine's (tessera._core.RequestOutput)."""
    outputs = []
    for o in r.outputs:
        lps = None
        if logprobs_k is not None:
            lps = [_position(pos, decode, logprobs_k) for pos in o.logprobs]
        stop_reason = o.stop_string if o.stop_string is not None else o.stop_token
        outputs.append(CompletionOutput(int(o.index), o.text, list(o.token_ids), o.cumulative_logprob, lps,
                                        o.finish_reason or None, stop_reason))
    prompt_lps = None
    if prompt_logprobs_k is not None:
        prompt_lps = [None]
        ranks = r.prompt_logprob_ranks
        for i, pos in enumerate(r.prompt_logprobs[1:], start=1):
            entry = _position(pos, decode, prompt_logprobs_k)
            actual = r.prompt_token_ids[i]
            if actual in entry and i < len(ranks):
                entry[actual].rank = int(ranks[i])
            prompt_lps.append(entry)
    m = r.metrics
    metrics = RequestMetrics(m.arrival_time, m.first_token_time or None, m.finished_time or None)
    return RequestOutput(request_id, r.prompt, list(r.prompt_token_ids), prompt_lps, outputs, bool(r.finished),
                         metrics, int(r.num_cached_tokens))
