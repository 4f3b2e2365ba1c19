"""The fast loop (`axon.compiler.lexer.run`) against stock Lark, on the same grammar and callbacks.

`lexer.run` scans with its own regular expression and walks Lark's LALR tables
itself. Stock `lark.Lark(parser="lalr", lexer="contextual")`, told that every
state also accepts every terminal but the keywords and `<`/`>` (a `PostLex` with
`always_accept`: Lark's public way to widen its contextual lexer), must agree:
for generated programs, programs with one token broken, token soup drawn from
the grammar's own terminals, and the hostile corpus, both give equal ASTs (spans
included), or both raise the same error at the same line and column. The set of
terminals always accepted is worked out here from the grammar, independently of
the lexer, and the two are compared.

Where the loop refuses a token the grammar accepts (the language's limits, bad
escapes), Lark, which knows nothing of those, must not fail before that token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import attrs
import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark.lexer import PatternStr

from axon.compiler import lexer
from axon.compiler.parser import _Builder, _parser, grammar_text
from tests.helpers.programs import HOSTILE_FILES, HOSTILE_TOKENS, programs

ROOT = Path(__file__).resolve().parents[2]
_BOM = "\ufeff"


def _decided_by_state(terminals: list[lark.lexer.TerminalDef]) -> set[str]:
    """String terminals a regex terminal of the same priority matches in full (Lark's keywords)."""
    regexes = [t for t in terminals if not isinstance(t.pattern, PatternStr)]
    return {
        t.name
        for t in terminals
        if isinstance(t.pattern, PatternStr)
        and any(
            r.priority == t.priority and re.fullmatch(r.pattern.to_regexp(), t.pattern.value)
            for r in regexes
        )
    }


class _AcceptEverywhere(lark.lark.PostLex):
    """Passes tokens through; makes the contextual lexer accept `always_accept` in every state."""

    def __init__(self, names: frozenset[str]) -> None:
        self.always_accept = names

    def process(self, stream: Iterator[lark.Token]) -> Iterator[lark.Token]:
        return stream


@cache
def _stock() -> lark.Lark:
    plain = lark.Lark(grammar_text(), parser="lalr")
    names = frozenset(t.name for t in plain.terminals) - _decided_by_state(plain.terminals)
    return lark.Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        transformer=_Builder(),
        maybe_placeholders=True,
        postlex=_AcceptEverywhere(names),
    )


def _dump(value: Any) -> Any:
    """A node as plain data, spans included (they are left out of node equality)."""
    if attrs.has(type(value)):
        fields = attrs.fields(type(value))
        return (type(value).__name__, {f.name: _dump(getattr(value, f.name)) for f in fields})
    if isinstance(value, list | tuple):
        return [_dump(v) for v in value]
    return value


def _outcome(parse: Any, text: str) -> tuple[Any, ...]:
    """What parsing `text` gave: the AST, or the error's kind, place and details."""
    try:
        return ("ok", _dump(parse(text)))
    except lexer.LexError as exc:
        return ("refused", exc.offset)
    except lark.exceptions.UnexpectedToken as exc:
        token = exc.token
        expected = sorted(exc.expected)
        if token.type == "$END":  # Lark places it on the last token; the loop at the end
            return ("end", expected)
        return ("token", token.line, token.column, token.type, str(token), expected)
    except lark.exceptions.UnexpectedCharacters as exc:
        return ("characters", exc.line, exc.column)


def _position(outcome: tuple[Any, ...], text: str) -> tuple[int, int]:
    """Where an error outcome is, as (line, column); the end of the text for 'end'."""
    if outcome[0] in ("token", "characters"):
        return (outcome[1], outcome[2])
    if outcome[0] == "refused":
        before = text[: outcome[1]]
        return (before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1)
    lines = text.split("\n")
    return (len(lines), len(lines[-1]) + 1)


def assert_same(text: str) -> tuple[Any, ...]:
    """Parse `text` with both; assert they agree; the fast loop's outcome."""
    fast = _outcome(lambda t: lexer.run(_parser(), t), text)
    # The loop skips a leading byte-order mark without counting a column; Lark does not
    # know it, so it reads the text after it (lines and columns are then the same).
    stock = _outcome(_stock().parse, text.removeprefix(_BOM))
    if fast[0] == "refused":  # the refused spot may lie inside a token (a bad escape)
        if stock[0] != "ok":
            line, column = _position(stock, text.removeprefix(_BOM))
            if stock[0] == "token":
                column += len(stock[4]) - 1  # Lark failing on the very token is agreement
            assert (line, column) >= _position(fast, text), (text, fast, stock)
    else:
        assert fast == stock, text
    return fast


