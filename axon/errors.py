"""The error types of AXON and the diagnostics they carry.

Every user mistake (syntax, checking, runtime data) is an `AxonError` whose `str()`
is the rendered diagnostic: `file:line:col: error: message`, the source line and a
caret. Internal bugs are anything else; the CLI reports those separately.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from axon.redaction import redact_secrets
from axon.source import NO_SPAN, Source, Span


def extra_hint(extra: str) -> str:
    """How to install the optional extra `extra`, in words that work: the distribution
    (`axon-memory`) is installed from a checkout or a built wheel, not the package index.
    """
    return (
        f"install the '{extra}' extra: pip install '.[{extra}]' in an AXON checkout "
        f"(or the wheel, 'axon_memory-*.whl[{extra}]')"
    )


@attrs.frozen(slots=True)
class Diagnostic:
    """One problem found in a program: where, what, and how bad."""

    message: str
    span: Span = NO_SPAN
    severity: str = "error"  # "error" | "warning"

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    def render(self, source: Source | None) -> str:
        """The diagnostic as text (connection-string passwords in it replaced by `***`)."""
        if source is None:
            if self.span.line:
                text = f"{self.span.line}:{self.span.column}: {self.severity}: {self.message}"
            else:
                text = f"{self.severity}: {self.message}"
            return redact_secrets(text)
        return redact_secrets(source.render(self.span, self.message, self.severity))

    def to_dict(self) -> dict[str, object]:
        return {
            "severity": self.severity,
            "message": self.message,
            "line": self.line,
            "column": self.column,
        }


class AxonError(Exception):
    """Base of every error AXON reports to a user; carries `line`, `column`, `message`."""

    def __init__(
        self,
        message: str,
        span: Span = NO_SPAN,
        source: Source | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.source = source

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    @property
    def filename(self) -> str:
        return self.source.filename if self.source else "<input>"

    def __str__(self) -> str:
        return Diagnostic(self.message, self.span).render(self.source)


class AxonSyntaxError(AxonError):
    """The text is not an AXON program; `incomplete` is True when it just ended too early."""

    def __init__(
        self,
        message: str,
        span: Span = NO_SPAN,
        source: Source | None = None,
        *,
        incomplete: bool = False,
    ) -> None:
        super().__init__(message, span, source)
        self.incomplete = incomplete


class AxonCheckError(AxonError):
    """The program parsed but has problems; `diagnostics` holds every one, sorted by position."""

    def __init__(self, diagnostics: Iterable[Diagnostic], source: Source | None = None) -> None:
        self.diagnostics = sorted(diagnostics, key=lambda d: (d.line, d.column))
        first = self.diagnostics[0] if self.diagnostics else Diagnostic("check failed")
        super().__init__(first.message, first.span, source)

    def __str__(self) -> str:
        return "\n".join(d.render(self.source) for d in self.diagnostics)


class AxonRuntimeError(AxonError):
    """A statement failed while running (bad value, unbound name, backend failure).

    `records` holds the output records of the statements that ran before the
    failing one (their effects stay: `Session.execute` sets it).
    """

    records: Sequence[Mapping[str, Any]] = ()


class AxonSessionError(AxonError, RuntimeError):
    """A session cannot take the call: it is closed, or the call comes from inside one of
    its own operations (a model client's `complete()` or an `embed()` progress callback
    calling back into it, which would wait forever for itself).

    An `AxonError` (one `except AxonError` catches every refusal) and a `RuntimeError`,
    as using a closed resource is in Python.
    """


class AxonMemoryError(AxonError, ValueError):
    """A memory operation was refused: names the memory (scope) and key involved.

    Raised by backends for bad data (unstorable value, empty key, bad top_k) and
    storage failures; the executor wraps it into an `AxonRuntimeError` with the
    statement's position. An `AxonError` like every user-facing error (one
    `except AxonError` catches it), and a `ValueError` for the seed's API
    (`ValueError("Memory key must not be empty")`). It has no source position:
    `str()` is the message with the memory and key.
    """

    def __init__(self, message: str, *, memory: str | None = None, key: str | None = None):
        super().__init__(message)
        self.memory = memory
        self.key = key

    def __str__(self) -> str:
        where = []
        if self.memory:
            where.append(f"memory '{self.memory}'")
        if self.key is not None:
            where.append(f"key '{self.key}'")
        return f"{self.message} ({', '.join(where)})" if where else self.message
