"""The `versions` table of a PostgreSQL schema: each entry's history (`axon.memory.versions`).

The table (schema 8, `postgres_schema`) sits in the backend's schema beside `entries`,
so a backend opened with another `schema` keeps other versions. A version's value and
metadata are `json`, as an entry's are (the text kept as written: key order and
`\\u0000` survive); a `forget` has neither (SQL NULL). `seq`, from the sequence
`versions_seq`, orders the versions of the schema.

Each function returns the body of one `Connector.run` (`PostgresBackend` runs it), or
runs one statement:

- `record_body`: the insert and the trim in one transaction. `Connector.run` runs a
  body again when the connection breaks under it (the server restarted, or the COMMIT's
  answer was lost), so the body must be idempotent: its `seq` values are drawn once,
  on the first attempt, and inserted with `ON CONFLICT (seq) DO NOTHING`, so a retry of
  a transaction that did commit adds nothing, and one that did not adds the versions
  once.
- `read_body`: one statement, newest first.
- `drop_body`: one DELETE (a whole scope, the scopes starting with a prefix, or all).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from axon.errors import AxonMemoryError
from axon.memory.entry import encode_json
from axon.memory.versions import KEEP_ALL, Version, version_from_row

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.sql import SQL

    from axon.memory.backends.postgres_sql import Fragments


def _scope_condition(q: Fragments, scope: str | None) -> tuple[SQL, tuple[Any, ...]]:
    """`scope` equal to `scope`, or NULL for the scope-less versions (both read through
    the index on (scope, key, seq))."""
    if scope is None:
        return q.sql.SQL("scope IS NULL"), ()
    return q.sql.SQL("scope = %s"), (scope,)


def _check_text(scope: str | None, versions: Sequence[Version]) -> None:
    """PostgreSQL text holds no NUL: a scope or key with one is refused as `_put` refuses
    it (entries with such names are never stored either)."""
    if scope is not None and "\x00" in scope:
        raise AxonMemoryError("a memory scope must not contain NUL characters", memory=scope)
    for version in versions:
        if "\x00" in version.key:
            raise AxonMemoryError(
                "an entry key must not contain NUL characters", memory=scope, key=version.key
            )


def record_body(
    q: Fragments, scope: str | None, versions: Sequence[Version], keep: int
) -> Callable[[Connection[Any]], None]:
    """The transaction appending `versions` (in write order) to their keys' history in
    `scope`, then keeping each key's newest `keep + 1` (all with `KEEP_ALL`); each row
    holds `keep`, the setting it was recorded with."""
    _check_text(scope, versions)
    where, params = _scope_condition(q, scope)
    draw = q.sql.SQL("SELECT nextval({}) FROM generate_series(1, %s)").format(q.versions_seq)
    insert = q.sql.SQL(
        "INSERT INTO {versions} (seq, scope, key, op, value, metadata, updated_at, expires_at, "
        "keep) SELECT u.seq, %s, u.key, u.op, u.value::json, u.metadata::json, u.updated_at, "
        "u.expires_at, %s FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], "
        "%s::text[], %s::float8[], %s::float8[]) "
        "AS u(seq, key, op, value, metadata, updated_at, expires_at) "
        "ORDER BY u.seq ON CONFLICT (seq) DO NOTHING"
    ).format(versions=q.versions)
    # Each key's rows beyond its newest `keep + 1` (the index gives them in order).
    trim = q.sql.SQL(
        "DELETE FROM {versions} AS v USING (SELECT seq FROM (SELECT seq, row_number() "
        "OVER (PARTITION BY key ORDER BY seq DESC) AS n FROM {versions} "
        "WHERE {where} AND key = ANY(%s)) AS r WHERE n > %s) AS d WHERE v.seq = d.seq"
    ).format(versions=q.versions, where=where)
    columns = (
        [v.key for v in versions],
        [v.op for v in versions],
        [None if v.op == "forget" else encode_json(v.value) for v in versions],
        [None if v.op == "forget" else encode_json(v.metadata) for v in versions],
        [float(v.updated_at) for v in versions],
        [None if v.expires_at is None else float(v.expires_at) for v in versions],
    )
    keys = sorted(set(columns[0]))
    seqs: list[int] = []  # drawn on the first attempt, kept for a retry

    def body(conn: Connection[Any]) -> None:
        if not seqs:
            drawn = conn.execute(draw, (len(versions),)).fetchall()
            seqs.extend(sorted(int(row[0]) for row in drawn))
        conn.execute(insert, (scope, keep, list(seqs), *columns))
        if keep != KEEP_ALL:
            conn.execute(trim, (*params, keys, keep + 1))

    return body


def read_body(
    q: Fragments, scope: str | None, key: str
) -> Callable[[Connection[Any]], list[Version]]:
    """The statement reading the versions of `(scope, key)`, newest first."""
    where, params = _scope_condition(q, scope)
    select = q.sql.SQL(
        "SELECT key, op, value, metadata, updated_at, expires_at, seq, keep FROM {versions} "
        "WHERE {where} AND key = %s ORDER BY seq DESC"
    ).format(versions=q.versions, where=where)

    def body(conn: Connection[Any]) -> list[Version]:
        if scope is not None and "\x00" in scope:
            return []  # no such scope can be stored
        rows = conn.execute(select, (*params, key)).fetchall()
        # psycopg has decoded the json columns; a forget's are NULL.
        return [version_from_row(*row) for row in rows]

    return body


def drop_body(
    q: Fragments, scope: str | None, *, prefix: bool
) -> Callable[[Connection[Any]], int]:
    """The DELETE of the versions of `scope` (of every scope starting with it with
    `prefix`, of every scope when None); the body returns how many went.

    A prefix is compared as `left(scope, n) = prefix` (n its length in characters), not
    with LIKE, so `%`, `_` and `\\` in it are plain characters."""
    if scope is None:
        statement = q.sql.SQL("DELETE FROM {}").format(q.versions)
        params: tuple[Any, ...] = ()
    elif prefix:
        statement = q.sql.SQL("DELETE FROM {} WHERE left(scope, %s) = %s").format(q.versions)
        params = (len(scope), scope)
    else:
        statement = q.sql.SQL("DELETE FROM {} WHERE scope = %s").format(q.versions)
        params = (scope,)

    def body(conn: Connection[Any]) -> int:
        if scope is not None and "\x00" in scope:
            return 0  # no such scope can be stored
        return max(conn.execute(statement, params).rowcount, 0)

    return body
