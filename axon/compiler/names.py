"""Names -> keys, snake_case and suggestions: the naming rules shared by the checker,
the runtime, the CLI and the REPL (`Suggester` is the one "did you mean" rule)."""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Container, Iterable
from typing import Any

_CAMEL_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL_2 = re.compile(r"([a-z0-9])([A-Z])")
_WORD = re.compile(r"[^\W_]+")


def snake_case(name: str) -> str:
    """`ContractSummary` -> `contract_summary`, `HTTPResponse` -> `http_response`."""
    name = _CAMEL_1.sub(r"\1_\2", name)
    name = _CAMEL_2.sub(r"\1_\2", name)
    return name.replace("-", "_").lower()


def key_for_name(parts: Iterable[str]) -> str:
    """The memory key of a remembered name: `Extract.output` -> `extract_output`."""
    return "_".join(snake_case(part) for part in parts)


def key_for_literal(value: Any) -> str:
    """A stable, readable key derived from a literal's content.

    The first words of the value (slugged) plus 8 hex digits of a SHA-256 of its
    JSON form, so remembering the same literal twice keeps one entry:
    `"The client prefers short answers"` -> `the_client_prefers_short_answers_1c5d...`.
    """
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    # surrogatepass: a value with an unpaired surrogate (only Python can pass one) still
    # gets its key, so the store's check refuses it naming the memory and that key.
    digest = hashlib.sha256(
        json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    ).hexdigest()[:8]
    slug = "_".join(_WORD.findall(text.lower())[:6])[:48].strip("_")
    return f"{slug}_{digest}" if slug else f"value_{digest}"


SMALL_POOL = 50
"""Pools up to this size are searched whole with difflib; larger ones through an index."""


_EXAMINED = 40
"""Candidates difflib compares, at most, for one suggestion from a large pool."""


def _deletes(words: set[str]) -> set[str]:
    """Every string made by deleting one character of one of `words`."""
    return {w[:i] + w[i + 1 :] for w in words for i in range(len(w))}


class Suggester:
    """Finds the closest name of a pool that may hold thousands of names, cheaply.

    Up to `SMALL_POOL` names, `difflib.get_close_matches` looks at all of them (the
    quality of `did_you_mean`). Past that, a deletion index (SymSpell's idea: a
    name and a typo of it within two edits share a string made by deleting
    characters) gives the few candidates worth comparing (those within one edit,
    else within two, at most `_EXAMINED`), and difflib ranks those; so each
    suggestion costs about the same however large the pool.
    Answers are cached; `update` adds names (a pool only grows).
    """

    def __init__(self, candidates: Iterable[str] = ()) -> None:
        self._names: set[str] = set()
        self._lower: dict[str, str] = {}
        self._index: dict[str, set[str]] | None = None  # name and its one-deletion variants
        self._far: dict[str, set[str]] = {}  # two-deletion variants of short names
        self._cache: dict[str, str | None] = {}
        self.update(candidates)

    def update(self, candidates: Iterable[str]) -> None:
        new = set(candidates) - self._names
        if not new:
            return
        self._cache.clear()
        for name in sorted(new):
            self._names.add(name)
            self._lower.setdefault(name.lower(), name)
            if self._index is not None:
                self._add(name)

    def _add(self, name: str) -> None:
        assert self._index is not None
        one = _deletes({name})
        for variant in one | {name}:
            self._index.setdefault(variant, set()).add(name)
        if len(name) <= 16:  # two deletions: a typo within two edits of a short name
            for variant in _deletes(one) - one:
                self._far.setdefault(variant, set()).add(name)

    def _candidates(self, name: str) -> list[str]:
        """The names within one edit of `name`, else within two (at most `_EXAMINED`)."""
        if self._index is None:
            self._index, self._far = {}, {}
            for candidate in sorted(self._names):
                self._add(candidate)
        one = _deletes({name}) | {name}
        hits = {c for v in one for c in self._index.get(v, ())}
        if not hits:
            two = _deletes(one) if len(name) <= 16 else set()
            for v in one | two:
                hits.update(self._index.get(v, ()))
                hits.update(self._far.get(v, ()))
                if len(hits) > _EXAMINED * 4:
                    break
        return sorted(hits, key=lambda c: (abs(len(c) - len(name)), c))[:_EXAMINED]

    def closest(self, name: str, allowed: Container[str] | None = None) -> str | None:
        """The best candidate for `name` (restricted to `allowed`), or None."""
        if allowed is None and name in self._cache:
            return self._cache[name]
        if len(self._names) <= SMALL_POOL:
            pool = sorted(c for c in self._names if allowed is None or c in allowed)
        else:
            pool = [c for c in self._candidates(name) if allowed is None or c in allowed]
        close = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
        best = close[0] if close else self._lower.get(name.lower())
        if best is not None and allowed is not None and best not in allowed:
            best = None
        if allowed is None:
            self._cache[name] = best
        return best

    def did_you_mean(self, name: str, allowed: Container[str] | None = None) -> str:
        """` (did you mean 'x'?)` for the closest candidate, or `""`."""
        best = self.closest(name, allowed)
        return f" (did you mean '{best}'?)" if best else ""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest candidate, or `""` (see `Suggester`)."""
    return Suggester(candidates).did_you_mean(name)


def _a(kind: str) -> str:
    """`kind` with its indefinite article: "a flow", "an imported name", "an intent"."""
    return f"{'an' if kind[:1] in ('a', 'e', 'i', 'o', 'u') else 'a'} {kind}"
