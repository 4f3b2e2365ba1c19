"""What the SQL backends share: entries in, rows out (and back), one purge policy, one query budget.

`SQLiteBackend` and `PostgresBackend` store the same columns and answer recall
the same way; only their SQL dialects differ (placeholders, quoting, how text is
matched). What is the same is written here once:

- the row a write sends (`write_row`), the contexts an import gives its entries
  (`given_contexts`) and the entry a read builds (`row_entry`);
- `lower_if_not_ascii`: the `key_lc` / `text_lc` columns, so `exact` folds case
  in SQL exactly as Python's `str.lower()` does;
- keyword recall's budget: `candidate_count(top_k)` candidates rescored per round
  (the query's words are capped for every backend, `text.MAX_QUERY_TERMS`);
- the purge policy (`purge_in_batches`): expired rows go `PURGE_BATCH` per
  transaction, and a sweep started by the backend itself (at most every
  `PURGE_INTERVAL` seconds of its clock, during writes or reads) never fails the
  operation that started it (`quiet_sweep`); `purge_expired()` called by the user
  raises what went wrong.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from axon.errors import AxonMemoryError
from axon.memory.entry import MemoryEntry, encode_json, scope_of

CANDIDATES_PER_RESULT = 4
MIN_CANDIDATES = 20
"""Keyword recall rescores `max(top_k * CANDIDATES_PER_RESULT, MIN_CANDIDATES)` candidates
(more when scope, expiry or filters reject some)."""

FILTER_SLACK = 1e-9
FILTER_TINY = 1e-300
"""A metadata filter's numbers in SQL (`sqlite_filters`, `postgres_filters`) match within
`abs(n) * FILTER_SLACK + FILTER_TINY`: far above any rounding difference between the
database's and Python's reading of a stored number, far below any difference a filter
means. The rows let through are checked with `matches_filters`."""

PURGE_BATCH = 500
"""Expired rows deleted per transaction, so a purge never holds a write lock for long."""

PURGE_INTERVAL = 60.0
"""Seconds of the backend's clock between the sweeps it starts by itself."""

WriteRow = tuple[str | None, str, str | None, str, str, str | None, str, float, float | None]
"""A row to write: scope, key, key_lc, value_json, text, text_lc, metadata_json,
timestamp, expires_at (the column order of `entries` after `id`, in both dialects)."""


def lower_if_not_ascii(text: str) -> str | None:
    """Python's lower-case form of `text` when the database's ASCII-only lower-casing
    would differ (None for ASCII text, where both give the same string). SQL's string
    functions stop at a NUL, so a text holding one always gets this form, with each
    NUL a space: `exact`'s candidates stay a superset (each is scored on its real text)."""
    if "\x00" in text:
        return text.lower().replace("\x00", " ")
    return None if text.isascii() else text.lower()


def candidate_count(top_k: int) -> int:
    """How many full-text candidates keyword recall rescores first for `top_k` results."""
    return max(top_k * CANDIDATES_PER_RESULT, MIN_CANDIDATES)


def write_row(entry: MemoryEntry, text: str) -> WriteRow:
    """The columns stored for `entry`, whose matched text is `text` (`value_text`, as
    the dialect can store it)."""
    return (
        scope_of(entry.metadata),
        entry.key,
        lower_if_not_ascii(entry.key),
        encode_json(entry.value),
        text,
        lower_if_not_ascii(text),
        encode_json(entry.metadata),
        entry.timestamp,
        entry.expires_at,
    )


def given_contexts(entries: Sequence[MemoryEntry]) -> dict[tuple[str | None, str], str]:
    """The contexts `entries` give (`NewEntry.context`, an import's) by `(scope, key)`;
    within a batch the last entry of an identity wins, as its row does."""
    given: dict[tuple[str | None, str], str] = {}
    for entry in entries:
        identity = (scope_of(entry.metadata), entry.key)
        if entry.context is not None:
            given[identity] = entry.context
        else:
            given.pop(identity, None)
    return given


def _as_is(value: Any) -> Any:
    return value


def row_entry(
    row: Sequence[Any], score: float = 0.0, decode: Callable[[Any], Any] = _as_is
) -> MemoryEntry:
    """The entry of a read row `(id, scope, key, value, metadata, timestamp, expires_at, ...)`;
    `decode` turns the stored value and metadata into Python (SQLite keeps JSON text,
    psycopg hands back decoded `json`)."""
    return MemoryEntry(
        key=row[2],
        value=decode(row[3]),
        metadata=decode(row[4]),
        score=score,
        timestamp=float(row[5]),
        expires_at=None if row[6] is None else float(row[6]),
    )


def quoted_terms(terms: Sequence[str]) -> Iterator[str]:
    """Each term as a double-quoted string (`"` doubled): an FTS5 string that no user text
    can turn into query syntax."""
    for term in terms:
        yield '"' + term.replace('"', '""') + '"'


def purge_in_batches(
    delete_batch: Callable[[int], Sequence[str | None]], batch: int = PURGE_BATCH
) -> tuple[int, dict[str | None, int]]:
    """Run `delete_batch(batch)` (one transaction deleting at most `batch` expired rows,
    returning their scopes) until a batch comes back short; returns the total and the
    count per scope."""
    total = 0
    by_scope: dict[str | None, int] = {}
    while True:
        scopes = delete_batch(batch)
        for scope in scopes:
            by_scope[scope] = by_scope.get(scope, 0) + 1
        total += len(scopes)
        if len(scopes) < batch:
            return total, by_scope


def quiet_sweep(purge: Callable[[float], int], now: float) -> None:
    """A sweep the backend starts by itself: a failure is left for the next one (or an
    explicit `purge_expired`), the operation that started it has succeeded."""
    with contextlib.suppress(AxonMemoryError):
        purge(now)
