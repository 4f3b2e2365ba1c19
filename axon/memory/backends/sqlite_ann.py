"""Approximate nearest-neighbour indexes beside a SQLite memory file, for big memories.

Why: the exact scan (`VectorIndex`) reads every vector of a model on each semantic
recall, about 6 ms at 50,000 vectors of 384 dimensions and 120-480 ms at 1,000,000
(docs/performance.md, issue 15 item 5). A scope holding at least the threshold's
entries (`DEFAULT_THRESHOLD`, 50,000; `THRESHOLD_ENV` changes it or switches it off)
is searched through a usearch HNSW index instead, one per (scope, model), kept in files
beside the SQLite file:

    <file>.<scope hash>.<model>.usearch        the index (usearch's own format)
    <file>.<scope hash>.<model>.usearch.json   its meta: dimension, the `vector_log`
                                               seq it holds, the file's identity
    <file>.<scope hash>.<model>.usearch.lock   held (flock) by the process building it,
                                               and removed when its build ends

The SQLite file stays the truth; an index is only a way to find candidates:

- Built in the background: a recall that finds no usable index starts its build in a
  daemon thread and is answered by the exact scan, as is every recall until the build
  is done (minutes at 200,000 vectors: no recall waits for it). One build at a time
  per process (`_BUILD_SLOT`), and per index across processes (the lock file: a
  process that finds it held keeps the exact scan and loads the index once saved).
  The thread has its own read-only connection: it takes the `vector_log` seq, then
  reads the vectors in pages of `BUILD_PAGE` by entry id, each page its own short
  read (no snapshot is held for the minutes of a build, which would stop the WAL from
  being checkpointed); every change made after that seq is in the log, so catching
  up from it makes the index exact whatever the pages saw. The finished index is
  saved by the thread; the next recall takes it, applies the log and uses it.
  `close()` cancels a build (between pages) and waits for the thread; a cancelled
  build writes nothing.
- Loaded instead when its files are there and their meta matches (same file identity,
  dimension, kind, and a seq the log still covers); anything else (missing, corrupt,
  truncated, another dimension, log pruned past it, more changes than half the index)
  is built again, in the background as above.
- Kept current from `vector_log` (schema 8, written by triggers in the same transaction
  as every change to `vectors`): each search reads the log past the index's seq, and
  re-reads those entries' current vectors (added back when still this scope's and this
  model's, removed otherwise). So deletes, expiry purges, rewrites, other processes'
  writes and writes of a process killed before it saved the index are all seen.
- Saved (index, then meta, each to a temporary name `.tmp<pid>-<thread>` and
  `os.replace`d) after a build and whenever `SAVE_AFTER_CHANGES` changes were applied
  since the last save (not on close: a few changes are cheaper to apply again from the
  log than a big index is to rewrite). The meta records the index file's inode, size
  and mtime, taken before the rename: an index the meta does not describe (a crash
  between the two renames, or another process's save landing between them) is
  rebuilt, never trusted. Temporary files left by a dead process are removed on open.
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
import glob
import hashlib
import json
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from axon.files import create_private

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no cross-process build lock
    fcntl = None  # type: ignore[assignment]

ON_THRESHOLD = 50_000
"""Entries in a scope (from `scope_stats`) from which its semantic recall uses an index
(`AXON_SQLITE_ANN_THRESHOLD=on`, and the default)."""

DEFAULT_THRESHOLD: int | None = ON_THRESHOLD
"""On by default: the build runs in the background and recalls meanwhile are answered
by the exact scan, so no recall waits for it (below 50,000 entries the exact scan takes
a few milliseconds anyway, docs/performance.md)."""

THRESHOLD_ENV = "AXON_SQLITE_ANN_THRESHOLD"
"""Sets the threshold: a count of entries, `on` (`ON_THRESHOLD`, the default), or `off`
(or a negative count) for the exact scan always."""

DTYPE = "f16"
"""How the index stores vectors: half the memory of f32, same recall at 1M (measured)."""

CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 128
"""HNSW settings measured in benchmarks/ann.py, ann_build.py and sqlite_ann.py (recall@10
against the exact scan). Building with 64 candidates instead of 128 was 1.56x faster at
50,000 vectors with the same recall@10 up to 200,000, but recall@10 fell to 0.880 at
1,000,000 through the backend (below the 0.95 bar; 128 gave 0.992): 128 stays."""

OVERFETCH = 4
"""Candidates asked of the index per requested result, before the exact re-check."""

MIN_CANDIDATES = 40
"""Fewest candidates asked for, so a top 1 is chosen among many."""

EXHAUSTIVE_BELOW = 5_000
"""An index of fewer vectors is searched by brute force (usearch's `exact=True`, about a
millisecond): only a scope shrunk by deletes, or a threshold lowered for tests, gets
there, and a small HNSW graph over clumped vectors can miss a neighbour."""

SAVE_AFTER_CHANGES = 1_000
"""Changes applied from the log after which the index is saved again."""

LOG_KEEP = 200_000
"""`vector_log` rows kept; an index saved further behind than that is rebuilt."""

PRUNE_STEP = 10_000
"""The log is pruned once this many rows beyond `LOG_KEEP` have gathered."""

BUILD_PAGE = 5_000
"""Vectors a build reads (one short read) and adds to the index at a time. A
cancelled build stops after the page it is adding: `close()` waits at most that long
(a second or two on two cores)."""

BUILD_NICENESS = 5
"""Added to the build thread's nice value (Linux: per thread, inherited by usearch's
workers), so recalls answered by the exact scan meanwhile get the cores first. 10 was
measured starving the build on a machine busy with other jobs (944 s for 100,000
vectors at load 8-9, docs/performance.md); 5 is a compromise, not measured."""

FORMAT = 1
"""Version of the meta file's content."""

