#!/usr/bin/env python3
"""Reference cases for the pythonic and qwen3_coder tool-call parsers
(tests/unit/test_tool_parsers_pythonic_xml.cc), with Python itself as the reference.

pythonic: replies are call lists written as Python source (hand-written ones and seeded random
ones whose literals come from repr() and other quoting styles). The expected calls come from
Python's own parser: ast.parse finds the calls, ast.literal_eval evaluates each keyword value,
and json.dumps(..., ensure_ascii=False) prints the arguments, as vLLM does. A reply is expected
to be plain content when Python rejects it or when it breaks one of the format's rules (see
pythonic_reference).

qwen3_coder: replies are rendered with jinja2 from a template string that reproduces
Qwen3-Coder's chat template for an assistant message with tool calls, from tool schemas and
argument dicts; the expected arguments are those dicts, typed as the schema says (see
expected_qwen_value). Broken replies (truncated, missing </function>, no call) are expected
to be plain content.

Writes tests/data/tool_calls/pythonic.json and tests/data/tool_calls/qwen3_coder.json:
[{"name", "parser", "text", "tools" (qwen3_coder), "expected": {"tools_called", "content",
"tool_calls": [{"name", "arguments", "arguments_text"}]}}]. Needs only jinja2.
"""

import ast
import io
import json
import math
import os
import random
import tokenize
import warnings

from jinja2.sandbox import ImmutableSandboxedEnvironment

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(REPO, "tests", "data", "tool_calls")

PY_START = "<|python_start|>"
PY_END = "<|python_end|>"


# ---------------------------------------------------------------------------------------------
# pythonic


