#!/usr/bin/env python3
"""Writes tests/data/tokenizer/hf_component_cases.json: small hand-made tokenizer.json files,
one per component setting, with the ids and decodings HF `tokenizers` gives for a set of
inputs. tests/tokenizer/test_hf_components.cc checks HfTokenizer against it.

    python3 tools/reference/make_hf_tokenizer_cases.py [OUT]

Environment of the committed file: Python 3.11, tokenizers 0.23.3.
"""
import json
import os
import sys

from tokenizers import Tokenizer

INPUTS = [
    "Hello world", "hello   world  ", " leading space", "Hey friend!", "it's we'LL they'RE",
    "abc abcabc ab", "a\tb\nc\r\nd", "1234567 89", "x=1+2; y = [3,4]", "Ça va? naïve café",
    "ﬁne Ⅻ ① ｆｕｌｌ", "ΣΊΣΥΦΟΣ İ", "日本語のテキスト", "ab<mask>cd", "a <mask> b", "<mask>",
    "x [CLS] y[SEP]", "hi<|end|>\n", "  <s>  yo ", "tab\t<mask>\tend", "", " ", "\u00a0a\u3000b",
    "e\u0301 e\u0300\u0323", "ab😀🏳️‍🌈", "don't stop", "aaaaaaa", "<unk> zz", "ab ab ab",
]


def byte_chars():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


BYTE_CHARS = byte_chars()


def byte_level_model(extra_merges, **opts):
    vocab = {c: i for i, c in enumerate(BYTE_CHARS)}
    merges = []
    for a, b in extra_merges:
        for t in (a, b, a + b):
            vocab.setdefault(t, len(vocab))
        merges.append([a, b])
    model = {"type": "BPE", "vocab": vocab, "merges": merges}
    model.update(opts)
    return model


def to_bl(s):
    return "".join(BYTE_CHARS[b] for b in s.encode())


BL_MERGES = [(to_bl(" "), "w"), ("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"),
             (to_bl(" ") + "w", "o"), ("r", "l"), ("rl", "d"), ("wo", "rld"), ("a", "b"),
             ("ab", "c"), ("'", "s"), (to_bl(" "), to_bl(" ")), ("1", "2"), ("12", "3")]


def char_model(chars, merges, **opts):
    vocab = {"<unk>": 0}
    for c in sorted(chars):
        vocab.setdefault(c, len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    model = {"type": "BPE", "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges],
             "unk_token": "<unk>"}
    model.update(opts)
    return model


def all_chars(extra=""):
    s = set("".join(INPUTS) + extra + "▁")
    return s


def added(content, id_, special=True, **flags):
    t = {"id": id_, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": not special, "special": special}
    t.update(flags)
    return t


def spec(model, normalizer=None, pre_tokenizer=None, post_processor=None, decoder=None,
         added_tokens=()):
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": list(added_tokens), "normalizer": normalizer,
            "pre_tokenizer": pre_tokenizer, "post_processor": post_processor,
            "decoder": decoder, "model": model}


BL_PRE = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
BL_DEC = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
CHAR_MERGES = [("a", "b"), ("ab", "c"), ("▁", "a"), ("l", "l"), ("e", "ll"), ("h", "ell")]
SP_DEC = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
    {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
TEMPLATE = {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1000], "tokens": ["<s>"]},
                                           "</s>": {"id": "</s>", "ids": [1001], "tokens": ["</s>"]}}}


