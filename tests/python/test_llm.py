"""tessera.LLM and SamplingParams as vLLM's users call them, against the default model."""

from __future__ import annotations

import json
import math
import subprocess

import pytest

from tessera import LLM, CompletionOutput, Logprob, RequestOutput, SamplingParams

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time"]


def test_greedy_equals_the_cli_token_for_token(llm, model_path, tessera_bin, tmp_path):
    outs = llm.generate(PROMPTS, SamplingParams(temperature=0.0, max_tokens=24))
    prompts_file = tmp_path / "prompts.jsonl"
    prompts_file.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in PROMPTS))
    cli = subprocess.run([tessera_bin, "generate", "--model", model_path, "--device", "cpu", "--temperature", "0",
                          "--max-tokens", "24", "--max-model-len", "1024", "--prompts-file", str(prompts_file),
                          "--json"], capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    lines = [json.loads(line) for line in cli.stdout.splitlines() if line.strip()]
    assert len(lines) == len(PROMPTS)
    for out, ref in zip(outs, lines):
        assert out.prompt == ref["prompt"]
        assert out.prompt_token_ids == ref["prompt_token_ids"]
        assert out.outputs[0].token_ids == ref["outputs"][0]["token_ids"]
        assert out.outputs[0].text == ref["outputs"][0]["text"]
        assert out.outputs[0].finish_reason == ref["outputs"][0]["finish_reason"]


def test_outputs_have_vllms_attributes(llm):
    out = llm.generate("Hello", SamplingParams(max_tokens=4, temperature=0.0))[0]
    assert isinstance(out, RequestOutput)
    for name in ("request_id", "prompt", "prompt_token_ids", "prompt_logprobs", "outputs", "finished", "metrics",
                 "num_cached_tokens", "encoder_prompt", "encoder_prompt_token_ids", "lora_request"):
        assert hasattr(out, name), name
    assert out.finished is True
    assert out.prompt_logprobs is None
    c = out.outputs[0]
    assert isinstance(c, CompletionOutput)
    for name in ("index", "text", "token_ids", "cumulative_logprob", "logprobs", "finish_reason", "stop_reason"):
        assert hasattr(c, name), name
    assert c.index == 0 and c.finish_reason == "length" and len(c.token_ids) == 4
    assert c.logprobs is None and c.cumulative_logprob is None
    assert isinstance(c.token_ids, list) and all(isinstance(t, int) for t in c.token_ids)


def test_prompt_forms_give_the_same_tokens(llm):
    p = SamplingParams(temperature=0.0, max_tokens=6)
    text = llm.generate("The capital of France is", p)[0]
    as_dict = llm.generate({"prompt": "The capital of France is"}, p)[0]
    as_ids = llm.generate({"prompt_token_ids": text.prompt_token_ids}, p)[0]
    in_list = llm.generate(["The capital of France is"], p)[0]
    for other in (as_dict, as_ids, in_list):
        assert other.outputs[0].token_ids == text.outputs[0].token_ids
    assert as_ids.prompt is None and as_ids.prompt_token_ids == text.prompt_token_ids


def test_one_sampling_params_per_prompt(llm):
    outs = llm.generate(PROMPTS[:2], [SamplingParams(max_tokens=3, temperature=0.0),
                                      SamplingParams(max_tokens=7, temperature=0.0)])
    assert [len(o.outputs[0].token_ids) for o in outs] == [3, 7]
    with pytest.raises(ValueError, match="lengths"):
        llm.generate(PROMPTS, [SamplingParams()])


def test_n_with_a_seed_is_reproducible(llm):
    p = SamplingParams(n=3, temperature=1.0, seed=1234, max_tokens=12)
    a = llm.generate("Tell me a story", p)[0]
    b = llm.generate("Tell me a story", p)[0]
    assert [c.index for c in a.outputs] == [0, 1, 2]
    assert [c.token_ids for c in a.outputs] == [c.token_ids for c in b.outputs]
    assert len({tuple(c.token_ids) for c in a.outputs}) > 1  # the children draw differently


def test_logprobs_are_dicts_of_logprob_best_first(llm):
    out = llm.generate("The capital of France is", SamplingParams(temperature=0.0, max_tokens=5, logprobs=3))[0]
    c = out.outputs[0]
    assert len(c.logprobs) == 5
    total = 0.0
    for token, pos in zip(c.token_ids, c.logprobs):
        assert token in pos  # greedy: the chosen token is the best
        assert pos[token].rank == 1
        assert all(isinstance(v, Logprob) for v in pos.values())
        ranked = sorted((v.rank, v.logprob) for v in pos.values() if v.rank is not None)
        assert [r for r, _ in ranked] == [1, 2, 3]
        assert all(x >= y for (_, x), (_, y) in zip(ranked, ranked[1:]))
        assert isinstance(pos[token].decoded_token, str)
        total += pos[token].logprob
    assert math.isclose(c.cumulative_logprob, total, rel_tol=1e-5, abs_tol=1e-5)


def test_logprob_token_ids(llm):
    prompt = "The capital of France is"
    top = llm.generate(prompt, SamplingParams(temperature=0.0, max_tokens=3, logprobs=5))[0].outputs[0]
    asked = [t for t in top.logprobs[0] if t != top.token_ids[0]][:2] + [1000]
    out = llm.generate(prompt, SamplingParams(temperature=0.0, max_tokens=3, logprob_token_ids=asked))[0].outputs[0]
    assert out.token_ids == top.token_ids
    for i, (token, pos) in enumerate(zip(out.token_ids, out.logprobs)):
        assert list(pos)[0] == token  # the chosen token first, then those asked for
        assert set(pos) == {token, *asked}
        for t in top.logprobs[i]:
            if t in pos:  # the same value as a top-k request reports
                assert math.isclose(pos[t].logprob, top.logprobs[i][t].logprob, abs_tol=1e-5)
    with pytest.raises(ValueError, match="logprobs must equal len"):
        SamplingParams(logprobs=2, logprob_token_ids=[1, 2, 3])


def test_minus_one_is_the_whole_vocabulary(llm):
    out = llm.generate([[504, 3575, 282]], SamplingParams(temperature=0.0, max_tokens=1, logprobs=-1,
                                                          prompt_logprobs=-1))[0]
    vocab = llm._engine.vocab_size
    pos = out.outputs[0].logprobs[0]
    assert sorted(pos) == list(range(vocab))
    assert math.isclose(math.fsum(math.exp(v.logprob) for v in pos.values()), 1.0, abs_tol=1e-3)
    assert sorted(v.rank for v in pos.values()) == list(range(1, vocab + 1))
    assert all(len(p) == vocab for p in out.prompt_logprobs[1:])


def test_prompt_logprobs(llm):
    out = llm.generate("The capital of France is", SamplingParams(max_tokens=1, prompt_logprobs=2))[0]
    lps = out.prompt_logprobs
    assert lps[0] is None and len(lps) == len(out.prompt_token_ids)
    for token, pos in zip(out.prompt_token_ids[1:], lps[1:]):
        assert token in pos and pos[token].rank >= 1
        assert all(v.logprob <= 0.0 for v in pos.values())


def test_stop_strings_and_reasons(llm):
    out = llm.generate("Count: 1, 2, 3,", SamplingParams(temperature=0.0, max_tokens=30, stop=[" 6"]))[0]
    c = out.outputs[0]
    assert c.finish_reason == "stop" and c.stop_reason == " 6"
    assert " 6" not in c.text


def test_bad_sampling_params_raise_value_error():
    with pytest.raises(ValueError, match="temperature"):
        SamplingParams(temperature=-1.0)
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0.0)
    with pytest.raises(ValueError):
        SamplingParams(max_tokens=0)
    with pytest.raises(TypeError):
        SamplingParams(no_such_field=1)
    with pytest.raises(ValueError, match="best_of"):
        SamplingParams(best_of=2)
    SamplingParams(best_of=None, detokenize=True)  # vLLM's defaults are accepted