ReadRows = Callable[[Sequence[int]], Mapping[Any, Any]]
"""Entry ids in, their rows out (selected columns, then the vector's seq and blob)."""

Key = tuple[str | None, str]
"""An index's (scope, model id)."""

_BUILD_SLOT = threading.Lock()
"""Held by the one build running in this process (of any file): two builds at once would
only share the same cores, each finishing later."""

_TEMP = re.compile(r"\.usearch(?:\.json)?\.tmp(\d+)(?:-\d+)?$")
"""A temporary file of a save: its pid, to tell a dead process's leftovers."""


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


def _file_id(conn: sqlite3.Connection) -> str:
    return str(conn.execute("SELECT file_id FROM ann_state").fetchone()[0])


def _alive(pid: int) -> bool:
    """Whether process `pid` exists (ours counts: its own saves may be under way)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's, alive
        return True
    return True


class _Ann:
    """One loaded index: what it holds up to (`seq`) and changes not yet saved."""

    def __init__(self, index: Any, dim: int, seq: int) -> None:
        self.index = index
        self.dim = dim
        self.seq = seq
        self.unsaved = 0


class _Build:
    """An index being built by a daemon thread, and what came of it.

    The thread writes `result`, `saved` and `error` before it ends; the backend's thread
    reads them only after `thread` has ended (`AnnIndexes._collect`)."""

    def __init__(
        self,
        key: Key,
        dim: int,
        reason: str,
        lock_fd: int | None,
        run: Callable[[_Build], None],
    ) -> None:
        self.key = key
        self.dim = dim
        self.reason = reason
        self.lock_fd = lock_fd
        self.cancel = threading.Event()
        self.started = False
        self.result: _Ann | None = None
        self.saved = False
        self.error: str | None = None
        self.thread = threading.Thread(target=run, args=(self,), name="axon-ann-build", daemon=True)


class AnnIndexes:
    """The indexes of one SQLite file, by (scope, model), loaded, or built in the background.

    `stats` counts what happened (`built`, `loaded`, `saved`, `applied` log changes,
    `save_failed`, `build_failed`, `cancelled`; and which path answered each recall of a
    scope past the threshold: `index`, or `exact` while no index was ready) and
    `last_rebuild` says why the last index was built rather than loaded: tests and
    benchmarks read them; recall results never depend on them. `after_page`, when set,
    is called by a build after each page with its cancel event (tests slow a build
    with it).
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
            "build_failed": 0,
            "cancelled": 0,
            "index": 0,
            "exact": 0,
        }
        self.last_rebuild: str | None = None
        self.after_page: Callable[[threading.Event], None] | None = None
        self._indexes: dict[Key, _Ann] = {}
        self._failed: dict[Key, str] = {}
        self._build: _Build | None = None
        self._guard = threading.Lock()
        self._usearch: Any = None
        self._missing = False
        self._remove_stale_temps()

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

    @property
    def building(self) -> bool:
        """Whether a build of this file's is under way (or about to start)."""
        build = self._build
        return build is not None and (not build.started or build.thread.is_alive())

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
    ) -> list[tuple[Any, float]] | None:
        """The best `top_k` `(row, cosine)` of live entries of `scope`, best first; None
        when no index is ready (one is being built): the caller scans instead.

        Runs inside the caller's read snapshot. `read_rows` gives each candidate's row
        (the columns the caller selects, id first, scope second, expiry seventh) with
        its vector's seq and blob appended; rows are returned without those two.
        """
        dim = int(query.shape[0])
        ann = self._current(conn, scope, model_id, dim)
        if ann is None:
            self.stats["exact"] += 1
            return None
        self.stats["index"] += 1
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
    ) -> _Ann | None:
        """The index of `(scope, model_id)` with the log applied; None while it is built
        (the build is started here when it is missing or must be built again)."""
        key = (scope, model_id)
        self.start_build()  # one prepared by a recall that failed before it started it
        self._collect()
        ann = self._indexes.get(key)
        if ann is not None and ann.dim != dim:  # the model now gives another dimension
            del self._indexes[key]
            ann = None
        if ann is None:
            build = self._build
            if (build is not None and build.key == key) or key in self._failed:
                return None
            ann, reason = self._load(conn, scope, model_id, dim)
            if ann is None:
                self._start_build(key, dim, reason)
                return None
            self._indexes[key] = ann
        if not self._catch_up(conn, ann, scope, model_id):
            del self._indexes[key]
            self._start_build(key, dim, "more changes in the log than half the index")
            return None
        if ann.unsaved >= SAVE_AFTER_CHANGES:
            self._count_save(self._save(_file_id(conn), ann, scope, model_id))
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

    # ------------------------------------------------------------------ building

    def _start_build(self, key: Key, dim: int, reason: str) -> None:
        """Prepare a build of `key`'s index, unless this file already has a build under way
        (the next recall asks again once it is done) or another process holds the index's
        lock (it will save the index; a later recall loads it). Its thread is started by
        `start_build`, once the exact scan has answered the recall that asked: that
        recall's first load of every vector does not share the cores with the build."""
        if self._build is not None:
            return
        lock_fd = self._lock(key)
        if lock_fd == -1:
            return
        self._build = _Build(key, dim, reason, lock_fd, self._run_build)

    def start_build(self) -> None:
        """Start the thread of a prepared build (nothing when there is none)."""
        build = self._build
        if build is not None and not build.started:
            build.started = True
            build.thread.start()

    def _lock(self, key: Key) -> int | None:
        """The index's lock file, held (its descriptor); -1 when another process holds it;
        None when it cannot be had here (no flock, or the directory refuses the file):
        then the build goes ahead unlocked, as two builds only waste time."""
        if fcntl is None:
            return None
        index_path = self.paths(*key)[0]
        lock_path = index_path.with_name(index_path.name + ".lock")
        try:
            create_private(lock_path)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return -1
        return fd

    def _run_build(self, build: _Build) -> None:
        """The build thread: wait for the process's build slot, build, save, let go."""
        with contextlib.suppress(AttributeError, OSError):  # not Linux: the same priority
            tid = threading.get_native_id()
            niceness = os.getpriority(os.PRIO_PROCESS, tid) + BUILD_NICENESS
            os.setpriority(os.PRIO_PROCESS, tid, min(19, niceness))
        try:
            while not _BUILD_SLOT.acquire(timeout=0.2):
                if build.cancel.is_set():
                    return
            try:
                self._build_in_thread(build)
            finally:
                _BUILD_SLOT.release()
        except (sqlite3.Error, OSError, RuntimeError, ValueError, MemoryError) as exc:
            build.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._unlock(build)

    def _unlock(self, build: _Build) -> None:
        """Remove the build's lock file while still holding it, then let it go, so a
        finished or cancelled build leaves no file. A process that opened it just before
        may then lock the orphan and build too: two builds cost time, never correctness."""
        if build.lock_fd is not None:
            index_path = self.paths(*build.key)[0]
            with contextlib.suppress(OSError):
                index_path.with_name(index_path.name + ".lock").unlink()
            os.close(build.lock_fd)  # releases the flock
            build.lock_fd = None

    def _build_in_thread(self, build: _Build) -> None:
        """Every vector of the key's model and scope into a new index, page by page, each
        page its own read on this thread's own read-only connection; then saved. The seq
        is taken before the first page: what changes after it is applied from the log."""
        scope, model_id = build.key
        dim = build.dim
        conn = sqlite3.connect(
            self.db_path.as_uri() + "?mode=ro", uri=True, timeout=30, isolation_level=None
        )
        try:
            conn.execute("BEGIN")
            seq, file_id = high_water(conn), _file_id(conn)
            conn.execute("COMMIT")
            index = self._new_index(dim)
            # Keyset pages over the entry_id index (`+` keeps the planner off the model's
            # index, which would sort), each entry's scope by its primary key.
            scoped = "" if scope is None else " AND e.scope = ?"
            sql = (
                "SELECT v.entry_id, v.vector FROM vectors AS v CROSS JOIN entries AS e "
                "ON e.id = v.entry_id WHERE v.entry_id > ? AND +v.model = ? AND +v.dim = ?"
                f"{scoped} ORDER BY v.entry_id LIMIT ?"
            )
            after = 0
            while not build.cancel.is_set():
                params = (after, model_id, dim) + (() if scope is None else (scope,))
                batch = conn.execute(sql, (*params, BUILD_PAGE)).fetchall()
                if not batch:
                    break
                ids = np.asarray([int(row[0]) for row in batch], dtype=np.uint64)
                matrix = np.frombuffer(b"".join(row[1] for row in batch), dtype=np.float32)
                index.add(ids, matrix.reshape(len(batch), dim), threads=os.cpu_count() or 1)
                after = int(batch[-1][0])
                if self.after_page is not None:
                    self.after_page(build.cancel)
            if build.cancel.is_set():
                return
            ann = _Ann(index, dim, seq)
            build.saved = self._save(file_id, ann, scope, model_id)
            build.result = ann
        finally:
            conn.close()

    def _collect(self) -> None:
        """Take a finished build's index (or note its failure); nothing while it runs."""
        with self._guard:
            build = self._build
            if build is None or not build.started or build.thread.is_alive():
                return
            build.thread.join()
            self._build = None
        if build.result is not None:
            self._indexes[build.key] = build.result
            self.stats["built"] += 1
            self.last_rebuild = build.reason
            self._count_save(build.saved)
        elif build.error is not None:
            self.stats["build_failed"] += 1
            self._failed[build.key] = build.error  # the exact scan, for this process

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the build under way, if any, and take its index: True when none is
        left running. For tests and benchmarks (a recall never waits)."""
        self.start_build()
        build = self._build
        if build is not None:
            build.thread.join(timeout)
            if build.thread.is_alive():
                return False
        self._collect()
        return True

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

    def forget(self, scopes: Sequence[str]) -> None:
        """`scopes` were erased: drop their indexes (and the whole file's, which held their
        vectors) from memory and their files from disk; a later search rebuilds one."""
        hashes = {self.paths(scope, "")[0].name.split(".")[-3] for scope in [*scopes, None]}
        with self._guard:
            for key in [key for key in self._indexes if key[0] is None or key[0] in scopes]:
                del self._indexes[key]
        for path in self.db_path.parent.glob(f"{glob.escape(self.db_path.name)}.*.usearch*"):
            if path.name[len(self.db_path.name) + 1 :].split(".")[0] in hashes:
                with contextlib.suppress(OSError):
                    path.unlink()

    def _remove_stale_temps(self) -> None:
        """Delete temporary files of saves by processes that died before renaming them, and
        lock files that nobody holds (left by a process that exited during a build)."""
        prefix = self.db_path.name + "."
        with contextlib.suppress(OSError):
            for path in self.db_path.parent.iterdir():
                if not path.name.startswith(prefix):
                    continue
                found = _TEMP.search(path.name)
                if found and not _alive(int(found[1])):
                    with contextlib.suppress(OSError):
                        path.unlink()
                elif path.name.endswith(".usearch.lock") and fcntl is not None:
                    with contextlib.suppress(OSError):
                        fd = os.open(path, os.O_RDWR)
                        try:
                            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                            path.unlink()
                        finally:
                            os.close(fd)

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
            "file_id": _file_id(conn),
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

    def _save(self, file_id: str, ann: _Ann, scope: str | None, model_id: str) -> bool:
        """Write the index, then its meta, each atomically; False when it failed. A failure
        (disk full, a directory made read-only) leaves the previous files and costs only a
        later rebuild or catch-up: the recall goes on with the index in memory."""
        index_path, meta_path = self.paths(scope, model_id)
        suffix = f".tmp{os.getpid()}-{threading.get_ident()}"
        index_tmp = index_path.with_name(index_path.name + suffix)
        meta_tmp = meta_path.with_name(meta_path.name + suffix)
        try:
            create_private(index_tmp)  # 0600: the index holds the vectors of the entries
            ann.index.save(str(index_tmp))
            stat = index_tmp.stat()  # the rename keeps it; another save would not
            os.replace(index_tmp, index_path)
            meta = {
                "format": FORMAT,
                "file_id": file_id,
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
            create_private(meta_tmp)
            meta_tmp.write_text(json.dumps(meta), encoding="utf-8")
            os.replace(meta_tmp, meta_path)
        except (OSError, RuntimeError):
            for leftover in (index_tmp, meta_tmp):
                with contextlib.suppress(OSError):
                    leftover.unlink()
            return False
        ann.unsaved = 0
        return True

    def _count_save(self, saved: bool) -> None:
        self.stats["saved" if saved else "save_failed"] += 1

    def close(self) -> None:
        """Cancel a build under way and wait for its thread (it writes nothing once
        cancelled), then forget the indexes. Nothing is saved here: changes applied since
        the last save (fewer than `SAVE_AFTER_CHANGES`) are applied again from the log by
        the next process, which costs less than rewriting a big index on every close."""
        build = self._build
        if build is not None and not build.started:  # prepared, never run
            self._build = None
            self._unlock(build)
            self.stats["cancelled"] += 1
        elif build is not None:
            build.cancel.set()
            build.thread.join()
            if build.result is None and build.error is None:
                self.stats["cancelled"] += 1
            self._collect()
        self._indexes.clear()