def no_trailing_list_comma(source):
    """The format (vLLM's pattern) wants the call list without a comma before its ']'."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
              if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT,
                                tokenize.DEDENT, tokenize.ENDMARKER)]
    return len(tokens) < 2 or tokens[-2].string != ","


def json_printable(value):
    """What json.dumps prints: no sets, bytes, complex numbers, nan/inf (the C++ test reads the
    arguments with a strict JSON parser), no lone surrogates."""
    if isinstance(value, (list, tuple)):
        return all(json_printable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, (str, int, float, bool, type(None))) and json_printable(k)
                   and json_printable(v) for k, v in value.items())
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    return isinstance(value, (int, bool, type(None)))


def pythonic_reference(text):
    """Expected result of a pythonic reply, decided by Python's parser and literal_eval."""
    content_only = {"tools_called": False, "content": text, "tool_calls": []}
    source = text.strip()
    if source.startswith(PY_START):
        source = source[len(PY_START):]
    if source.endswith(PY_END):
        source = source[:-len(PY_END)]
    source = source.strip()
    if not source.startswith("["):
        return content_only
    try:
        tree = ast.parse(source, mode="eval")
        compile(tree, "<reply>", "eval")  # the compiler also refuses repeated keywords
    except (SyntaxError, ValueError):
        return content_only
    calls = tree.body
    if not isinstance(calls, ast.List) or not calls.elts or not no_trailing_list_comma(source):
        return content_only
    out = []
    for call in calls.elts:
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.args:
            return content_only
        name = call.func.id
        # Names as the format writes them: ASCII identifiers, a function's starting with a letter.
        if not name.isascii() or not name[0].isalpha():
            return content_only
        args = {}
        for kw in call.keywords:
            if kw.arg is None or not kw.arg.isascii():
                return content_only
            try:
                args[kw.arg] = ast.literal_eval(kw.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return content_only
        if not json_printable(args):
            return content_only
        out.append({"name": name, "arguments": args,
                    "arguments_text": json.dumps(args, ensure_ascii=False)})
    return {"tools_called": True, "content": None, "tool_calls": out}


PYTHONIC_HAND = [
    ("single", '[get_weather(city="San Francisco", metric="celsius")]'),
    ("two_calls", "[get_weather(city='Paris'), get_time(tz=\"Europe/Paris\")]"),
    ("no_args", "[refresh()]"),
    ("no_args_then_args", "[refresh(), get_weather(city='Oslo')]"),
    ("nested", '[search(query="x", filters={"year": [2020, 2021], "tags": ("a", "b"), '
               '"meta": {"k": None, "ok": True, "n": -3}}, empty=[{}, [], ()])]'),
    ("escapes", r'''[echo(text="line1\nline2\t\"q\" \\ back", s2='it\'s', u="\u00e9\x41\U0001F600\101\0", bell="\a\b\f\v\r", keep="\d\q")]'''),
    ("triple_quotes", '[write(code="""def f():\n    return \'x\'  # "quoted"\n""", doc=\'\'\'single \'\'\')]'),
    ("unicode_text", '[translate(text="日本語 — ünïcödé 🚀 \u2028", lang="ja")]'),
    ("numbers", "[calc(a=1.5, b=-2, c=1e-7, d=3.0, e=-0.0, f=1e16, g=123456789.123, h=.5, i=1_000, "
                "j=0x1F, k=0o17, l=0b101, m=5., n=123456789012345678901234567890, o=-1e-3, p=1E+5, "
                "q=0.1, r=1e15, s=0.0001, t=0.00001, u=2.5e-300, v=+7)]"),
    ("llama4_wrapped", '<|python_start|>[get_weather(city="Tokyo")]<|python_end|>'),
    ("llama4_open_only", '<|python_start|>[get_weather(city="Tokyo", days=3)]'),
    ("spacing", '\n  [\n  f(a=1,\n    b=[1, 2,],\n  ),\n  g(x = "y"),  h (z=None)\n]\n  '),
    ("concatenation", "[f(s=\"ab\" 'cd' r\"\\d+\" u'é')]"),
    ("raw_strings", r"""[grep(pattern=r"\bfoo\s+bar\b", path='C:\\Users', q=r'it\'s')]"""),
    ("bools_none", "[set_flags(on=True, off=False, none=None)]"),
    ("dict_keys", '[f(m={1: "a", 2.5: "b", True: "c", None: "d", "s": 1, 1.0: "e"})]'),
    ("empty_values", "[f(a=[], b={}, c=(), d=\"\", e='')]"),
    ("comment", "[f(a=1,  # the answer\n  b=2)]"),
    ("parenthesized", "[f(a=(1), b=(1,), c=((2, 3)), d=(\"x\"))]"),
    ("deep", "[f(a=[[[[[[[[[[1, {'k': [[[{'z': ()}]]]}]]]]]]]]]])]"),
    ("many_calls", "[" + ", ".join(f"tool_{i}(i={i}, s='v{i}')" for i in range(12)) + "]"),
    ("crlf", '[f(a="x",\r\n  b="""l1\r\nl2""")]'),
    # plain content
    ("plain_text", "Hello there! How can I help you today?"),
    ("text_before_list", "I'll call [get_weather(city='x')]"),
    ("not_calls", "[1, 2, 3]"),
    ("empty_list", "[]"),
    ("whitespace_only", "   \n\t "),
    ("empty", ""),
    ("unterminated_list", '[get_weather(city="Paris")'),
    ("unterminated_call", '[get_weather(city="Paris"'),
    ("unterminated_string", '[f(a="abc)]'),
    ("positional_arg", "[f(1, a=2)]"),
    ("variable_value", "[get_weather(city=London)]"),
    ("second_call_bad", "[f(a=1), g(b=x)]"),
    ("trailing_text", "[f(a=1)] and then some text"),
    ("method_call", "[obj.f(a=1)]"),
    ("set_value", "[f(a={1, 2})]"),
    ("bytes_value", '[f(a=b"x")]'),
    ("fstring_value", '[f(a=f"x{1}")]'),
    ("duplicate_keyword", "[f(a=1, a=2)]"),
    ("keyword_name", "[f(class=1)]"),
    ("trailing_list_comma", "[f(a=1),]"),
    ("expression_value", "[f(a=1+2)]"),
    ("underscore_function", "[_private(a=1)]"),
    ("markdown_list", "[link](https://example.com)"),
]


def random_string(rng):
    pool = ("abcXYZ019 _-.,:;!?/" + "'\"\\" + "\n\t\r\x00\x07\x1f\x7f" + "éüß中文日本😀🚀\u2028\ufeff\xa0"
            + "<>{}[]()#=")
    return "".join(rng.choice(pool) for _ in range(rng.randint(0, 12)))


def render_string(rng, s):
    """Python source for s in one of several quoting styles; literal_eval recovers s."""
    style = rng.randint(0, 3)
    if style == 0:
        return repr(s)
    if style == 1:
        # JSON escapes are Python escapes, except that Python does not join \ud83d\ude00 pairs.
        return json.dumps(s, ensure_ascii=rng.random() < 0.5 and all(ord(c) < 0x10000 for c in s))
    if style == 2:
        body = s.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "\\r").replace("\x00", "\\x00")
        return '"""' + body + '"""'
    return "u" + repr(s)


