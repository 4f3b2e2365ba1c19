"""Approximate nearest-neighbour indexes beside a SQLite memory file, for big memories.

Why: the exact scan (`VectorIndex`) reads every vector of a model on each semantic
recall, about 6 ms at 50,000 vectors of 384 dimensions and 120-480 ms at 1,000,000
(docs/performance.md, issue 15 item 5). When switched on (`THRESHOLD_ENV`, off by
default), a scope holding at least the threshold's entries is searched through a
usearch HNSW index instead, one per (scope, model), kept
in files beside the SQLite file:

    <file>.<scope hash>.<model>.usearch        the index (usearch's own format)
    <file>.<scope hash>.<model>.usearch.json   its meta: dimension, the `vector_log`
                                               seq it holds, the file's identity

The SQLite file stays the truth; an index is only a way to find candidates:

- Built lazily, on the first semantic recall that needs it, from the `vectors` table
  in one read snapshot, and saved at once. Loaded instead when its files are there and
  their meta matches (same file identity, dimension, kind, and a seq the log still
  covers); anything else (missing, corrupt, truncated, another dimension, log pruned
  past it, more changes than half the index) is rebuilt from the table.
- Kept current from `vector_log` (schema 8, written by triggers in the same transaction
  as every change to `vectors`): each search reads the log past the index's seq, and
  re-reads those entries' current vectors (added back when still this scope's and this
  model's, removed otherwise). So deletes, expiry purges, rewrites, other processes'
  writes and writes of a process killed before it saved the index are all seen.
- Saved (index, then meta, each to a temporary name and `os.replace`d) after a build
  and whenever `SAVE_AFTER_CHANGES` changes were applied since the last save (not on
  close: a few changes are cheaper to apply again from the log than a big index is to
  rewrite). The meta records the index file's inode, size and mtime, taken before
  the rename: an index the meta does not describe (a crash between the two renames,
  or another process's save landing between them) is rebuilt, never trusted.
- Every candidate is re-checked against the live rows (scope, model, dimension, expiry,
  the recall's filters) and re-scored exactly with its stored float32 vector;
  `OVERFETCH` times the requested count is asked for, more while too many are filtered
  out. Results equal the exact scan's whenever its top k are among the candidates.

usearch is imported only when a scope reaches the threshold; without it (the
`semantic` extra not installed, or an older install) the exact scan remains. A
read-only file never gets an index (its directory cannot hold one).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ON_THRESHOLD = 50_000
"""Entries in a scope (from `scope_stats`) from which its semantic recall uses an index,
when indexes are switched on without a count (`AXON_SQLITE_ANN_THRESHOLD=on`)."""

DEFAULT_THRESHOLD: int | None = None
"""Off unless asked for: the first recall past the threshold builds the index and waits
for it (minutes at 200,000 vectors on two busy cores, over an hour at 1,000,000), which
no recall should do by surprise; a build in the background is not written yet."""

THRESHOLD_ENV = "AXON_SQLITE_ANN_THRESHOLD"
"""Sets the threshold: a count of entries, `on` (`ON_THRESHOLD`), or `off` (the
default) or a negative count for the exact scan always."""

DTYPE = "f16"
"""How the index stores vectors: half the memory of f32, same recall at 1M (measured)."""

CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 128
"""HNSW settings measured in benchmarks/ann.py (recall@10 against the exact scan)."""

OVERFETCH = 4
"""Candidates asked of the index per requested result, before the exact re-check."""

MIN_CANDIDATES = 40
"""Fewest candidates asked for, so a top 1 is chosen among many."""

EXHAUSTIVE_BELOW = 5_000
"""An index of fewer vectors is searched by brute force (usearch's `exact=True`, about a
millisecond): only a scope shrunk by deletes, or a threshold lowered for tests, gets
there, and a small HNSW graph over clumped vectors can miss a neighbour."""

SAVE_AFTER_CHANGES = 1_000
"""Changes applied from the log after which the index is saved again (and on close)."""

LOG_KEEP = 200_000
"""`vector_log` rows kept; an index saved further behind than that is rebuilt."""

PRUNE_STEP = 10_000
"""The log is pruned once this many rows beyond `LOG_KEEP` have gathered."""

BUILD_BATCH = 50_000
"""Vectors read from the table and added to a new index at a time."""

FORMAT = 1
"""Version of the meta file's content."""

ReadRows = Callable[[Sequence[int]], Mapping[Any, Any]]
"""Entry ids in, their rows out (selected columns, then the vector's seq and blob)."""


def _onnxruntime_first() -> None:
    """Load onnxruntime (the embedding models' runtime) before usearch, when installed.

    With usearch 2.26 and onnxruntime of the `semantic` extra, importing
    `usearch.index` first makes the later `import onnxruntime` crash the process
    (a segmentation fault while loading its library; the other order is fine, see
    tests/memory/test_sqlite_ann.py). A process that searches an index is one that
    embeds, so onnxruntime is loaded anyway; without it, nothing is needed.
    """
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401


