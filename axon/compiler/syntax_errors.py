"""Lark's parse exceptions -> `AxonSyntaxError` with a message a person can act on.

Lark reports terminal names (`COLON`, `RBRACE`); we say what was expected in
words ("expected ':' after field name 'store'"), say "unexpected end of input"
when the text stopped too early (and mark it incomplete for the REPL), and
suggest the closest keyword for a misspelt one. The keywords, and the tokens a
search for unclosed brackets steps over, come from the grammar (`lexer`).
"""

from __future__ import annotations

import re
from functools import cache

import lark
from lark import Token

from axon.compiler import lexer
from axon.compiler.names import Suggester
from axon.errors import AxonSyntaxError
from axon.source import Source, Span, position_of

_DESCRIBE = {
    "NAME": "a name",
    "STRING": "a string",
    "NUMBER": "a number",
    "SIGNED_NUMBER": "a number",
    "DURATION": "a duration",
    "COMP_OP": "a comparison operator",
    "$END": "end of input",
}

def _describe_terminal(name: str, parser: lark.Lark) -> str:
    if name in _DESCRIBE:
        return _DESCRIBE[name]
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name.lower()
    if isinstance(pattern, lark.lexer.PatternStr):
        return f"'{pattern.value}'"
    return name.lower()


def _describe_token(token: Token) -> str:
    if token.type == "$END":
        return "end of input"
    if token.type == "STRING":
        return f"string {token}"
    text = str(token)
    if len(text) > 30:
        text = text[:27] + "..."
    return f"'{text}'"


def _expected_list(expected: set[str], parser: lark.Lark) -> str:
    words = sorted({_describe_terminal(name, parser) for name in expected})
    if len(words) == 1:
        return words[0]
    if len(words) > 8:
        words = [*words[:8], "..."]
    return "one of " + ", ".join(words)


def _keyword_words(expected: set[str], parser: lark.Lark) -> list[str]:
    keywords = lexer.grammar_words(parser).terminals
    return [keywords[name] for name in expected if name in keywords]


_NESTED_IF = re.compile(r"->\s*(if)\s+\Z")
"""`-> if ` just before an error: an `if` written as the branch of another."""

_OPEN = frozenset("{([")
_CLOSE = {"}": "{", ")": "(", "]": "["}


@cache
def _bracket_scan(parser: lark.Lark) -> re.Pattern[str]:
    """Brackets, newlines, and the tokens (strings, comments) whose brackets do not count."""
    return re.compile(f"{lexer.hidden_brackets(parser)}|[{{}}()\\[\\]]|\n")


def _unclosed_bracket(text: str, parser: lark.Lark) -> tuple[str, int, int] | None:
    """The innermost bracket still open at the end of `text`: (char, line, column)."""
    stack: list[tuple[str, int, int]] = []
    line, line_start = 1, 0
    for match in _bracket_scan(parser).finditer(text):
        token = match.group()
        if token in _OPEN:
            stack.append((token, line, match.start() - line_start + 1))
        elif token in _CLOSE:
            if stack and stack[-1][0] == _CLOSE[token]:
                stack.pop()
        elif "\n" in token:  # a newline, or a comment or white space spanning lines
            line += token.count("\n")
            line_start = match.start() + token.rfind("\n") + 1
    return stack[-1] if stack else None


def _message_for_token(
    exc: lark.UnexpectedToken, parser: lark.Lark, source: Source
) -> tuple[str, bool, Span | None]:
    """The message, whether the text just ended too early, and a span other than the token's."""
    token: Token = exc.token
    expected: set[str] = set(exc.expected)
    previous = lexer.previous_token(parser, source.text, token.start_pos or 0)
    starters = lexer.grammar_words(parser).starters
    if token.type == "$END":
        opened = _unclosed_bracket(source.text, parser)
        if opened is not None:
            char, line, column = opened
            return (
                f"unexpected end of input: '{char}' opened at line {line}, column {column} "
                f"is never closed",
                True,
                None,
            )
        return f"unexpected end of input: expected {_expected_list(expected, parser)}", True, None
    if "RBRACE" in expected and str(token) in starters:
        # A construct's keyword where a '}' was due: the block before it was never closed.
        opened = _unclosed_bracket(source.text[: token.start_pos or 0], parser)
        if opened is not None and opened[0] == "{":
            _, line, column = opened
            return (
                f"'{{' opened at line {line}, column {column} is never closed: expected '}}' "
                f"before '{token}' at line {token.line}, column {token.column}",
                False,
                Span(line, column, line, column + 1),
            )
    nested_if = _NESTED_IF.search(source.text, 0, token.start_pos or 0)
    if previous == "if" and nested_if is not None:
        # `-> if ...`: a branch is one statement that is not an `if`, so the lexer read
        # `if` as a name and the parser stopped at the condition after it.
        line, column = position_of(source.text, nested_if.start(1))
        return (
            "an 'if' cannot be the branch of an 'if' directly: "
            "write it in a block, -> { if ... }",
            False,
            Span(line, column, line, column + 2),
        )
    if "COLON" in expected and previous is not None and previous.isidentifier():
        return f"expected ':' after field name '{previous}'", False, None
    keywords = _keyword_words(expected, parser)
    if token.type == "NAME" and keywords and "NAME" not in expected:
        if close := Suggester(keywords).closest(str(token)):
            return f"unknown keyword '{token}' (did you mean '{close}'?)", False, None
        if set(keywords) & set(starters) and len(keywords) > 3:
            return (
                f"unexpected {_describe_token(token)}: expected a declaration or statement "
                f"({', '.join(sorted(set(keywords) & set(starters)))})",
                False,
                None,
            )
    return (
        f"unexpected {_describe_token(token)}: expected {_expected_list(expected, parser)}",
        False,
        None,
    )


def _message_for_characters(exc: lark.UnexpectedCharacters, source: Source) -> str:
    char = exc.char
    if char in "\"'":
        return "unterminated string (missing closing quote)"
    shown = repr(char) if not char.isprintable() or char in " \t" else f"'{char}'"
    pos = exc.pos_in_stream or 0
    if char == "/" and source.text[pos : pos + 2] == "/*":
        return "unterminated comment (missing '*/')"
    return f"unexpected character {shown}"


def translate(exc: lark.exceptions.LarkError, source: Source, parser: lark.Lark) -> AxonSyntaxError:
    """Turn any Lark error raised while parsing `source` into an `AxonSyntaxError`."""
    if isinstance(exc, lark.UnexpectedToken):
        message, incomplete, at = _message_for_token(exc, parser, source)
        token: Token = exc.token
        if at is not None:
            span = at
        elif token.type == "$END":
            span = _end_span(source)
        else:
            span = Span(token.line or 1, token.column or 1, token.end_line, token.end_column)
        return AxonSyntaxError(message, span, source, incomplete=incomplete)
    if isinstance(exc, lark.UnexpectedCharacters):
        message = _message_for_characters(exc, source)
        incomplete = message.startswith("unterminated comment")
        return AxonSyntaxError(
            message,
            Span(exc.line, exc.column, exc.line, exc.column + 1),
            source,
            incomplete=incomplete,
        )
    if isinstance(exc, lark.UnexpectedEOF):
        return AxonSyntaxError(
            "unexpected end of input", _end_span(source), source, incomplete=True
        )
    return AxonSyntaxError(f"invalid syntax: {exc}", Span(1, 1), source)


def _end_span(source: Source) -> Span:
    """The position just after the last non-blank character of the text."""
    lines = source.text.rstrip().splitlines() or [""]
    return Span(len(lines), len(lines[-1]) + 1)