def random_value(rng, depth=0):
    kind = rng.randint(0, 9 if depth < 3 else 5)
    if kind == 0:
        return str(rng.randint(-10**6, 10**6))
    if kind == 1:
        return str(rng.choice([0, -1, 2**64 + 1, -(10**25), 7]))
    if kind == 2:
        x = rng.uniform(-1, 1) * 10 ** rng.randint(-12, 20)
        return repr(x)
    if kind == 3:
        return rng.choice(["True", "False", "None"])
    if kind in (4, 5):
        return render_string(rng, random_string(rng))
    items = [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind in (6, 7):
        return "[" + ", ".join(items) + "]"
    if kind == 8:
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    keys = [render_string(rng, random_string(rng)) if rng.random() < 0.8 else str(rng.randint(0, 9))
            for _ in items]
    return "{" + ", ".join(f"{k}: {v}" for k, v in zip(keys, items)) + "}"


def random_call_list(rng):
    calls = []
    for c in range(rng.randint(1, 4)):
        names = rng.sample(["city", "query", "n", "x_1", "payload", "opts", "_hidden", "value"],
                           rng.randint(0, 4))
        spacer = rng.choice(["", " ", "\n  "])
        args = [f"{spacer}{n}{rng.choice(['=', ' = '])}{random_value(rng)}" for n in names]
        calls.append(f"fn_{c}(" + ",".join(args) + ")")
    return "[" + rng.choice([", ", ",", ",\n "]).join(calls) + "]"


def pythonic_cases():
    cases = [(name, text) for name, text in PYTHONIC_HAND]
    rng = random.Random(20250710)
    for i in range(40):
        cases.append((f"random_{i}", random_call_list(rng)))
    return [{"name": name, "parser": "pythonic", "text": text, "expected": pythonic_reference(text)}
            for name, text in cases]


# ---------------------------------------------------------------------------------------------
# qwen3_coder

# The assistant-with-tool-calls part of Qwen3-Coder's chat template (its format, re-typed).
QWEN3_CODER_ASSISTANT = """
{%- for message in messages %}
    {%- if message.role == "assistant" and message.tool_calls is defined and message.tool_calls is iterable and message.tool_calls | length > 0 %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content is defined and message.content is string and message.content | trim | length > 0 %}
            {{- '\\n' + message.content | trim + '\\n' }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n<function=' + tool_call.name + '>\\n' }}
            {%- if tool_call.arguments is defined %}
                {%- for args_name, args_value in tool_call.arguments|items %}
                    {{- '<parameter=' + args_name + '>\\n' }}
                    {%- set args_value = args_value | tojson | safe if args_value is mapping or (args_value is sequence and args_value is not string) else args_value | string %}
                    {{- args_value }}
                    {{- '\\n</parameter>\\n' }}
                {%- endfor %}
            {%- endif %}
            {{- '</function>\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- endif %}
{%- endfor %}
"""


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    # transformers' tojson: json.dumps with ensure_ascii=False.
    env.filters["tojson"] = lambda v, indent=None: json.dumps(v, ensure_ascii=False, indent=indent)
    return env


def tool(name, properties):
    return {"type": "function", "function": {"name": name, "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": properties}}}


