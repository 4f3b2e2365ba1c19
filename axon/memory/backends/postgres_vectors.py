"""The PostgreSQL backend's vectors: one pgvector table per embedding model, and the
semantic search over it.

`PostgresBackend` delegates its vector methods here (the contract's
`_pending_texts`, `_save_vectors`, `_semantic_search`, `_read_vectors`,
`_write_vectors`); each function takes the backend, whose connection, statement
fragments and caches (`_vector_tables`, `_embedded_since`) it uses. A vector is
tagged with its entry's `vgen`, so one written for an older text is never read;
search is cosine distance on the table's HNSW index with iterative scans
(`hnsw.ef_search` raised for the query when more rows are wanted), score =
1 - distance. Table layout and creation: `postgres_schema`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from axon.memory.backend import best_first
from axon.memory.backends.postgres_pool import HNSW_EF_SEARCH, VectorParam
from axon.memory.backends.postgres_schema import ensure_vector_table, find_vector_table
from axon.memory.backends.postgres_sql import Row
from axon.memory.entry import MemoryEntry, matches_filters

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.sql import SQL, Identifier

    from axon.memory.backends.postgres import PostgresBackend


def vector_table(
    backend: PostgresBackend, conn: Connection[Any], model_id: str, dim: int | None
) -> Identifier | None:
    """The vector table of `model_id` (created for `dim` if missing; None without `dim`)."""
    table = backend._vector_tables.get(model_id)
    if table is None:
        if dim is None:
            name = find_vector_table(conn, backend.schema, model_id)
        else:
            name = ensure_vector_table(conn, backend.schema, model_id, dim)
        if name is not None:
            table = backend._vector_tables[model_id] = backend._q.sql.Identifier(
                backend.schema, name
            )
    return table


async def pending_texts(
    backend: PostgresBackend, scope: str | None, model_id: str
) -> list[tuple[Any, str]]:
    """Live entries of `scope` whose current text has no `model_id` vector.

    Only rows written since the last complete check (by transaction id) are
    looked at, so a recall on an up-to-date store costs one index probe.
    """
    now = backend.clock()
    mark = (model_id, scope)
    since = backend._embedded_since.get(mark, 0)
    where, params = backend._scope_sql(scope)

    def body(conn: Connection[Any]) -> tuple[int, list[tuple[Any, str]]]:
        table = vector_table(backend, conn, model_id, None)
        q = backend._q
        missing = (
            q.nothing
            if table is None
            else q.sql.SQL(
                " AND NOT EXISTS (SELECT 1 FROM {} AS v "
                "WHERE v.entry_id = e.id AND v.vgen = e.vgen)"
            ).format(table)
        )
        # One statement, one snapshot: every transaction older than its xmin had
        # finished, so its rows are either seen here or gone.
        statement = q.query(
            "SELECT h.xmin, p.id, p.vgen, p.text FROM (SELECT "
            "pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin) AS h "
            "LEFT JOIN LATERAL (SELECT e.id, e.vgen, e.text FROM {entries} AS e "
            "WHERE e.wxid >= %s AND {live}{where}{missing}) AS p ON true ORDER BY p.id",
            where=where,
            missing=missing,
        )
        rows = conn.execute(statement, (since, now, *params)).fetchall()
        horizon = int(rows[0][0]) if rows else since
        pending = [((int(r[1]), int(r[2])), str(r[3])) for r in rows if r[1] is not None]
        return horizon, pending

    horizon, pending = backend._run(body, atomic=False)
    # The horizon is only trusted once the pending rows have vectors; until then
    # the next check starts from the same place.
    if not pending:
        backend._embedded_since[mark] = horizon
    return pending


async def save_vectors(
    backend: PostgresBackend, model_id: str, items: Sequence[tuple[Any, np.ndarray]]
) -> None:
    if not items:
        return
    # An entry rewritten or deleted since its text was read keeps no vector.
    upsert_vectors(
        backend,
        model_id,
        int(np.asarray(items[0][1]).shape[-1]),
        backend._q.sql.SQL("e.id = %s AND e.vgen = %s"),
        [(VectorParam(vector), ident[0], ident[1]) for ident, vector in items],
    )


def upsert_vectors(
    backend: PostgresBackend, model_id: str, dim: int, match: SQL, rows: Sequence[tuple[Any, ...]]
) -> int:
    """Store vectors of `dim` for `model_id` (its table made on first use): each row
    is the vector then the parameters of `match`, which picks the entry (alias `e`)
    it belongs to; the vector is tagged with that entry's `vgen`. Returns how many
    entries got one."""

    def body(conn: Connection[Any]) -> int:
        table = vector_table(backend, conn, model_id, dim)
        assert table is not None  # created for `dim`
        with conn.cursor() as cur:
            cur.executemany(
                backend._q.query(
                    "INSERT INTO {table} (entry_id, vgen, embedding) "
                    "SELECT e.id, e.vgen, %s::vector FROM {entries} AS e "
                    "WHERE {match} ON CONFLICT (entry_id) DO UPDATE "
                    "SET vgen = excluded.vgen, embedding = excluded.embedding",
                    table=table,
                    match=match,
                ),
                rows,
            )
            return max(cur.rowcount, 0)  # summed over the batch

    try:
        return int(backend._run(body))
    except BaseException:
        backend._vector_tables.pop(model_id, None)  # its creation may have rolled back
        raise


async def semantic_search(
    backend: PostgresBackend,
    query_vector: np.ndarray,
    top_k: int,
    scope: str | None,
    filters: Mapping[str, Any] | None,
    now: float,
) -> list[MemoryEntry]:
    """Nearest live entries of `scope` by cosine (HNSW, iterative scan); score = cosine.

    The join does not compare `vgen`: `ensure_vectors` has just replaced every
    stale vector of the scope, and a second join condition makes the planner
    misjudge the join and sort the whole table instead of walking the index.
    """
    model_id = backend._require_embedder(scope).model_id
    where, params = backend._scope_sql(scope)
    vector = VectorParam(query_vector)

    def fetch(conn: Connection[Any], want: int) -> list[Row]:
        table = vector_table(backend, conn, model_id, None)
        if table is None:
            return []
        sql = backend._q.query(
            "SELECT {columns}, v.embedding <=> %s::vector AS distance "
            "FROM {table} AS v JOIN {entries} AS e ON e.id = v.entry_id "
            "WHERE {live}{where} ORDER BY distance LIMIT %s",
            table=table,
            where=where,
        )
        values = (vector, now, *params, want)
        if want <= HNSW_EF_SEARCH:  # the connection's settings suffice
            return conn.execute(sql, values).fetchall()
        with conn.transaction():
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(want, 1000)),))
            return conn.execute(sql, values).fetchall()

    def keep(row: Row) -> MemoryEntry | None:
        entry = backend._entry(row, 1.0 - float(row[7]))
        return entry if matches_filters(entry.metadata, filters) else None

    found = backend._grow(fetch, keep, top_k, top_k if not filters else max(top_k * 4, 32))
    # Equal distances: newest first, as everywhere else.
    found.sort(key=lambda entry: best_first(entry.score, entry.timestamp))
    return found


async def read_vectors(
    backend: PostgresBackend, scope: str | None, keys: list[str], model_id: str
) -> dict[str, np.ndarray]:
    where, params = backend._exact_scope_sql(scope)

    def body(conn: Connection[Any]) -> dict[str, np.ndarray]:
        table = vector_table(backend, conn, model_id, None)
        if table is None:
            return {}
        statement = backend._q.query(
            "SELECT e.key, v.embedding::real[] FROM {entries} AS e "
            "JOIN {table} AS v ON v.entry_id = e.id AND v.vgen = e.vgen "
            "WHERE {where} AND e.key = ANY(%s)",
            table=table,
            where=where,
        )
        rows = conn.execute(statement, (*params, list(keys))).fetchall()
        return {str(key): np.asarray(values, dtype=np.float32) for key, values in rows}

    return backend._run(body, atomic=False)


async def write_vectors(
    backend: PostgresBackend,
    scope: str | None,
    model_id: str,
    items: Sequence[tuple[str, np.ndarray]],
) -> int:
    where, params = backend._exact_scope_sql(scope)
    return upsert_vectors(
        backend,
        model_id,
        int(np.asarray(items[0][1]).shape[-1]),
        backend._q.sql.SQL("{} AND e.key = %s").format(where),
        [(VectorParam(vector), *params, key) for key, vector in items],
    )
