"""Program text -> its AST and tokens, made again only for the top-level items an edit touched.

An editor sends a new version of the text on every keystroke; parsing all of a
2,000-line program each time is most of the time to its diagnostics. The text is
cut before each line that starts (at its first column) with a word that starts a
top-level statement (`memory`, `flow`, `remember`, ... from the grammar); each
piece is parsed on its own, at its own line (preceded by as many line breaks,
so every position is the one the whole parse gives), and kept under its line and
text. The next version parses only the pieces that are new: an edit inside a line
re-parses its own item, one that adds or removes lines also the items below it.

The grammar's start rule is a sequence of items, so pieces that each parse give,
joined, the items of the whole text. A cut that falls inside something (a block
comment, a field named like a keyword at the first column, a flow whose
statements are not indented) leaves a piece that does not parse: then the whole
text is parsed, as `parser.parse` alone would, and its error is the one reported.
A test compares both ways on every example and on edited programs.

Tokens (`tokens`, white space and comments left out) are kept the same way, per
piece, and shifted to the piece's offset; a piece holding a character no terminal
matches (a block comment cut in two leaves a lone `/`) makes the whole text be
scanned instead.
"""

from __future__ import annotations

import re
from functools import cache
from itertools import pairwise
from typing import NamedTuple

from axon.compiler import ast
from axon.compiler.lexer import UNMATCHED
from axon.compiler.parser import ignored_terminals, keywords, parse, tokens
from axon.errors import AxonSyntaxError
from axon.source import MAX_SOURCE_BYTES, Span, utf8_length


class Token(NamedTuple):
    """One token that is not white space or a comment: its terminal and offsets (a
    named tuple: a 2,000-line program has some 13,000, made again on every edit)."""

    kind: str
    start: int
    end: int


def scan(text: str, offset: int = 0) -> list[Token]:
    """The tokens of `text` but white space and comments, `offset` added to their offsets."""
    skipped = ignored_terminals()
    return [Token(k, s + offset, e + offset) for k, s, e in tokens(text) if k not in skipped]


@cache
def _cut() -> re.Pattern[str]:
    words = "|".join(sorted(keywords().statement, key=len, reverse=True))
    return re.compile(rf"^(?:{words})(?=[ \t(])", re.MULTILINE)


def pieces(text: str) -> list[tuple[int, int, str]]:
    """`text` cut before each statement keyword at a line's start: (offset, line, piece)."""
    starts = [m.start() for m in _cut().finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    starts.append(len(text))
    found = []
    line = 1
    for start, end in pairwise(starts):
        piece = text[start:end]
        found.append((start, line, piece))
        line += piece.count("\n")
    return found


class ChunkedParser:
    """Parses and scans successive versions of one document, reusing unchanged pieces."""

    def __init__(self) -> None:
        self._items: dict[tuple[int, str], tuple[ast.TopLevel, ...]] = {}
        self._tokens: dict[str, list[Token]] = {}
        self.parsed = 0
        """How many pieces the last `parse` had to parse (the others were reused)."""

    def tokens(self, text: str) -> list[Token]:
        """`scan(text)`, scanning only the pieces not seen in the last version."""
        kept: dict[str, list[Token]] = {}
        found: list[Token] = []
        for offset, _, piece in pieces(text):
            relative = self._tokens.get(piece)
            if relative is None:
                relative = scan(piece)
                if any(t.kind == UNMATCHED for t in relative):
                    self._tokens = {}
                    return scan(text)
            kept[piece] = relative
            if offset:  # tuple.__new__: a named tuple's own __new__ is a Python call
                make = tuple.__new__
                found += [make(Token, (k, s + offset, e + offset)) for k, s, e in relative]
            else:
                found += relative
        self._tokens = kept
        return found

    def parse(self, text: str, filename: str = "<input>") -> ast.Program:
        """The program `parser.parse(text, filename)` gives; raises its `AxonSyntaxError`."""
        kept: dict[tuple[int, str], tuple[ast.TopLevel, ...]] = {}
        items: list[ast.TopLevel] = []
        self.parsed = 0
        if utf8_length(text) > MAX_SOURCE_BYTES:  # every piece may be within the limit
            return parse(text, filename)
        try:
            for _, line, piece in pieces(text):
                key = (line, piece)
                found = self._items.get(key)
                if found is None:
                    found = parse("\n" * (line - 1) + piece, filename).items
                    self.parsed += 1
                kept[key] = found
                items.extend(found)
        except AxonSyntaxError:
            self._items = {}
            return parse(text, filename)  # raises the whole text's own error
        self._items = kept
        return ast.Program(tuple(items), filename, span=Span(1, 1))
