"""LLM.get_tokenizer() against HF `tokenizers` rebuilt from the same GGUF (as transformers'
GGUF conversion builds it) and the chat template rendered by jinja2."""

from __future__ import annotations

import json
import os
import random

import pytest

from gguf_reference import hf_tokenizer, read_metadata, render_chat_template

pytest.importorskip("tokenizers")

TEXTS = [
    "Hello world", "The capital of France is", "  leading and trailing  ", "digits 1234567 and 3.14159",
    "def f(x):\n    return x ** 2  # square\n", "Ünïcödé, 中文, русский, العربية, emoji 🦙🚀👍🏽",
    "<|im_start|>user\nHi<|im_end|>\n", "<|endoftext|>text after end", "", "\n\n\t tabs\r\n",
]


@pytest.fixture(scope="module")
def meta(model_path):
    return read_metadata(model_path)


@pytest.fixture(scope="module")
def ref(meta):
    return hf_tokenizer(meta)


@pytest.fixture(scope="module")
def texts():
    golden = os.path.join(os.path.dirname(__file__), "..", "data", "tokenizer", "smollm2_gguf_golden.jsonl")
    with open(golden, encoding="utf-8") as f:
        return TEXTS + [json.loads(line)["text"] for line in f]


def test_encode_equals_hf_tokenizers(llm, ref, texts):
    tok = llm.get_tokenizer()
    for text in texts:
        for special in (True, False):
            want = ref.encode(text, add_special_tokens=special).ids
            assert tok.encode(text, add_special_tokens=special) == want, text
    assert tok("Hello world").input_ids == ref.encode("Hello world").ids
    assert tok(["a b", "c"])["input_ids"] == [ref.encode("a b").ids, ref.encode("c").ids]


def test_decode_equals_hf_tokenizers(llm, ref, texts):
    tok = llm.get_tokenizer()
    rng = random.Random(7)
    sequences = [ref.encode(t).ids for t in texts]
    sequences += [[rng.randrange(len(tok)) for _ in range(rng.randrange(1, 40))] for _ in range(50)]
    sequences += [[1, 504, 3575, 2, 0, 198]]  # special tokens among text
    for ids in sequences:
        for skip in (True, False):
            assert tok.decode(ids, skip_special_tokens=skip) == ref.decode(ids, skip_special_tokens=skip), ids
    assert tok.decode(ids) == ref.decode(ids, skip_special_tokens=False)  # transformers' default keeps them
    want = [ref.decode(s) for s in sequences[:3]]
    assert tok.batch_decode(sequences[:3], skip_special_tokens=True) == want


def test_special_tokens_and_size(llm, meta, ref):
    tok = llm.get_tokenizer()
    tokens = meta["tokenizer.ggml.tokens"]
    assert tok.eos_token_id == meta["tokenizer.ggml.eos_token_id"]
    assert tok.bos_token_id == meta["tokenizer.ggml.bos_token_id"]
    assert tok.eos_token == tokens[tok.eos_token_id] and tok.bos_token == tokens[tok.bos_token_id]
    assert len(tok) == tok.vocab_size == ref.get_vocab_size(with_added_tokens=True)
    assert llm.get_tokenizer() is tok


def test_prompts_are_tokenized_by_the_same_tokenizer(llm):
    from tessera import SamplingParams
    out = llm.generate("The capital of France is", SamplingParams(max_tokens=1), use_tqdm=False)[0]
    assert out.prompt_token_ids == llm.get_tokenizer().encode("The capital of France is")


def test_apply_chat_template_equals_jinja2(llm, meta, ref):
    pytest.importorskip("jinja2")
    tok = llm.get_tokenizer()
    conv = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "What is 2+2?"}]
    tokens = meta["tokenizer.ggml.tokens"]
    for agp in (False, True):
        text = render_chat_template(meta["tokenizer.chat_template"], conv, tokens[tok.bos_token_id],
                                    tokens[tok.eos_token_id], agp)
        assert tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=agp) == text
        want = ref.encode(text, add_special_tokens=False).ids
        assert tok.apply_chat_template(conv, add_generation_prompt=agp) == want
    batch = tok.apply_chat_template([conv, conv[:1]], tokenize=False)
    assert batch == [tok.apply_chat_template(conv, tokenize=False), tok.apply_chat_template(conv[:1], tokenize=False)]
    enc = tok.apply_chat_template(conv, return_dict=True)
    assert enc["input_ids"] == tok.apply_chat_template(conv) and enc.attention_mask == [1] * len(enc.input_ids)
    # Extra keyword arguments are template variables.
    assert tok.apply_chat_template(conv, chat_template="{{ who }}: {{ messages | length }}", who="n",
                                   tokenize=False) == "n: 3"


def test_bad_ids_raise_value_error(llm):
    with pytest.raises(ValueError):
        llm.get_tokenizer().decode([10**7])


def test_convert_ids_and_tokens_equal_hf_tokenizers(llm, ref, texts):
    tok = llm.get_tokenizer()
    rng = random.Random(11)
    ids = sorted({i for t in texts for i in ref.encode(t).ids} | {rng.randrange(len(tok)) for _ in range(300)})
    ids += [0, 1, 2]
    assert tok.convert_ids_to_tokens(ids) == [ref.id_to_token(i) for i in ids]
    assert tok.convert_ids_to_tokens(ids[0]) == ref.id_to_token(ids[0])
    strings = [ref.id_to_token(i) for i in ids]
    assert tok.convert_tokens_to_ids(strings) == [ref.token_to_id(s) for s in strings]
    assert tok.convert_tokens_to_ids("no-such-token-in-the-vocabulary") is None
    assert tok.convert_ids_to_tokens(len(tok) + 5) is None
    # skip_special_tokens drops the special tokens (<|im_start|> etc.), as transformers does.
    with_special = ref.encode("<|im_start|>user\nHi<|im_end|>").ids
    kept = tok.convert_ids_to_tokens(with_special, skip_special_tokens=True)
    assert kept == [ref.id_to_token(i) for i in with_special if ref.decode([i], skip_special_tokens=True) != ""
                    or ref.decode([i], skip_special_tokens=False) == ""]
    assert len(kept) < len(with_special)


def test_call_pads_truncates_and_returns_tensors_as_hf_tokenizers(llm, ref):
    np = pytest.importorskip("numpy")
    tok = llm.get_tokenizer()
    batch = ["Hello world", "The capital of France is", "a"]
    ref.enable_padding(pad_id=tok.pad_token_id, pad_token=tok.convert_ids_to_tokens(tok.pad_token_id))
    want = ref.encode_batch(batch)
    got = tok(batch, padding=True, return_tensors="np")
    assert got["input_ids"].dtype == np.int64
    assert got["input_ids"].tolist() == [e.ids for e in want]
    assert got.attention_mask.tolist() == [e.attention_mask for e in want]
    ref.no_padding()
    ref.enable_truncation(max_length=3)
    cut = tok(batch, truncation=True, max_length=3)
    assert cut["input_ids"] == [e.ids for e in ref.encode_batch(batch)]
    ref.no_truncation()
    padded = tok("Hello", padding="max_length", max_length=6)
    assert padded["input_ids"][len(ref.encode("Hello").ids):] == [tok.pad_token_id] * (6 - len(ref.encode("Hello").ids))
    assert sum(padded["attention_mask"]) == len(ref.encode("Hello").ids)
    with pytest.raises(ValueError, match="different lengths"):
        tok(batch, return_tensors="np")

