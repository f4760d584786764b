"""LLM.beam_search's results with vLLM's names (vllm.beam_search)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from tessera.outputs import Logprob


@dataclass
class BeamSearchSequence:
    """One beam: its tokens (prompt included; a final EOS only with include_stop_str_in_output),
    per generated token its step's candidates, its cumulative logprob and generated text.
    finish_reason is "stop" when EOS ended it (stop_reason: that token), else "length"."""

    tokens: list[int]
    logprobs: list[dict[int, Logprob]]
    lora_request: None = None
    cum_logprob: float = 0.0
    text: str | None = None
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    multi_modal_data: dict | None = None
    mm_processor_kwargs: dict | None = None


@dataclass
class BeamSearchOutput:
    """One prompt's beams, best first."""

    sequences: list[BeamSearchSequence] = field(default_factory=list)


def _candidates(entries, decode: Callable[[int], str]) -> dict[int, Logprob]:
    return {int(t): Logprob(float(lp), rank, decode(t)) for rank, (t, lp) in enumerate(entries, start=1)}


def from_core(r, decode: Callable[[int], str], decode_special: Callable[[list[int]], str],
              include_stop_str_in_output: bool) -> BeamSearchOutput:
    """A BeamSearchOutput from the engine's (tessera._core.BeamSearchOutput)."""
    sequences = []
    for s in r.sequences:
        tokens, text = list(s.token_ids), s.text
        finish_reason, stop_reason = "length", None
        if s.finished_by_eos:
            finish_reason, stop_reason = "stop", tokens[-1]
            if include_stop_str_in_output:
                text += decode_special([tokens[-1]])
            else:
                tokens.pop()
        logprobs = [_candidates(pos, decode) for pos in s.logprobs]
        sequences.append(BeamSearchSequence(tokens, logprobs, cum_logprob=float(s.cum_logprob), text=text,
                                            finish_reason=finish_reason, stop_reason=stop_reason))
    return BeamSearchOutput(sequences)
