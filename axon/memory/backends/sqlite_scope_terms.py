"""Keyword recall in one small scope of a big SQLite file, from the scope's term counts
kept in the process: a scope's rows in, its best entries for a query out.

A scope of a few thousand entries among many (one namespace of 1,000) is searched by
its own rows, not by FTS5's index of the whole file (`sqlite_text_search`,
docs/performance.md "Namespaces"). Reading and tokenizing those rows on every recall
cost more than the search itself, so the first recall of a scope keeps what they
give (`ScopeTerms`: each term's rows and counts, each row's length, id, timestamp and
expiry, as numpy arrays) and the next recalls score from it, reading from the file
only the rows they return.

What was kept is used only while the scope is unchanged: `scope_stats.mark` (schema
12, `sqlite_schema`) is drawn at random by triggers on every insert, update or
delete of one of the scope's rows and when its `scope_stats` row is created, whoever
writes (this connection, another one, another process), and a recall compares it,
with the scope's entries and length, against the kept copy's inside its own read
transaction. A write elsewhere in the file leaves a scope's copy valid; after a change
to the scope, its rows are read again and only those whose key, text or context changed
are tokenized.

Scores are those of `scores.keyword_score`, computed element-wise in the same order
of the same float operations (so equal to the last bit), with the same statistics:
entries and length from `scope_stats`, a term's document count the scope's rows
holding it, expired ones included until purged. Ranking is `best_first` (score,
newest, lowest id); the filters are tested on the rows read, best first, until
`top_k` pass.
"""

from __future__ import annotations

import json
import sqlite3
from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import attrs
import numpy as np

from axon.memory.backends.sqlite_schema import _COLUMNS
from axon.memory.retrieval.scores import ScopeStats, idf, saturation, upper_bound
from axon.memory.retrieval.text import CONTEXT_WEIGHT, stem, tokenize

CACHED_ROWS = 100_000
"""Most rows whose terms one backend keeps, over all its scopes (about 400 bytes each
with their key and text); the scopes recalled least recently are dropped first."""

FETCH = 64
"""Rows read at once, best first, when filters may reject some."""


RowTerms = tuple[str, str, "str | None", tuple[int, ...], tuple[int, ...]]
"""A row's key, text and context (None: unlinked) as read, and the term numbers of its
key and text's tokens and of its context's, in order."""


