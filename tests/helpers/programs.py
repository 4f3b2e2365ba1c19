"""Programs for the property tests: generated memory declarations (with the fields they
were made from), generated programs of every statement, the hostile corpus's files and
the tokens of its token soup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from axon.compiler.durations import format_duration
from axon.compiler.lexer import MAX_NUMBER_DIGITS

HOSTILE_FILES = sorted((Path(__file__).resolve().parents[1] / "hostile" / "corpus").glob("*.axon"))
"""The files of tests/hostile/corpus: each a clear error with a position, or it works."""

HOSTILE_TOKENS = st.sampled_from(
    [
        "memory", "flow", "step", "let", "remember", "recall", "run", "if", "with", "from",
        "->", "in", "as", "Notes", "x", "{", "}", "[", "]", "(", ")", "<", ">", ",", ":",
        "=", ".", "..", "?", "==", '"s"', "'\\q'", '"\\u{110000}"', "'\ud800'", "1.5", "-3",
        "7d", "9" * (MAX_NUMBER_DIGITS + 1), "//c\n", "/*", "*/", "\n", "\r\n", "\ufeff",
        "\x00", "\x1b", "top_k:", "tpo_k:", "where:", "metadata:", "store:", "persistant",
    ]
)
"""Words, brackets, bad escapes and bytes that token soup is made of."""


_NAMES = st.from_regex(r"[A-Z][A-Za-z0-9_]{0,12}", fullmatch=True)


@st.composite
def memory_decls(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    name = draw(_NAMES)
    store = draw(st.sampled_from(["ephemeral", "session", "persistent", None]))
    persistent_backends = ["sqlite", "vector_db", "pgvector", "postgres"]
    backends = persistent_backends if store == "persistent" else [*persistent_backends, "in_memory"]
    backend = draw(st.sampled_from([*backends, None]))
    retrieval = draw(st.sampled_from(["exact", "keyword", "semantic", "hybrid", None]))
    millis = draw(st.integers(min_value=1, max_value=10**11))
    decay = draw(st.sampled_from([format_duration(millis / 1000), "never", "daily", None]))
    top_k = draw(st.integers(min_value=1, max_value=1000) | st.none())
    location = draw(st.sampled_from(["kb.db", "env:AXON_PG_DSN", None]))
    fields = {
        "store": store,
        "backend": backend,
        "retrieval": retrieval,
        "decay": decay,
        "top_k": top_k,
        "location": location,
    }
    order = draw(st.permutations([k for k, v in fields.items() if v is not None]))
    sep = draw(st.sampled_from([" ", ", ", "\n  ", ",\n"]))
    body = sep.join(
        f'{k}: "{fields[k]}"' if k == "location" else f"{k}: {fields[k]}" for k in order
    )
    return f"memory {name} {{ {body} }}", {"name": name, **fields}


_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
_WORD = st.sampled_from(["memory", "context", "use", "step", "store", "as", "in", "true"])
_DOTTED = st.lists(_NAME | _WORD, min_size=1, max_size=3).map(".".join)
_STRING = st.sampled_from(['"a"', "'b c'", r'"e\u00e9\n"', r'"\q"', '""', '"{ ( ["'])
_NUMBER = st.sampled_from(["0", "42", "-3", "1.5", "-0.25", "7d", "30m", "1h", "9" * 101])
_ATOM = _STRING | _NUMBER | st.sampled_from(["true", "false"]) | _DOTTED


def _values(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return _ATOM
    inner = _values(depth - 1)
    fields = st.lists(st.tuples(_NAME | _WORD, inner), max_size=3)
    return st.one_of(
        _ATOM,
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        fields.map(lambda fs: "{" + " ".join(f"{k}: {v}" for k, v in fs) + "}"),
        st.tuples(_DOTTED, st.lists(inner, max_size=2)).map(
            lambda c: f"{c[0]}({', '.join(c[1])})"
        ),
        _types(depth),
        _NAME.map(lambda n: f"raise {n}"),
    )


def _types(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return st.tuples(_NAME, st.booleans()).map(lambda t: t[0] + ("?" if t[1] else ""))
    inner = _types(depth - 1)
    return st.tuples(_NAME, st.lists(inner, min_size=1, max_size=2), st.booleans()).map(
        lambda t: f"{t[0]}<{', '.join(t[1])}>" + ("?" if t[2] else "")
    )


_VALUE = _values(2)
_FIELDS = st.lists(st.tuples(_NAME | _WORD, _VALUE), max_size=3).map(
    lambda fs: " ".join(f"{k}: {v}" for k, v in fs)
)
_COMPARE = st.sampled_from(["<", ">", "<=", ">=", "==", "!="])
_CONDITION = st.tuples(_ATOM, _COMPARE, _ATOM, st.sampled_from(["and", "or"])).map(
    lambda c: f"{c[0]} {c[1]} {c[2]} {c[3]} {c[0]}"
)


_TYPE1, _TYPE2 = _types(1), _types(2)


@st.composite
def _flow_statement(draw: st.DrawFn) -> str:
    d: Any = lambda strategy: draw(strategy)  # noqa: E731  (each template draws what it uses)
    templates = [
        lambda: f"step {d(_NAME)} {{ {d(_FIELDS)} use: {d(_VALUE)} }}",
        lambda: f"probe {d(_DOTTED)} for [{d(_VALUE)}]",
        lambda: f"reason about {d(_DOTTED)} {{ {d(_FIELDS)} }}",
        lambda: f"validate {d(_DOTTED)} against {d(_NAME)} {{ {d(_FIELDS)} }}",
        lambda: f"refine {{ {d(_FIELDS)} }}",
        lambda: f"weave [{d(_VALUE)}] into {d(_NAME)} {{ {d(_FIELDS)} }}",
        lambda: f"use {d(_DOTTED)}(x: {d(_VALUE)})",
        lambda: f"if {d(_CONDITION)} -> {{ let {d(_NAME)} = {d(_VALUE)} }} else -> refine(n: 2)",
        lambda: f"if {d(_CONDITION)} -> raise {d(_NAME)}",
        lambda: f"remember({d(_VALUE)}) -> {d(_NAME)} with {{ tags: [{d(_VALUE)}] }}",
        lambda: f"recall {d(_VALUE)} from {d(_NAME)} as {d(_NAME)}",
    ]
    return str(templates[draw(st.integers(0, len(templates) - 1))]())


_DECLARED = st.sampled_from(["persona", "context", "anchor", "tool", "intent", "memory"])


@st.composite
def _statement(draw: st.DrawFn) -> str:
    d: Any = lambda strategy: draw(strategy)  # noqa: E731
    templates = [
        lambda: f"{d(_DECLARED)} {d(_NAME)} {{ {d(_FIELDS)} }}",
        lambda: d(memory_decls())[0],
        lambda: f"import {d(_DOTTED)}.{{{d(_NAME)}, {d(_NAME)}}}",
        lambda: f"type {d(_NAME)}({d(_NUMBER)}..{d(_NUMBER)})",
        lambda: f"type {d(_NAME)} {{ a: {d(_TYPE2)} b: {d(_TYPE1)} }}",
        lambda: f"type {d(_NAME)} where {d(_CONDITION)}",
        lambda: f"type {d(_NAME)} = {d(_TYPE2)}",
        lambda: f"flow {d(_NAME)}(a: {d(_TYPE1)}, b) -> {d(_TYPE1)} {{ "
        + " ".join(d(st.lists(_flow_statement(), max_size=3)))
        + " }",
        lambda: f"run {d(_DOTTED)}({d(_VALUE)}) as {d(_NAME)} within {d(_NAME)} "
        f"constrained_by [{d(_NAME)}] effort: {d(_VALUE)}",
        lambda: f"let {d(_NAME)} = {d(_VALUE)}",
        lambda: f"remember {d(_VALUE)} in {d(_NAME)}",
        lambda: f"recall({d(_VALUE)}) from {d(_NAME)} with {{ top_k: 3 }} as {d(_NAME)}",
    ]
    return str(templates[draw(st.integers(0, len(templates) - 1))]())


_SEPARATOR = st.sampled_from([" ", "\n", "\r\n", "  // note\n", " /* a\nb */ ", "\t"])


@st.composite
def programs(draw: st.DrawFn) -> str:
    """A program of one to four statements of every kind, valid or not: the words,
    brackets, types, conditions and separators the grammar knows, mixed."""
    statements = draw(st.lists(_statement(), min_size=1, max_size=4))
    return draw(_SEPARATOR).join(statements)
