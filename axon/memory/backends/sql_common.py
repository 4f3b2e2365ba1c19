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
- the metadata filter in the query (`filter_condition`): one walk over the filters,
  the dialect's spelling of a field, an equality and a comparison as a parameter
  (`SQLITE_FILTERS`: JSON functions over text, `?`; `POSTGRES_FILTERS`: jsonb
  containment, `%s`);
- the purge policy (`purge_in_batches`): expired rows go `PURGE_BATCH` per
  transaction, and a sweep started by the backend itself (at most every
  `PURGE_INTERVAL` seconds of its clock, during writes or reads) never fails the
  operation that started it (`quiet_sweep`); `purge_expired()` called by the user
  raises what went wrong.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from axon.errors import AxonMemoryError
from axon.memory.entry import (
    COMPARISONS,
    MemoryEntry,
    encode_json,
    is_number,
    matches_filters,
    scope_of,
)

CANDIDATES_PER_RESULT = 4
MIN_CANDIDATES = 20
"""Keyword recall rescores `max(top_k * CANDIDATES_PER_RESULT, MIN_CANDIDATES)` candidates
(more when scope, expiry or filters reject some)."""

FILTER_SLACK = 1e-9
FILTER_TINY = 1e-300
"""A metadata filter's numbers in SQL (`filter_condition`) match within
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


# ---------------------------------------------------------------------- metadata filters


class Unexpressed(Exception):
    """A filter field a dialect leaves to Python (no condition for it)."""


class FilterDialect:
    """What differs between the SQL dialects in `filter_condition`: how a field name, a
    string and a number are accepted, and the SQL of the three forms a condition takes.

    Every method returns `(sql, params)` with the dialect's own placeholders, or raises
    `Unexpressed` for what it leaves to Python. `exact_numbers`: an equality on a number
    or boolean matches only equal values (no slack).
    """

    true = "1"
    false = "0"
    exact_numbers = False

    def name(self, name: str) -> None:
        """Raise `Unexpressed` when the dialect cannot name top-level field `name`."""
        raise NotImplementedError

    def text(self, value: str) -> str:
        """A string filter item as sent; `Unexpressed` when it cannot be."""
        raise NotImplementedError

    def number(self, value: float) -> float:
        """A number or boolean filter item as sent; `Unexpressed` when it cannot be."""
        raise NotImplementedError

    def equal(
        self, column: str, name: str, strings: list[str], numbers: list[float]
    ) -> tuple[str, list[Any]]:
        """Field `name` of the metadata in `column` equals one of the items, or is an
        array holding one."""
        raise NotImplementedError

    def compare(
        self, column: str, name: str, bounds: list[tuple[str, float]], absent: bool
    ) -> tuple[str, list[Any]]:
        """Field `name` is a number (not a boolean) within every `(op, bound)` (`>=`,
        `<=`); a missing field passes when `absent`."""
        raise NotImplementedError

    def all_of(self, column: str, parts: list[str], params: list[Any]) -> tuple[str, list[Any]]:
        """The fields' conditions joined (`true` when none)."""
        return (" AND ".join(parts) if parts else self.true), params


def filter_condition(
    filters: Mapping[str, Any], column: str, dialect: FilterDialect
) -> tuple[str, list[Any], bool]:
    """`(sql, params, exact)`: a condition on the stored metadata in `column` that every
    row whose metadata `matches_filters(metadata, filters)` passes; `exact` when no other
    row does (a comparison's bounds, and a dialect's numbers, have `FILTER_SLACK`).

    The condition is *necessary*, not sufficient: the backend still checks what comes
    back with `matches_filters`, so a field the dialect leaves to Python (no condition)
    or a number let through within the slack costs a little time, never a different
    answer. One walk over the filters for every dialect (`SQLITE_FILTERS`,
    `POSTGRES_FILTERS`).
    """
    parts: list[str] = []
    params: list[Any] = []
    exact = True
    for name, wanted in filters.items():
        try:
            part, values = _filter_field(name, wanted, column, dialect)
        except Unexpressed:
            exact = False
            continue
        parts.append(part)
        params += values
        exact = exact and not _has_slack(wanted, dialect)
    sql, params = dialect.all_of(column, parts, params)
    return sql, params, exact


