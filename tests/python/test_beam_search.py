"""LLM.beam_search with vLLM's BeamSearchParams, against `tessera generate --use-beam-search`
and greedy decoding."""

from __future__ import annotations

import json
import math
import subprocess

import pytest

from tessera import BeamSearchOutput, BeamSearchParams, BeamSearchSequence, SamplingParams
from tessera.sampling_params import BeamSearchParams as FromSamplingParams

PROMPTS = ["The capital of France is", "def fibonacci(n):"]


def score(seq: BeamSearchSequence, eos: int, length_penalty: float) -> float:
    """vLLM's get_beam_search_score: a final EOS does not count in the length."""
    length = len(seq.tokens) - (1 if seq.tokens[-1] == eos else 0)
    return seq.cum_logprob / (length ** length_penalty)


def run_cli(tessera_bin, model_path, tmp_path, width, max_tokens, length_penalty):
    prompts_file = tmp_path / "prompts.jsonl"
    prompts_file.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in PROMPTS))
    cli = subprocess.run([tessera_bin, "generate", "--model", model_path, "--device", "cpu", "--max-model-len", "1024",
                          "--use-beam-search", "-n", str(width), "--max-tokens", str(max_tokens), "--length-penalty",
                          str(length_penalty), "--prompts-file", str(prompts_file), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    return [json.loads(line) for line in cli.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("length_penalty", [1.0, 0.5])
def test_equals_the_cli_token_for_token(llm, model_path, tessera_bin, tmp_path, length_penalty):
    width, max_tokens = 3, 12
    params = BeamSearchParams(beam_width=width, max_tokens=max_tokens, length_penalty=length_penalty,
                              include_stop_str_in_output=True)  # the CLI's outputs keep the EOS token
    outs = llm.beam_search(PROMPTS, params)
    refs = run_cli(tessera_bin, model_path, tmp_path, width, max_tokens, length_penalty)
    assert len(outs) == len(refs) == len(PROMPTS)
    for out, ref in zip(outs, refs):
        assert isinstance(out, BeamSearchOutput)
        prompt_len = len(ref["prompt_token_ids"])
        assert len(out.sequences) == len(ref["outputs"]) == width
        for seq, r in zip(out.sequences, ref["outputs"]):
            assert seq.tokens[:prompt_len] == ref["prompt_token_ids"]
            assert seq.tokens[prompt_len:] == r["token_ids"]
            assert math.isclose(seq.cum_logprob, r["cumulative_logprob"], rel_tol=1e-6, abs_tol=1e-6)
            assert seq.finish_reason == r["finish_reason"]
            assert seq.stop_reason == r.get("stop_reason")


def test_beams_are_distinct_sorted_by_score_and_their_logprobs_add_up(llm):
    eos = llm.get_tokenizer().eos_token_id
    reasons = set()
    for penalty in (1.0, 0.3):
        for out in llm.beam_search(PROMPTS, BeamSearchParams(beam_width=3, max_tokens=8, length_penalty=penalty)):
            seqs = out.sequences
            assert len(seqs) == 3
            assert len({tuple(s.tokens) for s in seqs}) == 3
            scores = [score(s, eos, penalty) for s in seqs]
            assert scores == sorted(scores, reverse=True)
            for s in seqs:
                # Each step's candidates hold the token taken, ranked. A final EOS stays out of
                # tokens (include_stop_str_in_output=False), its step's candidates do not.
                ended_by_eos = s.finish_reason == "stop"
                generated = s.tokens[len(s.tokens) - len(s.logprobs) + ended_by_eos:] + [s.stop_reason] * ended_by_eos
                assert all(t in pos for t, pos in zip(generated, s.logprobs))
                assert all(sorted(v.rank for v in pos.values()) == list(range(1, len(pos) + 1)) for pos in s.logprobs)
                total = sum(pos[t].logprob for t, pos in zip(generated, s.logprobs))
                assert math.isclose(s.cum_logprob, total, rel_tol=1e-5, abs_tol=1e-4)
                assert s.text == llm.get_tokenizer().decode(generated, skip_special_tokens=True)
                if ended_by_eos:
                    assert s.stop_reason == eos and s.tokens[-1] != eos
                reasons.add(s.finish_reason)
    assert reasons == {"stop", "length"}  # both kinds of beams were checked


def test_width_one_without_eos_is_greedy(llm):
    beam = llm.beam_search(PROMPTS, BeamSearchParams(beam_width=1, max_tokens=16, ignore_eos=True))
    greedy = llm.generate(PROMPTS, SamplingParams(temperature=0.0, max_tokens=16, ignore_eos=True), use_tqdm=False)
    for b, g in zip(beam, greedy):
        assert b.sequences[0].tokens == g.prompt_token_ids + g.outputs[0].token_ids
        assert b.sequences[0].text == g.outputs[0].text


def test_prompt_forms_give_the_same_beams(llm):
    params = BeamSearchParams(beam_width=2, max_tokens=6)
    ids = llm.get_tokenizer().encode(PROMPTS[0])
    outs = llm.beam_search([PROMPTS[0], {"prompt": PROMPTS[0]}, {"prompt_token_ids": ids}], params)
    assert outs[0].sequences == outs[1].sequences == outs[2].sequences


def test_bad_params(llm):
    assert FromSamplingParams is BeamSearchParams
    with pytest.raises(ValueError, match="beam_width"):
        llm.beam_search(PROMPTS, BeamSearchParams(beam_width=0, max_tokens=4))
    with pytest.raises(TypeError):
        llm.beam_search(PROMPTS, SamplingParams())
    with pytest.raises(ValueError, match="vocab"):
        llm.beam_search([{"prompt_token_ids": [10**7]}], BeamSearchParams(beam_width=2, max_tokens=2))