@attrs.frozen(eq=False)
class ScopeTerms:
    """One scope's rows as keyword recall needs them, valid while `mark`, `docs` and
    `length` are those of its `scope_stats` row.

    `ids`, `timestamps`, `expires` (inf: never) and `lengths` (`scores.entry_length`)
    are per row, in id order. The postings are grouped by term: term number `i`
    (`terms`, by stem) is held by the rows `rows[offsets[i]:offsets[i + 1]]`, with the
    counts `tfs` at the same places (`scores.entry_counts`). `row_terms` (by id) and
    `number_of` (token -> term number) let the next read of the scope, after a
    change, tokenize only the rows whose key, text or context changed.
    """

    mark: int | None
    docs: int
    length: float
    ids: np.ndarray
    timestamps: np.ndarray
    expires: np.ndarray
    lengths: np.ndarray
    terms: dict[str, int]
    offsets: np.ndarray
    rows: np.ndarray
    tfs: np.ndarray
    row_terms: dict[int, RowTerms]
    number_of: dict[str, int]
    used: int

    @property
    def size(self) -> int:
        return len(self.ids)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The rows holding `term` and its count in each, or None."""
        number = self.terms.get(term)
        if number is None or number + 1 >= len(self.offsets):
            return None
        start, end = int(self.offsets[number]), int(self.offsets[number + 1])
        if start == end:
            return None
        return self.rows[start:end], self.tfs[start:end]

    def reusable(self) -> bool:
        """Whether a new read may keep these term numbers: not when most of them are of
        rows gone since (a scope rewritten again and again)."""
        return len(self.terms) <= 2 * self.used + 4096


def read_scope(
    conn: sqlite3.Connection,
    scope: str,
    linked: bool,
    mark: int | None,
    docs: int,
    length: float,
    previous: ScopeTerms | None = None,
) -> ScopeTerms:
    """Read every row of `scope` (expired ones too: they count in `df`), tokenizing those
    not in `previous` as they are now (the scope's last copy, whose term numbers and
    rows' terms are taken over: it must not be used after).

    Each row's terms are `text.index_terms` of its key and text (one count each) and,
    when `linked`, of its context (`CONTEXT_WEIGHT` each); its length their number,
    the context's weighted: what `scores.entry_counts` and `scores.entry_length` give,
    counted for all the scope's tokens at once (sums of ones and halves, so exact
    whatever their order).
    """
    context_column = "context" if linked else "NULL"
    rows = conn.execute(
        f"SELECT id, key, text, {context_column}, timestamp, expires_at FROM entries "
        "WHERE scope = ? ORDER BY id",
        (scope,),
    ).fetchall()
    size = len(rows)
    keep = previous is not None and previous.reusable()
    known = previous.row_terms if previous is not None and keep else {}
    terms: dict[str, int] = previous.terms if previous is not None and keep else {}
    number_of = previous.number_of if previous is not None and keep else {}
    entries: list[RowTerms | None] = []
    fresh: list[tuple[int, list[str], list[str]]] = []
    for at, (ident, key, text, context, _, _) in enumerate(rows):
        old = known.get(ident)
        if old is not None and old[0] == key and old[1] == text and old[2] == context:
            entries.append(old)
        else:
            entries.append(None)
            fresh.append((at, tokenize(f"{key} {text}"), tokenize(context) if linked else []))
    if fresh:  # each new token stemmed once
        for token in dict.fromkeys(chain.from_iterable(own + ctx for _, own, ctx in fresh)):
            if token not in number_of:
                number_of[token] = terms.setdefault(stem(token), len(terms))
        number = number_of.__getitem__
        for at, own, ctx in fresh:
            row = rows[at]
            entries[at] = (row[1], row[2], row[3], tuple(map(number, own)), tuple(map(number, ctx)))
    done: list[RowTerms] = entries  # type: ignore[assignment]  # every None replaced
    own_counts = np.fromiter((len(e[3]) for e in done), dtype=np.int64, count=size)
    numbers = np.fromiter(chain.from_iterable(e[3] for e in done), dtype=np.int64)
    lengths = own_counts.astype(np.float64)
    holders = np.repeat(np.arange(size, dtype=np.int64), own_counts)
    weights = np.ones(len(numbers), dtype=np.float64)
    if linked:
        context_counts = np.fromiter((len(e[4]) for e in done), dtype=np.int64, count=size)
        lengths = lengths + CONTEXT_WEIGHT * context_counts.astype(np.float64)
        numbers = np.concatenate(
            [numbers, np.fromiter(chain.from_iterable(e[4] for e in done), dtype=np.int64)]
        )
        holders = np.concatenate(
            [holders, np.repeat(np.arange(size, dtype=np.int64), context_counts)]
        )
        weights = np.concatenate([weights, np.full(int(context_counts.sum()), CONTEXT_WEIGHT)])
    width = max(size, 1)
    pairs, inverse = np.unique(numbers * width + holders, return_inverse=True)
    tfs = np.bincount(inverse.ravel(), weights=weights, minlength=len(pairs))
    offsets = np.searchsorted(pairs // width, np.arange(len(terms) + 1))
    return ScopeTerms(
        mark=mark,
        docs=docs,
        length=length,
        ids=np.fromiter((row[0] for row in rows), dtype=np.int64, count=size),
        timestamps=np.fromiter((row[4] for row in rows), dtype=np.float64, count=size),
        expires=np.fromiter(
            (np.inf if row[5] is None else row[5] for row in rows), dtype=np.float64, count=size
        ),
        lengths=lengths,
        terms=terms,
        offsets=offsets,
        rows=pairs % width,
        tfs=tfs,
        row_terms={row[0]: entry for row, entry in zip(rows, done, strict=True)},
        number_of=number_of,
        used=int(np.count_nonzero(np.diff(offsets))),
    )


class ScopeTermsCache:
    """The `ScopeTerms` of the scopes recalled lately, by `(scope, linked)`, at most
    `CACHED_ROWS` rows in all. Used under the backend's lock (one read at a time)."""

    def __init__(self, limit: int = CACHED_ROWS) -> None:
        self.limit = limit
        self._kept: OrderedDict[tuple[str, bool], ScopeTerms] = OrderedDict()
        self._rows = 0
        self.reads = 0  # how many times a scope was read (tests, benchmarks)

    def get(
        self, conn: sqlite3.Connection, scope: str, linked: bool, stats: Sequence[Any]
    ) -> ScopeTerms:
        """The scope's terms, read again unless the kept copy's `mark`, entries and
        length are `stats` (`mark, docs, length, context_length` of `scope_stats`)."""
        mark, docs, length = stats[0], int(stats[1]), _length(stats, linked)
        ident = (scope, linked)
        kept = self._kept.get(ident)
        if kept is not None and (kept.mark, kept.docs, kept.length) == (mark, docs, length):
            self._kept.move_to_end(ident)
            return kept
        if kept is not None:
            self._drop(ident)
        fresh = read_scope(conn, scope, linked, mark, docs, length, kept)
        self.reads += 1
        if fresh.size <= self.limit:
            self._kept[ident] = fresh
            self._rows += fresh.size
            while self._rows > self.limit:
                self._drop(next(iter(self._kept)))
        return fresh

    def _drop(self, ident: tuple[str, bool]) -> None:
        self._rows -= self._kept.pop(ident).size

    def clear(self) -> None:
        self._kept.clear()
        self._rows = 0