def _has_slack(wanted: Any, dialect: FilterDialect) -> bool:
    if isinstance(wanted, Mapping):
        return True
    if dialect.exact_numbers:
        return False
    items = wanted if isinstance(wanted, list | tuple) else [wanted]
    return any(not isinstance(item, str) for item in items)


def _filter_field(
    name: str, wanted: Any, column: str, dialect: FilterDialect
) -> tuple[str, list[Any]]:
    dialect.name(name)
    if isinstance(wanted, Mapping):
        bounds: list[tuple[str, float]] = []
        for op, bound in wanted.items():
            if op == "default":
                continue
            if op not in COMPARISONS or not is_number(bound):
                return dialect.false, []  # matches_filters: never a match
            low, high = _around(_finite(bound))
            bounds.append((">=", low) if op in ("gte", "gt") else ("<=", high))
        absent = "default" in wanted and matches_filters({}, {"field": dict(wanted)})
        return dialect.compare(column, name, bounds, absent)
    items: Sequence[Any] = wanted if isinstance(wanted, list | tuple) else [wanted]
    if not items:
        return dialect.false, []
    strings: list[str] = []
    numbers: list[float] = []
    for item in items:
        if isinstance(item, str):
            strings.append(dialect.text(item))
        elif is_number(item) or isinstance(item, bool):
            numbers.append(dialect.number(item))
        else:
            raise Unexpressed
    return dialect.equal(column, name, strings, numbers)


def _finite(number: float) -> float:
    """`number` as a float; `Unexpressed` for an int too large for one, or inf/NaN."""
    try:
        converted = float(number)
    except OverflowError:
        raise Unexpressed from None
    if not math.isfinite(converted):
        raise Unexpressed
    return converted


def _around(number: float) -> tuple[float, float]:
    slack = abs(number) * FILTER_SLACK + FILTER_TINY
    return number - slack, number + slack


_NUMERIC = "('integer', 'real', 'true', 'false')"
_NUMBER = "('integer', 'real')"


class SQLiteFilters(FilterDialect):
    """SQLite's JSON functions over the metadata JSON text.

    `json_type` of `$."f"` tells strings, numbers, booleans, arrays and a missing field
    apart (`json_extract` alone turns `true` into 1 and an array into its text). A string
    matches a `text` of equal bytes; a number or boolean matches a number or boolean
    within `FILTER_SLACK` of it (Python's `True == 1 == 1.0`, and SQLite's own decimal
    parser may round a float one step away from Python's); an array matches when one of
    its elements does (`json_each`). Left to Python: field names the JSON path cannot
    spell (SQLite compares a quoted label with the key's text as stored, and has no way
    to write a `"` in one: a `"`, a backslash or a control character), strings holding
    NUL or unpaired surrogates, numbers beyond a float's range.
    """

    def name(self, name: str) -> None:
        if any(ch in name for ch in '"\\') or any(ord(ch) < 0x20 for ch in name):
            raise Unexpressed
        self.text(name)

    def text(self, value: str) -> str:
        if "\x00" in value:
            raise Unexpressed
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise Unexpressed from None
        return value

    def number(self, value: float) -> float:
        return _finite(value)

    def equal(
        self, column: str, name: str, strings: list[str], numbers: list[float]
    ) -> tuple[str, list[Any]]:
        path = f'$."{name}"'
        kind = f"json_type({column}, ?)"
        value = f"json_extract({column}, ?)"
        one, one_params = self._items("j.type", "j.value", strings, numbers)
        scalar, scalar_params = self._items(kind, value, strings, numbers, path)
        sql = (
            f"(CASE {kind} WHEN 'array' THEN EXISTS (SELECT 1 FROM json_each({column}, ?) "
            f"AS j WHERE {one}) ELSE {scalar} END)"
        )
        return sql, [path, path, *one_params, *scalar_params]

    @staticmethod
    def _items(
        kind: str, value: str, strings: list[str], numbers: list[float], path: str | None = None
    ) -> tuple[str, list[Any]]:
        """One value (its JSON type `kind`, its SQL value `value`) equal to one of the items."""
        at = [path] if path is not None else []
        parts: list[str] = []
        params: list[Any] = []
        if strings:
            marks = ", ".join("?" * len(strings))
            parts.append(f"({kind} = 'text' AND {value} IN ({marks}))")
            params += [*at, *at, *strings]
        if numbers:
            ranges = " OR ".join(f"{value} BETWEEN ? AND ?" for _ in numbers)
            parts.append(f"({kind} IN {_NUMERIC} AND ({ranges}))")
            params += at
            for number in numbers:
                params += [*at, *_around(number)]
        return "(" + " OR ".join(parts) + ")", params

    def compare(
        self, column: str, name: str, bounds: list[tuple[str, float]], absent: bool
    ) -> tuple[str, list[Any]]:
        path = f'$."{name}"'
        kind = f"json_type({column}, ?)"
        value = f"json_extract({column}, ?)"
        params: list[Any] = [path]
        for _, bound in bounds:
            params += [path, bound]
        present = " AND ".join([f"{kind} IN {_NUMBER}", *(f"{value} {op} ?" for op, _ in bounds)])
        return f"(CASE WHEN {kind} IS NULL THEN {int(absent)} ELSE ({present}) END)", [
            path,
            *params,
        ]