def cases():
    c = {}
    bl = lambda **kw: spec(byte_level_model(BL_MERGES), pre_tokenizer=BL_PRE, decoder=BL_DEC, **kw)
    c["bytelevel_regex"] = bl()
    c["bytelevel_prefix_space"] = spec(byte_level_model(BL_MERGES), decoder=BL_DEC, pre_tokenizer=dict(BL_PRE, add_prefix_space=True))
    c["bytelevel_no_regex"] = spec(byte_level_model(BL_MERGES), decoder=BL_DEC, pre_tokenizer=dict(BL_PRE, use_regex=False))
    c["bytelevel_ignore_merges"] = spec(byte_level_model(BL_MERGES, ignore_merges=True), pre_tokenizer=BL_PRE, decoder=BL_DEC)
    llama3_pat = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    for beh in ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]:
        for inv in (False, True):
            c[f"split_regex_{beh}_{'inv' if inv else 'plain'}"] = spec(
                byte_level_model(BL_MERGES), decoder=BL_DEC, pre_tokenizer={"type": "Sequence", "pretokenizers": [
                    {"type": "Split", "pattern": {"Regex": r"\s+|\d"}, "behavior": beh, "invert": inv},
                    dict(BL_PRE, use_regex=False)]})
        c[f"split_string_{beh}"] = spec(byte_level_model(BL_MERGES), decoder=BL_DEC, pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"String": "ab"}, "behavior": beh, "invert": False},
            dict(BL_PRE, use_regex=False)]})
    c["split_llama3"] = spec(byte_level_model(BL_MERGES), decoder=BL_DEC, pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": llama3_pat}, "behavior": "Isolated", "invert": False},
        dict(BL_PRE, use_regex=False)]})
    c["split_onig_escapes"] = spec(byte_level_model(BL_MERGES), decoder=BL_DEC, pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": r"\w+|\h+|[\s]+|\u00e7|^x|x$"}, "behavior": "Isolated", "invert": False},
        dict(BL_PRE, use_regex=False)]})
    for pt in ["Whitespace", "WhitespaceSplit", "BertPreTokenizer"]:
        c[f"pre_{pt}"] = spec(byte_level_model(BL_MERGES), decoder=BL_DEC, pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": pt}, dict(BL_PRE, use_regex=False)]})
    for ind in (False, True):
        c[f"pre_digits_{ind}"] = spec(byte_level_model(BL_MERGES), decoder=BL_DEC, pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": ind}, dict(BL_PRE, use_regex=False)]})
    for beh in ["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]:
        c[f"pre_punct_{beh}"] = spec(byte_level_model(BL_MERGES), decoder=BL_DEC, pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Punctuation", "behavior": beh}, dict(BL_PRE, use_regex=False)]})
    # Char-level (SentencePiece-like) models.
    chars = all_chars()
    for scheme in ["always", "first", "never"]:
        for split in (True, False):
            c[f"metaspace_{scheme}_{split}"] = spec(
                char_model(chars, CHAR_MERGES), pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": split},
                decoder={"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": split},
                added_tokens=[added("<mask>", 500)])
    c["llama2_like"] = spec(char_model(chars - set("日本語"), CHAR_MERGES, byte_fallback=True, fuse_unk=True),
                            normalizer={"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                                                            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
                            decoder=SP_DEC, post_processor=TEMPLATE,
                            added_tokens=[added("<unk>", 0), added("<s>", 1000), added("</s>", 1001), added("<|end|>", 1002, rstrip=True)])
    # Byte fallback tokens for the fallback cases.
    m = char_model(chars - set("日本語😀🏳"), CHAR_MERGES, byte_fallback=True)
    for b in range(256):
        m["vocab"].setdefault(f"<0x{b:02X}>", len(m["vocab"]))
    c["byte_fallback"] = spec(m, decoder=SP_DEC)
    c["unk_fuse"] = spec(char_model(chars - set("日本語😀ü"), CHAR_MERGES, fuse_unk=True))
    c["unk_nofuse"] = spec(char_model(chars - set("日本語😀ü"), CHAR_MERGES, fuse_unk=False))
    c["no_unk"] = spec(dict(char_model(chars - set("日本語😀"), CHAR_MERGES), unk_token=None))
    c["subword_prefix"] = spec(char_model(set(chars) | {"##" + ch for ch in chars}, [], continuing_subword_prefix="##"),
                               pre_tokenizer={"type": "Whitespace"}, decoder={"type": "WordPiece", "prefix": "##", "cleanup": True})
    c["word_suffix"] = spec(char_model(set(chars) | {ch + "</w>" for ch in chars}, [], end_of_word_suffix="</w>"),
                            pre_tokenizer={"type": "WhitespaceSplit"}, decoder={"type": "BPEDecoder", "suffix": "</w>"})
    for norm in ["NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents"]:
        c[f"norm_{norm}"] = spec(byte_level_model(BL_MERGES), normalizer={"type": norm}, pre_tokenizer=BL_PRE, decoder=BL_DEC,
                                 added_tokens=[added("<mask>", 900, special=False, normalized=True)])
    c["norm_strip"] = spec(byte_level_model(BL_MERGES), normalizer={"type": "Strip", "strip_left": True, "strip_right": True}, pre_tokenizer=BL_PRE, decoder=BL_DEC)
    c["norm_bert"] = spec(byte_level_model(BL_MERGES), normalizer={"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None, "lowercase": True},
                          pre_tokenizer={"type": "BertPreTokenizer"}, decoder=BL_DEC, post_processor={"type": "BertProcessing", "sep": ["[SEP]", 1001], "cls": ["[CLS]", 1000]},
                          added_tokens=[added("[CLS]", 1000), added("[SEP]", 1001)])
    c["norm_replace_regex"] = spec(byte_level_model(BL_MERGES), normalizer={"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "}, {"type": "NFKC"}, {"type": "Lowercase"}]}, pre_tokenizer=BL_PRE, decoder=BL_DEC)
    c["added_flags"] = spec(byte_level_model(BL_MERGES), normalizer={"type": "Lowercase"}, pre_tokenizer=BL_PRE, decoder=BL_DEC,
                            post_processor={"type": "RobertaProcessing", "sep": ["</s>", 1001], "cls": ["<s>", 1000], "trim_offsets": True, "add_prefix_space": False},
                            added_tokens=[added("<s>", 1000), added("</s>", 1001), added("<mask>", 1002, lstrip=True, rstrip=True),
                                          added("[CLS]", 1003, special=False, normalized=True, single_word=True),
                                          added("ab", 1004, special=False, normalized=False, single_word=True),
                                          added("yo", 1005, special=False, normalized=True, lstrip=True),
                                          added("<|end|>", 1006, rstrip=True)])
    c["template_sequence"] = spec(byte_level_model(BL_MERGES), pre_tokenizer=BL_PRE, decoder=BL_DEC,
                                  post_processor={"type": "Sequence", "processors": [
                                      {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}, TEMPLATE]},
                                  added_tokens=[added("<s>", 1000), added("</s>", 1001)])
    c["decoder_strip_replace"] = spec(byte_level_model(BL_MERGES), pre_tokenizer=BL_PRE, decoder={"type": "Sequence", "decoders": [
        BL_DEC, {"type": "Replace", "pattern": {"Regex": "l+"}, "content": "L"}, {"type": "Strip", "content": "H", "start": 2, "stop": 3}]})
    c["no_decoder"] = spec(byte_level_model(BL_MERGES), pre_tokenizer=BL_PRE)
    return c


def safe_decode(tok, ids, skip):
    # HF's BPEDecoder panics on an empty id list; such rows carry null (not checked).
    try:
        return tok.decode(ids, skip_special_tokens=skip)
    except BaseException:  # pyo3's PanicException derives from BaseException
        return None


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "tests", "data", "tokenizer", "hf_component_cases.json")
    result = []
    models = {}  # shared model objects, referenced as {"$model": KEY} to keep the file small
    for name, sp in cases().items():
        tok = Tokenizer.from_str(json.dumps(sp))
        rows = []
        for text in INPUTS:
            ids = tok.encode(text, add_special_tokens=False).ids
            ids_special = tok.encode(text, add_special_tokens=True).ids
            row = {"text": text, "ids": ids, "decoded": safe_decode(tok, ids_special, False)}
            # Fields equal to the one before them are left out to keep the file small.
            if ids_special != ids:
                row["ids_special"] = ids_special
            skip = safe_decode(tok, ids_special, True)
            if skip != row["decoded"]:
                row["decoded_skip"] = skip
            rows.append(row)
        model_json = json.dumps(sp["model"], ensure_ascii=False, separators=(",", ":"))
        key = models.setdefault(model_json, f"m{len(models)}")
        compact = dict(sp, model={"$model": key})
        result.append({"name": name, "tokenizer": compact, "cases": rows})
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        doc = {"models": {k: json.loads(m) for m, k in models.items()}, "tokenizers": result}
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(result)} tokenizers x {len(INPUTS)} inputs to {out}")


if __name__ == "__main__":
    main()