TOOLS = [
    tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"},
                         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                         "detailed": {"type": "boolean"}}),
    tool("run_code", {"code": {"type": "string"}, "timeout": {"type": "number"},
                      "env": {"type": "object"}, "args": {"type": "array"}}),
    tool("search", {"query": {"type": "string"}, "filters": {"type": "object"}, "limit": {"type": "integer"},
                    "lang": {"anyOf": [{"type": "string"}, {"type": "null"}]}}),
    tool("write_file", {"path": {"type": "string"}, "content": {"type": "string"}}),
]


def schema_type(tools, fn, param):
    for t in tools or []:
        if t["function"]["name"] == fn:
            spec = t["function"]["parameters"]["properties"].get(param)
            if spec is None:
                return None
            if "type" in spec:
                return spec["type"], False
            types = [o["type"] for o in spec["anyOf"]]
            return next(x for x in types if x != "null"), "null" in types
    return None


def expected_qwen_value(tools, fn, param, value, rendered):
    """What the parser returns for a value rendered into the reply: the schema's type decides.
    Strings, and parameters the schema does not declare, are the rendered text; integers and
    booleans are the value; numbers are too, integral ones as ints; objects and arrays are the
    value; a nullable parameter written as null or None is null."""
    typed = schema_type(tools, fn, param)
    if typed is None:
        return rendered
    kind, nullable = typed
    if nullable and rendered.lower() in ("null", "none"):
        return None
    if kind == "number" and float(value) == int(value):
        return int(value)
    if kind == "string":
        return rendered
    return value


def render_reply(env, content, calls):
    message = {"role": "assistant", "content": content,
               "tool_calls": [{"type": "function", "function": {"name": n, "arguments": a}} for n, a in calls]}
    full = env.from_string(QWEN3_CODER_ASSISTANT).render(messages=[message])
    head, tail = "<|im_start|>assistant\n", "<|im_end|>\n"
    assert full.startswith(head) and full.endswith(tail), full
    return full[len(head):-len(tail)]


def rendered_value(env, value):
    return env.from_string("{{ v | tojson | safe if v is mapping or (v is sequence and v is not string) "
                           "else v | string }}").render(v=value)


def qwen_case(env, name, tools, content, calls):
    text = render_reply(env, content, calls)
    out = []
    for fn, args in calls:
        expected = {p: expected_qwen_value(tools, fn, p, v, rendered_value(env, v)) for p, v in args.items()}
        out.append({"name": fn, "arguments": expected, "arguments_text": json.dumps(expected, ensure_ascii=False)})
    before = content.strip() + "\n\n" if content and content.strip() else None
    return {"name": name, "parser": "qwen3_coder", "text": text, "tools": tools,
            "expected": {"tools_called": True, "content": before, "tool_calls": out}}


def content_case(name, text, tools=TOOLS):
    return {"name": name, "parser": "qwen3_coder", "text": text, "tools": tools,
            "expected": {"tools_called": False, "content": text, "tool_calls": []}}


CODE = 'def greet(name):\n    """Say hi."""\n    print(f"Hi {name} \\\\ <b>&amp;</b>")\n\n\nx = "</parameter>"\n'


