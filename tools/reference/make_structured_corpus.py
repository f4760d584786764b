#!/usr/bin/env python3
"""Writes the structured-outputs corpus in tests/data/structured/ (deterministic: the same
pydantic gives the same bytes):

    python3 tools/reference/make_structured_corpus.py [--out tests/data/structured]

  json_schemas.jsonl  {"name", "schema", "refused"}: JSON Schemas, most of them from pydantic v2
                      models (Model.model_json_schema()), the rest written by hand in the style
                      of public schema collections (JSON Schema Store configs, GeoJSON, OpenAPI
                      components, JSON-RPC, CloudEvents, ...). "refused" is null for a schema the
                      engine must enforce, else the keyword its refusal must name.
  regexes.jsonl       {"name", "regex"}: patterns that Python's `re` and xgrammar read alike
                      (no lookarounds, no backreferences); outputs are checked with re.fullmatch.
  grammars.jsonl      {"name", "grammar", "check"}: xgrammar EBNF (GBNF style, root rule `root`);
                      "check" is a Python regex every sentence fullmatches, or null when the
                      language is not regular (tests/python/test_structured_corpus.py then has a
                      recognizer by that name).

Needs pydantic v2 (pip install pydantic). Nothing here imports the engine. The entries live in
structured_corpus_pydantic.py, structured_corpus_generics.py, structured_corpus_schemas.py and
structured_corpus_regexes.py; this file checks their labels (a Python mirror of the engine's
refusals) and writes the .jsonl files.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, Optional

try:
    import pydantic
except ImportError:  # pragma: no cover
    sys.exit("make_structured_corpus.py needs pydantic v2: pip install pydantic")

if not pydantic.VERSION.startswith("2."):
    sys.exit(f"make_structured_corpus.py needs pydantic v2, found {pydantic.VERSION}")

from structured_corpus_generics import GENERIC_MODELS  # noqa: E402  (after the pydantic check)
from structured_corpus_pydantic import PYDANTIC_MODELS  # noqa: E402
from structured_corpus_regexes import GRAMMARS, REGEXES  # noqa: E402
from structured_corpus_schemas import HANDWRITTEN, REFUSED  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def schema_of(model_or_schema: Any) -> dict:
    if isinstance(model_or_schema, dict):
        return model_or_schema
    return model_or_schema.model_json_schema()


FORMATS = {"email", "date", "time", "date-time", "duration", "ipv4", "ipv6", "hostname", "uuid", "uri",
           "uri-reference", "uri-template", "json-pointer", "relative-json-pointer"}


def refused_keyword(s: Any) -> Optional[str]:
    """A Python mirror of src/structured/json_schema_check.cc, to check the corpus's labels."""
    if not isinstance(s, dict):
        return None
    for k in ("not", "if", "then", "else", "contains", "minContains", "maxContains", "dependentRequired",
              "dependentSchemas"):
        if k in s:
            return k
    if "uniqueItems" in s and s["uniqueItems"] is not False:
        return "uniqueItems"
    t = s.get("type")
    if "multipleOf" in s:
        if not (t == "integer" or (isinstance(t, list) and "integer" in t)):
            return "multipleOf"
        if any(b in s for b in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            return "multipleOf"  # xgrammar drops an integer multipleOf next to a range
    if isinstance(s.get("required"), list):
        props = s.get("properties")
        for r in s["required"]:
            if isinstance(r, str) and not (isinstance(props, dict) and r in props):
                return "required"  # a name "properties" does not declare
    if isinstance(s.get("allOf"), list) and len(s["allOf"]) > 1:
        return "allOf"
    ref = s.get("$ref")
    if isinstance(ref, str) and ref != "#" and not ref.startswith("#/"):
        return "$ref"
    length = "minLength" in s or "maxLength" in s
    if length and (s.get("format") in FORMATS or "pattern" in s):
        return "minLength/maxLength"
    subs = []
    for m in ("properties", "patternProperties", "$defs", "definitions"):
        if isinstance(s.get(m), dict):
            subs += list(s[m].values())
    for m in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(s.get(m), list):
            subs += s[m]
    for m in ("items", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "propertyNames"):
        if m in s:
            subs.append(s[m])
    for sub in subs:
        if (k := refused_keyword(sub)) is not None:
            return k
    return None


def corpus() -> tuple[list[dict], list[dict], list[dict]]:
    schemas = []
    for name, model in PYDANTIC_MODELS + GENERIC_MODELS:
        schemas.append({"name": "pydantic_" + name, "schema": schema_of(model), "refused": None})
    for name, schema in HANDWRITTEN:
        schemas.append({"name": name, "schema": schema, "refused": None})
    for name, model, keyword in REFUSED:
        schemas.append({"name": name, "schema": schema_of(model), "refused": keyword})
    names = [s["name"] for s in schemas]
    assert len(names) == len(set(names)), "duplicate schema names"
    for s in schemas:
        got = refused_keyword(s["schema"])
        assert got == s["refused"], (s["name"], got, s["refused"])
        json.dumps(s["schema"], allow_nan=False)
    regexes = [{"name": n, "regex": r} for n, r in REGEXES]
    for r in regexes:
        re.compile(r["regex"])
        assert "(?=" not in r["regex"] and "(?!" not in r["regex"] and "(?<" not in r["regex"], r["name"]
    grammars = [{"name": n, "grammar": g, "check": c} for n, g, c in GRAMMARS]
    for g in grammars:
        if g["check"] is not None:
            re.compile(g["check"])
    assert len({r["name"] for r in regexes}) == len(regexes) and len({g["name"] for g in grammars}) == len(grammars)
    return schemas, regexes, grammars


def write_jsonl(path: str, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "structured"))
    args = ap.parse_args()
    schemas, regexes, grammars = corpus()
    os.makedirs(args.out, exist_ok=True)
    write_jsonl(os.path.join(args.out, "json_schemas.jsonl"), schemas)
    write_jsonl(os.path.join(args.out, "regexes.jsonl"), regexes)
    write_jsonl(os.path.join(args.out, "grammars.jsonl"), grammars)
    refused = sum(s["refused"] is not None for s in schemas)
    print(f"{len(schemas)} schemas ({len(schemas) - refused} enforced, {refused} refused; "
          f"{len(PYDANTIC_MODELS) + len(GENERIC_MODELS)} from pydantic {pydantic.VERSION}), "
          f"{len(regexes)} regexes, {len(grammars)} grammars -> {os.path.relpath(args.out, REPO)}")


if __name__ == "__main__":
    main()
