"""Source text -> parse result: one loop that scans tokens and runs Lark's LALR tables.

Lark's own loop (a contextual lexer trying each terminal's regex in turn, then
`feed_token` per token, with rule callbacks looked up by `Rule` objects whose
hash and equality are Python methods) was most of the front end's time. This
module keeps Lark's grammar analysis, tables and callbacks (the transformer that
builds AST nodes) and replaces only the loop:

- one master regular expression matches each token;
- context is decided as Lark's contextual lexer decides it, with one dictionary
  lookup in the current LALR state: a word is a keyword only where the state
  accepts that keyword (so `memory: session` inside a `context` block, or `use:`
  in a step, is a field name), and `<`/`>` are comparison operators only where a
  comparison is accepted;
- shifts and reductions run on plain lists, with each rule's size, callback and
  left-hand side resolved once per grammar.

Errors are Lark's exception types (`UnexpectedCharacters`, `UnexpectedToken`),
so `syntax_errors.translate` reports them the same way, and `LexError` for the
checks this loop makes itself: the language's limits (nesting depth, digits in a
number) and the contents of string literals (escapes, control characters).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import lark
from lark import Token
from lark.parsers.lalr_analysis import Shift

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
_SKIP = frozenset({"WS", "COMMENT", "BLOCK_COMMENT"})
_NAMED_PUNCT = frozenset({"OPTIONAL", "COMP_OP"})
"""Punctuation the grammar keeps as named terminals (callbacks look at them)."""
_COMPARISONS = frozenset({"<=", ">=", "==", "!=", "<", ">"})
_OPENERS = frozenset({"{", "[", "(", ".{"})
_CLOSERS = frozenset({"}", "]", ")"})

MAX_NESTING = 100
"""Brackets (`{`, `[`, `(`, type arguments `<`) open at once, at most (docs/language.md, Limits)."""
MAX_NUMBER_DIGITS = 100
"""Digits in one number or duration literal, at most (docs/language.md, Limits)."""

ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "r": "\r"}
"""The one-character escapes of string literals; `\\uXXXX` and `\\u{X...}` come on top."""
_ESCAPE = re.compile(r"\\(?:u\{([0-9A-Fa-f]{1,6})\}|u([0-9A-Fa-f]{4})|(.))", re.DOTALL)
_RAW_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_DIGITS = re.compile(r"[0-9]")


class LexError(Exception):
    """A token the grammar accepts but the language refuses; `offset` is where, in the text."""

    def __init__(self, message: str, offset: int, length: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.length = length


def _escape_value(m: re.Match[str]) -> str | None:
    """The text one escape stands for, or None when it is not an escape of the language."""
    braced, four, char = m.group(1), m.group(2), m.group(3)
    if braced is not None or four is not None:
        code = int(braced or four, 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            return None
        return chr(code)
    return ESCAPES.get(char)


def check_string(token: str, offset: int) -> None:
    """Raise `LexError` at the first unknown escape or raw control character of a literal.

    `token` is the literal with its quotes, `offset` where it starts in the text.
    """
    raw = _RAW_CONTROL.search(token)
    if raw is not None:
        code = ord(raw.group())
        raise LexError(
            f"control character U+{code:04X} in a string (write it as \\u{code:04X})",
            offset + raw.start(),
        )
    for m in _ESCAPE.finditer(token, 1, len(token) - 1):
        if _escape_value(m) is None:
            shown = m.group()
            if m.group(3) is not None and not m.group(3).isprintable():
                shown = "\\" + repr(m.group(3))[1:-1]
            if shown.startswith("\\u") and m.group(3) is None:
                problem = "is a surrogate or beyond U+10FFFF, not a character"
            elif shown.startswith("\\u"):
                problem = "needs four hex digits (\\u00e9) or braces (\\u{1F600})"
            else:
                problem = "is not an escape"
            raise LexError(
                f"'{shown}' {problem}; the escapes are \\\\ \\\" \\' \\n \\t \\r "
                "\\uXXXX \\u{X...}",
                offset + m.start(),
                len(m.group()),
            )


def unquote(token: str) -> str:
    """The text a string literal (checked by `check_string`) stands for, quotes removed."""
    body = token[1:-1]
    if "\\" not in body:
        return body
    return _ESCAPE.sub(lambda m: _escape_value(m) or "", body)


class _Tables:
    """What the loop needs from a Lark instance, resolved once."""

    def __init__(self, parser: lark.Lark) -> None:
        inner = parser.parser.parser.parser  # ParsingFrontend -> LALR_Parser -> _Parser
        table = inner.parse_table
        self.states: dict[Any, dict[str, tuple[Any, Any]]] = table.states
        self.start = table.start_states["start"]
        self.end = table.end_states["start"]
        callbacks = inner.callbacks
        self.token_callbacks = {k: v for k, v in callbacks.items() if isinstance(k, str)}
        self.rules = {
            id(rule): (len(rule.expansion), callback, rule.origin.name)
            for rule, callback in callbacks.items()
            if not isinstance(rule, str)
        }
        self.keywords: dict[str, str] = {}
        self.punct: dict[str, str] = {}
        for terminal in parser.terminals:
            pattern = terminal.pattern
            if isinstance(pattern, lark.lexer.PatternStr):
                if pattern.value.isidentifier():
                    self.keywords[pattern.value] = terminal.name
                else:
                    self.punct[pattern.value] = terminal.name
        # Punctuation terminals the grammar never names in a rule are filtered out.
        self.anonymous = frozenset(
            name for name in self.punct.values() if name not in _NAMED_PUNCT
        )


@cache
def _tables(parser: lark.Lark) -> _Tables:
    return _Tables(parser)


def run(parser: lark.Lark, text: str) -> Any:
    """Scan `text` and parse it with `parser`'s LALR tables and callbacks; the start value."""
    tables = _tables(parser)
    states, rules, keywords, punct = tables.states, tables.rules, tables.keywords, tables.punct
    token_callbacks = tables.token_callbacks
    anonymous = tables.anonymous
    state_stack: list[Any] = [tables.start]
    value_stack: list[Any] = []
    match_at = _MASTER.match
    new_token = Token._future_new
    pos = line_start = 0
    if text.startswith("\ufeff"):  # a byte-order mark: skipped, and not counted as a column
        pos = line_start = 1
    line = 1
    end = len(text)
    token: Token | str | None = None
    start = column = 0
    depth = 0
    while True:
        if pos < end:
            m = match_at(text, pos)
            if m is None:
                raise lark.exceptions.UnexpectedCharacters(  # type: ignore[no-untyped-call]
                    text, pos, line, pos - line_start + 1
                )
            kind: str = m.lastgroup  # type: ignore[assignment]  # every alternative is named
            value = m.group()
            start = pos
            pos = m.end()
            if kind in _SKIP:
                newlines = value.count("\n")
                if newlines:
                    line += newlines
                    line_start = start + value.rindex("\n") + 1
                continue
            column = start - line_start + 1
            accepted = states[state_stack[-1]]
            if kind == "NAME":
                keyword = keywords.get(value)
                if keyword is not None and keyword in accepted:
                    kind = keyword
            elif kind == "PUNCT":
                if value in _COMPARISONS and "COMP_OP" in accepted:
                    kind = "COMP_OP"
                else:
                    kind = punct.get(value, "PUNCT")
                    if value in _OPENERS or value == "<":
                        depth += 1
                        if depth > MAX_NESTING:
                            raise LexError(
                                f"nesting too deep: more than {MAX_NESTING} brackets "
                                "open at once",
                                start,
                            )
                    elif (value in _CLOSERS or value == ">") and depth:
                        depth -= 1
            elif kind == "STRING":
                check_string(value, start)
            elif len(value) > MAX_NUMBER_DIGITS and len(_DIGITS.findall(value)) > MAX_NUMBER_DIGITS:
                raise LexError(
                    f"number too long: more than {MAX_NUMBER_DIGITS} digits "
                    f"(the limit is {MAX_NUMBER_DIGITS})",
                    start,
                    len(value),
                )
            # Anonymous punctuation never reaches a callback (Lark filters it out of
            # the children), so it travels as its text; a Token is made only on error.
            token = (
                value
                if kind in anonymous
                else new_token(  # type: ignore[no-untyped-call]
                    kind, value, start, line, column, line, column + len(value), pos
                )
            )
            is_end = False
        else:
            token = Token("$END", "", end, line, end - line_start + 1)
            kind = "$END"
            is_end = True
        while True:
            state = state_stack[-1]
            action = states[state].get(kind)
            if action is None:
                if not isinstance(token, Token):
                    token = new_token(  # type: ignore[no-untyped-call]
                        kind, token, start, line, column, line, column + len(token), pos
                    )
                expected = {s for s in states[state] if s.isupper()}
                raise lark.exceptions.UnexpectedToken(  # type: ignore[no-untyped-call]
                    token, expected
                )
            op, arg = action
            if op is Shift:
                state_stack.append(arg)
                callback = token_callbacks.get(kind)
                value_stack.append(callback(token) if callback else token)
                break
            size, callback, origin = rules[id(arg)]
            if size:
                children = value_stack[-size:]
                del state_stack[-size:]
                del value_stack[-size:]
            else:
                children = []
            reduced = callback(children)
            state_stack.append(states[state_stack[-1]][origin][1])
            value_stack.append(reduced)
            if is_end and state_stack[-1] == tables.end:
                return value_stack[-1]


def previous_token(text: str, pos: int) -> str | None:
    """The text of the last token that ends at or before `pos` (for error messages)."""
    last = None
    i = 0
    while i < pos:
        m = _MASTER.match(text, i)
        if m is None or m.end() > pos:
            break
        if m.lastgroup not in _SKIP:
            last = m
        i = m.end()
    return None if last is None else last.group()