def threshold_from_env(value: int | None) -> int | None:
    """The threshold in effect: `value` when given, else `THRESHOLD_ENV`, else the default.

    None means never (`off`, or a negative count). A malformed environment value keeps
    the default rather than failing every recall."""
    if value is not None:
        return None if value < 0 else value
    raw = os.environ.get(THRESHOLD_ENV, "").strip().lower()
    if not raw:
        return DEFAULT_THRESHOLD
    if raw in ("off", "none", "never"):
        return None
    if raw == "on":
        return ON_THRESHOLD
    try:
        count = int(raw)
    except ValueError:
        return DEFAULT_THRESHOLD
    return None if count < 0 else count


def high_water(conn: sqlite3.Connection) -> int:
    """The last `vector_log` seq ever given (kept by AUTOINCREMENT even after pruning)."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'").fetchone()
    return 0 if row is None else int(row[0])


def prune_log(conn: sqlite3.Connection) -> None:
    """Drop log rows more than `LOG_KEEP` behind the newest (inside a write transaction).

    Recorded in `ann_state.pruned_through`, so an index saved before that is rebuilt
    instead of missing the changes that were dropped."""
    cut = high_water(conn) - LOG_KEEP
    pruned = int(conn.execute("SELECT pruned_through FROM ann_state").fetchone()[0])
    if cut - pruned < PRUNE_STEP:
        return
    conn.execute("DELETE FROM vector_log WHERE seq <= ?", (cut,))
    conn.execute("UPDATE ann_state SET pruned_through = ?", (cut,))


class _Ann:
    """One loaded index: what it holds up to (`seq`) and changes not yet saved."""

    def __init__(self, index: Any, dim: int, seq: int) -> None:
        self.index = index
        self.dim = dim
        self.seq = seq
        self.unsaved = 0


class AnnIndexes:
    """The indexes of one SQLite file, by (scope, model), loaded or built on demand.

    `stats` counts what happened (`built`, `loaded`, `saved`, `applied` log changes,
    `save_failed`) and `last_rebuild` says why the last index was built rather than
    loaded: tests and benchmarks read them; recall results never depend on them.
    """

    def __init__(self, db_path: Path, threshold: int | None) -> None:
        self.db_path = db_path
        self.threshold = threshold
        self.stats: dict[str, int] = {
            "built": 0,
            "loaded": 0,
            "saved": 0,
            "applied": 0,
            "save_failed": 0,
        }
        self.last_rebuild: str | None = None
        self._indexes: dict[tuple[str | None, str], _Ann] = {}
        self._usearch: Any = None
        self._missing = False

    # ------------------------------------------------------------------ when

    def _module(self) -> Any:
        """`usearch.index`, imported on first need; None when it is not installed."""
        if self._usearch is None and not self._missing:
            try:
                _onnxruntime_first()
                import usearch.index
            except ImportError:
                self._missing = True
            else:
                self._usearch = usearch.index
        return self._usearch

    def wanted(self, conn: sqlite3.Connection, scope: str | None) -> bool:
        """Whether `scope` (None: the whole file) is big enough for an index, and usearch is
        there. One read of `scope_stats`, so the exact scan of a small scope costs nothing
        more."""
        if self.threshold is None:
            return False
        if scope is None:
            row = conn.execute("SELECT ifnull(sum(docs), 0) FROM scope_stats").fetchone()
        else:
            row = conn.execute("SELECT docs FROM scope_stats WHERE scope = ?", (scope,)).fetchone()
        docs = 0 if row is None else int(row[0])
        return docs >= self.threshold and self._module() is not None

    # ------------------------------------------------------------------ search

    def search(
        self,
        conn: sqlite3.Connection,
        model_id: str,
        query: np.ndarray,
        top_k: int,
        scope: str | None,
        now: float,
        read_rows: ReadRows,
        accept_row: Callable[[Any], bool],
    ) -> list[tuple[Any, float]]:
        """The best `top_k` `(row, cosine)` of live entries of `scope`, best first.

        Runs inside the caller's read snapshot. `read_rows` gives each candidate's row
        (the columns the caller selects, id first, scope second, expiry seventh) with
        its vector's seq and blob appended; rows are returned without those two.
        """
        dim = int(query.shape[0])
        ann = self._current(conn, scope, model_id, dim)
        size = len(ann.index)
        if size == 0 or top_k <= 0:
            return []
        want = min(size, max(top_k * OVERFETCH, MIN_CANDIDATES))
        while True:
            exhaustive = size < EXHAUSTIVE_BELOW
            matches = ann.index.search(query, want, threads=1, exact=exhaustive)
            keys = [int(key) for key in matches.keys]
            rows = read_rows(keys)
            kept: list[tuple[Any, int, bytes]] = []
            for key in keys:
                row = rows.get(key)
                if row is None or (scope is not None and row[1] != scope):
                    continue
                if len(row[-1]) != dim * 4:
                    continue
                expires_at = row[6]
                if expires_at is not None and now >= expires_at:
                    continue
                if accept_row(row[:-2]):
                    kept.append((row[:-2], int(row[-2]), row[-1]))
            if len(kept) >= top_k or len(keys) < want or want >= size:
                break
            want = min(size, want * 4)
        if not kept:
            return []
        matrix = np.frombuffer(b"".join(blob for _, _, blob in kept), dtype=np.float32)
        scores = matrix.reshape(len(kept), dim) @ query
        # Best first; equal cosines in the order the vectors were stored, as in the scan.
        order = sorted(range(len(kept)), key=lambda i: (-float(scores[i]), kept[i][1]))
        return [(kept[i][0], float(scores[i])) for i in order[:top_k]]

    # ------------------------------------------------------------------ keeping current

    def _current(
        self, conn: sqlite3.Connection, scope: str | None, model_id: str, dim: int
    ) -> _Ann:
        """The index of `(scope, model_id)`, loaded or built, with the log applied."""
        key = (scope, model_id)
        ann = self._indexes.get(key)
        if ann is not None and ann.dim != dim:
            ann = None
        if ann is None:
            ann, reason = self._load(conn, scope, model_id, dim)
            if ann is None:
                ann = self._build(conn, scope, model_id, dim, reason)
            self._indexes[key] = ann
        if not self._catch_up(conn, ann, scope, model_id):
            ann = self._indexes[key] = self._build(
                conn, scope, model_id, dim, "more changes in the log than half the index"
            )
        if ann.unsaved >= SAVE_AFTER_CHANGES:
            self._save(conn, ann, scope, model_id)
        return ann

    def _catch_up(
        self, conn: sqlite3.Connection, ann: _Ann, scope: str | None, model_id: str
    ) -> bool:
        """Apply the log past `ann.seq`; False when a rebuild is due instead (log pruned past
        it, or so many changes that building again is cheaper)."""
        newest = high_water(conn)
        if newest == ann.seq:
            return True
        pruned = int(conn.execute("SELECT pruned_through FROM ann_state").fetchone()[0])
        if ann.seq < pruned or ann.seq > newest:
            return False
        changed = [
            int(row[0])
            for row in conn.execute(
                "SELECT DISTINCT entry_id FROM vector_log WHERE seq > ?", (ann.seq,)
            )
        ]
        if len(changed) > max(SAVE_AFTER_CHANGES, len(ann.index) // 2):
            return False
        current: dict[int, bytes] = {}
        for start in range(0, len(changed), 500):
            chunk = changed[start : start + 500]
            marks = ",".join("?" * len(chunk))
            where, params = ("", ()) if scope is None else (" AND e.scope = ?", (scope,))
            for ident, blob in conn.execute(
                "SELECT v.entry_id, v.vector FROM vectors AS v JOIN entries AS e "
                f"ON e.id = v.entry_id WHERE v.entry_id IN ({marks}) AND v.model = ? "
                f"AND v.dim = ?{where}",
                (*chunk, model_id, ann.dim, *params),
            ):
                current[int(ident)] = blob
        stale = [ident for ident in changed if ident in ann.index]
        if stale:
            ann.index.remove(stale)
        if current:
            ids = list(current)
            matrix = np.frombuffer(b"".join(current[i] for i in ids), dtype=np.float32)
            ann.index.add(np.asarray(ids, dtype=np.uint64), matrix.reshape(len(ids), ann.dim))
        ann.seq = newest
        ann.unsaved += len(changed)
        self.stats["applied"] += len(changed)
        return True

    def _new_index(self, dim: int) -> Any:
        module = self._module()
        index = module.Index(
            ndim=dim,
            metric=module.MetricKind.Cos,
            dtype=DTYPE,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
        )
        index.expansion_search = EXPANSION_SEARCH
        return index

    def _build(
        self, conn: sqlite3.Connection, scope: str | None, model_id: str, dim: int, reason: str
    ) -> _Ann:
        """A new index from every `model_id` vector of `scope` in the snapshot, saved."""
        seq = high_water(conn)
        index = self._new_index(dim)
        if scope is None:
            rows = conn.execute(
                "SELECT entry_id, vector FROM vectors WHERE model = ? AND dim = ?",
                (model_id, dim),
            )
        else:
            # CROSS JOIN: the scope's entries by the identity index, then each one's vector.
            rows = conn.execute(
                "SELECT e.id, v.vector FROM entries AS e CROSS JOIN vectors AS v "
                "ON v.entry_id = e.id WHERE e.scope = ? AND +v.model = ? AND v.dim = ?",
                (scope, model_id, dim),
            )
        while batch := rows.fetchmany(BUILD_BATCH):
            ids = np.asarray([int(row[0]) for row in batch], dtype=np.uint64)
            matrix = np.frombuffer(b"".join(row[1] for row in batch), dtype=np.float32)
            index.add(ids, matrix.reshape(len(batch), dim), threads=os.cpu_count() or 1)
        ann = _Ann(index, dim, seq)
        self.stats["built"] += 1
        self.last_rebuild = reason
        self._save(conn, ann, scope, model_id)
        return ann

    # ------------------------------------------------------------------ files

    def paths(self, scope: str | None, model_id: str) -> tuple[Path, Path]:
        """The index file and its meta for `(scope, model_id)`."""
        scope_hash = hashlib.sha256(
            b"\x00all" if scope is None else scope.encode("utf-8", "surrogatepass")
        ).hexdigest()[:16]
        model = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)[:40]
        model += "-" + hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:8]
        index = self.db_path.with_name(f"{self.db_path.name}.{scope_hash}.{model}.usearch")
        return index, index.with_name(index.name + ".json")

    @staticmethod
    def _file_id(conn: sqlite3.Connection) -> str:
        return str(conn.execute("SELECT file_id FROM ann_state").fetchone()[0])

    def _load(
        self, conn: sqlite3.Connection, scope: str | None, model_id: str, dim: int
    ) -> tuple[_Ann | None, str]:
        """The saved index when its files are whole and its meta matches; else None and why."""
        index_path, meta_path = self.paths(scope, model_id)
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            stat = index_path.stat()
        except FileNotFoundError:
            return None, "no saved index"
        except (OSError, ValueError):
            return None, "unreadable meta"
        expected = {
            "format": FORMAT,
            "file_id": self._file_id(conn),
            "scope": scope,
            "model": model_id,
            "dim": dim,
            "dtype": DTYPE,
            "inode": stat.st_ino,
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
        }
        if not isinstance(meta, dict) or any(meta.get(k) != v for k, v in expected.items()):
            return None, "meta does not match the file, the model or the index file"
        seq, count = meta.get("seq"), meta.get("count")
        if not isinstance(seq, int) or not isinstance(count, int):
            return None, "meta does not match the file, the model or the index file"
        pruned = int(conn.execute("SELECT pruned_through FROM ann_state").fetchone()[0])
        if seq < pruned or seq > high_water(conn):
            return None, "log does not cover the saved index"
        try:
            index = self._module().Index.restore(str(index_path))
        except (OSError, RuntimeError, ValueError):
            return None, "corrupt index file"
        if index is None or index.ndim != dim or len(index) != count:
            return None, "corrupt index file"
        index.expansion_search = EXPANSION_SEARCH
        self.stats["loaded"] += 1
        return _Ann(index, dim, seq), ""

    def _save(self, conn: sqlite3.Connection, ann: _Ann, scope: str | None, model_id: str) -> None:
        """Write the index, then its meta, each atomically. A failure (disk full, a
        directory made read-only) leaves the previous files and costs only a later
        rebuild or catch-up: the recall goes on with the index in memory."""
        index_path, meta_path = self.paths(scope, model_id)
        suffix = f".tmp{os.getpid()}"
        index_tmp = index_path.with_name(index_path.name + suffix)
        meta_tmp = meta_path.with_name(meta_path.name + suffix)
        try:
            ann.index.save(str(index_tmp))
            stat = index_tmp.stat()  # the rename keeps it; another save would not
            os.replace(index_tmp, index_path)
            meta = {
                "format": FORMAT,
                "file_id": self._file_id(conn),
                "scope": scope,
                "model": model_id,
                "dim": ann.dim,
                "dtype": DTYPE,
                "seq": ann.seq,
                "count": len(ann.index),
                "inode": stat.st_ino,
                "size": stat.st_size,
                "mtime_ns": stat.st_mtime_ns,
            }
            meta_tmp.write_text(json.dumps(meta), encoding="utf-8")
            os.replace(meta_tmp, meta_path)
        except (OSError, RuntimeError):
            self.stats["save_failed"] += 1
            for leftover in (index_tmp, meta_tmp):
                with contextlib.suppress(OSError):
                    leftover.unlink()
            return
        ann.unsaved = 0
        self.stats["saved"] += 1

    def close(self) -> None:
        """Forget the indexes. Nothing is saved here: changes applied since the last save
        (fewer than `SAVE_AFTER_CHANGES`) are applied again from the log by the next
        process, which costs less than rewriting a big index on every close."""
        self._indexes.clear()