def qwen_hand_cases(env):
    weather = ("get_weather", {"city": "Paris", "days": 3, "unit": "celsius", "detailed": True})
    run = ("run_code", {"code": CODE, "timeout": 2.5, "env": {"PATH": "/bin", "DEBUG": None, "ratio": 2.0,
                                                             "list": [1, "two", {"3": False}]},
                        "args": ["--flag", 1, 2.0, None]})
    search = ("search", {"query": "línea 日本 \"quoted\" \\ back", "filters": {"year": 2024}, "limit": 10,
                         "lang": None})
    cases = [
        qwen_case(env, "single", TOOLS, None, [weather]),
        qwen_case(env, "content_before", TOOLS, "Let me check the weather for you.", [weather]),
        qwen_case(env, "two_calls", TOOLS, "", [weather, search]),
        qwen_case(env, "three_calls_code", TOOLS, "  Running it now.  ", [run, weather, search]),
        qwen_case(env, "number_integral", TOOLS, None, [("run_code", {"code": "", "timeout": 3.0})]),
        qwen_case(env, "number_small", TOOLS, None, [("run_code", {"timeout": 1e-07, "code": "\n"})]),
        qwen_case(env, "booleans", TOOLS, None, [("get_weather", {"detailed": False, "city": "True"})]),
        qwen_case(env, "undeclared_param", TOOLS, None,
                  [("get_weather", {"city": "Rome", "extra": 5, "more": [1, 2], "flag": True})]),
        qwen_case(env, "no_tools", None, "No schema here.", [("anything", {"a": "x", "n": 5, "o": {"k": 1}})]),
        qwen_case(env, "unknown_function", TOOLS, None, [("not_declared", {"days": 4, "ok": False})]),
        qwen_case(env, "newline_edges", TOOLS, None,
                  [("write_file", {"path": "\nstarts", "content": "ends\n"}),
                   ("write_file", {"path": "", "content": "\n\nboth\n\n"})]),
        qwen_case(env, "no_arguments", TOOLS, None, [("get_weather", {})]),
        qwen_case(env, "big_integer", TOOLS, None, [("search", {"limit": 123456789012345678901234567890})]),
        qwen_case(env, "nullable_given", TOOLS, None, [("search", {"lang": "null", "query": "None"})]),
    ]
    full = render_reply(env, "Sure.", [weather, run])
    cases += [
        content_case("plain_text", "Hello! No tools needed for this one."),
        content_case("empty", ""),
        content_case("missing_function_end", full[:full.rindex("</function>")]),
        content_case("truncated_in_parameter", full[:full.index("Paris") + 3]),
        content_case("truncated_in_name", full[:full.index("<function=") + 8]),
        content_case("tool_call_without_function", "Thinking...\n<tool_call>\n</tool_call>"),
        content_case("template_leftover_name", "<tool_call>\n<function={{ tool.name }}>\n</function>\n</tool_call>"),
        content_case("missing_parameter_end", "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
                     "</function>\n</tool_call>"),
        content_case("mentions_tag", "Wrap calls in <tool_call> tags, like <tool_call>...</tool_call>."),
    ]
    return cases


def random_qwen_args(rng, fn_props):
    args = {}
    for p, spec in fn_props.items():
        if rng.random() < 0.3:
            continue
        kind = spec.get("type") or "string"
        if kind == "string":
            s = random_string(rng).replace("\x00", "")
            args[p] = s if s.lower() not in ("null", "none") else s + "!"
        elif kind == "integer":
            args[p] = rng.randint(-10**9, 10**9)
        elif kind == "number":
            args[p] = rng.choice([rng.uniform(-1e6, 1e6), float(rng.randint(-99, 99)), 1.5e-9])
        elif kind == "boolean":
            args[p] = rng.random() < 0.5
        elif kind == "object":
            args[p] = {random_string(rng): rng.choice([1, "v", None, [1.5, {"x": "y"}]]) for _ in range(3)}
        elif kind == "array":
            args[p] = [rng.choice([1, "s", None, 2.25, {"k": [True]}]) for _ in range(rng.randint(0, 4))]
    return args


def qwen_cases():
    env = make_env()
    cases = qwen_hand_cases(env)
    rng = random.Random(7)
    for i in range(30):
        calls = []
        for _ in range(rng.randint(1, 3)):
            t = rng.choice(TOOLS)["function"]
            calls.append((t["name"], random_qwen_args(rng, t["parameters"]["properties"])))
        content = rng.choice([None, "", "I'll use a tool.", "Plan:\n1. look\n2. act"])
        cases.append(qwen_case(env, f"random_{i}", TOOLS, content, calls))
    return cases


def main():
    warnings.simplefilter("ignore")  # invalid escapes like "\d" are part of the cases
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, cases in (("pythonic.json", pythonic_cases()), ("qwen3_coder.json", qwen_cases())):
        with open(os.path.join(OUT_DIR, name), "w", encoding="utf-8") as f:
            json.dump(cases, f, ensure_ascii=False, indent=1)
            f.write("\n")
        called = sum(c["expected"]["tools_called"] for c in cases)
        print(f"{name}: {len(cases)} cases, {called} with tool calls")


if __name__ == "__main__":
    main()
