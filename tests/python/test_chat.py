"""LLM.chat against the model's chat template rendered by jinja2 (as transformers renders it)
and tokenized by HF `tokenizers` (as transformers' GGUF conversion builds the tokenizer)."""

from __future__ import annotations

import pytest

from gguf_reference import hf_tokenizer, read_metadata, render_chat_template
from tessera import SamplingParams

jinja2 = pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")

CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You answer in one word."}, {"role": "user", "content": "Name a color."}],
    [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "user", "content": "Tell me a joke."}],
]
GREEDY = SamplingParams(temperature=0.0, max_tokens=16)


@pytest.fixture(scope="module")
def reference(model_path):
    meta = read_metadata(model_path)
    tokens = meta["tokenizer.ggml.tokens"]

    class Reference:
        template = meta["tokenizer.chat_template"]
        bos = tokens[meta["tokenizer.ggml.bos_token_id"]]
        eos = tokens[meta["tokenizer.ggml.eos_token_id"]]
        tokenizer = hf_tokenizer(meta)

        def render(self, messages, add_generation_prompt=True, template=None, **variables):
            return render_chat_template(template or self.template, messages, self.bos, self.eos,
                                        add_generation_prompt, **variables)

        def ids(self, text):
            return self.tokenizer.encode(text, add_special_tokens=False).ids

    return Reference()


def continue_final(rendered: str, final: str) -> str:
    """transformers' continue_final_message: cut right after the final message's content."""
    at = rendered.rindex(final.strip())
    if rendered[at:at + len(final.lstrip())] == final:
        return rendered[:at + len(final.lstrip())]
    return rendered[:at + len(final.strip())]


def test_chat_equals_generate_on_the_rendered_template(llm, reference):
    outs = llm.chat(CONVERSATIONS, GREEDY, use_tqdm=False)
    assert len(outs) == len(CONVERSATIONS)
    for out, conv in zip(outs, CONVERSATIONS):
        text = reference.render(conv)
        assert out.prompt == text
        assert out.prompt_token_ids == reference.ids(text)
        ref = llm.generate({"prompt_token_ids": reference.ids(text)}, GREEDY, use_tqdm=False)[0]
        assert out.outputs[0].token_ids == ref.outputs[0].token_ids
        assert out.outputs[0].text == ref.outputs[0].text
        assert out.outputs[0].finish_reason == ref.outputs[0].finish_reason


def test_one_conversation_gives_one_output(llm):
    one = llm.chat(CONVERSATIONS[0], GREEDY, use_tqdm=False)
    assert len(one) == 1
    assert one[0].outputs[0].token_ids == llm.chat([CONVERSATIONS[0]], GREEDY, use_tqdm=False)[0].outputs[0].token_ids


def test_sampling_params_per_conversation(llm):
    outs = llm.chat(CONVERSATIONS[:2], [SamplingParams(temperature=0.0, max_tokens=2),
                                        SamplingParams(temperature=0.0, max_tokens=5, ignore_eos=True)],
                    use_tqdm=False)
    assert [len(o.outputs[0].token_ids) for o in outs] == [2, 5]
    with pytest.raises(ValueError, match="lengths"):
        llm.chat(CONVERSATIONS, [GREEDY], use_tqdm=False)


def test_continue_final_message(llm, reference):
    conv = [{"role": "user", "content": "Complete the sentence."},
            {"role": "assistant", "content": "The capital of France is"}]
    out = llm.chat(conv, GREEDY, add_generation_prompt=False, continue_final_message=True, use_tqdm=False)[0]
    text = continue_final(reference.render(conv, add_generation_prompt=False), conv[-1]["content"])
    assert out.prompt == text and text.endswith("The capital of France is")
    ref = llm.generate({"prompt_token_ids": reference.ids(text)}, GREEDY, use_tqdm=False)[0]
    assert out.outputs[0].token_ids == ref.outputs[0].token_ids
    with pytest.raises(ValueError, match="not compatible"):
        llm.chat(conv, GREEDY, continue_final_message=True, use_tqdm=False)  # add_generation_prompt=True


def test_no_generation_prompt(llm, reference):
    out = llm.chat(CONVERSATIONS[0], GREEDY, add_generation_prompt=False, use_tqdm=False)[0]
    assert out.prompt == reference.render(CONVERSATIONS[0], add_generation_prompt=False)


def test_content_parts_are_joined_by_newlines(llm, reference):
    conv = [{"role": "user", "content": [{"type": "text", "text": "First line."},
                                         {"type": "text", "text": "Second line."}]}]
    out = llm.chat(conv, SamplingParams(max_tokens=1), use_tqdm=False)[0]
    assert out.prompt == reference.render([{"role": "user", "content": "First line.\nSecond line."}])


def test_chat_template_text_tools_and_kwargs(llm, reference):
    template = ("{{ bos_token }}{{ greeting }}\n{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n"
                "{% endfor %}{% if tools %}tools: {{ tools | tojson }}\n{% endif %}"
                "{% if add_generation_prompt %}[assistant]{% endif %}")
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    out = llm.chat(CONVERSATIONS[1], SamplingParams(max_tokens=1), chat_template=template, tools=tools,
                   chat_template_kwargs={"greeting": "Bonjour"}, use_tqdm=False)[0]
    assert out.prompt == reference.render(CONVERSATIONS[1], template=template, tools=tools, greeting="Bonjour")
    assert out.prompt.startswith(reference.bos + "Bonjour\n")


def test_bad_conversations_raise_value_error_with_the_engines_message(llm):
    with pytest.raises(ValueError, match='every message needs a string "role"'):
        llm.chat([{"content": "no role"}], use_tqdm=False)
    with pytest.raises(ValueError, match='every message needs a string "role"'):
        llm.chat([{"role": 7, "content": "a number"}], use_tqdm=False)
    with pytest.raises(ValueError, match='content parts of type "image_url" are not supported'):
        llm.chat([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}], use_tqdm=False)
    with pytest.raises(ValueError, match="only users speak here"):
        llm.chat(CONVERSATIONS[1], chat_template="{% for m in messages %}{% if m['role'] != 'user' %}"
                 "{{ raise_exception('only users speak here') }}{% endif %}{% endfor %}", use_tqdm=False)
    with pytest.raises(ValueError, match="lora_request"):
        llm.chat(CONVERSATIONS[0], lora_request=object(), use_tqdm=False)
    # A good conversation still runs after the failures.
    assert llm.chat(CONVERSATIONS[0], SamplingParams(max_tokens=2), use_tqdm=False)[0].outputs[0].token_ids
