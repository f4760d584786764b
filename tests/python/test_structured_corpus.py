"""The structured-outputs corpus (tests/data/structured/, written by
tools/reference/make_structured_corpus.py) against two models at temperature 1:

- every JSON Schema the engine accepts: each output that ends ("stop") parses with `json` and
  validates with `jsonschema` (Draft 2020-12; formats checked where its FormatChecker can with the
  packages installed, see ENGINE_FORMATS); every schema it must refuse is a ValueError quoting
  the keyword;
- every regex: outputs re.fullmatch it; every grammar: outputs match its "check" regex or the
  recognizer below.

Models: `tiny` (tests/data/models/tiny-llama3, random weights, 512-token SentencePiece vocabulary
with byte fallback) draws 5 samples of everything (TESSERA_CORPUS_TINY_SAMPLES); SmolLM2 (the
`llm` fixture) draws 1 (TESSERA_CORPUS_SMOL_SAMPLES=5 for the full acceptance run: about 8
minutes on 2 CPU cores instead of about 1.5). All prompts of a model go in one `generate` call so
they batch. Half the schemas (odd indices) are sampled with disable_any_whitespace ("compact"),
half without ("any whitespace"). Outputs cut by max_tokens ("length") are counted, not checked;
at least 80% of a family's schema samples must end (the random model's any-whitespace family is
exempt: it fills the unbounded whitespace until max_tokens). Failures of a kind listed in
KNOWN_GAPS (engine gaps already reported) are printed, not failed.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from tessera import LLM, SamplingParams, StructuredOutputsParams

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(REPO, "tests", "data", "structured")
TINY = os.path.join(REPO, "tests", "data", "models", "tiny-llama3", "tiny-llama3-f32.gguf")

TINY_SAMPLES = int(os.environ.get("TESSERA_CORPUS_TINY_SAMPLES", "5"))
SMOL_SAMPLES = int(os.environ.get("TESSERA_CORPUS_SMOL_SAMPLES", "1"))
MIN_STOP_RATE = 0.8

# The formats the engine enforces, checked where Draft 2020-12's FormatChecker can with the
# packages installed (hostname, uri, uri-reference, uri-template, duration need fqdn, rfc3987,
# uri-template, isoduration: unchecked without them). relative-json-pointer is never checked:
# jsonschema 4.26 rejects valid ones such as "105" (any digit after a "0").
ENGINE_FORMATS = {"email", "date", "time", "date-time", "duration", "ipv4", "ipv6", "hostname", "uuid", "uri",
                  "uri-reference", "uri-template", "json-pointer"}


def load(name: str) -> list[dict]:
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


SCHEMAS = load("json_schemas.jsonl")
ACCEPTED = [s for s in SCHEMAS if s["refused"] is None]
REFUSED = [s for s in SCHEMAS if s["refused"] is not None]
REGEXES = load("regexes.jsonl")
GRAMMARS = load("grammars.jsonl")


# --- recognizers of the grammars whose language is not regular ------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.s, self.i = text, 0

    def peek(self, k: int = 1) -> str:
        return self.s[self.i:self.i + k]

    def eat(self, lit: str) -> bool:
        if self.s.startswith(lit, self.i):
            self.i += len(lit)
            return True
        return False

    def span(self, chars: str, lo: int, hi: int) -> bool:
        j = self.i
        while j < len(self.s) and j - self.i < hi and self.s[j] in chars:
            j += 1
        if j - self.i < lo:
            return False
        self.i = j
        return True

    def done(self) -> bool:
        return self.i == len(self.s)


DIGITS = "0123456789"
LOWER = "abcdefghijklmnopqrstuvwxyz"


def balanced_parens(t: str) -> bool:
    depth = 0
    for c in t:
        if c not in "()":
            return False
        depth += 1 if c == "(" else -1
        if depth < 0:
            return False
    return depth == 0 and len(t) > 0


def arith_expr(t: str) -> bool:
    p = _Parser(t)

    def expr() -> bool:
        if not term():
            return False
        while p.peek() in ("+", "-"):
            p.eat(p.peek())
            if not term():
                return False
        return True

    def term() -> bool:
        if not factor():
            return False
        while p.peek() in ("*", "/"):
            p.eat(p.peek())
            if not factor():
                return False
        return True

    def factor() -> bool:
        if p.eat("("):
            return expr() and p.eat(")")
        return p.span(DIGITS, 1, 3)

    return expr() and p.done()


def nested_int_lists(t: str) -> bool:
    p = _Parser(t)

    def lst() -> bool:
        if not p.eat("["):
            return False
        if p.eat("]"):
            return True
        while True:
            if not (lst() if p.peek() == "[" else p.span(DIGITS, 1, 1)):
                return False
            if p.eat("]"):
                return True
            if not p.eat(","):
                return False

    return lst() and p.done()


def s_expression(t: str) -> bool:
    p = _Parser(t)

    def sexp() -> bool:
        if p.eat("("):
            if not sexp():
                return False
            while p.eat(" "):
                if not sexp():
                    return False
            return p.eat(")")
        return p.span(LOWER, 1, 6) or p.span(DIGITS, 1, 3)

    return sexp() and p.done()


def a_n_b_n(t: str) -> bool:
    n = len(t) // 2
    return n >= 1 and t == "a" * n + "b" * n


def json_array_of_objects(t: str) -> bool:
    obj = r'\{"id":[0-9]{1,4},"tags":\[("[a-z]{0,6}"(,"[a-z]{0,6}")*)?\]\}'
    return re.fullmatch(rf"\[({obj}(,{obj})*)?\]", t) is not None


def xml_nested(t: str) -> bool:
    p = _Parser(t)

    def elem() -> bool:
        for tag in ("a", "b"):
            if p.eat(f"<{tag}>"):
                while True:
                    if p.peek(2) == "</":
                        return p.eat(f"</{tag}>")
                    if p.peek() == "<":
                        if not elem():
                            return False
                    elif not p.span(LOWER, 1, 5):
                        return False
        return False

    return elem() and p.done()


def palindrome_abc(t: str) -> bool:
    return all(c in "abc" for c in t) and t == t[::-1]


RECOGNIZERS = {f.__name__: f for f in (balanced_parens, arith_expr, nested_int_lists, s_expression, a_n_b_n,
                                       json_array_of_objects, xml_nested, palindrome_abc)}


# --- known engine gaps ------------------------------------------------------------------------------
# Failures of these kinds are engine gaps already reported: they are counted and printed (one
# example each), not failed, so the rest of the corpus keeps guarding. Each predicate is narrow:
# it takes (schema name, jsonschema error or None, json.loads error text or None, output text).
# Delete an entry once the engine is fixed.

_DATE = r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"


def _calendar_invalid(value) -> bool:
    import datetime
    m = re.match(_DATE, value) if isinstance(value, str) else None
    if not m:
        return False
    try:
        datetime.date.fromisoformat(m.group(0))
        return False
    except ValueError:
        return True  # 2023-02-31, 2023-09-31, year 0000


def _ipv4_leading_zero(value) -> bool:
    parts = value.split(".") if isinstance(value, str) else []
    return (len(parts) == 4 and all(p.isdigit() and int(p) <= 255 for p in parts)
            and any(len(p) > 1 and p[0] == "0" for p in parts))


def _literal_backslash_pattern(schema) -> bool:
    """Some "pattern" in the schema matches a backslash (its regex has an escaped backslash)."""
    if isinstance(schema, dict):
        own = isinstance(schema.get("pattern"), str) and "\\\\" in schema["pattern"]
        return own or any(_literal_backslash_pattern(v) for k, v in schema.items() if k != "pattern")
    return isinstance(schema, list) and any(_literal_backslash_pattern(v) for v in schema)


def _optional_group_literal_dropped(pattern: str) -> str:
    """The pattern with the first literal character of each group made optional."""
    return re.sub(r"\((?!\?)([^\[\(\\])", lambda m: "(" + re.escape(m.group(1)) + "?", pattern)


KNOWN_GAPS = {
    "date-calendar": ("format date/date-time: the engine's pattern accepts days a month does not have "
                      "(02-30, 09-31)",
                      lambda name, e, j, t: e is not None and e.validator == "format"
                      and e.validator_value in ("date", "date-time") and _calendar_invalid(e.instance)),
    "ipv4-leading-zero": ("format ipv4: the engine accepts octets with leading zeros (\"01\"), which "
                          "ipaddress refuses",
                          lambda name, e, j, t: e is not None and e.validator == "format"
                          and e.validator_value == "ipv4" and _ipv4_leading_zero(e.instance)),
    "length-overlong-utf8": ("minLength/maxLength rewritten to a pattern whose negated class admits overlong or "
                             "otherwise invalid UTF-8 byte sequences (U+FFFD in the text, so the string is too "
                             "long)",
                             lambda name, e, j, t: e is not None and e.validator in ("maxLength", "pattern")
                             and isinstance(e.instance, str) and "\ufffd" in e.instance),
    "pattern-backslash": ("a pattern requiring a literal backslash: the backslash is emitted unescaped "
                          "inside the JSON string (invalid escape, or an escape that changes the value)",
                          lambda name, e, j, t: _literal_backslash_pattern(SCHEMA_BY_NAME[name])
                          and (j is not None or (e is not None and e.validator == "pattern"))),
    "pattern-optional-group": ("a JSON Schema pattern whose optional group starts with a literal and holds a "
                               "variable repeat, e.g. ^[0-9](:[a-z]{1,2})?$, lets the literal be left out "
                               "(\"0ab\"); the regex field compiles the same pattern right",
                               lambda name, e, j, t: e is not None and e.validator == "pattern"
                               and isinstance(e.instance, str)
                               and re.search(_optional_group_literal_dropped(e.validator_value), e.instance)
                               is not None),
    "oneOf-overlap": ("oneOf whose branches overlap is enforced as anyOf (xgrammar warns and falls back)",
                      lambda name, e, j, t: e is not None and e.validator == "oneOf"
                      and "is valid under each of" in e.message),
}


@pytest.fixture(scope="session")
def tiny():
    if not os.path.exists(TINY):
        pytest.skip("tests/data/models/tiny-llama3/tiny-llama3-f32.gguf is missing")
    # The model's context is 512 tokens (max_model_len 1024 is refused).
    return LLM(model=TINY, device="cpu", max_model_len=512, max_num_seqs=64)


def format_checker():
    """Draft 2020-12's checkers (FormatChecker() alone has draft 3's "time": HH:MM:SS only),
    limited to the engine's formats."""
    jsonschema = pytest.importorskip("jsonschema")
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = {k: v for k, v in jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers.items()
                        if k in ENGINE_FORMATS}
    return checker


