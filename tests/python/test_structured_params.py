"""Structured outputs' parameters in the Python API (vLLM's StructuredOutputsParams and its older
GuidedDecodingParams): construction, checks and the conversion to the engine's SamplingParams.
Generation under a constraint is the engine's tests'; these need no model."""

from __future__ import annotations

import json

import pytest

import tessera
from tessera import GuidedDecodingParams, SamplingParams, StructuredOutputsParams
from tessera.sampling_params import GuidedDecodingParams as GuidedFromModule
from tessera.sampling_params import StructuredOutputsParams as FromModule

MULTIPLE = "You can only use one kind of structured outputs constraint but multiple are specified"
NONE = "You must use one kind of structured outputs constraint but none are specified"


def core(so: StructuredOutputsParams):
    """The engine's StructuredOutputsParams a SamplingParams carrying `so` passes on."""
    p = SamplingParams(structured_outputs=so)._to_core()
    assert p.validate() == ""
    assert p.structured_outputs is not None
    return p.structured_outputs


def test_exported_with_vllm_names():
    assert "StructuredOutputsParams" in tessera.__all__ and "GuidedDecodingParams" in tessera.__all__
    assert FromModule is StructuredOutputsParams and GuidedFromModule is GuidedDecodingParams
    assert issubclass(GuidedDecodingParams, StructuredOutputsParams)


def test_json_schema_as_dict_or_text():
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    so = StructuredOutputsParams(json=schema)
    assert so.json == schema  # kept as given, as vLLM keeps it
    c = core(so)
    assert json.loads(c.json) == schema
    assert c.regex is None and c.choice is None and c.grammar is None and not c.json_object
    assert c.kinds() == 1
    text = '{"type": "array", "items": {"type": "integer"}}'
    assert core(StructuredOutputsParams(json=text)).json == text


def test_json_schema_from_a_pydantic_model_class():
    pydantic = pytest.importorskip("pydantic")

    class Person(pydantic.BaseModel):
        name: str
        age: int

    c = core(StructuredOutputsParams(json=Person))
    assert json.loads(c.json) == Person.model_json_schema()


def test_each_other_kind():
    assert core(StructuredOutputsParams(regex=r"\d{3}")).regex == r"\d{3}"
    assert core(StructuredOutputsParams(choice=["yes", "no"])).choice == ["yes", "no"]
    assert core(StructuredOutputsParams(grammar='root ::= "a" | "b"')).grammar == 'root ::= "a" | "b"'
    c = core(StructuredOutputsParams(json_object=True, disable_any_whitespace=True))
    assert c.json_object and c.disable_any_whitespace and c.json is None
    assert not core(StructuredOutputsParams(regex="a")).disable_any_whitespace


def test_no_structured_outputs_by_default():
    assert SamplingParams().structured_outputs is None
    assert SamplingParams()._to_core().structured_outputs is None


def test_guided_decoding_is_the_same_field():
    so = GuidedDecodingParams(choice=["a", "b"], backend="xgrammar", disable_fallback=True)
    p = SamplingParams(guided_decoding=so)
    assert p.structured_outputs is so
    assert p._to_core().structured_outputs.choice == ["a", "b"]
    # A StructuredOutputsParams is taken there too, and the new name takes the old class.
    assert SamplingParams(guided_decoding=StructuredOutputsParams(regex="x"))._to_core().structured_outputs.regex == "x"
    assert SamplingParams(structured_outputs=GuidedDecodingParams(json_object=True))._to_core().structured_outputs.json_object
    with pytest.raises(ValueError, match="not both"):
        SamplingParams(structured_outputs=StructuredOutputsParams(regex="a"),
                       guided_decoding=StructuredOutputsParams(regex="a"))


@pytest.mark.parametrize("kwargs", [
    {"json": {}, "regex": "a"},
    {"regex": "a", "choice": ["b"]},
    {"choice": ["a"], "grammar": "root ::= \"a\""},
    {"grammar": "g", "json_object": True},
    {"json": "{}", "json_object": True},
])
def test_more_than_one_kind(kwargs):
    with pytest.raises(ValueError, match=MULTIPLE):
        StructuredOutputsParams(**kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"disable_any_whitespace": True}, {"json_object": False}])
def test_no_kind(kwargs):
    with pytest.raises(ValueError, match=NONE):
        StructuredOutputsParams(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"regex": 5}, "regex must be a str"),
    ({"grammar": ["a"]}, "grammar must be a str"),
    ({"choice": "x"}, "choice must be a list of str"),
    ({"choice": [1]}, "choice must be a list of str"),
    ({"choice": []}, "choice must not be empty"),
    ({"json": "not json"}, "json is not valid JSON"),
    ({"json": "[1, 2]"}, "must hold a JSON object"),
    ({"json": 5}, "json must be a dict"),
    ({"json": {"a": object()}}, "not JSON-serializable"),
    ({"json_object": True, "disable_any_whitespace": "yes"}, "StructuredOutputsParams"),
    ({"json_object": True, "whitespace_pattern": "[ ]?"}, "whitespace_pattern is not supported"),
    ({"structural_tag": "{}"}, "structural_tag is not supported"),
    ({"json_object": True, "disable_additional_properties": True}, "disable_additional_properties"),
])
def test_bad_values_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        StructuredOutputsParams(**kwargs)


def test_unknown_argument_is_a_type_error():
    with pytest.raises(TypeError):
        StructuredOutputsParams(regex="a", backend="xgrammar")  # only GuidedDecodingParams has backend
    with pytest.raises(ValueError, match="must be a StructuredOutputsParams"):
        SamplingParams(structured_outputs={"regex": "a"})


def test_the_engine_checks_the_count_too():
    p = tessera._core.SamplingParams()
    so = tessera._core.StructuredOutputsParams()
    so.regex = "a"
    so.json_object = True
    p.structured_outputs = so
    assert MULTIPLE in p.validate()
    so.json_object = False
    p.structured_outputs = so
    assert p.validate() == ""


def test_clone_and_repr_keep_it():
    p = SamplingParams(temperature=0.0, structured_outputs=StructuredOutputsParams(choice=["a", "b"]))
    c = p.clone()
    assert c.structured_outputs == p.structured_outputs and c.structured_outputs is not p.structured_outputs
    assert c._to_core().structured_outputs.choice == ["a", "b"]
    assert "StructuredOutputsParams(" in repr(p) and "choice=['a', 'b']" in repr(p)
