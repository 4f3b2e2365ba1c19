"""What the SQL backends share: entries in, rows out (and back), one purge policy, one query budget.

`SQLiteBackend` and `PostgresBackend` store the same columns and answer recall
the same way; only their SQL dialects differ (placeholders, quoting, how text is
matched). What is the same is written here once:

- the row a write sends (`write_row`), the contexts an import gives its entries
  (`given_contexts`), the first writes they give (`given_created`, else
  `FRESH_CREATED`) and the entry a read builds (`row_entry`);
- `lower_if_not_ascii`: the `key_lc` / `text_lc` columns, so `exact` folds case
  in SQL exactly as Python's `str.lower()` does;
- keyword recall's budget: `candidate_count(top_k)` candidates rescored per round
  (the query's words are capped for every backend, `text.MAX_QUERY_TERMS`);
- the metadata filter in the query (`filter_condition`): one walk over the filters
  (operator maps too: `gte`, `gt`, `lte`, `lt`, `ne`, `in`, `exists`), the dialect's
  spelling of a field, an equality and a comparison as a parameter
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
    UPDATED_WINDOW,
    MemoryEntry,
    encode_json,
    is_number,
    matches_filters,
    scope_of,
    window_of,
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


def given_created(entries: Sequence[MemoryEntry]) -> dict[tuple[str | None, str], float]:
    """The `created_at` of the entries that give theirs (not `fresh`: an import's, a tier
    move's, a link write's after reading the replaced row) by `(scope, key)`; a fresh
    one keeps the live row it replaces's (`FRESH_CREATED`). The last entry of an
    identity wins, as its row does."""
    given: dict[tuple[str | None, str], float] = {}
    for entry in entries:
        identity = (scope_of(entry.metadata), entry.key)
        if entry.fresh:
            given.pop(identity, None)
        else:
            given[identity] = entry.created_at
    return given


FRESH_CREATED = (
    "CASE WHEN expires_at IS NULL OR expires_at > {now} "
    "THEN coalesce(created_at, timestamp) END"
)
"""The `created_at` a fresh write gives a row it replaces (`{now}`: the new write's time,
a parameter): the row's own while it is live, else NULL (read as `timestamp`). An
UPDATE's right-hand side reads the row as it was, in both dialects."""


def _as_is(value: Any) -> Any:
    return value