def prompt_for(name: str) -> str:
    words = name.removeprefix("pydantic_").replace("_", " ")
    return f"Write one {words} as JSON.\n"


def sample_all(model, jobs, samples: int):
    """jobs: [(prompt, StructuredOutputsParams, max_tokens, seed)] -> one RequestOutput each, all
    in one generate call."""
    params = [SamplingParams(n=samples, temperature=1.0, seed=seed, max_tokens=max_tokens,
                             structured_outputs=so) for _, so, max_tokens, seed in jobs]
    return model.generate([p for p, _, _, _ in jobs], params, use_tqdm=False)


class Tally:
    """Counts one kind of constraint's samples. check(text) -> [(message, known gap id or None)]."""

    def __init__(self, what: str) -> None:
        self.what, self.items, self.stop, self.length = what, 0, 0, 0
        self.family: dict[str, list[int]] = {}  # family -> [stop, length]
        self.failures: list[str] = []
        self.known: dict[str, list[str]] = {}

    def add(self, name: str, outs, check, family: str = "") -> None:
        self.items += 1
        counts = self.family.setdefault(family, [0, 0])
        for c in outs:
            if c.finish_reason != "stop":
                assert c.finish_reason == "length", (name, c.finish_reason, c.text)
                self.length += 1
                counts[1] += 1
                continue
            self.stop += 1
            counts[0] += 1
            problems = check(c.text)
            if not problems:
                continue
            line = f"{self.what} {name}: {'; '.join(m for m, _ in problems)}; output {c.text!r}"
            if all(gap for _, gap in problems):
                for gap in sorted({gap for _, gap in problems}):
                    self.known.setdefault(gap, []).append(line)
            else:
                self.failures.append(line)

    def line(self) -> str:
        families = "".join(f", {f}: {s} stop / {s + n}" for f, (s, n) in self.family.items() if f)
        gaps = sum(len(v) for v in self.known.values())
        return (f"{self.what}: {self.items} items, {self.stop + self.length} samples, {self.stop} stop, "
                f"{self.length} length{families}; {len(self.failures)} failures, {gaps} in known gaps")


