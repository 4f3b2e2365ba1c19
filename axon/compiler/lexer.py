"""Source text -> Lark tokens: a single-regex scanner that asks the parser which words are keywords.

Lark's contextual lexer tries each terminal's regex in turn for every token and
was half of the parse time. This lexer matches one master regular expression
per token and decides context the way the contextual lexer does, with one
dictionary lookup: a word is a keyword only where the LALR state accepts that
keyword (so `memory: session` inside a `context` block, or `use:` inside a
step, is a field name), and `<`/`>` are comparison operators only where one is
accepted. It yields the same token types as the grammar's terminals.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import lark
from lark import Token
from lark.lexer import Lexer, LexerState

# Order matters where patterns overlap: durations before numbers, long punctuation first.
_MASTER = re.compile(
    r"""
    (?P<WS>[ \t\r\n\f]+)
  | (?P<COMMENT>//[^\n]*)
  | (?P<BLOCK_COMMENT>/\*.*?\*/)
  | (?P<DURATION>-?[0-9]+(?:\.[0-9]+)?[A-Za-z][A-Za-z0-9.]*)
  | (?P<SIGNED_NUMBER>-[0-9]+(?:\.[0-9]+)?)
  | (?P<NUMBER>[0-9]+(?:\.[0-9]+)?)
  | (?P<STRING>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<NAME>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<PUNCT>->|\.\{|\.\.|<=|>=|==|!=|[{}()\[\]:,.<>?=])
    """,
    re.VERBOSE | re.DOTALL,
)

_PUNCT_TYPES = {
    "->": "__ARROW",
    ".{": "__IMPORT_BRACE",
    "..": "__RANGE",
    "{": "LBRACE",
    "}": "RBRACE",
    "(": "LPAR",
    ")": "RPAR",
    "[": "LSQB",
    "]": "RSQB",
    ":": "COLON",
    ",": "COMMA",
    ".": "DOT",
    "<": "LESSTHAN",
    ">": "MORETHAN",
    "?": "OPTIONAL",
    "=": "EQUAL",
}
_COMPARISONS = frozenset({"<=", ">=", "==", "!=", "<", ">"})


class AxonLexer(Lexer):
    """A Lark custom lexer for the AXON grammar (see the module docstring)."""

    __future_interface__ = 2  # lex(lexer_state, parser_state), as Lark's own lexers

    def __init__(self, lexer_conf: Any) -> None:
        self.keywords: dict[str, str] = {}
        self.punct: dict[str, str] = {}
        for terminal in lexer_conf.terminals:
            pattern = terminal.pattern
            if isinstance(pattern, lark.lexer.PatternStr):
                if pattern.value.isidentifier():
                    self.keywords[pattern.value] = terminal.name
                else:
                    self.punct[pattern.value] = terminal.name
        # Anonymous punctuation gets names such as __ANON_0 from Lark: use those.
        for text, default in _PUNCT_TYPES.items():
            self.punct.setdefault(text, default)

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        text: str = lexer_state.text if isinstance(lexer_state.text, str) else lexer_state.text.text
        states = parser_state.parse_conf.parse_table.states
        keywords = self.keywords
        punct = self.punct
        match_at = _MASTER.match
        new_token = Token._future_new
        pos = 0
        line = 1
        line_start = 0
        end = len(text)
        while pos < end:
            m = match_at(text, pos)
            if m is None:
                raise lark.exceptions.UnexpectedCharacters(  # type: ignore[no-untyped-call]
                    text, pos, line, pos - line_start + 1, state=parser_state
                )
            kind = m.lastgroup
            value = m.group()
            start = pos
            pos = m.end()
            if kind == "WS" or kind == "COMMENT" or kind == "BLOCK_COMMENT":
                newlines = value.count("\n")
                if newlines:
                    line += newlines
                    line_start = start + value.rindex("\n") + 1
                continue
            column = start - line_start + 1
            if kind == "NAME":
                keyword = keywords.get(value)
                if keyword is not None and keyword in states[parser_state.position]:
                    kind = keyword
            elif kind == "PUNCT":
                if value in _COMPARISONS and "COMP_OP" in states[parser_state.position]:
                    kind = "COMP_OP"
                else:
                    kind = punct.get(value, "PUNCT")
            yield new_token(  # type: ignore[no-untyped-call]
                kind, value, start, line, column, line, column + len(value), pos
            )


def previous_token(text: str, pos: int) -> str | None:
    """The text of the last token that ends at or before `pos` (for error messages)."""
    last = None
    i = 0
    while i < pos:
        m = _MASTER.match(text, i)
        if m is None or m.end() > pos:
            break
        if m.lastgroup not in ("WS", "COMMENT", "BLOCK_COMMENT"):
            last = m
        i = m.end()
    return None if last is None else last.group()
