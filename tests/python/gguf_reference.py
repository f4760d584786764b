"""Independent references for the default model, from its GGUF file alone: the metadata as the
GGUF spec lays it out, the tokenizer rebuilt with HF `tokenizers` as transformers' GGUF
conversion does, and its chat template rendered with jinja2 as transformers'
apply_chat_template does."""

from __future__ import annotations

import json
import struct

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
# llama.cpp's token types: 3 is CONTROL (special), 4 USER_DEFINED (added, not special).
CONTROL, USER_DEFINED = 3, 4


def read_metadata(path: str) -> dict:
    """The key/value metadata of a GGUF file (the tensors are not read)."""
    with open(path, "rb") as f:
        data = f.read(64 << 20)  # the metadata of a small model comes first, well within this
    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    pos = 8
    _, count = struct.unpack_from("<QQ", data, pos)
    pos += 16

    def string(pos):
        (n,) = struct.unpack_from("<Q", data, pos)
        return data[pos + 8:pos + 8 + n].decode("utf-8", errors="surrogateescape"), pos + 8 + n

    def value(kind, pos):
        if kind == _STRING:
            return string(pos)
        if kind == _ARRAY:
            item, n = struct.unpack_from("<IQ", data, pos)
            pos += 12
            if item in _SCALARS:
                size = struct.calcsize(_SCALARS[item])
                items = list(struct.unpack_from("<" + _SCALARS[item][1] * n, data, pos))
                return items, pos + size * n
            items = []
            for _ in range(n):
                v, pos = value(item, pos)
                items.append(v)
            return items, pos
        (v,) = struct.unpack_from(_SCALARS[kind], data, pos)
        return v, pos + struct.calcsize(_SCALARS[kind])

    meta = {}
    for _ in range(count):
        key, pos = string(pos)
        (kind,) = struct.unpack_from("<I", data, pos)
        meta[key], pos = value(kind, pos + 4)
    return meta


def hf_tokenizer(meta: dict):
    """A `tokenizers` Tokenizer from a GPT-2-style (byte-level BPE) GGUF vocabulary, as
    transformers' GGUFGPTConverter builds it; with tokenizer.ggml.pre "smollm" the
    pre-tokenizer is SmolLM2's own (single digits, then ByteLevel), as in its tokenizer.json."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    if meta["tokenizer.ggml.model"] != "gpt2":
        raise ValueError("only byte-level BPE vocabularies are rebuilt here")
    tokens = meta["tokenizer.ggml.tokens"]
    merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges, fuse_unk=False))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if meta.get("tokenizer.ggml.pre") == "smollm":
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        tok.pre_tokenizer = byte_level
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    types = meta.get("tokenizer.ggml.token_type", [])
    tok.add_tokens([AddedToken(tokens[i], special=types[i] == CONTROL, normalized=False)
                    for i in range(len(types)) if types[i] in (CONTROL, USER_DEFINED)])
    return tok


def render_chat_template(source: str, messages: list, bos_token: str, eos_token: str,
                         add_generation_prompt: bool, **variables) -> str:
    """transformers' render_jinja_template: jinja2's sandbox with trim_blocks/lstrip_blocks,
    loopcontrols, HF's tojson and raise_exception."""
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    context = {"tools": None, "documents": None, "bos_token": bos_token, "eos_token": eos_token, **variables}
    return env.from_string(source).render(messages=messages, add_generation_prompt=add_generation_prompt, **context)