def gap_of(name: str, error, json_error, text: str):
    for gap, (_, predicate) in KNOWN_GAPS.items():
        if predicate(name, error, json_error, text):
            return gap
    # anyOf / oneOf that no branch matched (an Optional field, a union): a known gap when some
    # branch fails only by known gaps.
    if error is not None and error.validator in ("anyOf", "oneOf") and error.context:
        branches: dict = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        for subs in branches.values():
            gaps = [gap_of(name, sub, None, text) for sub in subs]
            if all(gaps):
                return gaps[0]
    return None


SCHEMA_BY_NAME = {s["name"]: s["schema"] for s in SCHEMAS}


def run_schemas(model, samples: int, max_tokens: int) -> Tally:
    jsonschema = pytest.importorskip("jsonschema")
    checker = format_checker()
    jobs = []
    for i, s in enumerate(ACCEPTED):
        so = StructuredOutputsParams(json=s["schema"], disable_any_whitespace=bool(i % 2))
        jobs.append((prompt_for(s["name"]), so, max_tokens, 1000 + i))
    outs = sample_all(model, jobs, samples)
    tally = Tally("json schemas")
    for i, (s, out) in enumerate(zip(ACCEPTED, outs)):
        validator = jsonschema.Draft202012Validator(s["schema"], format_checker=checker)

        def check(text: str, name=s["name"], validator=validator):
            try:
                value = json.loads(text)
            except ValueError as e:
                return [(f"json.loads: {e}", gap_of(name, None, str(e), text))]
            errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
            return [(f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"[:300],
                     gap_of(name, e, None, text)) for e in errors]
        tally.add(s["name"], out.outputs, check, "compact" if i % 2 else "any whitespace")
    return tally