def test_dtype_half_equals_the_cli_with_dtype_half(model_path, tessera_bin, tmp_path):
    # float16 weights (the checkpoint's float tensors converted at load) and a float16 KV cache.
    half = LLM(model=model_path, device="cpu", dtype="half", max_model_len=1024, max_num_seqs=4)
    outs = half.generate(PROMPTS, SamplingParams(temperature=0.0, max_tokens=16))
    prompts_file = tmp_path / "prompts.jsonl"
    prompts_file.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in PROMPTS))
    cli = subprocess.run([tessera_bin, "generate", "--model", model_path, "--device", "cpu", "--dtype", "float16",
                          "--temperature", "0", "--max-tokens", "16", "--max-model-len", "1024", "--prompts-file",
                          str(prompts_file), "--json"], capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    lines = [json.loads(line) for line in cli.stdout.splitlines() if line.strip()]
    assert [o.outputs[0].token_ids for o in outs] == [ref["outputs"][0]["token_ids"] for ref in lines]
    assert all(len(o.outputs[0].token_ids) == 16 for o in outs)


def test_bad_dtype_is_refused(model_path):
    with pytest.raises(ValueError, match="dtype"):
        LLM(model=model_path, device="cpu", dtype="float8")


def test_engine_arguments_not_honoured_yet_name_themselves(model_path):
    with pytest.raises(ValueError, match="tensor_parallel_size"):
        LLM(model=model_path, device="cpu", tensor_parallel_size=2)
    with pytest.raises(ValueError, match="quantization"):
        LLM(model=model_path, device="cpu", quantization="awq")
    with pytest.raises(TypeError):
        LLM(model=model_path, device="cpu", no_such_argument=1)
    with pytest.raises(ValueError, match="nonexistent.*no such file"):
        LLM(model="/nonexistent/model.gguf", device="cpu")


def test_out_of_vocabulary_prompt_ids_are_a_value_error(llm):
    with pytest.raises(ValueError, match="vocab"):
        llm.generate({"prompt_token_ids": [10**7]}, SamplingParams(max_tokens=2))