def row_entry(
    row: Sequence[Any], score: float = 0.0, decode: Callable[[Any], Any] = _as_is
) -> MemoryEntry:
    """The entry of a read row `(id, scope, key, value, metadata, timestamp, expires_at,
    created_at, ...)`; `decode` turns the stored value and metadata into Python (SQLite
    keeps JSON text, psycopg hands back decoded `json`)."""
    return MemoryEntry(
        key=row[2],
        value=decode(row[3]),
        metadata=decode(row[4]),
        score=score,
        timestamp=float(row[5]),
        expires_at=None if row[6] is None else float(row[6]),
        created_at=float(row[7]),
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
    string and a number are accepted, and the SQL of the three forms a condition takes
    (`param`: the dialect's placeholder).

    Every method returns `(sql, params)` with the dialect's own placeholders, or raises
    `Unexpressed` for what it leaves to Python. `exact_numbers`: an equality on a number
    or boolean matches only equal values (no slack).
    """

    true = "1"
    false = "0"
    param = "?"
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
        self, column: str, name: str, bounds: list[tuple[str, Any]], absent: bool
    ) -> tuple[str, list[Any]]:
        """Field `name` is a number (not a boolean) within every `(op, bound)` (`gte`,
        `gt`, `lte`, `lt` and a float), or a string when the bounds are strings (as
        `text` accepted them); a missing field passes when `absent`. Numbers within
        `FILTER_SLACK` (`_number_bound`)."""
        raise NotImplementedError

    def exists(self, column: str, name: str, present: bool) -> tuple[str, list[Any]]:
        """Field `name` is there (any value, null too), or is not when not `present`."""
        raise NotImplementedError

    def not_equal(
        self, column: str, name: str, strings: list[str], numbers: list[float]
    ) -> tuple[str, list[Any]]:
        """Field `name` is there and does not `equal` the one item (a condition that
        every such row passes: a number is left to Python past the field's presence)."""
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
        if name == UPDATED_WINDOW:
            continue  # not metadata: `window_condition`
        try:
            part, values = _filter_field(name, wanted, column, dialect)
        except Unexpressed:
            exact = False
            continue
        parts.append(part)
        params += values
        exact = exact and not _has_slack(wanted, dialect)
    sql, params = dialect.all_of(column, parts, params)
    since, until = window_of(filters)
    if since is not None or until is not None:
        table = column[: column.rfind(".") + 1]  # "e." or ""
        window, values = window_condition(since, until, f"{table}timestamp", dialect.param)
        sql, params = f"({sql}) AND {window}", [*params, *values]
    return sql, params, exact


def window_condition(
    since: float | None, until: float | None, column: str, param: str
) -> tuple[str, list[Any]]:
    """`column` (an entry's `timestamp`, its `updated_at`) in `[since, until)`, a None
    bound left out; `param` is the dialect's placeholder. Exact: no Python recheck
    needed, none harmed."""
    parts: list[str] = []
    params: list[Any] = []
    if since is not None:
        parts.append(f"{column} >= {param}")
        params.append(float(since))
    if until is not None:
        parts.append(f"{column} < {param}")
        params.append(float(until))
    return "(" + " AND ".join(parts) + ")", params


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
        return _operators(name, wanted, column, dialect)
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


def _operators(
    name: str, wanted: Mapping[str, Any], column: str, dialect: FilterDialect
) -> tuple[str, list[Any]]:
    """An operator map: each operator's condition, joined; an operator the dialect
    cannot express is left out (the rows are still checked with `matches_filters`)."""
    if "default" in wanted:  # min_importance: a comparison that an absent field may pass
        absent = matches_filters({}, {name: dict(wanted)})
        bounds = [(op, bound) for op, bound in wanted.items() if op != "default"]
        if not bounds:
            return dialect.true, []  # no operator: every entry
        if not all(op in COMPARISONS and is_number(bound) for op, bound in bounds):
            raise Unexpressed  # never written by the runtime: left to `matches_filters`
        return dialect.compare(column, name, [(op, _finite(b)) for op, b in bounds], absent)
    parts: list[str] = []
    params: list[Any] = []
    bounds = []
    for op, operand in wanted.items():
        try:
            if op in COMPARISONS and isinstance(operand, str):
                bounds.append((op, dialect.text(operand)))
                continue
            if op in COMPARISONS and is_number(operand):
                bounds.append((op, _finite(operand)))
                continue
            part, values = _operator(name, op, operand, column, dialect)
        except Unexpressed:
            continue
        parts.append(part)
        params += values
    if bounds:
        part, values = dialect.compare(column, name, bounds, False)
        parts.append(part)
        params += values
    return ("(" + " AND ".join(parts) + ")" if parts else dialect.true), params


def _operator(
    name: str, op: str, operand: Any, column: str, dialect: FilterDialect
) -> tuple[str, list[Any]]:
    """The condition of one operator other than a comparison (`false` for what
    `matches_filters` never matches: an unknown operator, an operand of a wrong type for
    `in`, `exists` or a comparison)."""
    if op == "exists" and isinstance(operand, bool):
        return dialect.exists(column, name, operand)
    if op == "in" and isinstance(operand, list):
        return _filter_field(name, list(operand), column, dialect)
    if op == "ne":
        if isinstance(operand, str):
            return dialect.not_equal(column, name, [dialect.text(operand)], [])
        if isinstance(operand, int | float):
            return dialect.not_equal(column, name, [], [dialect.number(operand)])
        raise Unexpressed  # never checked as valid: left to `matches_filters`
    return dialect.false, []


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


def _number_bound(op: str, bound: float) -> tuple[str, float]:
    """A comparison with a number in SQL: non-strict and widened by `FILTER_SLACK`."""
    low, high = _around(bound)
    return (">=", low) if op in ("gte", "gt") else ("<=", high)


def _kind_of(bounds: list[tuple[str, Any]]) -> str | None:
    """"text" when the bounds are all strings, "number" when all numbers, else None."""
    kinds = {"text" if isinstance(bound, str) else "number" for _, bound in bounds}
    return kinds.pop() if len(kinds) == 1 else None


_SQL_OPS = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}


_NUMERIC = "('integer', 'real', 'true', 'false')"
_NUMBER = "('integer', 'real')"


class SQLiteFilters(FilterDialect):
    """SQLite's JSON functions over the metadata JSON text.

    `json_type` of `$."f"` tells strings, numbers, booleans, arrays and a missing field
    apart (`json_extract` alone turns `true` into 1 and an array into its text). A string
    matches a `text` of equal bytes; a number or boolean matches a number or boolean
    within `FILTER_SLACK` of it (Python's `True == 1 == 1.0`, and SQLite's own decimal
    parser may round a float one step away from Python's); an array matches when one of
    its elements does (`json_each`). An operator map (`_operators`) is its operators'
    conditions: a comparison with strings compares the bytes of UTF-8 (code point order),
    `ne` on a string is the negated equality, `exists` the field's `json_type`; a stored
    string holding NUL passes a string comparison or `ne` unexamined (SQL's text may stop
    there) and `ne` on a number asks only for the field. Left to Python: field names the
    JSON path cannot spell (SQLite compares a quoted label with the key's text as stored,
    and has no way to write a `"` in one: a `"`, a backslash or a control character),
    strings holding NUL or unpaired surrogates, numbers beyond a float's range.
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
        self, column: str, name: str, bounds: list[tuple[str, Any]], absent: bool
    ) -> tuple[str, list[Any]]:
        kind_of = _kind_of(bounds)
        if kind_of is None:
            return self.false, []  # a number and a string bound: no value is both
        path = f'$."{name}"'
        kind = f"json_type({column}, ?)"
        value = f"json_extract({column}, ?)"
        if kind_of == "number":
            sql_bounds = [_number_bound(op, b) for op, b in bounds]
        else:
            sql_bounds = [(_SQL_OPS[op], b) for op, b in bounds]
        params: list[Any] = [path]
        for _, bound in sql_bounds:
            params += [path, bound]
        holds = " AND ".join(f"{value} {op} ?" for op, _ in sql_bounds)
        if kind_of == "number":
            present = f"{kind} IN {_NUMBER} AND {holds}"
        else:  # a stored string holding NUL is left to Python (SQL's text may stop there)
            present = f"{kind} = 'text' AND ({holds} OR instr({column}, ?) > 0)"
            params.append("\\u0000")
        return f"(CASE WHEN {kind} IS NULL THEN {int(absent)} ELSE ({present}) END)", [
            path,
            *params,
        ]

    def exists(self, column: str, name: str, present: bool) -> tuple[str, list[Any]]:
        return f"(json_type({column}, ?) IS {'NOT ' if present else ''}NULL)", [f'$."{name}"']

    def not_equal(
        self, column: str, name: str, strings: list[str], numbers: list[float]
    ) -> tuple[str, list[Any]]:
        there, there_params = self.exists(column, name, True)
        if not strings:
            return there, there_params
        same, same_params = self.equal(column, name, strings, [])
        # a stored string holding NUL is left to Python (SQL's text may stop there)
        return (
            f"({there} AND (instr({column}, ?) > 0 OR NOT {same}))",
            [*there_params, "\\u0000", *same_params],
        )


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
    the guard first) and is left to `matches_filters`. A comparison with strings reads
    the field as text under the C collation (UTF-8 bytes: code point order); `ne` is the
    negated containment of a field that is there; `exists` asks `->` for it.
    """

    true = "true"
    false = "false"
    param = "%s"
    exact_numbers = True

    def name(self, name: str) -> None:
        if "\x00" in name:
            raise Unexpressed

    def text(self, value: str) -> str:
        if "\x00" in value:
            raise Unexpressed
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise Unexpressed from None
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
        self, column: str, name: str, bounds: list[tuple[str, Any]], absent: bool
    ) -> tuple[str, list[Any]]:
        kind_of = _kind_of(bounds)
        if kind_of is None:
            return self.false, []  # a number and a string bound: no value is both
        if kind_of == "number":
            value = f"({column} ->> %s)::numeric"
            sql_bounds = [_number_bound(op, b) for op, b in bounds]
            mark, json_type = "%s::float8::numeric", "number"
        else:  # code point order: the bytes of UTF-8 under the C collation
            value = f'({column} ->> %s) COLLATE "C"'
            sql_bounds = [(_SQL_OPS[op], b) for op, b in bounds]
            mark, json_type = "%s", "string"
        present = " AND ".join(f"{value} {op} {mark}" for op, _ in sql_bounds) or "true"
        params: list[Any] = [name, name]
        for _, bound in sql_bounds:
            params += [name, bound]
        sql = (
            f"(CASE WHEN {column} -> %s IS NULL THEN {'true' if absent else 'false'} "
            f"WHEN json_typeof({column} -> %s) = '{json_type}' THEN ({present}) ELSE false END)"
        )
        return sql, params

    def exists(self, column: str, name: str, present: bool) -> tuple[str, list[Any]]:
        return f"({column} -> %s IS {'NOT ' if present else ''}NULL)", [name]

    def not_equal(
        self, column: str, name: str, strings: list[str], numbers: list[float]
    ) -> tuple[str, list[Any]]:
        there, there_params = self.exists(column, name, True)
        same, same_params = self.equal(column, name, strings, numbers)
        return f"({there} AND NOT {same})", [*there_params, *same_params]

    def all_of(self, column: str, parts: list[str], params: list[Any]) -> tuple[str, list[Any]]:
        if not parts:
            return "true", []
        joined = " AND ".join(parts)
        guarded = f"(CASE WHEN strpos({column}::text, %s) > 0 THEN true ELSE ({joined}) END)"
        return guarded, ["\\u0000", *params]


SQLITE_FILTERS = SQLiteFilters()
POSTGRES_FILTERS = PostgresFilters()