def check_regex(regex: str, text: str):
    return [] if re.fullmatch(regex, text) else [(f"no re.fullmatch of {regex!r}", None)]


def run_regexes(model, samples: int) -> Tally:
    jobs = [(f"{r['name'].replace('_', ' ')}:", StructuredOutputsParams(regex=r["regex"]), 64, 2000 + i)
            for i, r in enumerate(REGEXES)]
    tally = Tally("regexes")
    for r, out in zip(REGEXES, sample_all(model, jobs, samples)):
        tally.add(r["name"], out.outputs, lambda t, r=r: check_regex(r["regex"], t))
    return tally


def run_grammars(model, samples: int) -> Tally:
    jobs = [(f"{g['name'].replace('_', ' ')}:", StructuredOutputsParams(grammar=g["grammar"]), 96, 3000 + i)
            for i, g in enumerate(GRAMMARS)]
    tally = Tally("grammars")
    for g, out in zip(GRAMMARS, sample_all(model, jobs, samples)):
        if g["check"] is not None:
            def check(t, g=g):
                return [] if re.fullmatch(g["check"], t) else [(f"no re.fullmatch of {g['check']!r}", None)]
        else:
            def check(t, f=RECOGNIZERS[g["name"]]):
                return [] if f(t) else [(f"not in the language ({f.__name__})", None)]
        tally.add(g["name"], out.outputs, check)
    return tally


def report(capsys, model_name: str, tallies: list[Tally]) -> None:
    with capsys.disabled():
        print()
        for t in tallies:
            print(f"structured corpus [{model_name}] {t.line()}")
            for gap, lines in t.known.items():
                print(f"  known gap {gap} ({len(lines)} outputs: {KNOWN_GAPS[gap][0]}), e.g. {lines[0][:300]}")


def check_corpus(capsys, model, model_name: str, samples: int, max_tokens: int, stop_families) -> None:
    tallies = [run_schemas(model, samples, max_tokens), run_regexes(model, samples), run_grammars(model, samples)]
    report(capsys, model_name, tallies)
    failures = [f for t in tallies for f in t.failures]
    assert not failures, f"{len(failures)} outputs break their constraint:\n" + "\n".join(f[:600] for f in failures)
    schemas = tallies[0]
    for family in stop_families:
        stop, length = schemas.family[family]
        assert stop >= MIN_STOP_RATE * (stop + length), (family, schemas.line())


def test_corpus_sizes():
    assert len(SCHEMAS) >= 200 and len(REFUSED) >= 20 and len(REGEXES) >= 50 and len(GRAMMARS) >= 20
    assert all(g["check"] is not None or g["name"] in RECOGNIZERS for g in GRAMMARS)


def test_refused_schemas_name_the_keyword(tiny, llm):
    for model in (tiny, llm):
        for s in REFUSED:
            so = StructuredOutputsParams(json=s["schema"])
            with pytest.raises(ValueError, match=re.escape(f"'{s['refused']}'")):
                model.generate("x", SamplingParams(max_tokens=4, structured_outputs=so), use_tqdm=False)


def test_corpus_tiny_random_model(tiny, capsys):
    # The random model fills any_whitespace's unbounded whitespace until max_tokens (about 1 in 5
    # of those samples ends): only the compact half must end 80% of the time.
    check_corpus(capsys, tiny, "tiny-llama3 random", TINY_SAMPLES, 320, stop_families=("compact",))


def test_corpus_smollm2(llm, capsys):
    check_corpus(capsys, llm, "SmolLM2-135M", SMOL_SAMPLES, 256, stop_families=("compact", "any whitespace"))
