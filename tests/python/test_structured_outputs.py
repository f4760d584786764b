"""Structured outputs offline, as vLLM's users call them: LLM.generate / LLM.chat with
SamplingParams(structured_outputs=StructuredOutputsParams(...)) against the default model at
temperature 1; every output that ends validates with `jsonschema`, matches its regex with
`re.fullmatch`, or is one of its choices."""

from __future__ import annotations

import json
import re

import pytest

from tessera import SamplingParams, StructuredOutputsParams

SCHEMA = {"type": "object",
          "properties": {"city": {"type": "string", "maxLength": 20},
                         "temperature_c": {"type": "number", "minimum": -60, "maximum": 60},
                         "conditions": {"enum": ["sunny", "cloudy", "rain", "snow"]}},
          "required": ["city", "temperature_c", "conditions"], "additionalProperties": False}


def test_json_schema_outputs_validate(llm):
    jsonschema = pytest.importorskip("jsonschema")
    params = SamplingParams(temperature=1.0, seed=3, n=4, max_tokens=300,
                            structured_outputs=StructuredOutputsParams(json=SCHEMA))
    out = llm.chat([{"role": "user", "content": "The weather in Paris as JSON."}], params)[0]
    finished = [c for c in out.outputs if c.finish_reason == "stop"]
    assert finished, [c.text for c in out.outputs]
    for c in finished:
        jsonschema.validate(json.loads(c.text), SCHEMA)


def test_regex_and_choice(llm):
    pattern = r"[0-9]{2}:[0-9]{2} (AM|PM)"
    outs = llm.generate(["The meeting is at", "Dinner at"],
                        SamplingParams(temperature=1.0, seed=1, max_tokens=20,
                                       structured_outputs=StructuredOutputsParams(regex=pattern)))
    for o in outs:
        assert re.fullmatch(pattern, o.outputs[0].text), o.outputs[0].text
    choices = ["red", "green", "blue"]
    out = llm.generate("Pick a colour:", SamplingParams(temperature=1.0, seed=2, n=5, max_tokens=5,
                                                        structured_outputs=StructuredOutputsParams(choice=choices)))
    assert all(c.text in choices and c.finish_reason == "stop" for c in out[0].outputs)


def test_a_schema_the_engine_cannot_enforce_is_a_value_error(llm):
    with pytest.raises(ValueError, match="uniqueItems"):
        llm.generate("x", SamplingParams(max_tokens=4, structured_outputs=StructuredOutputsParams(
            json={"type": "array", "uniqueItems": True})))
