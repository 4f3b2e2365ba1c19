"""A namespace as written ("acme/u42", ("acme", "u42")) -> a checked `Namespace`, and the
physical scopes of its entries.

A namespace is a path of 1 to 8 labels, each 1 to 128 characters, no `/`, no control
character, not `.` or `..` (docs/language.md §14 Namespaces). The root namespace (no
label, `Namespace.ROOT`) holds everything written without one.

Backends isolate entries by scope (a string); a namespace is part of that scope.
The root's scope is exactly the scope of a store written before namespaces existed
(the memory's name, an owned scope, a tier's counters), so such a store opens
unchanged. A non-root namespace prefixes the scope with `MARK`, then every label
followed by `SEP`:

    "\\x1d" + "acme\\x1f" + "u42\\x1f" + "Notes"

Labels hold no control character and no memory name or owned scope starts with one,
so the encoding is unambiguous, and the scopes of `acme` and everything below it are
exactly those that start with `Namespace(("acme",)).scope_prefix` (never `acmeX`'s):
one `MemoryBackend.scopes(prefix)` lists them.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Sequence
from typing import ClassVar

import attrs

from axon.errors import AxonMemoryError

MAX_LABELS = 8
"""At most this many labels in a namespace."""
MAX_LABEL = 128
"""At most this many characters in a label."""
MARK = "\x1d"
"""The start of every namespaced scope (a control character: no label holds one)."""
SEP = "\x1f"
"""Ends every label of a namespaced scope."""
ENV = "AXON_NAMESPACE"
"""The environment variable naming the namespace of a session that gives none."""


def _control(char: str) -> bool:
    return unicodedata.category(char) == "Cc"


@attrs.frozen(order=True)
class Namespace:
    """A checked namespace: its labels (none for the root). Build it with `Namespace.of`."""

    labels: tuple[str, ...] = ()

    ROOT: ClassVar[Namespace]
    """The root namespace (no label)."""

    @classmethod
    def of(cls, value: object, *, what: str = "namespace") -> Namespace:
        """`value` ("acme/u42", ("acme", "u42"), a `Namespace`, None or "" for the root)
        checked; a bad one is an `AxonMemoryError` naming it and the rule it breaks."""
        if isinstance(value, Namespace):
            return value
        if value is None:
            return ROOT
        if isinstance(value, str):
            labels: tuple[object, ...] = tuple(value.split("/")) if value else ()
        elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            labels = tuple(value)
        else:
            raise TypeError(
                f"{what} must be a str like 'acme/u42' or a tuple of labels, "
                f"not {type(value).__name__}"
            )
        if len(labels) > MAX_LABELS:
            raise AxonMemoryError(
                f"{what} {value!r} has {len(labels)} labels; a namespace has at most "
                f"{MAX_LABELS}"
            )
        for label in labels:
            problem = label_problem(label)
            if problem is not None:
                raise AxonMemoryError(f"{what} {value!r}: label {label!r} {problem}")
        return cls(tuple(str(label) for label in labels))

    @classmethod
    def from_env(cls) -> Namespace:
        """The namespace named by `AXON_NAMESPACE` (the root when unset or empty)."""
        return cls.of(os.environ.get(ENV) or None, what=ENV)

    @property
    def is_root(self) -> bool:
        return not self.labels

    @property
    def text(self) -> str:
        """As written on the command line: "acme/u42" ("" for the root)."""
        return "/".join(self.labels)

    def __str__(self) -> str:
        return self.text

    @property
    def scope_prefix(self) -> str:
        """The start of the scope of every entry of this namespace and those below it
        ("" for the root: every scope)."""
        if not self.labels:
            return ""
        return MARK + "".join(label + SEP for label in self.labels)

    def scope(self, base: str) -> str:
        """The physical scope of `base` (a memory's scope in the root) in this namespace."""
        return self.scope_prefix + base if self.labels else base

    def contains(self, other: Namespace) -> bool:
        """Whether `other` is this namespace or below it."""
        return other.labels[: len(self.labels)] == self.labels


ROOT = Namespace()
Namespace.ROOT = ROOT


def label_problem(label: object) -> str | None:
    """Why `label` is not a namespace label, or None when it is one."""
    if not isinstance(label, str):
        return f"must be a str, not {type(label).__name__}"
    if not label:
        return "is empty (a label has 1 to 128 characters; no leading, trailing or double '/')"
    if len(label) > MAX_LABEL:
        return f"has {len(label)} characters; a label has at most {MAX_LABEL}"
    if "/" in label:
        return "holds '/' (it separates labels)"
    if any(_control(char) for char in label):
        return "holds a control character"
    if label in (".", ".."):
        return "may not be '.' or '..'"
    return None


def split_scope(scope: str) -> tuple[Namespace, str]:
    """A physical scope -> its namespace and the scope it has in the root (`base`)."""
    if not scope.startswith(MARK):
        return ROOT, scope
    *labels, base = scope[len(MARK) :].split(SEP)
    return Namespace(tuple(labels)), base