def _length(stats: Sequence[Any], linked: bool) -> float:
    """The scope's BM25 length: key and text, plus the weighted contexts when linked."""
    return float(stats[2]) + (CONTEXT_WEIGHT * float(stats[3]) if linked else 0.0)


def ranked_in_scope(
    conn: sqlite3.Connection,
    cache: ScopeTermsCache,
    scope: str,
    terms: Sequence[str],
    top_k: int,
    passes: Callable[[Any], bool] | None,
    now: float,
    linked: bool,
) -> list[tuple[Any, float]]:
    """The best `top_k` live rows of `scope` sharing a term of `terms` (stemmed) and
    passing `passes` (None: every row), with their keyword scores, best first.

    Rows are `_COLUMNS` of `entries`. Raw BM25 is summed term by term (the query's
    distinct terms in order) into one array, as `keyword_score` sums it per row.
    """
    stats = conn.execute(
        "SELECT mark, docs, length, context_length FROM scope_stats "
        "WHERE ifnull(scope, X'00') = ?",
        (scope,),
    ).fetchone()
    if stats is None:
        return []
    kept = cache.get(conn, scope, linked, stats)
    distinct = list(dict.fromkeys(terms))
    postings = {term: kept.postings(term) for term in distinct}
    df = {term: len(found[0]) for term, found in postings.items() if found is not None}
    scope_stats = ScopeStats(kept.docs, kept.length, df)
    bound = upper_bound(terms, scope_stats)
    if bound <= 0.0 or kept.docs <= 0 or not df:
        return []
    average = scope_stats.average_length
    raw = np.zeros(kept.size, dtype=np.float64)
    for term in distinct:
        if term not in df:
            continue
        at, tf = postings[term]  # type: ignore[misc]
        weight = idf(df[term], kept.docs)
        raw[at] += weight * saturation(tf, kept.lengths[at], average)
    scores = np.minimum(np.maximum(raw / bound, 0.0), 1.0)
    candidates = np.flatnonzero((scores > 0.0) & (kept.expires > now))
    order = candidates[
        np.lexsort((kept.ids[candidates], -kept.timestamps[candidates], -scores[candidates]))
    ]
    found: list[tuple[Any, float]] = []
    step = top_k if passes is None else max(top_k, FETCH)
    for start in range(0, len(order), step):
        chunk = order[start : start + step]
        ids = [int(ident) for ident in kept.ids[chunk]]
        marks = ",".join("?" * len(ids))
        rows = {
            row[0]: row
            for row in conn.execute(
                f"SELECT {_COLUMNS} FROM entries AS e WHERE e.id IN ({marks})", ids
            )
        }
        for ident, at in zip(ids, chunk, strict=True):
            row = rows.get(ident)
            if row is not None and (passes is None or passes(row)):
                found.append((row, float(scores[at])))
                if len(found) == top_k:
                    return found
    return found


def metadata_passes(
    accepts: Callable[[Any], bool], inside: Callable[[float], bool]
) -> Callable[[Any], bool]:
    """A row test from a metadata filter and a time window (rows as `_COLUMNS`)."""

    def passes(row: Any) -> bool:
        return inside(float(row[5])) and accepts(json.loads(row[4]))

    return passes
