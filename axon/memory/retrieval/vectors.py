"""An exact in-process vector index: a numpy matrix of unit vectors, searched by dot product.

Exact search is the default everywhere (docs/performance.md measures it). The one
approximate index, the SQLite backend's HNSW for scopes of 50,000 entries or more
(`backends.sqlite_ann`), re-scores its candidates exactly and is measured against this
one (recall@10, benchmarks/ann.py and benchmarks/sqlite_ann.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np


class VectorIndex:
    """Vectors by id; `search` returns the ids with the highest cosine to a query.

    Rows are kept in a growable matrix; deleting swaps the last row into the hole,
    so both upsert and delete are O(dim).
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._matrix = np.zeros((16, dim), dtype=np.float32)
        self._ids: list[Hashable] = []
        self._row: dict[Hashable, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, ident: object) -> bool:
        return ident in self._row

    def upsert(self, ident: Hashable, vector: np.ndarray) -> None:
        row = self._row.get(ident)
        if row is None:
            row = len(self._ids)
            if row == self._matrix.shape[0]:
                grown = np.zeros((row * 2, self.dim), dtype=np.float32)
                grown[:row] = self._matrix
                self._matrix = grown
            self._ids.append(ident)
            self._row[ident] = row
        self._matrix[row] = vector

    def upsert_many(self, idents: Sequence[Hashable], vectors: np.ndarray) -> None:
        for i, ident in enumerate(idents):
            self.upsert(ident, vectors[i])

    def vector(self, ident: Hashable) -> np.ndarray | None:
        """A copy of the vector stored for `ident`, or None."""
        row = self._row.get(ident)
        return None if row is None else self._matrix[row].copy()

    def remove(self, ident: Hashable) -> bool:
        row = self._row.pop(ident, None)
        if row is None:
            return False
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._ids[row] = moved
            self._matrix[row] = self._matrix[last]
            self._row[moved] = row
        self._ids.pop()
        return True

    def clear(self) -> None:
        self._ids.clear()
        self._row.clear()

    def search(
        self,
        query: np.ndarray,
        limit: int,
        accept: Callable[[Hashable], bool] | None = None,
    ) -> list[tuple[Hashable, float]]:
        """Up to `limit` `(id, cosine)` pairs, best first, among ids that `accept` allows."""
        n = len(self._ids)
        if n == 0 or limit <= 0:
            return []
        scores = self._matrix[:n] @ query.astype(np.float32, copy=False)
        want = limit if accept is None else min(n, limit * 4)
        while True:
            if want >= n:
                order = np.argsort(-scores, kind="stable")
            else:
                top = np.argpartition(-scores, want)[:want]
                order = top[np.argsort(-scores[top], kind="stable")]
            found: list[tuple[Hashable, float]] = []
            for row in order:
                ident = self._ids[int(row)]
                if accept is None or accept(ident):
                    found.append((ident, float(scores[row])))
                    if len(found) == limit:
                        return found
            if want >= n:
                return found
            want = min(n, want * 4)
