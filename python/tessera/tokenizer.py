"""The model's tokenizer with transformers' method names (what vLLM's LLM.get_tokenizer() gives)."""

from __future__ import annotations

import json
from typing import Any, Sequence


class BatchEncoding(dict):
    """transformers' BatchEncoding: a dict whose keys are attributes too."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _tensor(rows: list[list[int]], kind: str):
    """rows as a [batch, length] tensor of int64 ("np": numpy, "pt": torch)."""
    if len({len(r) for r in rows}) > 1:
        raise ValueError("Unable to create tensor: the sequences have different lengths; use padding=True")
    if kind == "np":
        import numpy as np
        return np.array(rows, dtype=np.int64)
    if kind == "pt":
        import torch
        return torch.tensor(rows, dtype=torch.int64)
    raise ValueError(f"return_tensors must be 'np' or 'pt', got {kind!r}")


def _ids(token_ids) -> list[int]:
    if isinstance(token_ids, int):
        return [token_ids]
    return [int(t) for t in token_ids]


class Tokenizer:
    """encode / decode / apply_chat_template as transformers' tokenizers have them, over the
    engine's own tokenizer (the one its prompts go through)."""

    def __init__(self, engine) -> None:
        self._engine = engine
        info = engine.tokenizer_info()  # ValueError when the model has no tokenizer
        self.vocab_size: int = int(info.vocab_size)  # added tokens included
        self.bos_token_id: int | None = info.bos_token_id
        self.eos_token_id: int | None = info.eos_token_id
        self.pad_token_id: int | None = info.pad_token_id
        self.bos_token: str | None = info.bos_token or None
        self.eos_token: str | None = info.eos_token or None

    def __len__(self) -> int:
        return self.vocab_size

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(self._engine.encode(text, add_special_tokens))

    def decode(self, token_ids: int | Sequence[int], skip_special_tokens: bool = False) -> str:
        return self._engine.decode(_ids(token_ids), skip_special_tokens)

    def batch_decode(self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = False) -> list[str]:
        return [self.decode(s, skip_special_tokens) for s in sequences]

    def convert_ids_to_tokens(self, ids: int | Sequence[int], skip_special_tokens: bool = False):
        """The vocabulary's strings of ids (a str for one id, a list for several), as
        transformers: None for an id outside the vocabulary; special tokens dropped with
        skip_special_tokens."""
        if isinstance(ids, int):
            return self._engine.id_to_token(ids)
        return [self._engine.id_to_token(int(i)) for i in ids if not (skip_special_tokens and self._is_special(int(i)))]

    def convert_tokens_to_ids(self, tokens: str | Sequence[str]):
        """The ids of vocabulary strings (an int for one, a list for several); None for a
        string the vocabulary does not have (transformers' fast tokenizers without an unk token)."""
        if isinstance(tokens, str):
            return self._engine.token_to_id(tokens)
        return [self._engine.token_to_id(t) for t in tokens]

    def _is_special(self, token_id: int) -> bool:
        """A special token: its text is dropped when decoding skips special tokens."""
        return 0 <= token_id < self.vocab_size and self._engine.decode([token_id], True) == "" \
            and self._engine.decode([token_id], False) != ""

    def __call__(self, text: str | Sequence[str], add_special_tokens: bool = True, padding: bool | str = False,
                 truncation: bool = False, max_length: int | None = None, return_tensors: str | None = None,
                 return_attention_mask: bool = True) -> BatchEncoding:
        """transformers' tokenizer(text): input_ids and attention_mask, padded on the right with
        the pad token (padding=True / "longest", or "max_length"), cut to max_length with
        truncation, as lists or as "np" / "pt" tensors."""
        single = isinstance(text, str)
        ids = [self.encode(t, add_special_tokens) for t in ([text] if single else text)]
        if truncation and max_length is not None:
            ids = [i[:max_length] for i in ids]
        masks = [[1] * len(i) for i in ids]
        width = None
        if padding is True or padding == "longest":
            width = max((len(i) for i in ids), default=0)
        elif padding == "max_length":
            if max_length is None:
                raise ValueError("padding='max_length' needs max_length")
            width = max_length
        elif padding not in (False, "do_not_pad"):
            raise ValueError(f"padding must be True, False, 'longest', 'max_length' or 'do_not_pad', got {padding!r}")
        if width is not None:
            if self.pad_token_id is None:
                raise ValueError("Asking to pad but the tokenizer does not have a padding token.")
            masks = [m + [0] * (width - len(m)) for m in masks]
            ids = [i + [self.pad_token_id] * (width - len(i)) for i in ids]
        out = {"input_ids": ids, "attention_mask": masks} if return_attention_mask else {"input_ids": ids}
        if return_tensors is not None:
            return BatchEncoding({k: _tensor(v, return_tensors) for k, v in out.items()})
        return BatchEncoding({k: v[0] for k, v in out.items()} if single else out)

    def apply_chat_template(
        self,
        conversation: list[dict] | list[list[dict]],
        tools: list[dict] | None = None,
        documents: list[dict] | None = None,
        chat_template: str | None = None,
        add_generation_prompt: bool = False,
        continue_final_message: bool = False,
        tokenize: bool = True,
        return_dict: bool = False,
        **kwargs: Any,
    ):
        """The conversation (or each of a list of them) through the chat template, as text or,
        with tokenize, as ids (special tokens not added: the template writes them). Extra
        keyword arguments are template variables, as in transformers."""
        batched = bool(conversation) and isinstance(conversation[0], (list, tuple))
        variables = dict(kwargs)
        if documents is not None:
            variables["documents"] = documents
        out = []
        for conv in (conversation if batched else [conversation]):
            text = self._engine.apply_chat_template(
                json.dumps(list(conv), ensure_ascii=False), chat_template or "", add_generation_prompt,
                continue_final_message, json.dumps(tools) if tools is not None else "",
                json.dumps(variables, ensure_ascii=False))
            out.append(self.encode(text, add_special_tokens=False) if tokenize else text)
        if tokenize and return_dict:
            masks = [[1] * len(ids) for ids in out]
            return BatchEncoding(input_ids=out if batched else out[0], attention_mask=masks if batched else masks[0])
        return out if batched else out[0]
