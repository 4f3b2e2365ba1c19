"""Source text and positions: a `Span` locates a piece of program text, `Source` renders it.

Nothing here imports the rest of AXON; every stage (parser, checker, executor)
reports positions with these types so that errors look the same everywhere.
`read_source` is the one way a program file is read (`axon check`, `axon run`,
the REPL's `.load`): bounded in size, UTF-8, a byte-order mark dropped.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

import attrs

MAX_SOURCE_BYTES = 10 * 1024 * 1024
"""The largest program, in bytes of UTF-8 (10 MB; docs/language.md §10 Limits)."""

_SHOWN_LINE = 120
"""Characters of a source line a diagnostic shows at most, around the column."""

_LONGEST_MESSAGE = 400
"""Characters of a message shown at most (a message may quote a name thousands long)."""

_BOM = b"\xef\xbb\xbf"

_LONE_CR = re.compile(r"\r(?!\n)")


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


def position_of(text: str, offset: int) -> tuple[int, int]:
    """The 1-based (line, column) of a character offset; a leading BOM takes no column."""
    line_start = text.rfind("\n", 0, offset) + 1
    if line_start == 0 and text.startswith("\ufeff"):
        line_start = 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def utf8_length(text: str) -> int:
    """The size of `text` in bytes of UTF-8 (lone surrogates count three, as encoded)."""
    if len(text) * 4 <= MAX_SOURCE_BYTES:  # cannot be over the limit: skip the encoding
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


class SourceError(Exception):
    """A program file that cannot be read as AXON text: missing, too large, not UTF-8.

    `str()` is a diagnostic like the others: `file:line:col: error: message` when
    the problem has a position in the file (a bad byte, the size limit), else
    `file: error: message`; with `text` (the file decoded with U+FFFD for bad bytes)
    also the source line and a caret under the position, as `Source.render` shows.
    """

    def __init__(
        self, message: str, filename: str, line: int = 0, column: int = 0, text: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.line = line
        self.column = column
        self.text = text

    def __str__(self) -> str:
        if self.line and self.text:
            return Source(self.text, self.filename).render(
                Span(self.line, self.column), self.message
            )
        where = f"{self.filename}:{self.line}:{self.column}" if self.line else self.filename
        return f"{where}: error: {self.message}"


def read_source(path: str | os.PathLike[str], filename: str | None = None) -> str:
    """The text of a program file; raises `SourceError` (never `OSError`) when it cannot be.

    Reads at most `MAX_SOURCE_BYTES` + 1 bytes, so an endless file (`/dev/zero`, a
    pipe) is refused at the limit rather than read into memory. The bytes must be
    UTF-8; a leading byte-order mark is dropped. `filename` is the name errors use
    (default: the path as given).
    """
    name = filename if filename is not None else os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except FileNotFoundError:
        raise SourceError("no such file", name) from None
    except IsADirectoryError:
        raise SourceError("is a directory, not an .axon file", name) from None
    except OSError as exc:
        raise SourceError(f"cannot read ({exc.strerror or exc})", name) from None
    skipped = 0
    if data.startswith(_BOM):
        data, skipped = data[len(_BOM) :], len(_BOM)
    if len(data) > MAX_SOURCE_BYTES - skipped:
        line = data.count(b"\n", 0, MAX_SOURCE_BYTES) + 1
        column = MAX_SOURCE_BYTES - (data.rfind(b"\n", 0, MAX_SOURCE_BYTES) + 1) + 1
        raise SourceError(
            f"file too large: more than {MAX_SOURCE_BYTES:,} bytes (the limit is 10 MB)",
            name,
            line,
            column,
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start].decode("utf-8")
        line, column = position_of(before, len(before))
        # Only the bad byte's line is shown; decoding it with U+FFFD makes it printable.
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        shown = data[start : end if end >= 0 else len(data)].decode("utf-8", "replace")
        raise SourceError(
            f"not UTF-8 text ({exc.reason}: byte 0x{data[exc.start]:02x} "
            f"at offset {exc.start + skipped})",
            name,
            line,
            column,
            text="\n" * (line - 1) + shown,
        ) from None
    return lone_cr_as_newline(text)


def lone_cr_as_newline(text: str) -> str:
    """`text` with each CR not followed by LF (old Mac line endings) made an LF.

    A file's lone CR ends a line as the user's editor shows it (else a leading `//`
    comment would run to the end of the file). One character for one, so every
    offset stays; `\r\n` is left as it is.
    """
    return _LONE_CR.sub("\n", text) if "\r" in text else text


def _printable(text: str) -> str:
    """A source line safe to print: tabs as spaces, other unprintable characters as '?'."""
    if text.isprintable():
        return text
    return "".join(" " if c == "\t" else c if c.isprintable() else "?" for c in text)


@attrs.frozen(slots=True)
class Source:
    """The text of one program and the name it is reported under (a file or `<input>`)."""

    text: str
    filename: str = "<input>"

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its line ending ("" when out of range).

        Lines end at `\\n` only, as the lexer counts them (a lone `\\r`, form feed
        or U+2028 is not a line break).
        """
        if line < 1:
            return ""
        start = 0
        for _ in range(line - 1):
            start = self.text.find("\n", start) + 1
            if start == 0:
                return ""
        end = self.text.find("\n", start)
        text = self.text[start:] if end < 0 else self.text[start:end]
        if line == 1 and text.startswith("\ufeff"):
            text = text[1:]
        return text.removesuffix("\r")

    def render(self, span: Span, message: str, severity: str = "error") -> str:
        """`file:line:col: severity: message`, then the source line and a caret under the column.

        The caret underlines the whole span when it ends on the same line. A long
        line is shown as a window of about 120 characters around the column, a
        message past 400 characters is cut, and unprintable characters show as
        '?', so a diagnostic stays short and safe to print.
        """
        if len(message) > _LONGEST_MESSAGE:
            message = message[: _LONGEST_MESSAGE - 3] + "..."
        head = f"{self.filename}:{span.line}:{span.column}: {severity}: {message}"
        if span.line <= 0:
            return head
        text = self.line_text(span.line)
        if not text.strip():
            return head
        col = max(span.column, 1)
        width = 1
        if span.end_line == span.line and span.end_column is not None:
            width = max(1, span.end_column - col)
        if len(text) > _SHOWN_LINE:
            first = max(0, min(col - 1 - _SHOWN_LINE // 2, len(text) - _SHOWN_LINE))
            shown = text[first : first + _SHOWN_LINE]
            prefix = "..." if first else ""
            suffix = "..." if first + _SHOWN_LINE < len(text) else ""
            text = prefix + shown + suffix
            col = col - first + len(prefix)
            width = min(width, _SHOWN_LINE)
        text = _printable(text)
        width = min(width, max(1, len(text) - col + 1))
        gutter = f"{span.line:>4} | "
        caret = " " * (len(gutter) - 2) + "| " + " " * (col - 1) + "^" + "~" * (width - 1)
        return f"{head}\n{gutter}{text}\n{caret}"


