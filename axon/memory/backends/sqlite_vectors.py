"""Semantic search over a SQLite memory file: stored float32 vectors in, ranked rows out.

Vectors live in the file's `vectors` table (one per entry, tagged with the model
that made it). Searching loads them into an in-process `VectorIndex` per model and
keeps it current incrementally: `vectors.seq` only grows, so each search first
loads the rows with a `seq` above the last one seen, whoever wrote them (this
process or another). Rows that went away (entry deleted, text changed, vector
replaced by another model's) are not tracked: every hit is joined back to its
entry and current vector, and a hit that no longer joins is dropped from the cache
on the spot. Vectors of another model are never searched; their entries count as
pending for this model and are re-embedded lazily.

A scope big enough (`sqlite_ann`'s threshold, 50,000 entries by default) is searched
through an approximate index kept beside the file instead (`sqlite_ann`), when one is
given and ready; while it is being built in the background, this exact scan answers.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from axon.memory.backends.sqlite_ann import AnnIndexes
from axon.memory.backends.sqlite_schema import LIVE_E
from axon.memory.retrieval.vectors import VectorIndex

Row = Any
"""A row of the entries table as the backend selects it (id first, scope second)."""


class _ModelCache:
    """The vectors of one model: an index per scope, each id's scope, the last `seq` loaded.

    One index per scope, so the exact search of a scope multiplies only that scope's
    vectors, however many other scopes (namespaces) the file holds."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.indexes: dict[str | None, VectorIndex] = {}
        self.scopes: dict[Hashable, str | None] = {}
        self.last_seq = 0

    def put(self, ident: Hashable, scope: str | None, vector: np.ndarray) -> None:
        if ident in self.scopes and self.scopes[ident] != scope:
            self.forget(ident)  # a reused row id, now of another scope
        index = self.indexes.get(scope)
        if index is None:
            index = self.indexes[scope] = VectorIndex(self.dim)
        index.upsert(ident, vector)
        self.scopes[ident] = scope

    def forget(self, ident: Hashable) -> None:
        if ident not in self.scopes:
            return
        scope = self.scopes.pop(ident)
        index = self.indexes.get(scope)
        if index is not None:
            index.remove(ident)
            if not len(index):
                del self.indexes[scope]

    def search(
        self, query: np.ndarray, limit: int, scope: str | None, every: bool
    ) -> list[tuple[Hashable, float]]:
        """The best `limit` `(id, cosine)` of `scope`, or of every scope when `every`."""
        if not every:
            index = self.indexes.get(scope)
            return [] if index is None else index.search(query, limit)
        hits = [hit for index in self.indexes.values() for hit in index.search(query, limit)]
        hits.sort(key=lambda hit: -hit[1])
        return hits[:limit]