# ---------------------------------------------------------------- broken programs

_PIECE = re.compile(r"\s+|\w+|.", re.DOTALL)


@st.composite
def broken_programs(draw: st.DrawFn) -> str:
    """A generated program with one piece deleted, doubled or replaced: errors in context."""
    pieces = _PIECE.findall(draw(programs()))
    i = draw(st.integers(0, len(pieces) - 1))
    how = draw(st.sampled_from(["delete", "double", "replace", "glue"]))
    if how == "delete":
        del pieces[i]
    elif how == "double":
        pieces.insert(i, pieces[i])
    elif how == "replace":
        pieces[i] = draw(_soup_token())
    elif i + 1 < len(pieces) and not pieces[i].isspace():
        pieces[i] += pieces.pop(i + 1)  # two words or symbols become one
    return "".join(pieces)


# ---------------------------------------------------------------- token soup


@cache
def _terminal_tokens() -> st.SearchStrategy[str]:
    """A token of any terminal of the grammar: strings as written, regexes drawn by Hypothesis."""
    choices: list[st.SearchStrategy[str]] = []
    for terminal in _stock().terminals:
        pattern = terminal.pattern
        if isinstance(pattern, PatternStr):
            choices.append(st.just(pattern.value))
        else:
            choices.append(st.from_regex(pattern.to_regexp(), fullmatch=True))
    return st.one_of(choices)


def _soup_token() -> st.SearchStrategy[str]:
    return _terminal_tokens() | HOSTILE_TOKENS | st.sampled_from(["memoryx", "5d", "<=", "\ufeff"])


_SOUP = st.lists(st.tuples(_soup_token(), st.sampled_from(["", " ", "\n"])), max_size=40).map(
    lambda parts: "".join(token + gap for token, gap in parts)
)


_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(programs())
def test_generated_programs(text: str) -> None:
    assert_same(text)


@_SETTINGS
@given(broken_programs())
def test_generated_programs_with_one_piece_broken(text: str) -> None:
    assert_same(text)


@_SETTINGS
@given(_SOUP)
def test_token_soup(text: str) -> None:
    assert_same(text)


# ---------------------------------------------------------------- fixed texts

_FILES = sorted(
    [*HOSTILE_FILES, *(ROOT / "examples").glob("*.axon"), *(ROOT / "tests/golden").glob("*.axon")]
)


@pytest.mark.parametrize("path", _FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_files(path: Path) -> None:
    assert_same(path.read_bytes().decode("utf-8", "surrogateescape"))


@pytest.mark.parametrize(
    ("text", "outcome"),
    [
        # A word is scanned whole: no keyword is read as a prefix of a longer word.
        ("memoryx Notes {}", ("token", 1, 1, "NAME", "memoryx")),
        ("memoryNotes { store: session }", ("token", 1, 1, "NAME", "memoryNotes")),
        # A keyword where no keyword is due is a name; a field may be called like one.
        ("step X {}", ("token", 1, 1, "NAME", "step")),
        ("memory N { memory: x }", ("ok",)),
        # '<' is a type bracket where one is due, else a comparison operator.
        ("type T = List<Map<K, V>>?", ("ok",)),
        ("flow F() { if a < b -> x }", ("ok",)),
        ("let x = a <= b", ("token", 1, 11, "COMP_OP", "<=")),
        # Longer tokens win, as in Lark: a duration, '..', '.{'.
        ("type T(5d..3)", ("token", 1, 8, "DURATION", "5d..3")),
        ("let x = a..b", ("token", 1, 10, "__ANON_1", "..")),
        ("\ufefflet x = 1\nlet y = 2 3", ("token", 2, 11, "NUMBER", "3")),
    ],
)
def test_known_cases(text: str, outcome: tuple[Any, ...]) -> None:
    fast = assert_same(text)
    assert fast[: len(outcome)] == outcome


def test_the_stock_parser_accepts_what_the_loop_accepts_in_every_state() -> None:
    assert lexer.always_accepted(_parser()) == _stock().lexer_conf.postlex.always_accept
    assert {"NAME", "COMP_OP", "STRING", "LBRACE"} <= lexer.always_accepted(_parser())
    assert not {"MEMORY", "FOR", "LESSTHAN", "MORETHAN"} & lexer.always_accepted(_parser())
