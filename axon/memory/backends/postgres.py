"""The shared server backend: memory entries in, rows of a PostgreSQL + pgvector database out.

`PostgresBackend` keeps every memory (scope) of a database schema in one table
(layout and migrations: `postgres_schema`). What it guarantees, and how:

- Connections: a `psycopg_pool.ConnectionPool` (autocommit connections; every
  operation is one explicit transaction). The pool is opened and the schema
  migrated on first use, after one direct connection that reports the server's
  own reason when it cannot be reached. Messages name `user@host:port/db`, never
  the password.
- Durability: `store` returns only after COMMIT has returned, so an acknowledged
  write is on the server. A dropped connection (server restart, failover) makes
  the failed operation check the pool and run once more on a fresh connection:
  every operation is idempotent (an upsert, a delete, a read, a version insert
  keyed by its pre-drawn `seq`: `postgres_versions`), so the retry is
  safe; if the server stays unreachable past `connect_timeout` the operation
  raises `AxonMemoryError`. Deadlocks between concurrent batch upserts are
  retried too.
- Recall: `exact` prefilters in SQL (`LIKE` on the lower-cased key or text, read
  through pg_trgm indexes) and scores in Python with the seed's 1.0/0.7/0.4;
  `keyword` matches the query's Porter stems against each row's `terms` (GIN),
  ranks the matches by BM25 in SQL with the memory's own statistics
  (`scope_stats`, `term_stats`; only the rows of the rarer words when that provably changes
  nothing, `postgres_bm25.best_ranked`) and scores the best of them with
  `scores.keyword_score`, as every backend does; `semantic` is pgvector cosine
  distance on an HNSW index per embedding model (score = 1 - distance) with
  iterative index scans, so scope and expiry conditions do not starve the result;
  `hybrid` is fused by the base class.
- Every query restricts to the scope it was given (`scope = %s`) and to unexpired
  rows; expired rows are also deleted in batches (`purge_expired`, and every
  `PURGE_INTERVAL` seconds of the backend's clock during writes: the policy of
  `sql_common`).
- History: the versions of memories declared with `history:` live in the schema's
  `versions` table (`postgres_versions`); `record_versions` inserts and trims in one
  transaction, `clear`, `erase` and `purge_history` delete them.

Calls are synchronous inside the async methods (as the SQLite backend's are): a
query holds the event loop for its round trip.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from axon.errors import AxonMemoryError
from axon.memory.backend import (
    LIST_PAGE,
    RETRIEVAL_MODES,
    Capabilities,
    MemoryBackend,
    best_first,
)
from axon.memory.backends import postgres_copy, postgres_versions
from axon.memory.backends.postgres_bm25 import best_ranked, rank_sql, scope_stats, stored_counts
from axon.memory.backends.postgres_pool import (
    HNSW_EF_SEARCH,
    Connector,
    VectorParam,
    import_driver,
)
from axon.memory.backends.postgres_schema import (
    DEFAULT_SCHEMA,
    SCHEMA_ENV,
    Indexed,
    check_schema_name,
    counted_terms,
    ensure_vector_table,
    entry_terms,
    find_vector_table,
    index_term,
    indexed,
    indexed_terms,
    int_array,
    parse_dsn,
    resolve_dsn,
    text_array,
)
from axon.memory.backends.postgres_sql import Fragments, Row, db_text
from axon.memory.backends.sql_common import (
    POSTGRES_FILTERS,
    candidate_count,
    filter_condition,
    given_created,
    purge_in_batches,
    quiet_sweep,
    row_entry,
    window_condition,
    write_row,
)
from axon.memory.backends.sql_common import PURGE_BATCH as PURGE_BATCH
from axon.memory.backends.sql_common import PURGE_INTERVAL as PURGE_INTERVAL
from axon.memory.entry import (
    EXPIRY_DURATION,
    MemoryEntry,
    filter_predicate,
    kept_created,
    matches_filters,
    scope_of,
    value_text,
    window_of,
    window_test,
)
from axon.memory.links import (
    LinkChange,
    LinkWrite,
    MissingLinkTarget,
    edited_metadata,
    kept_related,
    unlink_changes,
)
from axon.memory.retrieval.exact import seed_score
from axon.memory.retrieval.scores import (
    ScopeStats,
    keyword_score,
)
from axon.memory.retrieval.text import CONTEXT_WEIGHT, search_terms
from axon.memory.versions import Version

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.sql import SQL, Composable, Identifier

    from axon.memory.embeddings.base import Embedder
    from axon.trace import TraceSink

POOL_SIZE_ENV = "AXON_PG_POOL_SIZE"
DEFAULT_POOL_SIZE = 8
DEFAULT_CONNECT_TIMEOUT = 15.0

COPY_THRESHOLD = 64
"""Batches of at least this many rows are sent with binary COPY (`postgres_copy`, fast);
smaller ones as arrays in one statement (fewer round trips)."""

_UPSERT_ARRAYS = (
    "INSERT INTO {entries} AS e (scope, key, key_lc, value, text, text_lc, "
    "metadata, timestamp, expires_at, terms, term_counts, length, context, "
    "context_terms, context_counts, context_length) "
    "SELECT u.scope, u.key, u.key_lc, u.value::json, u.text, u.text_lc, "
    "u.metadata::json, u.ts, u.exp, u.terms::text[], u.term_counts::int[], u.length, "
    "u.context, u.context_terms::text[], u.context_counts::int[], u.context_length "
    "FROM {source} ORDER BY u.n " + postgres_copy.ON_CONFLICT_UPDATE
)
"""A small batch's upsert, its rows sent as one array per column (`{source}`)."""

_SET_CONTEXTS = (
    "UPDATE {entries} AS e SET context = u.context, "
    "context_terms = u.context_terms::text[], context_counts = u.context_counts::int[], "
    "context_length = u.context_length "
    "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::int[]) "
    "AS u(key, context, context_terms, context_counts, context_length) "
    "WHERE e.key = u.key AND {where} AND e.context IS DISTINCT FROM u.context"
)
"""The contexts entries give (`NewEntry.context`) onto the rows of one scope that an
upsert kept their old context in; the statistics triggers count the change."""

