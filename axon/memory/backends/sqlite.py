"""The embedded persistent backend: memory entries in, one SQLite file (WAL, FTS5, vectors) out.

`SQLiteBackend` keeps every memory of a memory directory in `<memory_dir>/memory.db`
(or in the file named by `location`); memories are scopes inside it. What it
guarantees, and how:

- Durability: WAL journal with `synchronous=NORMAL`. A commit has reached the
  operating system before `store` returns, so killing the process (even SIGKILL)
  loses nothing acknowledged; only a power cut or kernel crash can drop the last
  transactions. `synchronous="FULL"` (keyword or `AXON_SQLITE_SYNCHRONOUS`) makes
  every commit wait for an fsync (slower: each commit waits for the disk) and survives
  those too.
- Concurrency: writes are short `BEGIN IMMEDIATE` transactions; a busy file is waited
  for (`busy_timeout`) and then retried with jittered backoff for up to
  `BUSY_DEADLINE` seconds, so "database is locked" never reaches the user under
  ordinary contention. Reads run in WAL snapshots and do not block writers.
- Recall: `exact` reads a rare needle's rows from the trigram index
  (`entries_substr`), else scans newest first, and scores in Python with the
  seed's tiers on Python-lower-cased text (same results as the in-memory backend); `keyword`
  takes candidates from FTS5 (the query reduced to an OR of quoted content words so
  user text never becomes FTS syntax) and scores them with the scope's own BM25
  statistics (`retrieval.scores`), as every backend does; `semantic` keeps an
  in-process `VectorIndex` per embedding model, loaded from the file and topped up
  incrementally, and searches a scope of `ann_threshold` entries or more (default
  50,000) through an HNSW index saved beside the file (`sqlite_ann`), when usearch is
  installed and the file is writable; the index is built in a background thread, and
  the exact scan answers until it is ready. The `exact` and `keyword` read paths
  are `sqlite_text_search`.
- Decay: expired rows are filtered out of every read and deleted in batches of
  `PURGE_BATCH` on open, every `PURGE_EVERY_WRITES` writes and every
  `PURGE_INTERVAL` seconds of the backend's clock (the policy of `sql_common`).
- Read-only files: when the file or its directory is not writable by this process,
  the file is opened read-only (`read_only` is true): recall, get, list and count
  work, nothing is purged (expired rows stay invisible), and any write raises an
  `AxonMemoryError` naming the file. A WAL file needs its `-wal` and `-shm`
  companions to be read by a process that cannot create them; when neither exists
  (the last writer closed cleanly, so the main file holds everything) it is opened
  `immutable`: read as it is on disk, without locks.

`VectorDBBackend` is the same store with `semantic` as its default retrieval.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from axon.errors import AxonMemoryError
from axon.files import create_private, private_directory
from axon.memory.backend import (
    RETRIEVAL_MODES,
    Capabilities,
    MemoryBackend,
    configured_memory_dir,
    expand_location,
    resolve_memory_dir,
)
from axon.memory.backends import sqlite_versions
from axon.memory.backends.sql_common import PURGE_BATCH as PURGE_BATCH
from axon.memory.backends.sql_common import PURGE_INTERVAL as PURGE_INTERVAL
from axon.memory.backends.sql_common import (
    SQLITE_FILTERS,
    WriteRow,
    filter_condition,
    given_contexts,
    given_created,
    purge_in_batches,
    quiet_sweep,
    row_entry,
    window_condition,
    write_row,
)
from axon.memory.backends.sqlite_ann import AnnIndexes, prune_log, threshold_from_env
from axon.memory.backends.sqlite_schema import (
    _COLUMNS,
    _SELECT,
    LIVE,
    SCHEMA_VERSION,
    delete_rows,
    migrate,
    schema_version,
    upsert_rows,
)
from axon.memory.backends.sqlite_scope_terms import ScopeTermsCache
from axon.memory.backends.sqlite_text_search import (
    fts_match_expression as fts_match_expression,
)
from axon.memory.backends.sqlite_text_search import retrieve_exact, retrieve_keyword
from axon.memory.backends.sqlite_vectors import VectorCaches
from axon.memory.entry import (
    EXPIRY_DURATION,
    MemoryEntry,
    filter_predicate,
    kept_created,
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
from axon.memory.registry import StorePlace
from axon.memory.versions import Version

if TYPE_CHECKING:
    import numpy as np

    from axon.memory.embeddings.base import Embedder
    from axon.trace import TraceSink

T = TypeVar("T")

DB_FILENAME = "memory.db"
SYNCHRONOUS_ENV = "AXON_SQLITE_SYNCHRONOUS"

BUSY_TIMEOUT = 5.0
"""Seconds SQLite itself waits for a lock before reporting the file busy."""

BUSY_DEADLINE = 120.0
"""Seconds of retrying a busy file before giving up with an `AxonMemoryError`."""

PURGE_EVERY_WRITES = 1000
"""Writes after which the next operation sweeps expired rows (besides `PURGE_INTERVAL`)."""

Row = tuple[int, str | None, str, str, str, float, float | None]


def resolve_path(location: str | None, memory_dir: str | Path | None) -> tuple[Path, Path | None]:
    """The database file for `location`/`memory_dir`, and the memory directory in effect.

    `location` may be `env:VAR` (the file named by that environment variable); a
    relative location is taken relative to the memory directory when one is given
    (argument or `AXON_MEMORY_DIR`), else to the working directory. Without a
    location the file is `<memory_dir>/memory.db`, `memory_dir` defaulting to
    `./.axon`.
    """
    directory = configured_memory_dir(memory_dir)
    if location is not None:
        location = expand_location(location, "the path of a SQLite file")
        path = Path(location).expanduser()
        if not path.is_absolute() and directory is not None:
            path = directory / path
        return path, directory
    directory = resolve_memory_dir(directory)
    return directory / DB_FILENAME, directory


def is_read_only(path: Path) -> bool:
    """Whether an existing database file must be opened read-only by this process: the
    file or its directory (where WAL creates `-wal` and `-shm`) is not writable."""
    return path.exists() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """`path` opened with `mode=ro`; `immutable=1` when WAL companions can neither be
    found nor created (see the module docstring). The first read proves it can read."""
    uri = path.as_uri() + "?mode=ro"
    for attempt in ("ro", "immutable"):
        conn = sqlite3.connect(
            uri, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            conn.close()
            companions = [Path(f"{path}-wal"), Path(f"{path}-shm")]
            if attempt == "immutable" or any(p.exists() for p in companions):
                raise AxonMemoryError(f"cannot read memory file {path} (read-only): {exc}") from exc
            uri += "&immutable=1"
    raise AssertionError("unreachable")


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    message = str(exc)
    return "locked" in message or "busy" in message


class SQLiteBackend(MemoryBackend):
    """Persistent memory in one SQLite file; every memory of a directory is a scope in it.

    Keywords beyond the base's: `synchronous` ("NORMAL" or "FULL", default from
    `AXON_SQLITE_SYNCHRONOUS`, else "NORMAL"; see the module docstring); `ann_threshold`
    (entries in a scope from which semantic recall uses an approximate index beside the
    file; default from `AXON_SQLITE_ANN_THRESHOLD`, else 50,000). `read_only`
    says the file was opened read-only because it or its directory is not writable.
    """

    name: ClassVar[str] = "sqlite"
    capabilities: ClassVar[Capabilities] = Capabilities(
        persistent=True, retrieval=frozenset(RETRIEVAL_MODES), history=True
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
        synchronous: str | None = None,
        ann_threshold: int | None = None,
    ) -> None:
        super().__init__(
            tracer, location=location, memory_dir=memory_dir, clock=clock, embedder=embedder
        )
        path, effective_dir = resolve_path(location, memory_dir)
        self.path = path.absolute()
        if effective_dir is not None:
            self.memory_dir = effective_dir
        sync = (synchronous or os.environ.get(SYNCHRONOUS_ENV) or "NORMAL").upper()
        if sync not in ("NORMAL", "FULL"):
            raise AxonMemoryError(f"synchronous must be NORMAL or FULL, got {sync!r}")
        self._lock = threading.RLock()
        self._nothing_pending: dict[tuple[str | None, str], tuple[int, int]] = {}
        self._scope_terms = ScopeTermsCache()  # keyword recall of small scopes
        self._writes_since_purge = 0
        self.read_only = is_read_only(self.path)
        threshold = threshold_from_env(ann_threshold)
        self.ann = None if self.read_only else AnnIndexes(self.path, threshold)
        self._vectors = VectorCaches(self.ann)
        self._temp_vectors = False
        try:
            if self.read_only:
                self._conn = _connect_read_only(self.path)
            else:
                private_directory(self.path.parent)  # 0700 when created here
                create_private(self.path)  # 0600: SQLite gives -wal and -shm its mode
                self._conn = sqlite3.connect(
                    str(self.path),
                    timeout=BUSY_TIMEOUT,
                    isolation_level=None,
                    check_same_thread=False,
                )
        except (OSError, sqlite3.Error) as exc:
            raise AxonMemoryError(f"cannot open memory file {self.path}: {exc}") from exc
        try:
            self._retry(self._setup_read_only if self.read_only else lambda: self._setup(sync))
            self._last_purge = self.clock()
            self._purge(self._last_purge)
        except BaseException:
            self._conn.close()
            raise

    # ------------------------------------------------------------------ connection

    def _setup(self, synchronous: str) -> None:
        conn = self._conn
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise AxonMemoryError(f"memory file {self.path} cannot use WAL journaling ({mode})")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA cache_size = -32768")
        conn.execute("PRAGMA temp_store = MEMORY")
        try:
            migrate(conn, path=str(self.path))
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                raise
            raise AxonMemoryError(f"memory file {self.path} is not usable: {exc}") from exc

    def _setup_read_only(self) -> None:
        """Connection settings that write nothing, and a schema this code reads as it is."""
        conn = self._conn
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA cache_size = -32768")
        conn.execute("PRAGMA temp_store = MEMORY")
        found = schema_version(conn)
        if found > SCHEMA_VERSION:
            migrate(conn, path=str(self.path))  # raises: newer than this AXON
        if found < SCHEMA_VERSION:
            raise AxonMemoryError(
                f"memory file {self.path} is read-only and has schema version {found}; "
                f"this AXON needs version {SCHEMA_VERSION}: open it once with write "
                "access to upgrade it"
            )

    def _refuse_write(self) -> None:
        raise AxonMemoryError(
            f"memory file {self.path} is read-only (the file or its directory is not "
            "writable): it can be recalled from, but not stored to, deleted from or cleared"
        )

    def _retry(self, operation: Callable[[], T]) -> T:
        """Run `operation`, retrying with backoff while the file is locked by someone else."""
        deadline = time.monotonic() + BUSY_DEADLINE
        delay = 0.002
        while True:
            try:
                with self._lock:
                    return operation()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise AxonMemoryError(f"memory file {self.path}: {exc}") from exc
                if time.monotonic() >= deadline:
                    raise AxonMemoryError(
                        f"memory file {self.path} stayed locked by another process for "
                        f"{BUSY_DEADLINE:.0f} s"
                    ) from exc
            except sqlite3.Error as exc:
                raise AxonMemoryError(f"memory file {self.path}: {exc}") from exc
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.05)

    def _transaction(self, body: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        """Run `body` in one transaction (IMMEDIATE for writes, a snapshot for reads)."""

        def attempt() -> T:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                result = body(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return result

        return self._retry(attempt)

    def _write(self, body: Callable[[sqlite3.Connection], T]) -> T:
        if self.read_only:
            self._refuse_write()
        return self._transaction(body, write=True)

    def _read(self, body: Callable[[sqlite3.Connection], T]) -> T:
        return self._transaction(body, write=False)

    # ------------------------------------------------------------------ decay

    def _purge(self, now: float) -> int:
        """Delete expired rows, `PURGE_BATCH` per transaction (`sql_common.purge_in_batches`);
        returns how many. A read-only file is never purged (its expired rows stay
        invisible): 0. The write lock is only taken when a read saw an expired row.
        """
        if self.read_only:
            return 0

        def batch(size: int) -> list[str | None]:
            def delete(conn: sqlite3.Connection) -> list[str | None]:
                doomed = conn.execute(
                    "SELECT id, scope FROM entries WHERE expires_at IS NOT NULL "
                    "AND expires_at <= ? LIMIT ?",
                    (now, size),
                ).fetchall()
                if doomed:
                    marks = ",".join("?" * len(doomed))
                    delete_rows(conn, f"id IN ({marks})", [row[0] for row in doomed], now)
                return [scope for _, scope in doomed]

            def any_expired() -> bool:
                row = self._conn.execute(
                    "SELECT 1 FROM entries WHERE expires_at IS NOT NULL AND expires_at <= ? "
                    "LIMIT 1",
                    (now,),
                ).fetchone()
                return row is not None

            return self._write(delete) if self._retry(any_expired) else []

        total, by_scope = purge_in_batches(batch, PURGE_BATCH)
        self._last_purge = now
        self._writes_since_purge = 0
        self._purged(total, by_scope)
        return total

    def _maybe_purge(self, now: float) -> None:
        """Sweep after `PURGE_EVERY_WRITES` writes or `PURGE_INTERVAL` seconds of the clock;
        a failed sweep does not fail the operation (`sql_common.quiet_sweep`)."""
        if (
            self._writes_since_purge >= PURGE_EVERY_WRITES
            or now - self._last_purge >= PURGE_INTERVAL
        ):
            quiet_sweep(self._purge, now)

    # ------------------------------------------------------------------ rows

    @staticmethod
    def _entry(row: Row, score: float = 0.0) -> MemoryEntry:
        return row_entry(row, score, json.loads)

    @staticmethod
    def _scope_sql(scope: str | None, column: str = "scope") -> tuple[str, tuple[Any, ...]]:
        """A condition restricting to `scope` (nothing when None: every scope)."""
        if scope is None:
            return "", ()
        return f" AND {column} = ?", (scope,)

    async def _put(self, entries: Sequence[MemoryEntry]) -> None:
        rows: list[WriteRow] = [write_row(entry, value_text(entry.value)) for entry in entries]
        contexts = given_contexts(entries)
        created = given_created(entries)
        self._write(lambda conn: upsert_rows(conn, rows, contexts, created))
        self._writes_since_purge += len(rows)
        self._maybe_purge(self.clock())

    async def _update(
        self,
        key: str,
        scope: str | None,
        build: Callable[[MemoryEntry], MemoryEntry],
        now: float,
    ) -> MemoryEntry | None:
        """See `MemoryBackend.update`: the read and the write in one `BEGIN IMMEDIATE`
        transaction (no other writer, thread or process, comes in between)."""
        ident = scope if scope is not None else b"\x00"

        def body(conn: sqlite3.Connection) -> MemoryEntry | None:
            row = conn.execute(
                f"{_SELECT} WHERE ifnull(scope, X'00') = ? AND key = ? AND {LIVE}",
                (ident, key, now),
            ).fetchone()
            if row is None:
                return None
            new = build(self._entry(row))
            upsert_rows(
                conn,
                [write_row(new, value_text(new.value))],
                given_contexts([new]),
                given_created([new]),
            )
            return new

        done = self._write(body)
        self._writes_since_purge += 1
        return done

    async def _write_links(
        self,
        scope: str | None,
        changes: list[LinkChange],
        store: MemoryEntry | None,
        delete: str | None,
        now: float,
    ) -> LinkWrite:
        """See `MemoryBackend.write_links`: one `BEGIN IMMEDIATE` transaction, so no other
        writer (thread or process) comes between the reads and the writes; a linked
        entry's `metadata_json` column is all that is updated."""
        ident = scope if scope is not None else b"\x00"
        where = "ifnull(scope, X'00') = ? AND key = ?"

        def live_metadata(conn: sqlite3.Connection, key: str) -> tuple[int, Any, float] | None:
            row = conn.execute(
                "SELECT id, metadata_json, ifnull(created_at, timestamp) FROM entries "
                f"WHERE {where} AND {LIVE}",
                (ident, key, now),
            ).fetchone()
            return None if row is None else (row[0], json.loads(row[1]), float(row[2]))

        def body(conn: sqlite3.Connection) -> LinkWrite:
            unlink: list[LinkChange] = []
            deleted = False
            if delete is not None:
                row = conn.execute(
                    f"SELECT metadata_json FROM entries WHERE {where}", (ident, delete)
                ).fetchone()
                if row is not None:
                    unlink = unlink_changes(delete, json.loads(row[0]))
                    deleted = delete_rows(conn, where, (ident, delete), now)[1] > 0
            stored = store
            if store is not None:
                old = live_metadata(conn, store.key)
                meta = kept_related(
                    store.metadata, old and old[1], memory=scope, key=store.key
                )
                stored = dataclasses.replace(
                    store, metadata=meta, **kept_created(store, old and old[2])
                )
                upsert_rows(
                    conn,
                    [write_row(stored, value_text(stored.value))],
                    given_contexts([stored]),
                    given_created([stored]),
                )
            updates: list[tuple[str, int]] = []
            changed: list[str] = []
            for change in [*unlink, *changes]:
                found = live_metadata(conn, change.key)
                if found is None:
                    if change.add:
                        raise MissingLinkTarget(change.key, memory=scope)
                    continue
                edited = edited_metadata(found[1], change, memory=scope)
                if edited is not None:
                    updates.append((edited[1], found[0]))
                    changed.append(change.key)
            conn.executemany("UPDATE entries SET metadata_json = ? WHERE id = ?", updates)
            return LinkWrite(stored, deleted, tuple(changed))

        done = self._write(body)
        self._writes_since_purge += 1
        self._maybe_purge(self.clock())
        return done

    async def _get(self, key: str, scope: str | None) -> MemoryEntry | None:
        ident = scope if scope is not None else b"\x00"
        row = self._retry(
            lambda: self._conn.execute(
                f"{_SELECT} WHERE ifnull(scope, X'00') = ? AND key = ?", (ident, key)
            ).fetchone()
        )
        return None if row is None else self._entry(row)

    async def _restart_expiry(
        self, scope: str | None, keys: list[str], now: float
    ) -> dict[str, float]:
        """See `MemoryBackend.restart_expiry`: in one write transaction, the keys that
        qualify (`entry.expiry_duration`'s rule in SQL: a positive number) are read, then
        one UPDATE restarts them all. A read-only file restarts nothing (its reads must
        still work)."""
        if self.read_only:
            return {}
        ident = scope if scope is not None else b"\x00"
        seconds = f"json_extract(metadata_json, '$.{EXPIRY_DURATION}')"
        where = (
            "ifnull(scope, X'00') = ? AND key IN (SELECT value FROM json_each(?)) "
            "AND expires_at IS NOT NULL AND expires_at > ? "
            f"AND json_type(metadata_json, '$.{EXPIRY_DURATION}') IN ('integer', 'real') "
            f"AND {seconds} > 0"
        )
        params = (ident, json.dumps(keys), now)

        def body(conn: sqlite3.Connection) -> dict[str, float]:
            rows = conn.execute(f"SELECT key, {seconds} FROM entries WHERE {where}", params)
            restarted = {str(key): now + float(ttl) for key, ttl in rows.fetchall()}
            if restarted:
                conn.execute(
                    f"UPDATE entries SET expires_at = ? + {seconds} WHERE {where}", (now, *params)
                )
            return restarted

        return self._write(body)

    async def _delete(self, key: str, scope: str | None) -> bool:
        """Remove `(scope, key)`; True only when it was visible (not expired)."""
        ident = scope if scope is not None else b"\x00"
        now = self.clock()
        _, visible = self._write(
            lambda conn: delete_rows(
                conn, "ifnull(scope, X'00') = ? AND key = ?", (ident, key), now
            )
        )
        return visible > 0

    async def _clear(self, scope: str | None) -> int:
        """Delete every row of `scope` (all when None); returns how many were visible."""
        where, params = ("1", ()) if scope is None else ("scope = ?", (scope,))
        now = self.clock()
        _, visible = self._write(lambda conn: delete_rows(conn, where, params, now))
        self._vectors.clear()
        return visible

    async def _list(
        self, scope: str | None, limit: int | None, offset: int, now: float
    ) -> list[MemoryEntry]:
        self._maybe_purge(now)
        where, params = self._scope_sql(scope)
        rows = self._retry(
            lambda: self._conn.execute(
                f"{_SELECT} WHERE {LIVE}{where} ORDER BY timestamp DESC, id LIMIT ? OFFSET ?",
                (now, *params, -1 if limit is None else limit, offset),
            ).fetchall()
        )
        return [self._entry(row) for row in rows]

    async def _list_matching(
        self, scope: str | None, filters: Mapping[str, Any], limit: int | None, now: float
    ) -> list[MemoryEntry]:
        """The filter in the query (`sql_common.filter_condition`), newest first along
        `entries_recent`: only rows that pass are decoded, each checked with
        `matches_filters` too, and the walk stops at `limit`."""
        accepts = filter_predicate(filters)
        self._maybe_purge(now)
        where, params = self._scope_sql(scope)
        condition, values = filter_condition(filters, "metadata_json", SQLITE_FILTERS)[:2]
        statement = (
            f"{_SELECT} WHERE {LIVE}{where} AND {condition} ORDER BY timestamp DESC, id"
        )

        def body(conn: sqlite3.Connection) -> list[MemoryEntry]:
            found: list[MemoryEntry] = []
            for row in conn.execute(statement, (now, *params, *values)):
                entry = self._entry(row)
                if accepts(entry.metadata):
                    found.append(entry)
                    if len(found) == limit:
                        break
            return found

        return self._read(body)

    async def _count(self, scope: str | None, now: float) -> int:
        self._maybe_purge(now)
        where, params = self._scope_sql(scope)
        row = self._retry(
            lambda: self._conn.execute(
                f"SELECT count(*) FROM entries WHERE {LIVE}{where}", (now, *params)
            ).fetchone()
        )
        return int(row[0])

    async def _purge_expired(self, now: float) -> int:
        removed = self._purge(now)
        if removed:
            self._vectors.clear()
        return removed

    async def erase(self, prefix: str) -> dict[str, int]:
        """`MemoryBackend.erase` with SQLite's `secure_delete` on: every cell the deletes
        remove and every page they free is overwritten with zeros; then `_scrub`."""
        if self.read_only:
            self._refuse_write()
        before = self._conn.execute("PRAGMA secure_delete").fetchone()[0]
        self._conn.execute("PRAGMA secure_delete = ON")
        try:
            return await super().erase(prefix)
        finally:
            self._conn.execute(f"PRAGMA secure_delete = {int(before)}")

    async def _record_versions(
        self, scope: str | None, versions: list[Version], keep: int
    ) -> None:
        self._write(lambda conn: sqlite_versions.record(conn, scope, versions, keep))

    async def _read_versions(self, scope: str | None, key: str) -> list[Version]:
        return self._read(lambda conn: sqlite_versions.read(conn, scope, key))

    async def _drop_versions(self, scope: str | None, *, prefix: bool) -> int:
        """Delete versions with `secure_delete` on: their cells and freed pages are
        overwritten with zeros (the write-ahead log is truncated by an erase's `_scrub`)."""
        if self.read_only:
            self._refuse_write()
        before = self._conn.execute("PRAGMA secure_delete").fetchone()[0]
        self._conn.execute("PRAGMA secure_delete = ON")
        try:
            return self._write(lambda conn: sqlite_versions.drop(conn, scope, prefix=prefix))
        finally:
            self._conn.execute(f"PRAGMA secure_delete = {int(before)}")

    async def _scrub(self, scopes: Sequence[str]) -> None:
        """After an erase: the vector indexes of the erased scopes (and the file's) are
        deleted, every full-text index is merged into one segment (`optimize`: no term
        of a deleted row survives, and the old segments' pages are zeroed), and the
        write-ahead log is checkpointed and truncated to nothing."""
        if self.ann is not None:
            self.ann.forget(scopes)

        def merge(conn: sqlite3.Connection) -> None:
            tables = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND sql LIKE 'CREATE VIRTUAL TABLE % USING fts5 (%'"
            ).fetchall()
            for (table,) in tables:
                conn.execute(f'INSERT INTO "{table}" ("{table}") VALUES (\'optimize\')')

        self._write(merge)
        busy = self._retry(
            lambda: self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        )[0]
        if busy:
            raise AxonMemoryError(
                "the erased entries are deleted, but another connection to the file kept "
                "the write-ahead log from being truncated; erase again once it is closed",
                memory=None,
            )

    async def _list_scopes(self, prefix: str) -> list[str]:
        """Scopes starting with `prefix`: one index probe per scope found (skip scan).

        An empty prefix lists every scope the same way (no upper bound).
        """
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else None
        bound = " AND scope < ?" if upper is not None else ""

        def body(conn: sqlite3.Connection) -> list[str]:
            found: list[str] = []
            low, op = prefix, ">="
            while True:
                row = conn.execute(
                    f"SELECT min(scope) FROM entries WHERE scope {op} ?{bound}",
                    (low, upper) if upper is not None else (low,),
                ).fetchone()
                if row is None or row[0] is None:
                    return found
                found.append(row[0])
                low, op = row[0], ">"

        return self._read(body)

    async def _close(self) -> None:
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("PRAGMA optimize")
            self._conn.close()
        self._vectors.clear()
        if self.ann is not None:
            self.ann.close()

    # ------------------------------------------------------------------ exact and keyword

    async def _retrieve_exact(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
    ) -> list[MemoryEntry]:
        """The seed's tiers, from the trigram index or recency scans
        (`sqlite_text_search.retrieve_exact`); a time window (`UPDATED_WINDOW`) is in
        their queries."""
        self._maybe_purge(now)
        where, params = self._scope_sql(scope)
        since, until = window_of(filters)
        if since is not None or until is not None:
            window, values = window_condition(since, until, "timestamp", "?")
            where, params = f"{where} AND {window}", (*params, *values)
        scope_sql = (where, params)
        return self._read(
            lambda conn: retrieve_exact(conn, query, top_k, scope_sql, filters, now)
        )

    async def _retrieve_keyword(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
        linked: bool = False,
    ) -> list[MemoryEntry]:
        """Per-scope BM25 over FTS5's candidates, in [0, 1]
        (`sqlite_text_search.retrieve_keyword`); a small scope of a big file from its
        term counts kept in `_scope_terms` (`sqlite_scope_terms`)."""
        self._maybe_purge(now)
        scope_sql = self._scope_sql(scope, "e.scope")
        return self._read(
            lambda conn: retrieve_keyword(
                conn, query, top_k, scope_sql, filters, now, linked, self._scope_terms
            )
        )

    # ------------------------------------------------------------------ semantic

    async def _pending_texts(self, scope: str | None, model_id: str) -> list[tuple[Any, str]]:
        """Entries of `scope` without a `model_id` vector (asked before every semantic recall).

        When the last answer was "none" and the file has not changed since (same
        `data_version` for other connections' commits, same `total_changes` for ours),
        the answer is still "none": the scan is skipped.
        """
        now = self.clock()
        key = (scope, model_id)

        def body(conn: sqlite3.Connection) -> list[tuple[Any, str]]:
            mark = (int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes)
            if self._nothing_pending.get(key) == mark:
                return []
            pending = self._vectors.pending(conn, scope, model_id, now)
            if not pending:
                self._nothing_pending[key] = mark
            return pending

        return self._read(body)

    async def _save_vectors(self, model_id: str, items: Sequence[tuple[Any, np.ndarray]]) -> None:
        if self.read_only:
            self._retry(lambda: self._save_vectors_in_process(model_id, items))
            return
        def body(conn: sqlite3.Connection) -> None:
            self._vectors.save(conn, model_id, items)
            prune_log(conn)

        self._write(body)

    def _save_vectors_in_process(
        self, model_id: str, items: Sequence[tuple[Any, np.ndarray]]
    ) -> None:
        """A read-only file's missing vectors: kept in a TEMP copy of `vectors`, which
        shadows the file's table for this connection, so semantic recall works and the
        file is not written (the vectors are computed again by the next process)."""
        conn = self._conn
        if not self._temp_vectors:
            conn.execute(
                "CREATE TEMP TABLE vectors (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                "entry_id INTEGER NOT NULL UNIQUE, model TEXT NOT NULL, "
                "dim INTEGER NOT NULL, vector BLOB NOT NULL)"
            )
            conn.execute("CREATE INDEX temp.vectors_model ON vectors (model, seq)")
            conn.execute(
                "INSERT INTO temp.vectors SELECT seq, entry_id, model, dim, vector "
                "FROM main.vectors"
            )
            self._temp_vectors = True
        self._vectors.save(conn, model_id, items)

    async def _semantic_search(
        self,
        query_vector: np.ndarray,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
    ) -> list[MemoryEntry]:
        accepts = filter_predicate(filters)
        inside = window_test(filters)
        model_id = self._require_embedder(scope).model_id

        def body(conn: sqlite3.Connection) -> list[MemoryEntry]:
            hits = self._vectors.search(
                conn,
                model_id,
                query_vector,
                top_k,
                scope,
                now,
                _COLUMNS,
                lambda row: inside(float(row[5])) and accepts(json.loads(row[4])),
            )
            return [self._entry(row, score) for row, score in hits]

        return self._read(body)

    # ------------------------------------------------------------------ paging and vectors

    async def _list_after(
        self,
        scope: str | None,
        limit: int,
        after: tuple[float, Any] | None,
        now: float,
        oldest_first: bool,
    ) -> list[tuple[MemoryEntry, Any]]:
        """A keyset page over `entries_recent` (scope, timestamp DESC, id).

        Two index range reads: the rest of the cursor's run of equal timestamps (in
        id order, as the index holds it), then the following timestamps. Never an
        OFFSET, and no sort of a long run (one `store_many` batch shares a timestamp).
        """
        self._maybe_purge(now)
        if after is not None and not isinstance(after[1], int):
            return []
        where, params = self._scope_sql(scope)
        order, beyond = ("timestamp, id", ">") if oldest_first else ("timestamp DESC, id", "<")

        def body(conn: sqlite3.Connection) -> list[Row]:
            rows: list[Row] = []
            seek = ""
            seek_params: tuple[Any, ...] = ()
            if after is not None:
                rows = conn.execute(
                    f"{_SELECT} WHERE {LIVE}{where} AND timestamp = ? AND id > ? "
                    "ORDER BY id LIMIT ?",
                    (now, *params, after[0], after[1], limit),
                ).fetchall()
                seek, seek_params = f" AND timestamp {beyond} ?", (after[0],)
            if len(rows) < limit and not oldest_first:
                rows += conn.execute(
                    f"{_SELECT} WHERE {LIVE}{where}{seek} ORDER BY {order} LIMIT ?",
                    (now, *params, *seek_params, limit - len(rows)),
                ).fetchall()
            elif len(rows) < limit:
                # Oldest first the index gives timestamps in order but ids of a run in
                # reverse, so SQLite sorts the last run it touches whole. Sort ids only
                # (the index covers them: no row is read for it), then read the rows.
                ids = [
                    int(found[0])
                    for found in conn.execute(
                        f"SELECT id FROM entries WHERE {LIVE}{where}{seek} "
                        f"ORDER BY {order} LIMIT ?",
                        (now, *params, *seek_params, limit - len(rows)),
                    )
                ]
                by_id: dict[int, Row] = {}
                for start in range(0, len(ids), 500):
                    chunk = ids[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    for found in conn.execute(f"{_SELECT} WHERE id IN ({marks})", chunk):
                        by_id[int(found[0])] = found
                rows += [by_id[ident] for ident in ids if ident in by_id]
            return rows

        return [(self._entry(row), int(row[0])) for row in self._read(body)]

    async def _read_contexts(self, scope: str | None, keys: list[str]) -> dict[str, str]:
        ident = scope if scope is not None else b"\x00"

        def body(conn: sqlite3.Connection) -> dict[str, str]:
            found: dict[str, str] = {}
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                found.update(
                    conn.execute(
                        "SELECT key, context FROM entries "
                        f"WHERE ifnull(scope, X'00') = ? AND key IN ({marks})",
                        (ident, *chunk),
                    ).fetchall()
                )
            return found

        return self._read(body)

    async def _read_vectors(
        self, scope: str | None, keys: list[str], model_id: str
    ) -> dict[str, np.ndarray]:
        import numpy as np

        ident = scope if scope is not None else b"\x00"

        def body(conn: sqlite3.Connection) -> dict[str, np.ndarray]:
            found: dict[str, np.ndarray] = {}
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, dim, blob in conn.execute(
                    "SELECT e.key, v.dim, v.vector FROM entries AS e CROSS JOIN vectors AS v "
                    f"ON v.entry_id = e.id WHERE ifnull(e.scope, X'00') = ? AND e.key IN ({marks}) "
                    "AND +v.model = ?",
                    (ident, *chunk, model_id),
                ):
                    found[key] = np.frombuffer(blob, dtype=np.float32, count=int(dim)).copy()
            return found

        return self._read(body)

    async def _write_vectors(
        self, scope: str | None, model_id: str, items: Sequence[tuple[str, np.ndarray]]
    ) -> int:
        import numpy as np

        ident = scope if scope is not None else b"\x00"
        rows = []
        for key, vector in items:
            array = np.ascontiguousarray(vector, dtype=np.float32).reshape(-1)
            rows.append((model_id, int(array.shape[0]), array.tobytes(), ident, key))
        sql = (
            "INSERT OR REPLACE INTO vectors (entry_id, model, dim, vector) "
            "SELECT id, ?, ?, ? FROM entries WHERE ifnull(scope, X'00') = ? AND key = ?"
        )

        def body(conn: sqlite3.Connection) -> int:
            # rowcount, not total_changes: that also counts the `vector_log` trigger's rows
            written = conn.executemany(sql, rows).rowcount
            prune_log(conn)
            return written

        return self._write(body)


class VectorDBBackend(SQLiteBackend):
    """The embedded persistent semantic store: the SQLite backend, `semantic` by default."""

    name: ClassVar[str] = "vector_db"
    default_mode: ClassVar[str] = "semantic"


def store_place(
    location: str | None, settings: Mapping[str, str], memory_dir: Path
) -> StorePlace:
    """The SQLite file a command opens (the registry's `store` of sqlite and vector_db):
    named by its memory directory (or its file, for a location), there when the file is."""
    path, _ = resolve_path(location, memory_dir)
    label = str(memory_dir) if location is None else str(path)
    return StorePlace(label, "no memory directory store there", path.is_file)
