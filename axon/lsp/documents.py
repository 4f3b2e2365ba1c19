"""Open documents -> their analysis and the editor's positions: the server's document store.

The editor speaks in lines and UTF-16 code units (LSP's default position
encoding); the analysis in character offsets. `LineIndex` converts both ways for
one version of a text, and `DocumentStore` keeps, per URI, the newest text, its
version and its analysis, made again only when the text changed (a request
between two edits reuses it), with the document's `chunks.ChunkedParser`, so an
edit parses again only the items it touched. The text itself is kept up to date by pygls's
workspace (incremental changes applied there); this store only reads it.
"""

from __future__ import annotations

import bisect
from urllib.parse import unquote, urlparse

import attrs

from axon.lsp.analysis import Analysis, analyse
from axon.lsp.chunks import ChunkedParser


def _units(text: str) -> int:
    """UTF-16 code units of `text` (a character past U+FFFF takes two)."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


class LineIndex:
    """Offsets of one text <-> (line, UTF-16 column), both 0-based as LSP counts them.

    Lines end at `\\n` (a `\\r` before it belongs to the line, as for the parser).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        at = text.find("\n")
        while at >= 0:
            self.starts.append(at + 1)
            at = text.find("\n", at + 1)

    def position(self, offset: int) -> tuple[int, int]:
        """The (line, UTF-16 column) of a character offset."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[line]
        chunk = self.text[start:offset]
        return line, len(chunk) if chunk.isascii() else _units(chunk)

    def offset(self, line: int, column: int) -> int:
        """The character offset of a (line, UTF-16 column); past the end is clamped."""
        if line >= len(self.starts):
            return len(self.text)
        start = self.starts[max(line, 0)]
        end = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else len(self.text)
        text = self.text[start:end]
        if text.isascii():
            return start + min(max(column, 0), len(text))
        units = 0
        for i, char in enumerate(text):
            if units >= column:
                return start + i
            units += 2 if ord(char) > 0xFFFF else 1
        return end


@attrs.define
class Document:
    """One version of an open document: its text, line index and analysis."""

    uri: str
    version: int | None
    text: str
    lines: LineIndex
    analysis: Analysis


def filename_of(uri: str) -> str:
    """The name diagnostics use for a document: its path for a `file:` URI, else the URI."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


@attrs.define
class DocumentStore:
    """The analysis of every open document, made again only when its text changes."""

    documents: dict[str, Document] = attrs.field(factory=dict)
    parsers: dict[str, ChunkedParser] = attrs.field(factory=dict)

    def update(self, uri: str, text: str, version: int | None) -> Document:
        """The document at `uri` with this text (analysed now if the text is new)."""
        known = self.documents.get(uri)
        if known is not None and known.text == text:
            known.version = version
            return known
        parser = self.parsers.setdefault(uri, ChunkedParser())
        analysis = analyse(text, filename_of(uri), parser=parser)
        document = Document(uri, version, text, LineIndex(text), analysis)
        self.documents[uri] = document
        return document

    def get(self, uri: str) -> Document | None:
        return self.documents.get(uri)

    def close(self, uri: str) -> None:
        self.documents.pop(uri, None)
        self.parsers.pop(uri, None)
