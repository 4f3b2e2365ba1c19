"""Source text and positions: a `Span` locates a piece of program text, `Source` renders it.

Nothing here imports the rest of AXON; every stage (parser, checker, executor)
reports positions with these types so that errors look the same everywhere.
"""

from __future__ import annotations

from typing import NamedTuple

import attrs


class Span(NamedTuple):
    """A region of source text: 1-based line and column of its start (and end).

    A named tuple rather than an attrs class: the parser makes one per token,
    and tuple construction is several times cheaper.
    """

    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None

    @classmethod
    def point(cls, line: int, column: int) -> Span:
        return cls(line, column, None, None)


NO_SPAN = Span(0, 0)


@attrs.frozen(slots=True)
class Source:
    """The text of one program and the name it is reported under (a file or `<input>`)."""

    text: str
    filename: str = "<input>"

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline ("" when out of range)."""
        lines = self.text.splitlines()
        if 1 <= line <= len(lines):
            return lines[line - 1]
        return ""

    def render(self, span: Span, message: str, severity: str = "error") -> str:
        """`file:line:col: severity: message`, then the source line and a caret under the column.

        The caret underlines the whole span when it ends on the same line. A line
        longer than `MAX_ECHO` characters is shown as a window around the caret,
        with `…` where it was cut.
        """
        head = f"{self.filename}:{span.line}:{span.column}: {severity}: {message}"
        if span.line <= 0:
            return head
        text = self.line_text(span.line).replace("\t", " ")
        if not text.strip():
            return head
        col = max(span.column, 1)
        width = 1
        if span.end_line == span.line and span.end_column is not None:
            width = max(1, span.end_column - col)
        width = min(width, max(1, len(text) - col + 1))
        text, col, width = _clip(text, col, width)
        gutter = f"{span.line:>4} | "
        caret = " " * (len(gutter) - 2) + "| " + " " * (col - 1) + "^" + "~" * (width - 1)
        return f"{head}\n{gutter}{text}\n{caret}"


MAX_ECHO = 120
"""The most characters of a source line a diagnostic echoes (a long line is cut at the caret)."""


def _clip(text: str, col: int, width: int) -> tuple[str, int, int]:
    """`text` cut to at most `MAX_ECHO` characters around column `col`; the new col and width."""
    if len(text) <= MAX_ECHO:
        return text, col, width
    width = min(width, MAX_ECHO // 2)
    start = max(0, min(col - 1 - MAX_ECHO // 3, len(text) - (MAX_ECHO - 2)))
    end = min(len(text), start + MAX_ECHO - 2)
    head = "…" if start > 0 else ""
    tail = "…" if end < len(text) else ""
    return head + text[start:end] + tail, col - start + len(head), width