_SET_CREATED = (
    "UPDATE {entries} AS e SET created_at = u.created "
    "FROM unnest(%s::text[], %s::float8[]) AS u(key, created) "
    "WHERE e.key = u.key AND {where} AND e.created_at IS DISTINCT FROM u.created"
)
"""The first writes entries give (`NewEntry.created_at`: an import's, a tier move's)
onto the rows of one scope just written, in the write's transaction."""



def _dsn_timeout(dsn: str) -> float:
    """The connection string's `connect_timeout` (libpq's: whole seconds, 0 or below
    means none, which here is the default), else `DEFAULT_CONNECT_TIMEOUT`."""
    value = parse_dsn(dsn).get("connect_timeout")
    try:
        seconds = float(value) if value is not None else 0.0
    except ValueError:
        raise AxonMemoryError(
            f"the PostgreSQL connection string's connect_timeout must be a number of "
            f"seconds, got {value!r}"
        ) from None
    return seconds if seconds > 0 else DEFAULT_CONNECT_TIMEOUT


class PostgresBackend(MemoryBackend):
    """Memory in a PostgreSQL database with pgvector; many processes and machines share it.

    Keywords beyond the base's: `schema` (default `AXON_PG_SCHEMA`, else `axon`),
    `pool_size` (most connections this instance opens; default `AXON_PG_POOL_SIZE`,
    else 8) and `connect_timeout` (seconds to wait for a connection before the
    operation fails; default the connection string's `connect_timeout`, else 15).
    `location` is a connection string or `env:VAR`; without it `AXON_PG_DSN` is used.
    """

    name: ClassVar[str] = "pgvector"
    capabilities: ClassVar[Capabilities] = Capabilities(
        persistent=True, retrieval=frozenset(RETRIEVAL_MODES), shared=True, history=True
    )
    default_mode: ClassVar[str] = "exact"

    def __init__(
        self,
        tracer: TraceSink | None = None,
        *,
        location: str | None = None,
        memory_dir: str | Path | None = None,
        clock: Callable[[], float] | None = None,
        embedder: Embedder | None = None,
        schema: str | None = None,
        pool_size: int | None = None,
        connect_timeout: float | None = None,
    ) -> None:
        super().__init__(
            tracer, location=location, memory_dir=memory_dir, clock=clock, embedder=embedder
        )
        import_driver()
        dsn = resolve_dsn(location)
        if connect_timeout is None:
            connect_timeout = _dsn_timeout(dsn)
        self.schema = check_schema_name(schema or os.environ.get(SCHEMA_ENV) or DEFAULT_SCHEMA)
        self._q = Fragments(self.schema)
        size = pool_size or _env_pool_size()
        if size < 1:
            raise AxonMemoryError(f"pool_size must be at least 1, got {size}")
        self._db = Connector(
            dsn,
            schema=self.schema,
            pool_size=size,
            timeout=float(connect_timeout),
            check_open=self._check_open,
        )
        self.target = self._db.target
        self._run = self._db.run
        self._last_purge: float | None = None
        self._vector_tables: dict[str, Identifier] = {}
        # Per (model, scope): transactions older than this id were all seen by a
        # complete pending-vector check, so later checks only look at newer rows.
        self._embedded_since: dict[tuple[str, str | None], int] = {}

    async def _close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------------ rows

    @staticmethod
    def _entry(row: Row, score: float = 0.0) -> MemoryEntry:
        return row_entry(row, score)  # psycopg has decoded the json columns

    def _exact_scope_sql(self, scope: str | None) -> tuple[SQL, tuple[Any, ...]]:
        """`e.scope` equal to `scope`, the unscoped rows for None (not every scope)."""
        sql = self._q.sql
        if scope is None:
            return sql.SQL("e.scope IS NULL"), ()
        return sql.SQL("e.scope = %s"), (scope,)

    def _scope_sql(self, scope: str | None, column: str = "e.scope") -> tuple[SQL, tuple[Any, ...]]:
        """A condition restricting to `scope` (nothing when None: every scope)."""
        sql = self._q.sql
        if scope is None:
            return sql.SQL(""), ()
        return sql.SQL(" AND {} = %s").format(sql.SQL(column)), (scope,)

    def _scope_window_sql(
        self, scope: str | None, filters: Mapping[str, Any] | None
    ) -> tuple[Composable, tuple[Any, ...]]:
        """`_scope_sql(scope)` and the filters' time window (`UPDATED_WINDOW`) on
        `e.timestamp`: a retrieval's candidates are read inside the window."""
        where, params = self._scope_sql(scope)
        since, until = window_of(filters)
        if since is None and until is None:
            return where, params
        window, values = window_condition(since, until, "e.timestamp", "%s")
        sql = self._q.sql
        return sql.SQL("{} AND {}").format(where, sql.SQL(window)), (*params, *values)

    def _identity_sql(self, scope: str | None) -> tuple[SQL, tuple[Any, ...]]:
        """The condition selecting one `(scope, key)`: None is the scope-less entries."""
        sql = self._q.sql
        if scope is None:
            return sql.SQL("scope IS NULL AND key = %s"), ()
        return sql.SQL("scope = %s AND key = %s"), (scope,)

    # ------------------------------------------------------------------ writes

    async def _put(self, entries: Sequence[MemoryEntry]) -> None:
        body, atomic = self._put_body(entries)
        try:
            self._run(body, atomic=atomic)
        except UnicodeEncodeError as exc:
            raise AxonMemoryError(
                f"Cannot store value: it is not valid Unicode text ({exc.reason})"
            ) from None
        self._maybe_purge(self.clock())

    def _put_body(
        self, entries: Sequence[MemoryEntry]
    ) -> tuple[Callable[[Connection[Any]], None], bool]:
        """The body writing `entries` (`_put`) and whether it needs a transaction of its
        own (a one-statement body does not)."""
        # One row per (scope, key): the last value wins, at the place of the first
        # (as a dictionary update does), so ids keep insertion order.
        latest: dict[tuple[str | None, str], MemoryEntry] = {}
        for entry in entries:
            latest[(scope_of(entry.metadata), entry.key)] = entry
        rows: list[tuple[Any, ...]] = []
        # Each text's counted stems, reused for the next row's context when the stored
        # text is the same (no NUL dropped): one tokenisation per text, not two.
        counted: list[tuple[Counter[str], int] | None] = []
        # The contexts the entries give (an import's), as stored, with their terms.
        given: dict[int, tuple[str, Indexed]] = {}
        for (scope, key), entry in latest.items():
            if scope is not None and "\x00" in scope:
                raise AxonMemoryError("a memory scope must not contain NUL characters", key=key)
            full_text = value_text(entry.value)
            text = db_text(full_text)
            counts = counted_terms(full_text)
            if entry.context is not None:
                context = db_text(entry.context)
                given[len(rows)] = (context, indexed_terms(context))
            rows.append((*write_row(entry, text), *entry_terms(key, *counts)))
            counted.append(counts if text == full_text else None)
        scopes = list(dict.fromkeys(row[0] for row in rows))
        q = self._q
        # The newest text stored in each scope of the batch, one statement.
        latest_text = (
            "(SELECT p.text FROM {entries} AS p WHERE p.scope {op} "
            "ORDER BY p.timestamp DESC, p.id DESC LIMIT 1)"
        )
        latest_sql = q.query(
            "SELECT s.n, CASE WHEN s.scope IS NULL THEN {unscoped} ELSE {scoped} END "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS s(scope, n)",
            unscoped=q.query(latest_text, op=q.sql.SQL("IS NULL")),
            scoped=q.query(latest_text, op=q.sql.SQL("= s.scope")),
        )

        def with_contexts(conn: Connection[Any]) -> list[Row]:
            """The complete rows (`postgres_copy.COLUMNS`), with their contexts
            (text.CONTEXT_WEIGHT): the one the entry gives, else the text stored just
            before it in its scope, the previous row of the batch, else the newest row
            stored. Kept by a new row only (an update keeps its own; `given_contexts`
            then writes a given one)."""
            found = conn.execute(latest_sql, (scopes,)).fetchall()
            previous: dict[str | None, tuple[str, tuple[Counter[str], int] | None]] = {
                scopes[int(n) - 1]: (text or "", None) for n, text in found
            }
            complete = []
            for n, (row, counts) in enumerate(zip(rows, counted, strict=True)):
                if n in given:
                    context, terms = given[n]
                else:
                    context, context_counts = previous[row[0]]
                    terms = (
                        indexed_terms(context)
                        if context_counts is None
                        else indexed(*context_counts)
                    )
                complete.append((*row, context, *terms))
                previous[row[0]] = (row[4], counts)
            return complete

        def given_contexts(conn: Connection[Any]) -> None:
            """Give the rows that replaced a stored one the context their entry gives
            (new rows have it already: `with_contexts`)."""
            by_scope: dict[str | None, list[tuple[str, str, Indexed]]] = {}
            for n, (context, terms) in given.items():
                by_scope.setdefault(rows[n][0], []).append((rows[n][1], context, terms))
            for scope, items in by_scope.items():
                where, params = self._exact_scope_sql(scope)
                conn.execute(
                    q.query(_SET_CONTEXTS, where=where),
                    (
                        [key for key, _, _ in items],
                        [context for _, context, _ in items],
                        [text_array(terms[0]) for _, _, terms in items],
                        [int_array(terms[1]) for _, _, terms in items],
                        [terms[2] for _, _, terms in items],
                        *params,
                    ),
                )

        body: Callable[[Connection[Any]], None]
        if len(rows) < COPY_THRESHOLD:
            # One write statement (atomic by itself): the rows travel as arrays.
            statement = q.query(
                _UPSERT_ARRAYS,
                vgen_seq=q.vgen_seq,
                source=q.sql.SQL(
                    "unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
                    "%s::text[], %s::text[], %s::float8[], %s::float8[], %s::text[], "
                    "%s::text[], %s::int[], %s::text[], %s::text[], %s::text[], %s::int[]) "
                    "WITH ORDINALITY AS u(scope, key, key_lc, value, text, text_lc, metadata, "
                    "ts, exp, terms, term_counts, length, context, context_terms, "
                    "context_counts, context_length, n)"
                ),
            )

            def arrays(conn: Connection[Any]) -> None:
                columns = [list(column) for column in zip(*with_contexts(conn), strict=True)]
                for i in (7, 8):  # a float8[] each: integer times too (psycopg refuses a mix)
                    columns[i] = [None if t is None else float(t) for t in columns[i]]
                for i in (9, 13):  # text[] and int[] travel as their literals
                    columns[i] = [text_array(terms) for terms in columns[i]]
                    columns[i + 1] = [int_array(counts) for counts in columns[i + 1]]
                conn.execute(statement, columns)

            body, atomic = arrays, False
        else:
            body = self._copy_body(with_contexts)
            atomic = True
        created = given_created(list(latest.values()))
        if not given and not created:
            return body, atomic
        write = body

        def set_created(conn: Connection[Any]) -> None:
            by_scope: dict[str | None, list[tuple[str, float]]] = {}
            for (scope, key), first in created.items():
                by_scope.setdefault(scope, []).append((key, float(first)))
            for scope, items in by_scope.items():
                where, params = self._exact_scope_sql(scope)
                conn.execute(
                    q.query(_SET_CREATED, where=where),
                    ([key for key, _ in items], [first for _, first in items], *params),
                )

        def write_with_contexts(conn: Connection[Any]) -> None:
            write(conn)
            if given:
                given_contexts(conn)
            set_created(conn)

        return write_with_contexts, True

    async def _update(
        self,
        key: str,
        scope: str | None,
        build: Callable[[MemoryEntry], MemoryEntry],
        now: float,
    ) -> MemoryEntry | None:
        """See `MemoryBackend.update`: one transaction that locks the row (`SELECT ...
        FOR UPDATE`), builds its replacement and upserts it; a concurrent update or
        store of the same row waits for the commit."""
        q = self._q
        where, params = self._exact_scope_sql(scope)
        select = q.query(
            "SELECT {columns} FROM {entries} AS e WHERE {where} AND e.key = %s AND {live} "
            "FOR UPDATE",
            where=where,
        )

        def body(conn: Connection[Any]) -> MemoryEntry | None:
            row = conn.execute(select, (*params, key, now)).fetchone()
            if row is None:
                return None
            new = build(self._entry(row))
            self._put_body([new])[0](conn)
            return new

        try:
            return self._run(body)
        except UnicodeEncodeError as exc:
            raise AxonMemoryError(
                f"Cannot store value: it is not valid Unicode text ({exc.reason})"
            ) from None

    async def _write_links(
        self,
        scope: str | None,
        changes: list[LinkChange],
        store: MemoryEntry | None,
        delete: str | None,
        now: float,
    ) -> LinkWrite:
        """See `MemoryBackend.write_links`: one transaction that locks each row it links
        (`SELECT ... FOR UPDATE`, in key order, so two link writes wait for each other
        rather than deadlock) and updates only its `metadata` column; a concurrent
        upsert of the same row waits for the commit, and its own write then wins."""
        q = self._q
        where, params = self._exact_scope_sql(scope)
        remove = q.query(
            "DELETE FROM {entries} AS e WHERE {where} AND e.key = %s "
            "RETURNING e.expires_at, e.metadata",
            where=where,
        )
        lock = q.query(
            "SELECT e.key, e.id, e.metadata, coalesce(e.created_at, e.timestamp) "
            "FROM {entries} AS e "
            "WHERE {where} AND e.key = ANY(%s) AND {live} ORDER BY e.key FOR UPDATE",
            where=where,
        )
        update = q.query("UPDATE {entries} SET metadata = %s::json WHERE id = %s")

        def body(conn: Connection[Any]) -> LinkWrite:
            unlink: list[LinkChange] = []
            deleted = False
            if delete is not None:
                row = conn.execute(remove, (*params, delete)).fetchone()
                if row is not None:
                    deleted = row[0] is None or float(row[0]) > now
                    unlink = unlink_changes(delete, row[1])
            keys = {change.key for change in [*unlink, *changes]}
            if store is not None:
                keys.add(store.key)
            rows = {
                key: (ident, meta, float(first))
                for key, ident, meta, first in conn.execute(lock, (*params, sorted(keys), now))
            }
            stored = store
            if store is not None:
                old = rows.get(store.key)
                meta = kept_related(store.metadata, old and old[1], memory=scope, key=store.key)
                # the row is locked: the upsert keeps a fresh write's first write itself
                self._put_body([dataclasses.replace(store, metadata=meta)])[0](conn)
                stored = dataclasses.replace(
                    store, metadata=meta, **kept_created(store, old and old[2])
                )
            changed: list[str] = []
            for change in [*unlink, *changes]:
                found = rows.get(change.key)
                if found is None:
                    if change.add:
                        raise MissingLinkTarget(change.key, memory=scope)
                    continue
                edited = edited_metadata(found[1], change, memory=scope)
                if edited is not None:
                    conn.execute(update, (edited[1], found[0]))
                    changed.append(change.key)
            return LinkWrite(stored, deleted, tuple(changed))

        try:
            done = self._run(body)
        except UnicodeEncodeError as exc:
            raise AxonMemoryError(
                f"Cannot store value: it is not valid Unicode text ({exc.reason})"
            ) from None
        self._maybe_purge(self.clock())
        return done

    def _copy_body(
        self, with_contexts: Callable[[Connection[Any]], list[Row]]
    ) -> Callable[[Connection[Any]], None]:
        """The transaction writing a large batch in binary COPY (`postgres_copy`): the
        new rows straight into `entries`, the ones replacing stored rows staged and
        upserted. A concurrent writer may store one of the new keys between the look
        and the COPY (a unique violation): the batch is then upserted whole, inside
        the same transaction."""
        from psycopg import errors

        q = self._q
        stored_sql = q.query(postgres_copy.STORED)
        direct = q.sql.SQL("COPY {} (" + postgres_copy.COLUMNS + ") FROM STDIN (FORMAT BINARY)")
        direct_copy = direct.format(q.entries)
        stage_copy = q.sql.SQL(
            "COPY pg_temp.axon_stage_binary (n, " + postgres_copy.COLUMNS + ") "
            "FROM STDIN (FORMAT BINARY)"
        ).format()
        upsert = q.query(postgres_copy.UPSERT, vgen_seq=q.vgen_seq)

        def body(conn: Connection[Any]) -> None:
            complete = with_contexts(conn)
            try:
                with conn.transaction():  # a savepoint
                    stored = postgres_copy.stored_positions(conn, stored_sql, complete)
                    if stored:
                        replacing = [row for n, row in enumerate(complete) if n in stored]
                        postgres_copy.upsert_staged(conn, stage_copy, upsert, replacing)
                    fresh = [row for n, row in enumerate(complete) if n not in stored]
                    postgres_copy.copy_rows(conn, direct_copy, fresh, numbered=False)
            except errors.UniqueViolation:
                postgres_copy.upsert_staged(conn, stage_copy, upsert, complete)

        return body

    async def _restart_expiry(
        self, scope: str | None, keys: list[str], now: float
    ) -> dict[str, float]:
        """See `MemoryBackend.restart_expiry`: one UPDATE restarts every key that qualifies
        (`entry.expiry_duration`'s rule in SQL: a JSON number above 0) and returns each
        one's new expiry."""
        q = self._q
        where, params = self._exact_scope_sql(scope)
        field = q.sql.Literal(EXPIRY_DURATION)
        seconds = q.sql.SQL(
            "(CASE WHEN json_typeof(e.metadata -> {field}) = 'number' "
            "THEN (e.metadata ->> {field})::float8 END)"
        ).format(field=field)
        statement = q.query(
            "UPDATE {entries} AS e SET expires_at = %s::float8 + {seconds} "
            "WHERE {where} AND e.key = ANY(%s) AND e.expires_at IS NOT NULL "
            "AND e.expires_at > %s AND {seconds} > 0 RETURNING e.key, e.expires_at",
            seconds=seconds,
            where=where,
        )

        def body(conn: Connection[Any]) -> dict[str, float]:
            rows = conn.execute(statement, (now, *params, keys, now)).fetchall()
            return {str(key): float(at) for key, at in rows}

        return self._run(body, atomic=False)

    async def _delete(self, key: str, scope: str | None) -> bool:
        """Remove `(scope, key)`; True only when it was visible (not expired)."""
        where, params = self._identity_sql(scope)
        now = self.clock()

        def body(conn: Connection[Any]) -> bool:
            row = conn.execute(
                self._q.query(
                    "DELETE FROM {entries} WHERE {where} RETURNING expires_at", where=where
                ),
                (*params, key),
            ).fetchone()
            return row is not None and (row[0] is None or float(row[0]) > now)

        return self._run(body)

    async def _clear(self, scope: str | None) -> int:
        """Delete every row of `scope` (all when None); returns how many were visible."""
        where, params = self._scope_sql(scope, "scope")
        now = self.clock()

        def body(conn: Connection[Any]) -> int:
            row = conn.execute(
                self._q.query(
                    "WITH gone AS (DELETE FROM {entries} WHERE true{where} RETURNING expires_at) "
                    "SELECT count(*) FILTER (WHERE expires_at IS NULL OR expires_at > %s) "
                    "FROM gone",
                    where=where,
                ),
                (*params, now),
            ).fetchone()
            return int(row[0]) if row else 0

        return self._run(body)

    async def _purge_expired(self, now: float) -> int:
        return self._purge(now)

    def _purge(self, now: float) -> int:
        """Delete expired rows, `PURGE_BATCH` per transaction (`sql_common.purge_in_batches`;
        the expiry index finds them); returns how many."""
        statement = self._q.query(
            "DELETE FROM {entries} WHERE id IN (SELECT id FROM {entries} "
            "WHERE expires_at IS NOT NULL AND expires_at <= %s LIMIT %s) RETURNING scope"
        )

        def batch(size: int) -> list[str | None]:
            rows = self._run(lambda conn: conn.execute(statement, (now, size)).fetchall())
            return [scope for (scope,) in rows]

        total, by_scope = purge_in_batches(batch, PURGE_BATCH)
        self._last_purge = now
        self._purged(total, by_scope)
        return total

    # ------------------------------------------------------------------ history
    # The `versions` table of the backend's schema (`postgres_versions`).

    async def _record_versions(
        self, scope: str | None, versions: list[Version], keep: int
    ) -> None:
        """Insert and trim in one transaction, safe to run again after a lost connection
        (`postgres_versions.record_body`)."""
        self._run(postgres_versions.record_body(self._q, scope, versions, keep))

    async def _read_versions(self, scope: str | None, key: str) -> list[Version]:
        return self._run(postgres_versions.read_body(self._q, scope, key), atomic=False)

    async def _drop_versions(self, scope: str | None, *, prefix: bool) -> int:
        """One DELETE, committed: as for erased entries, the rows stay in the table and
        index files until (auto)vacuum reclaims them (docs/postgres.md)."""
        return self._run(postgres_versions.drop_body(self._q, scope, prefix=prefix), atomic=False)

    async def _list_scopes(self, prefix: str) -> list[str]:
        """Scopes starting with `prefix`: a skip scan, one index probe per distinct scope.

        Every distinct scope is visited (the collation decides where the prefix
        sorts, so a range would not be safe); a store holds few scopes, and each
        step is one probe of `entries_scope_time`, whatever the row count.
        """
        statement = self._q.query("SELECT min(scope) FROM {entries} WHERE scope > %s")
        first = self._q.query("SELECT min(scope) FROM {entries}")

        def body(conn: Connection[Any]) -> list[str]:
            found: list[str] = []
            row = conn.execute(first).fetchone()
            while row is not None and row[0] is not None:
                scope: str = row[0]
                if scope.startswith(prefix):
                    found.append(scope)
                row = conn.execute(statement, (scope,)).fetchone()
            return found

        return self._run(body)

    def _maybe_purge(self, now: float) -> None:
        """Sweep expired rows at most every `PURGE_INTERVAL` seconds of the clock; a failed
        sweep does not fail the write that started it (`sql_common.quiet_sweep`)."""
        if self._last_purge is None:
            self._last_purge = now
        elif now - self._last_purge >= PURGE_INTERVAL:
            self._last_purge = now
            quiet_sweep(self._purge, now)

    # ------------------------------------------------------------------ reads

    async def _get(self, key: str, scope: str | None) -> MemoryEntry | None:
        where, params = self._identity_sql(scope)
        row = self._run(
            lambda conn: conn.execute(
                self._q.query("SELECT {columns} FROM {entries} AS e WHERE {where}", where=where),
                (*params, key),
            ).fetchone(),
            atomic=False,
        )
        return None if row is None else self._entry(row)

    async def _list(
        self, scope: str | None, limit: int | None, offset: int, now: float
    ) -> list[MemoryEntry]:
        where, params = self._scope_sql(scope)
        paging = " LIMIT %s OFFSET %s" if limit is not None else " OFFSET %s"
        page: tuple[Any, ...] = (limit, offset) if limit is not None else (offset,)
        statement = self._q.query(
            "SELECT {columns} FROM {entries} AS e WHERE {live}{where} "
            "ORDER BY e.timestamp DESC, e.id{paging}",
            where=where,
            paging=self._q.sql.SQL(paging),
        )
        rows = self._run(
            lambda conn: conn.execute(statement, (now, *params, *page)).fetchall(),
            atomic=False,
        )
        return [self._entry(row) for row in rows]

    async def _list_matching(
        self, scope: str | None, filters: Mapping[str, Any], limit: int | None, now: float
    ) -> list[MemoryEntry]:
        """The filter in the query (`sql_common.filter_condition`), newest first along
        `entries_scope_time`, each row checked with `matches_filters` too.

        With a `limit`, a first page of `limit` rows, then pages twice as large (at most
        `LIST_PAGE`) by keyset until enough rows pass Python's check: one page when the
        condition is exact.
        """
        accepts = filter_predicate(filters)
        where, params = self._scope_sql(scope)
        text, values, _ = filter_condition(filters, "e.metadata", POSTGRES_FILTERS)
        q = self._q
        condition = q.sql.SQL(text)
        statement = q.query(
            "SELECT {columns} FROM {entries} AS e WHERE {live}{where} AND {condition}{seek} "
            "ORDER BY e.timestamp DESC, e.id{page}",
            where=where,
            condition=condition,
            seek=q.nothing,
            page=q.nothing if limit is None else q.sql.SQL(" LIMIT %s"),
        )
        following = q.query(
            "SELECT {columns} FROM {entries} AS e WHERE {live}{where} AND {condition} "
            "AND (e.timestamp < %s OR (e.timestamp = %s AND e.id > %s)) "
            "ORDER BY e.timestamp DESC, e.id LIMIT %s",
            where=where,
            condition=condition,
        )

        def body(conn: Connection[Any]) -> list[MemoryEntry]:
            found: list[MemoryEntry] = []
            size = limit
            page = () if size is None else (size,)
            rows = conn.execute(statement, (now, *params, *values, *page)).fetchall()
            while True:
                for row in rows:
                    entry = self._entry(row)
                    if accepts(entry.metadata):
                        found.append(entry)
                        if len(found) == limit:
                            return found
                if size is None or len(rows) < size:
                    return found
                last = rows[-1]
                size = min(size * 2, max(limit or 0, LIST_PAGE))  # the condition let others in
                seek = (last[5], last[5], last[0], size)
                rows = conn.execute(following, (now, *params, *values, *seek)).fetchall()

        return self._run(body, atomic=False)

    async def _count(self, scope: str | None, now: float) -> int:
        where, params = self._scope_sql(scope)
        row = self._run(
            lambda conn: conn.execute(
                self._q.query(
                    "SELECT count(*) FROM {entries} AS e WHERE {live}{where}", where=where
                ),
                (now, *params),
            ).fetchone(),
            atomic=False,
        )
        return int(row[0]) if row else 0

    def _grow(
        self,
        fetch: Callable[[Connection[Any], int], list[Row]],
        keep: Callable[[Row], MemoryEntry | None],
        top_k: int,
        first: int,
    ) -> list[MemoryEntry]:
        """Fetch `first` ranked rows, keep those `keep` accepts; fetch more until `top_k`.

        Used when some condition (metadata filters, NUL characters) is checked in
        Python after SQL ranked the rows: the window grows eightfold until `top_k`
        are kept or the rows run out.
        """

        def body(conn: Connection[Any]) -> list[MemoryEntry]:
            want = first
            while True:
                rows = fetch(conn, want)
                found = [entry for entry in map(keep, rows) if entry is not None]
                if len(found) >= top_k or len(rows) < want:
                    return found[:top_k]
                want *= 8

        return self._run(body, atomic=False)

    # ------------------------------------------------------------------ exact

    async def _retrieve_exact(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
    ) -> list[MemoryEntry]:
        """The seed's tiers, best first, each newest first: matched in SQL, scored in Python.

        SQL sees the lower-cased key and text (exactly Python's `str.lower()`) and
        orders by tier and recency; the score is then recomputed from the stored
        value, which also drops the rare false match of text stripped of NULs.
        """
        accepts = filter_predicate(filters)
        inside = window_test(filters)
        query_lower = query.lower()
        q = db_text(query_lower)
        pattern = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where, params = self._scope_window_sql(scope, filters)
        # LIKE (not strpos) so the trigram indexes of schema 4 can find the rows.
        sql = self._q.query(
            "SELECT {columns} FROM {entries} AS e "
            "WHERE ({key_lc} LIKE %s OR {text_lc} LIKE %s) AND {live}{where} "
            "ORDER BY CASE WHEN {key_lc} = %s THEN 0 WHEN strpos({key_lc}, %s) > 0 THEN 1 "
            "ELSE 2 END, e.timestamp DESC, e.id LIMIT %s",
            where=where,
        )

        def fetch(conn: Connection[Any], want: int) -> list[Row]:
            return conn.execute(sql, (pattern, pattern, now, *params, q, q, want)).fetchall()

        def keep(row: Row) -> MemoryEntry | None:
            entry = self._entry(row)
            if not (accepts(entry.metadata) and inside(entry.timestamp)):
                return None
            score = seed_score(query_lower, entry.key, entry.value)
            return entry.with_score(score) if score > 0 else None

        # A query with NUL characters was matched on NUL-less text: score all it found.
        first = top_k if not filters else max(top_k * 4, 32)
        first = 1 << 62 if "\x00" in query else first
        found = self._grow(fetch, keep, top_k, first)
        # Stable: equal score and time keep the SQL order (first stored first).
        found.sort(key=lambda entry: best_first(entry.score, entry.timestamp))
        return found

    # ------------------------------------------------------------------ keyword

    async def _retrieve_keyword(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
        linked: bool = False,
    ) -> list[MemoryEntry]:
        """Per-scope BM25 over key and text (and the context when `linked`), in [0, 1].

        The candidates are the live rows of `scope` holding a query term (`terms`,
        and `context_terms` when linked: GIN), best first by their BM25 computed
        in SQL (`rank_sql`; for every scope at once, with the statistics of the
        whole store, as FTS5 ranks SQLite's candidates), and at most
        `max(top_k * CANDIDATES_PER_RESULT, MIN_CANDIDATES)` of them (more when
        filters reject some). Each is then scored by `scores.keyword_score` from
        its key, text and context, with the statistics of its scope (`scope_stats`,
        and each query term's document count in that scope, `term_stats`), so score and order
        are those of every other backend; ties go newest first.
        """
        accepts = filter_predicate(filters)
        inside = window_test(filters)
        # Terms as the `terms` columns hold them (a long word as its `index_term`): BM25
        # reads only counts, so matching, statistics and scores are those of the words.
        terms = list(dict.fromkeys(index_term(term) for term in search_terms(query)))
        if not terms:
            return []
        q = self._q
        where, params = self._scope_window_sql(scope, filters)
        match = q.sql.SQL(
            "(e.terms && %s::text[] OR e.context_terms && %s::text[])"
            if linked
            else "e.terms && %s::text[]"
        )
        length = (
            q.sql.SQL("(e.length + {} * e.context_length)").format(q.float8(CONTEXT_WEIGHT))
            if linked
            else q.sql.SQL("e.length")
        )
        context = q.sql.SQL(
            "e.context, e.context_terms, e.context_counts, e.context_length"
            if linked
            else "NULL, NULL, NULL, NULL"
        )

        def body(conn: Connection[Any]) -> list[MemoryEntry]:
            stats: dict[str | None, ScopeStats] = {}
            if scope is not None:
                stats[scope] = scope_stats(q, conn, scope, terms, linked)
                order = stats[scope]
            else:  # every scope: candidates by the statistics of the whole store
                order = scope_stats(q, conn, None, terms, linked, every=True)
            ranking, rank_params = rank_sql(q, terms, order, linked, length)

            def ranked(holding: list[str], want: int) -> list[Row]:
                """The best `want` live rows holding a term of `holding` (all: -1), with
                their rank (`rank_sql`, over every query term) last."""
                statement = q.query(
                    "SELECT {columns}, e.text, e.terms, e.term_counts, e.length, {context}, "
                    "{ranking} AS rank FROM {entries} AS e "
                    "WHERE {match} AND {live}{where} "
                    "ORDER BY rank DESC, e.timestamp DESC, e.id{limit}",
                    context=context,
                    match=match,
                    where=where,
                    ranking=ranking,
                    limit=q.sql.SQL("" if want < 0 else " LIMIT %s"),
                )
                held = (holding, holding) if linked else (holding,)
                limit = () if want < 0 else (want,)
                return conn.execute(
                    statement, (*rank_params, *held, now, *params, *limit)
                ).fetchall()

            want = candidate_count(top_k)
            while True:
                rows = best_ranked(ranked, terms, order, want)
                kept = [
                    row for row in rows
                    if not filters or (inside(float(row[5])) and accepts(row[4]))
                ]
                if len(kept) >= top_k or want < 0 or len(rows) < want:
                    break
                want = want * 16 if want < 100_000 else -1  # -1: no limit
            for name in {row[1] for row in kept} - set(stats):
                stats[name] = scope_stats(q, conn, name, terms, linked)
            scored = []
            for row in kept:
                counts, size = stored_counts(row, linked)
                score = keyword_score(terms, counts, size, stats[row[1]])
                scored.append((*best_first(score, float(row[5]), int(row[0])), row, score))
            scored.sort(key=lambda item: item[:3])
            return [self._entry(item[3], item[4]) for item in scored[:top_k]]

        return self._run(body, atomic=False)

    # ------------------------------------------------------------------ vectors
    # One pgvector table per embedding model (layout and creation: `postgres_schema`);
    # a vector is tagged with its entry's `vgen`, so one written for an older text is
    # never read; search is cosine distance on the table's HNSW index with iterative
    # scans (`hnsw.ef_search` raised for the query when more rows are wanted),
    # score = 1 - distance.

    def _vector_table(
        self, conn: Connection[Any], model_id: str, dim: int | None
    ) -> Identifier | None:
        """The vector table of `model_id` (created for `dim` if missing; None without `dim`)."""
        table = self._vector_tables.get(model_id)
        if table is None:
            if dim is None:
                name = find_vector_table(conn, self.schema, model_id)
            else:
                name = ensure_vector_table(conn, self.schema, model_id, dim)
            if name is not None:
                table = self._vector_tables[model_id] = self._q.sql.Identifier(
                    self.schema, name
                )
        return table

    async def _pending_texts(
        self, scope: str | None, model_id: str
    ) -> list[tuple[Any, str]]:
        """Live entries of `scope` whose current text has no `model_id` vector.

        Only rows written since the last complete check (by transaction id) are
        looked at, so a recall on an up-to-date store costs one index probe.
        """
        now = self.clock()
        mark = (model_id, scope)
        since = self._embedded_since.get(mark, 0)
        where, params = self._scope_sql(scope)

        def body(conn: Connection[Any]) -> tuple[int, list[tuple[Any, str]]]:
            table = self._vector_table(conn, model_id, None)
            q = self._q
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

        horizon, pending = self._run(body, atomic=False)
        # The horizon is only trusted once the pending rows have vectors; until then
        # the next check starts from the same place.
        if not pending:
            self._embedded_since[mark] = horizon
        return pending

    async def _save_vectors(
        self, model_id: str, items: Sequence[tuple[Any, np.ndarray]]
    ) -> None:
        if not items:
            return
        # An entry rewritten or deleted since its text was read keeps no vector.
        self._upsert_vectors(
            model_id,
            int(np.asarray(items[0][1]).shape[-1]),
            self._q.sql.SQL("e.id = %s AND e.vgen = %s"),
            [(VectorParam(vector), ident[0], ident[1]) for ident, vector in items],
        )

    def _upsert_vectors(
        self, model_id: str, dim: int, match: SQL, rows: Sequence[tuple[Any, ...]]
    ) -> int:
        """Store vectors of `dim` for `model_id` (its table made on first use): each row
        is the vector then the parameters of `match`, which picks the entry (alias `e`)
        it belongs to; the vector is tagged with that entry's `vgen`. Returns how many
        entries got one."""

        def body(conn: Connection[Any]) -> int:
            table = self._vector_table(conn, model_id, dim)
            assert table is not None  # created for `dim`
            with conn.cursor() as cur:
                cur.executemany(
                    self._q.query(
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
            return int(self._run(body))
        except BaseException:
            self._vector_tables.pop(model_id, None)  # its creation may have rolled back
            raise

    async def _semantic_search(
        self,
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
        model_id = self._require_embedder(scope).model_id
        where, params = self._scope_window_sql(scope, filters)
        vector = VectorParam(query_vector)

        def fetch(conn: Connection[Any], want: int) -> list[Row]:
            table = self._vector_table(conn, model_id, None)
            if table is None:
                return []
            sql = self._q.query(
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
                conn.execute(
                    "SELECT set_config('hnsw.ef_search', %s, true)", (str(min(want, 1000)),)
                )
                return conn.execute(sql, values).fetchall()

        def keep(row: Row) -> MemoryEntry | None:
            entry = self._entry(row, 1.0 - float(row[8]))
            if not window_test(filters)(entry.timestamp):
                return None
            return entry if matches_filters(entry.metadata, filters) else None

        found = self._grow(fetch, keep, top_k, top_k if not filters else max(top_k * 4, 32))
        # Equal distances: newest first, as everywhere else.
        found.sort(key=lambda entry: best_first(entry.score, entry.timestamp))
        return found

    async def _read_vectors(
        self, scope: str | None, keys: list[str], model_id: str
    ) -> dict[str, np.ndarray]:
        where, params = self._exact_scope_sql(scope)

        def body(conn: Connection[Any]) -> dict[str, np.ndarray]:
            table = self._vector_table(conn, model_id, None)
            if table is None:
                return {}
            statement = self._q.query(
                "SELECT e.key, v.embedding::real[] FROM {entries} AS e "
                "JOIN {table} AS v ON v.entry_id = e.id AND v.vgen = e.vgen "
                "WHERE {where} AND e.key = ANY(%s)",
                table=table,
                where=where,
            )
            rows = conn.execute(statement, (*params, list(keys))).fetchall()
            return {str(key): np.asarray(values, dtype=np.float32) for key, values in rows}

        return self._run(body, atomic=False)

    async def _write_vectors(
        self,
        scope: str | None,
        model_id: str,
        items: Sequence[tuple[str, np.ndarray]],
    ) -> int:
        where, params = self._exact_scope_sql(scope)
        return self._upsert_vectors(
            model_id,
            int(np.asarray(items[0][1]).shape[-1]),
            self._q.sql.SQL("{} AND e.key = %s").format(where),
            [(VectorParam(vector), *params, key) for key, vector in items],
        )

    # ------------------------------------------------------------------ paging and vectors

    async def _list_after(
        self,
        scope: str | None,
        limit: int,
        after: tuple[float, Any] | None,
        now: float,
        oldest_first: bool,
    ) -> list[tuple[MemoryEntry, Any]]:
        """A keyset page over `entries_scope_time` (scope, timestamp DESC, id).

        Two index range reads in one transaction, as SQLite's (see there): the rest of
        the cursor's run of equal timestamps in id order, then the timestamps after it.
        """
        if after is not None and not isinstance(after[1], int):
            return []
        where, params = self._scope_sql(scope)
        q = self._q
        order = q.sql.SQL("e.timestamp, e.id" if oldest_first else "e.timestamp DESC, e.id")
        beyond = q.sql.SQL(">" if oldest_first else "<")
        same_run = q.query(
            "SELECT {columns} FROM {entries} AS e WHERE {live}{where} "
            "AND e.timestamp = %s AND e.id > %s ORDER BY e.id LIMIT %s",
            where=where,
        )
        rest = q.query(
            "SELECT {columns} FROM {entries} AS e WHERE {live}{where}{seek} "
            "ORDER BY {order} LIMIT %s",
            where=where,
            seek=q.nothing if after is None else q.sql.SQL(" AND e.timestamp {} %s").format(beyond),
            order=order,
        )

        def body(conn: Connection[Any]) -> list[Row]:
            rows: list[Row] = []
            seek_params: tuple[Any, ...] = ()
            if after is not None:
                rows = conn.execute(same_run, (now, *params, after[0], after[1], limit)).fetchall()
                seek_params = (after[0],)
            if len(rows) < limit:
                rows += conn.execute(
                    rest, (now, *params, *seek_params, limit - len(rows))
                ).fetchall()
            return rows

        return [(self._entry(row), int(row[0])) for row in self._run(body)]

    async def _read_contexts(self, scope: str | None, keys: list[str]) -> dict[str, str]:
        where, params = self._exact_scope_sql(scope)
        statement = self._q.query(
            "SELECT e.key, e.context FROM {entries} AS e WHERE {where} AND e.key = ANY(%s)",
            where=where,
        )

        def body(conn: Connection[Any]) -> dict[str, str]:
            rows = conn.execute(statement, (*params, keys)).fetchall()
            return {str(key): str(context) for key, context in rows}

        return self._run(body, atomic=False)


def _env_pool_size() -> int:
    """`AXON_PG_POOL_SIZE` as a number of connections (default 8); a clear error if not one."""
    text = (os.environ.get(POOL_SIZE_ENV) or "").strip()
    if not text:
        return DEFAULT_POOL_SIZE
    if not (text.isascii() and text.isdigit() and len(text) <= 6 and int(text) >= 1):
        raise AxonMemoryError(
            f"{POOL_SIZE_ENV} must be a whole number of connections of at least 1, "
            f"got {text[:40]!r}"
        )
    return int(text)