EXACT_LIMIT = 2**53
"""PostgreSQL: numbers at least this large (integers and integral floats) are left to Python."""


class PostgresFilters(FilterDialect):
    """PostgreSQL over a `json` metadata column: equality is jsonb containment.

    The row's metadata contains `{"f": w}` or `{"f": [w]}` for one of the items `w` (an
    array holding `w` contains `[w]`). jsonb keeps booleans apart from numbers where
    Python's `True == 1` does not, so `True` also looks for `1` and `1` for `true` (and
    `False`/`0`). Numbers compare as decimals, which agrees with Python's comparison of
    the stored values except for integers and integral floats of 2**53 and beyond (a
    float's shortest decimal is not its exact value): those are left to Python. A
    comparison casts the field to `numeric` (never out of range) inside a `CASE` (the
    cast must only ever see a number; AND's operands may run in any order). The column
    is `json` because strings may hold `\\u0000`, which jsonb refuses: a row whose
    metadata text holds that escape passes the condition unexamined (`CASE` evaluates
    the guard first) and is left to `matches_filters`.
    """

    true = "true"
    false = "false"
    exact_numbers = True

    def name(self, name: str) -> None:
        if "\x00" in name:
            raise Unexpressed

    def text(self, value: str) -> str:
        if "\x00" in value:
            raise Unexpressed
        return value

    def number(self, value: float) -> float:
        if not abs(value) < EXACT_LIMIT:  # NaN too: JSON cannot hold it, and it equals nothing
            raise Unexpressed
        return value

    def equal(
        self, column: str, name: str, strings: list[str], numbers: list[float]
    ) -> tuple[str, list[Any]]:
        documents: list[str] = []
        for item in [*strings, *numbers]:
            same: list[Any] = [item]
            if not isinstance(item, str) and item == 1:
                same = [1, True]
            elif not isinstance(item, str) and item == 0:
                same = [0, False]
            for one in same:
                documents += [encode_json({name: one}), encode_json({name: [one]})]
        return f"{column}::jsonb @> ANY (%s::jsonb[])", [documents]

    def compare(
        self, column: str, name: str, bounds: list[tuple[str, float]], absent: bool
    ) -> tuple[str, list[Any]]:
        value = f"({column} ->> %s)::numeric"
        present = " AND ".join(f"{value} {op} %s::float8::numeric" for op, _ in bounds) or "true"
        params: list[Any] = [name, name]
        for _, bound in bounds:
            params += [name, bound]
        sql = (
            f"(CASE WHEN {column} -> %s IS NULL THEN {'true' if absent else 'false'} "
            f"WHEN json_typeof({column} -> %s) = 'number' THEN ({present}) ELSE false END)"
        )
        return sql, params

    def all_of(self, column: str, parts: list[str], params: list[Any]) -> tuple[str, list[Any]]:
        if not parts:
            return "true", []
        joined = " AND ".join(parts)
        guarded = f"(CASE WHEN strpos({column}::text, %s) > 0 THEN true ELSE ({joined}) END)"
        return guarded, ["\\u0000", *params]


SQLITE_FILTERS = SQLiteFilters()
POSTGRES_FILTERS = PostgresFilters()
