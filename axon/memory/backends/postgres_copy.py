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

Types: `value` and `metadata` are `json`, whose binary form is its text, so
they are sent with the `text` dumper (psycopg's `json` dumper would encode the
already-encoded JSON string once more); the server's `json_recv` still checks them.
"""

from __future__ import annotations

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
    "text[]", "int4[]", "int4", "text", "text[]", "int4[]", "int4",
)  # fmt: skip
"""The binary wire type of each of `COLUMNS` (`json` travels as `text`, see above)."""

STAGE_TABLE = (
    "CREATE TEMP TABLE IF NOT EXISTS axon_stage_binary (n integer, scope text, key text, "
    "key_lc text, value json, text text, text_lc text, metadata json, timestamp float8, "
    "expires_at float8, terms text[], term_counts integer[], length integer, context text, "
    "context_terms text[], context_counts integer[], context_length integer) "
    "ON COMMIT DELETE ROWS"
)
"""Per connection, emptied at every commit: the rows that replace stored ones."""

UPSERT = (
    "INSERT INTO {entries} AS e (" + COLUMNS + ") "
    "SELECT " + COLUMNS + " FROM pg_temp.axon_stage_binary ORDER BY n "
    "ON CONFLICT (scope, key) DO UPDATE SET key_lc = excluded.key_lc, "
    "value = excluded.value, text = excluded.text, text_lc = excluded.text_lc, "
    "metadata = excluded.metadata, timestamp = excluded.timestamp, "
    "expires_at = excluded.expires_at, terms = excluded.terms, "
    "term_counts = excluded.term_counts, length = excluded.length, "
    "vgen = nextval({vgen_seq}), "
    "wxid = pg_current_xact_id()::text::bigint"
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
    conn: Connection[Any], statement: Composed, types: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """`rows` sent by `statement` (`COPY ... FROM STDIN (FORMAT BINARY)`), columns of `types`."""
    with conn.cursor().copy(statement) as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)


def upsert_staged(
    conn: Connection[Any], stage_copy: Composed, upsert: Composed, rows: Sequence[Sequence[Any]]
) -> None:
    """`rows` through the staging table and one `INSERT ... ON CONFLICT` (`UPSERT`)."""
    conn.execute(STAGE_TABLE)
    copy_rows(conn, stage_copy, ("int4", *TYPES), [(n, *row) for n, row in enumerate(rows)])
    conn.execute(upsert)
