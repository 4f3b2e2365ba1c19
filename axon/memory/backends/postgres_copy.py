"""Large PostgreSQL writes: complete rows in, binary COPY streams out.

A batch of `COPY_THRESHOLD` rows or more (`PostgresBackend._put`) is written with
COPY in PostgreSQL's binary format, which the server reads without parsing: no
array literals built in Python (`{"a","b"}`) and parsed again by the server,
no float text. Rows whose `(scope, key)` is not stored yet (the usual case of a
batched remember) are copied straight into `entries`, so the server updates
its indexes while the client is still sending; only the rows that replace a
stored one go through a temporary staging table and one `INSERT ... ON
CONFLICT` (`upsert_staged`). Both are statements on `entries`, so the
statement-level triggers keep `scope_stats` as for any other write.

Types: a binary COPY stream carries no type names, only each field's bytes, which
the server reads with the column's own receive function. So `value` and
`metadata` (`json`, whose binary form is its text) are sent with the `text` dumper
(psycopg's `json` dumper would encode the already-encoded JSON string once more;
`json_recv` still checks them), and the `text[]` / `int4[]` columns as bytes
built here (`text_array_binary`, `int_array_binary`: one `struct.pack` per row,
about 5x faster than psycopg's generic list dumper, which inspects every element)
sent with the `bytea` dumper, which passes bytes through; `array_recv` checks them.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.sql import Composed

COLUMNS = (
    "scope, key, key_lc, value, text, text_lc, metadata, timestamp, expires_at, terms, "
    "term_counts, length, context, context_terms, context_counts, context_length"
)
"""The columns of a complete row, in its order (`vgen` and `wxid` take their defaults)."""

TYPES = (
    "text", "text", "text", "text", "text", "text", "text", "float8", "float8",
    "bytea", "bytea", "int4", "text", "bytea", "bytea", "int4",
)  # fmt: skip
"""The dumper of each of `COLUMNS`: `json` travels as `text`, arrays as prebuilt bytes."""

_TEXT_OID = 25
_INT4_OID = 23
_HEADER = struct.Struct(">5i")  # dimensions, has nulls, element type, length, lower bound
_EMPTY = {oid: struct.pack(">3i", 0, 0, oid) for oid in (_TEXT_OID, _INT4_OID)}


def text_array_binary(items: Sequence[str]) -> bytes:
    """PostgreSQL's binary `text[]` of `items` (one dimension, no NULLs)."""
    if not items:
        return _EMPTY[_TEXT_OID]
    encoded = [item.encode() for item in items]
    parts = [_HEADER.pack(1, 0, _TEXT_OID, len(encoded), 1)]
    for data in encoded:
        parts.append(len(data).to_bytes(4, "big"))
        parts.append(data)
    return b"".join(parts)


def int_array_binary(items: Sequence[int]) -> bytes:
    """PostgreSQL's binary `int4[]` of `items` (one dimension, no NULLs)."""
    n = len(items)
    if not n:
        return _EMPTY[_INT4_OID]
    fields = [4, 0] * n
    fields[1::2] = items
    return struct.pack(f">5i{2 * n}i", 1, 0, _INT4_OID, n, 1, *fields)


def binary_row(row: Sequence[Any]) -> tuple[Any, ...]:
    """A complete row (`COLUMNS`, terms and counts as lists) as `TYPES` sends it."""
    return (
        *row[:9],
        text_array_binary(row[9]),
        int_array_binary(row[10]),
        row[11],
        row[12],
        text_array_binary(row[13]),
        int_array_binary(row[14]),
        row[15],
    )


STAGE_TABLE = (
    "CREATE TEMP TABLE IF NOT EXISTS axon_stage_binary (n integer, scope text, key text, "
    "key_lc text, value json, text text, text_lc text, metadata json, timestamp float8, "
    "expires_at float8, terms text[], term_counts integer[], length integer, context text, "
    "context_terms text[], context_counts integer[], context_length integer) "
    "ON COMMIT DELETE ROWS"
)
"""Per connection, emptied at every commit: the rows that replace stored ones."""

ON_CONFLICT_UPDATE = (
    "ON CONFLICT (scope, key) DO UPDATE SET key_lc = excluded.key_lc, "
    "value = excluded.value, text = excluded.text, text_lc = excluded.text_lc, "
    "metadata = excluded.metadata, timestamp = excluded.timestamp, "
    "created_at = CASE WHEN e.expires_at IS NULL OR e.expires_at > excluded.timestamp "
    "THEN coalesce(e.created_at, e.timestamp) END, "
    "expires_at = excluded.expires_at, terms = excluded.terms, "
    "term_counts = excluded.term_counts, length = excluded.length, "
    "vgen = nextval({vgen_seq}), "
    "wxid = pg_current_xact_id()::text::bigint"
)
"""How a row replaces the stored one of its (scope, key): every written column, a new
`vgen` (its vectors are stale) and this transaction's id; the context is kept, and the
first write (`created_at`) while the row is live at the new `timestamp` (else NULL: the
new `timestamp`; `sql_common.FRESH_CREATED`). A row that gives its own first write gets
it by `postgres._SET_CREATED` after."""

UPSERT = (
    "INSERT INTO {entries} AS e (" + COLUMNS + ") "
    "SELECT " + COLUMNS + " FROM pg_temp.axon_stage_binary ORDER BY n " + ON_CONFLICT_UPDATE
)
"""The staged rows into `entries`, in batch order; an update keeps the row's context."""

STORED = (
    "SELECT k.n - 1 FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS k(scope, key, n) "
    "WHERE EXISTS (SELECT FROM {entries} AS e WHERE e.scope = k.scope AND e.key = k.key) "
    "OR (k.scope IS NULL AND EXISTS "
    "(SELECT FROM {entries} AS e WHERE e.scope IS NULL AND e.key = k.key))"
)
"""The positions of the batch's `(scope, key)` pairs already stored (expired or not):
one probe of the unique index each."""


def stored_positions(conn: Connection[Any], statement: Composed, rows: Sequence[Any]) -> set[int]:
    """Which of `rows` (complete rows) replace a stored row (`STORED`, formatted)."""
    found = conn.execute(statement, ([row[0] for row in rows], [row[1] for row in rows]))
    return {int(n) for (n,) in found.fetchall()}


def copy_rows(
    conn: Connection[Any], statement: Composed, rows: Sequence[Sequence[Any]], *, numbered: bool
) -> None:
    """Complete `rows` sent by `statement` (`COPY ... FROM STDIN (FORMAT BINARY)` of
    `COLUMNS`, led by the row's position `n` when `numbered`)."""
    with conn.cursor().copy(statement) as copy:
        if numbered:
            copy.set_types(("int4", *TYPES))
            for n, row in enumerate(rows):
                copy.write_row((n, *binary_row(row)))
        else:
            copy.set_types(TYPES)
            for row in rows:
                copy.write_row(binary_row(row))


def upsert_staged(
    conn: Connection[Any], stage_copy: Composed, upsert: Composed, rows: Sequence[Sequence[Any]]
) -> None:
    """`rows` through the staging table and one `INSERT ... ON CONFLICT` (`UPSERT`)."""
    conn.execute(STAGE_TABLE)
    copy_rows(conn, stage_copy, rows, numbered=True)
    conn.execute(upsert)
