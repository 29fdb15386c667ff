"""Seeded random templates for the differential test against jinja2: expressions built from a small
grammar over PROBE_CONTEXT (values, operators, filters, tests, methods, slices, conditionals) and a few
statement shapes around them."""

from __future__ import annotations

import random

ATOMS = [
    "s", "u", "ws", "n", "neg", "f", "big", "tiny", "l", "words", "d", "nested", "people", "none", "t", "fl",
    "empty", "edict", "html", "multiline", "messages", "undefined_var", "0", "1", "2", "-1", "2.5", "0.0",
    "'a'", "''", "'x,y'", "' pad '", "'Ünï'", "[1, 2]", "[]", "{'k': 1}", "(1, 'a')", "true", "false", "none",
    "messages[0]", "people[0]", "d.a", "nested.x", "l[0]",
]
BINOPS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">=", "in", "not in", "and", "or"]
FILTERS = [
    "length", "upper", "lower", "title", "capitalize", "trim", "first", "last", "list", "sort", "unique|list",
    "reverse|list", "join(',')", "string", "int", "float", "abs", "round", "tojson", "tojson(indent=1)",
    "default('D')", "d(0, true)", "items|list", "dictsort", "map('string')|list", "select|list", "reject|list",
    "sum", "max", "min", "batch(2)|list", "wordcount", "e", "safe", "indent(2)", "replace('a', 'b')",
    "selectattr('role')|list", "map(attribute='name')|list", "count", "center(9)", "format(1)", "string|length",
]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable", "sequence",
         "boolean", "true", "false", "odd", "even", "callable", "eq 1", "in [1, 'a']", "lower", "upper"]
METHODS = ["upper()", "lower()", "strip()", "split()", "split(',')", "startswith('a')", "endswith('d')",
           "replace('l', 'L')", "find('o')", "count('a')", "title()", "get('a')", "keys()|list", "values()|list",
           "items()|list", "index(1)", "rstrip('d')", "format(1)", "isdigit()", "splitlines()", "partition(' ')"]


def expr(r: random.Random, depth: int = 0) -> str:
    if depth > 2 or r.random() < 0.3:
        return r.choice(ATOMS)
    k = r.random()
    a = expr(r, depth + 1)
    if k < 0.25:
        return f"({a} {r.choice(BINOPS)} {expr(r, depth + 1)})"
    if k < 0.45:
        return f"({a}|{r.choice(FILTERS)})"
    if k < 0.55:
        return f"({a} is {'not ' if r.random() < 0.3 else ''}{r.choice(TESTS)})"
    if k < 0.68:
        return f"{a}.{r.choice(METHODS)}"
    if k < 0.78:
        i, j = r.choice(["", "1", "-1", "0"]), r.choice(["", "2", "-2"])
        step = r.choice(["", ":-1", ":2"])
        return f"{a}[{i}:{j}{step}]"
    if k < 0.85:
        return f"{a}[{r.choice(['0', '-1', '1', repr('a'), repr('role'), repr('items')])}]"
    if k < 0.92:
        return f"({a} if {expr(r, depth + 1)} else {expr(r, depth + 1)})"
    return f"(not {a})"


def template(r: random.Random) -> str:
    e = expr(r)
    shape = r.random()
    if shape < 0.6:
        return "{{ " + e + " }}"
    if shape < 0.75:
        return "{% for x in " + e + " %}[{{ x }}|{{ loop.index }}]{% else %}none{% endfor %}"
    if shape < 0.85:
        return "{% if " + e + " %}yes{% else %}no{% endif %}"
    if shape < 0.9:
        return "{% set v = " + e + " %}{{ v }}|{{ v|tojson if v is not undefined else '' }}"
    if shape < 0.93:
        return "{% set ns = namespace(x=" + e + ") %}{% for m in messages %}{% set ns.x = ns.x ~ m.role %}{% endfor %}{{ ns.x }}"
    if shape < 0.95:
        return ("{% macro m(a, b=" + expr(r, 2) + ") %}[{{ a }}|{{ b }}|{{ varargs }}|{{ kwargs }}]{% endmacro %}"
                "{{ m(" + e + ") }}{{ m(1, 2, 3, k=" + expr(r, 2) + ") }}")
    if shape < 0.97:
        return ("{% for x in " + e + " if x %}{{ loop.index0 }}{{ loop.previtem|default('^') }}{{ loop.nextitem|default('$') }}"
                "{{ loop.revindex }}{% if loop.last %}.{% endif %}{% endfor %}")
    if shape < 0.99:
        return "{% set out %}{{ " + e + " }}{% endset %}{% filter upper %}{{ out|trim }}{% endfilter %}{{ out|length }}"
    return "{% macro w() %}<{{ caller() }}>{% endmacro %}{% call w() %}{{ " + e + " }}{% endcall %}"


def random_templates(seed: int, count: int) -> list[str]:
    r = random.Random(seed)
    return [template(r) for _ in range(count)]


WS = ["", " ", "  ", "\t", "\n", "\n  ", "  \n", "\n\n", "\r\n", " \t \n  ", "\u00a0", "\u3000 "]
TEXT = ["a", "b c", "x\n", "\n", "  y  ", "z\t", "Ünï", "{", "}", "%", "#"]


def _sign(r: random.Random) -> str:
    return r.choice(["", "", "", "-", "+"])


def _tag(r: random.Random, body: str) -> str:
    return "{%" + _sign(r) + r.choice([" ", "  ", ""]) + body + r.choice([" ", "", "  "]) + _sign(r) + "%}"


def _layout(r: random.Random, depth: int) -> str:
    out = []
    for _ in range(r.randint(1, 5)):
        k = r.random()
        out.append(r.choice(WS))
        if k < 0.2:
            out.append(r.choice(TEXT))
        elif k < 0.35:
            out.append("{{" + _sign(r) + " " + r.choice(["'v'", "n", "none", "''", "'\\n'"]) + " " + _sign(r) + "}}")
        elif k < 0.45:
            out.append("{#" + _sign(r) + r.choice([" c ", "\n", "", " {{ x }} "]) + _sign(r) + "#}")
        elif k < 0.5:
            out.append(_tag(r, "set v = 1"))
        elif k < 0.55:
            out.append(_tag(r, "raw") + r.choice(["{{ raw }}", " \n x \n ", ""]) + _tag(r, "endraw"))
        elif depth < 3 and k < 0.75:
            out.append(_tag(r, r.choice(["if true", "if false", "if n"])) + _layout(r, depth + 1))
            if r.random() < 0.4:
                out.append(_tag(r, "else") + _layout(r, depth + 1))
            out.append(_tag(r, "endif"))
        elif depth < 3 and k < 0.9:
            out.append(_tag(r, r.choice(["for i in [1, 2]", "for i in []", "for i in l"])) + _layout(r, depth + 1))
            if r.random() < 0.3:
                out.append(_tag(r, "else") + _layout(r, depth + 1))
            out.append(_tag(r, "endfor"))
        elif depth < 3:
            out.append(_tag(r, "macro mm()") + _layout(r, depth + 1) + _tag(r, "endmacro") + r.choice(WS) + "{{ mm() }}")
        out.append(r.choice(WS))
    return "".join(out)


def random_layouts(seed: int, count: int) -> list[str]:
    r = random.Random(seed)
    return [_layout(r, 0) + r.choice(["", "\n", "\n\n", "\r\n"]) for _ in range(count)]
