"""AXON source text -> Pygments tokens: the `axon` lexer, and diagnostics' excerpts in colour.

`AxonLexer` is registered with Pygments under the name `axon` (the entry point
`pygments.lexers` in pyproject.toml), so `pygmentize -l axon`, Sphinx and
`pygments.lexers.get_lexer_by_name("axon")` find it. It takes its tokens from the
grammar's own terminals (`parser.tokens`), never from a second list of patterns:
a keyword added to `grammar/axon.lark` is highlighted with no edit here. The REPL
colours what is typed with it, and `axon check` the source lines of its
diagnostics when colour is on (`colour_excerpts`). docs/editors.md describes both.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any, ClassVar

from pygments import highlight
from pygments.formatters import TerminalFormatter
from pygments.lexer import Lexer
from pygments.token import (
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
    _TokenType,
)

from axon.compiler.lexer import UNMATCHED
from axon.compiler.parser import ignored_terminals, keywords, tokens

DECLARING = frozenset({"memory", "flow", "persona", "context", "anchor", "tool", "intent", "type"})
"""Keywords whose next name is the name being declared (shown as a declaration)."""

_FIXED: dict[str, _TokenType] = {
    "COMMENT": Comment.Single,
    "BLOCK_COMMENT": Comment.Multiline,
    "STRING": String.Double,
    "NUMBER": Number,
    "SIGNED_NUMBER": Number,
    "DURATION": Number,
    "COMP_OP": Operator,
    UNMATCHED: Error,
}
_CONSTANTS = frozenset({"true", "false"})
_FIELD_AFTER = re.compile(r"[ \t]*:")


@cache
def _keyword_terminals() -> dict[str, str]:
    return keywords().terminals


def token_types(text: str) -> Iterator[tuple[int, _TokenType, str]]:
    """`(offset, Pygments token type, text)` for every piece of `text`, gaps included."""
    keyword_terminals, skipped = _keyword_terminals(), ignored_terminals()
    pos = 0
    previous_word = ""
    for kind, start, end in tokens(text):
        if start > pos:  # a byte-order mark the scanner steps over
            yield pos, Text, text[pos:start]
        value = text[start:end]
        pos = end
        token: _TokenType
        if kind in _FIXED:
            token = _FIXED[kind]
            if kind == "STRING" and value.startswith("'"):
                token = String.Single
        elif kind in skipped:
            token = Whitespace
        elif kind in keyword_terminals or kind == "NAME":
            if _FIELD_AFTER.match(text, end):  # `store:`, `type:`: a field name
                token = Name.Attribute
            elif kind == "NAME":
                token = Name.Class if previous_word in DECLARING else Name
            elif value in _CONSTANTS:
                token = Keyword.Constant
            elif value in DECLARING:
                token = Keyword.Declaration
            else:
                token = Keyword
        elif value == "->":
            token = Operator
        else:
            token = Punctuation
        if kind not in skipped:
            previous_word = value
        yield start, token, value
    if pos < len(text):
        yield pos, Text, text[pos:]


class AxonLexer(Lexer):  # type: ignore[misc]  # pygments has no type hints
    """Pygments lexer for AXON programs (`.axon`), registered as `axon`."""

    name = "AXON"
    aliases: ClassVar[list[str]] = ["axon"]
    filenames: ClassVar[list[str]] = ["*.axon"]
    mimetypes: ClassVar[list[str]] = ["text/x-axon"]

    def get_tokens_unprocessed(self, text: str) -> Iterator[tuple[int, Any, str]]:
        return token_types(text)


class AxonReplLexer(AxonLexer):
    """`AxonLexer` for the REPL's input: a dot command (`.load notes.axon`) is not AXON
    source, so its name is one token and the rest of the line plain text."""

    name = "AXON REPL"
    aliases: ClassVar[list[str]] = []
    filenames: ClassVar[list[str]] = []
    mimetypes: ClassVar[list[str]] = []

    def get_tokens_unprocessed(self, text: str) -> Iterator[tuple[int, Any, str]]:
        stripped = text.lstrip()
        if not stripped.startswith("."):
            return token_types(text)
        start = len(text) - len(stripped)
        end = start + len(stripped.split(None, 1)[0])
        pieces = [(0, Whitespace, text[:start]), (start, Keyword.Pseudo, text[start:end])]
        pieces.append((end, Text, text[end:]))
        return iter([p for p in pieces if p[2]])


_EXCERPT = re.compile(r"^( *\d+ \| )(.*)$", re.MULTILINE)
"""A source line in a rendered diagnostic (`source.Source.render`): gutter, then the text."""


def colour_excerpts(rendered: str) -> str:
    """A rendered diagnostic with its source lines highlighted (ANSI colours).

    Only the text after each `NN | ` gutter is coloured, one line at a time; the
    header line and the caret line stay as they are, so columns do not move.
    """
    formatter = TerminalFormatter()
    lexer = AxonLexer(stripnl=False, ensurenl=False)

    def colour(m: re.Match[str]) -> str:
        coloured: str = highlight(m.group(2), lexer, formatter)
        return m.group(1) + coloured.rstrip("\n")

    return _EXCERPT.sub(colour, rendered)