class VectorCaches:
    """Per-model vector indexes over one connection's file; `ann` holds the approximate
    indexes of its big scopes (None: always the exact scan, as for a read-only file)."""

    def __init__(self, ann: AnnIndexes | None = None) -> None:
        self._models: dict[str, _ModelCache] = {}
        self.ann = ann

    def clear(self) -> None:
        """Drop every cached vector (after bulk deletes); the next search reloads."""
        self._models.clear()

    @staticmethod
    def pending(
        conn: sqlite3.Connection, scope: str | None, model_id: str, now: float
    ) -> list[tuple[Any, str]]:
        """`((id, text), text)` of live entries of `scope` (None: all) with no `model_id` vector."""
        where, params = ("", ()) if scope is None else (" AND e.scope = ?", (scope,))
        rows = conn.execute(
            "SELECT e.id, e.text FROM entries AS e LEFT JOIN vectors AS v "
            "ON v.entry_id = e.id AND v.model = ? "
            f"WHERE v.entry_id IS NULL AND {LIVE_E}{where} ORDER BY e.id",
            (model_id, now, *params),
        ).fetchall()
        return [((int(ident), str(text)), str(text)) for ident, text in rows]

    @staticmethod
    def save(
        conn: sqlite3.Connection, model_id: str, items: Sequence[tuple[Any, np.ndarray]]
    ) -> None:
        """Store vectors for `pending` ids, replacing earlier vectors of those entries.

        An id is `(entry id, text embedded)`: an entry deleted or given a new text since
        `pending` read it is skipped (its new text is pending again).
        """
        rows = []
        for (ident, text), vector in items:
            array = np.ascontiguousarray(vector, dtype=np.float32)
            rows.append((int(ident), model_id, int(array.shape[0]), array.tobytes(), text))
        conn.executemany(
            "INSERT OR REPLACE INTO vectors (entry_id, model, dim, vector) SELECT ?1, ?2, ?3, ?4 "
            "WHERE EXISTS (SELECT 1 FROM entries WHERE id = ?1 AND text = ?5)",
            rows,
        )

    def _sync(self, conn: sqlite3.Connection, model_id: str, dim: int) -> _ModelCache:
        cache = self._models.get(model_id)
        if cache is None or cache.dim != dim:
            cache = self._models[model_id] = _ModelCache(dim)
        rows = conn.execute(
            "SELECT v.seq, v.entry_id, e.scope, v.vector FROM vectors AS v "
            "JOIN entries AS e ON e.id = v.entry_id "
            "WHERE v.model = ? AND v.seq > ? AND v.dim = ? ORDER BY v.seq",
            (model_id, cache.last_seq, dim),
        ).fetchall()
        if rows:
            ids = [int(row[1]) for row in rows]
            matrix = np.frombuffer(b"".join(row[3] for row in rows), dtype=np.float32)
            vectors = matrix.reshape(len(rows), dim)
            for i, row in enumerate(rows):
                cache.put(ids[i], row[2], vectors[i])
            cache.last_seq = int(rows[-1][0])
        return cache

    def search(
        self,
        conn: sqlite3.Connection,
        model_id: str,
        query_vector: np.ndarray,
        top_k: int,
        scope: str | None,
        now: float,
        columns: str,
        accept_row: Callable[[Row], bool],
    ) -> list[tuple[Row, float]]:
        """The best `top_k` `(row, cosine)` of live entries of `scope`, best first.

        `columns` is the select list for entries aliased `e` (id first, scope second);
        `accept_row` applies recall filters. Runs inside the caller's read snapshot.
        """
        query = np.asarray(query_vector, dtype=np.float32)
        if self.ann is not None and self.ann.wanted(conn, scope):
            with_vector = f"{columns}, v.seq, v.vector"
            approximate = self.ann.search(
                conn,
                model_id,
                query,
                top_k,
                scope,
                now,
                lambda ids: self._rows(conn, ids, model_id, with_vector),
                accept_row,
            )
            if approximate is not None:
                return approximate
            # No index ready yet: the exact scan answers, then the build starts (prepared
            # by `ann.search`), so this recall's scan does not share the cores with it.
            try:
                return self._scan(conn, model_id, query, top_k, scope, now, columns, accept_row)
            finally:
                self.ann.start_build()
        return self._scan(conn, model_id, query, top_k, scope, now, columns, accept_row)

    def _scan(
        self,
        conn: sqlite3.Connection,
        model_id: str,
        query: np.ndarray,
        top_k: int,
        scope: str | None,
        now: float,
        columns: str,
        accept_row: Callable[[Row], bool],
    ) -> list[tuple[Row, float]]:
        """The exact search: every vector of the scope (or the model), kept in this
        process's indexes."""
        cache = self._sync(conn, model_id, int(query.shape[0]))
        want = top_k * 2
        while True:
            hits = cache.search(query, want, scope, scope is None)
            rows = self._rows(conn, [ident for ident, _ in hits], model_id, columns)
            found: list[tuple[Row, float]] = []
            for ident, score in hits:
                row = rows.get(ident)
                if row is None or (scope is not None and row[1] != scope):
                    cache.forget(ident)
                    continue
                expires_at = row[6]
                if expires_at is not None and now >= expires_at:
                    continue
                if accept_row(row):
                    found.append((row, score))
                    if len(found) == top_k:
                        return found
            if len(hits) < want:
                return found
            want *= 4

    @staticmethod
    def _rows(
        conn: sqlite3.Connection, ids: Sequence[Hashable], model_id: str, columns: str
    ) -> dict[Hashable, Row]:
        """Entries by id, only those whose stored vector is still `model_id`'s."""
        rows: dict[Hashable, Row] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            # CROSS JOIN fixes the join order: look the few ids up in entries, then each
            # one's vector by entry_id. Left to itself the planner scanned every vector of
            # the model (90 ms at 100k entries instead of well under 1 ms).
            for row in conn.execute(
                f"SELECT {columns} FROM entries AS e CROSS JOIN vectors AS v "
                f"ON v.entry_id = e.id WHERE e.id IN ({marks}) AND +v.model = ?",
                (*chunk, model_id),
            ):
                rows[int(row[0])] = row
        return rows
