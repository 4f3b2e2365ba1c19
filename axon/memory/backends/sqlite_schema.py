"""The SQLite memory file's layout: a connection in, a migrated schema out.

The schema version lives in `PRAGMA user_version`. `MIGRATIONS[i]` takes a file
from version `i` to `i + 1`; opening a file applies the missing steps in one
`BEGIN IMMEDIATE` transaction (so two processes opening a fresh file at once do
not both migrate), and a file written by a newer AXON (a version above
`SCHEMA_VERSION`) is refused with an `AxonMemoryError` instead of being guessed at.

Layout (version 10):

- `entries`: one row per `(scope, key)`. `scope` is NULL for an unscoped entry; the
  unique index on `(ifnull(scope, X'00'), key)` keeps an unscoped entry distinct from
  one whose scope is the empty string. `value_json` and `metadata_json` are JSON
  (types round-trip); `text` is `value_text(value)`, what retrieval matches;
  `key_lc`/`text_lc` hold Python's `str.lower()` of a non-ASCII key or text (NULL for
  ASCII, where SQLite's `lower()` gives the same string), so `exact` can be decided
  in SQL with Python's case folding.
  `timestamp` is the entry's last write (`updated_at`), `created_at` its first (schema
  10; NULL: the same as `timestamp`), kept when a live entry is stored again.
- `entries_fts`: an FTS5 external-content index over `key` and `text` (porter
  stemmer on unicode61; a row with non-ASCII text holds its shared stems instead,
  `sqlite_fts`, version 9), what an unlinked memory (`link: none`) searches.
  `entries_fts_linked`: the same plus `context` (the text of the entry stored just
  before in the same scope, fixed when the key is first stored; `rank` weighs it
  at `text.CONTEXT_WEIGHT`), what a `link: sequence` memory searches. Two tables,
  not a column filter on one: FTS5's bm25 normalises by the length of the whole
  row, so a context would still move an unlinked entry's rank. Both are kept up
  to date in the same transaction as the rows by
  `upsert_rows` and `delete_rows`, the only writers of `entries`. Not by triggers: a
  trigger runs each FTS5 insert in its own statement savepoint, and FTS5 flushes its
  pending terms to a new segment at every savepoint, which made batched writes 5x
  slower (13k instead of 70k rows/s measured here).
- `scope_stats`: per scope, its entries, the total length of their key and text
  and of their contexts (tokens, `scores.text_length`): the BM25 statistics of
  a memory (`retrieval.scores`), kept by `upsert_rows` and `delete_rows` in the
  same transaction as the rows; and `mark` (schema 12), a random number drawn
  again by triggers at every change to one of the scope's rows, which says whether
  the scope's term counts kept in a process are still its own (`sqlite_scope_terms`).
  `entries_fts_terms` / `entries_fts_linked_terms` (fts5vocab) give a term's document
  count in the whole file, which is that of the scope when the scope is the whole
  file; otherwise it is counted per query.
- `entries_substr` (`SUBSTRING_TABLE`): a contentless FTS5 `trigram` index
  (case-sensitive, no positions) over Python's `str.lower()` of each entry's key and
  text, the seed's case folding: a needle of three or more characters matches the
  rows holding all its trigrams (every row holding the needle, and a few more that
  the seed's scoring then drops), so `exact` recall reads only those
  (`SQLiteBackend._retrieve_exact`). Kept by
  `upsert_rows` and `delete_rows` with the full-text indexes.
- `vectors`: at most one embedding per entry, tagged with the model that made it.
  `seq` only grows (AUTOINCREMENT), so a process can load the vectors written since
  it last looked; a vector disappears with its entry (ON DELETE CASCADE) and when the
  entry's text changes (trigger).
- `vector_log` (schema 8): one row per change to `vectors` (a vector stored, replaced
  or removed, however: cascade, text change, purge, clear), written by triggers in the
  same transaction as the change. It names only the entry; what changed is read back
  from `vectors`, the truth. The approximate indexes kept beside the file
  (`sqlite_ann`) catch up from it: each saves the last `seq` it holds and, on open,
  re-reads the entries logged after it. `ann_state` holds the file's random identity
  (an index file of another file with the same name is not trusted) and how far the
  log has been pruned (`sqlite_ann.prune_log`); an index older than that is rebuilt.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from axon.errors import AxonMemoryError
from axon.memory.backends.sql_common import FRESH_CREATED, WriteRow
from axon.memory.backends.sqlite_fts import fts_row
from axon.memory.retrieval.scores import text_length
from axon.memory.retrieval.text import CONTEXT_WEIGHT

Step = str | Callable[[sqlite3.Connection], None]
"""A migration step: an SQL statement, or a function run on the connection."""

LIVE = "(expires_at IS NULL OR expires_at > ?)"
"""SQL condition (one parameter: now) true for rows that have not expired."""

LIVE_E = "(e.expires_at IS NULL OR e.expires_at > ?)"
"""`LIVE` for a query where the entries table is aliased `e`."""

_SELECT = (
    "SELECT id, scope, key, value_json, metadata_json, timestamp, expires_at, "
    "ifnull(created_at, timestamp) FROM entries"
)
_COLUMNS = (
    "e.id, e.scope, e.key, e.value_json, e.metadata_json, e.timestamp, e.expires_at, "
    "ifnull(e.created_at, e.timestamp)"
)


MAX_LIKE_PATTERN = 40_000
"""Longest LIKE pattern used (bytes); SQLite refuses patterns over 50,000 bytes."""


def contains(column: str, pattern: str) -> str:
    """SQL true when Python's `needle in column.lower()`: parameters (LIKE pattern, needle).

    An ASCII value (its `_lc` column NULL) is matched with LIKE, which folds ASCII
    case exactly as `str.lower()` does and scans without building a lower-cased copy;
    any other value by `instr` on its stored Python lower-case form. A needle too
    long for LIKE is matched by `instr` on `lower()` for every value.
    """
    if len(pattern.encode("utf-8", "surrogatepass")) > MAX_LIKE_PATTERN:
        return f"(length(?) >= 0 AND instr(coalesce({column}_lc, lower({column})), ?) > 0)"
    return (
        f"(CASE WHEN {column}_lc IS NULL THEN {column} LIKE ? ESCAPE '\\' "
        f"ELSE instr({column}_lc, ?) > 0 END)"
    )


def like_pattern(needle: str) -> str:
    """A LIKE pattern matching `needle` anywhere, its `%`, `_` and `\\` taken literally."""
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


KEY_LC = "coalesce(key_lc, lower(key))"
"""The key lower-cased exactly as Python's `str.lower()` does it (indexed)."""

SUBSTRING_TABLE = "entries_substr"
"""The substring index of `exact` recall (schema 7): FTS5 `trigram` over each entry's key
and text lower-cased by Python (`substring_row`), contentless, case-sensitive."""


def substring_row(ident: int, key: str, text: str) -> tuple[int, str, str]:
    """The `entries_substr` row of an entry: its id, and key and text as `exact` matches
    them (Python's `str.lower()`, the seed's case folding). FTS5 reads a text only up to
    a NUL, so NUL is indexed as a space: the rows found stay a superset of those holding
    the needle (each is scored on its real text), and what follows a NUL is found too."""
    text = text.lower()
    return (ident, key.lower(), text.replace("\x00", " ") if "\x00" in text else text)


def _fill_substrings(conn: sqlite3.Connection) -> None:
    """Index the rows already stored in `entries_substr` (migration 6 -> 7)."""
    conn.executemany(
        f"INSERT INTO {SUBSTRING_TABLE} (rowid, key, text) VALUES (?, ?, ?)",
        (substring_row(*row) for row in conn.execute("SELECT id, key, text FROM entries")),
    )


def _reindex_non_ascii(conn: sqlite3.Connection) -> None:
    """Index the rows with a non-ASCII key, text or context as `fts_row` does (migration
    8 -> 9): each is deleted from both full-text indexes with the values they were
    inserted with (the columns as they are), then inserted again."""
    rows = [
        (int(ident), key, text, context)
        for ident, key, text, context in conn.execute(
            "SELECT id, key, text, context FROM entries"
        )
        if not (key.isascii() and text.isascii() and context.isascii())
    ]
    for table, linked in (("entries_fts", False), ("entries_fts_linked", True)):
        columns = "key, text, context" if linked else "key, text"
        marks = "?, ?, ?" if linked else "?, ?"
        width = 4 if linked else 3
        conn.executemany(
            f"INSERT INTO {table} ({table}, rowid, {columns}) VALUES ('delete', ?, {marks})",
            [row[:width] for row in rows if fts_row(row, linked) != row],
        )
        conn.executemany(
            f"INSERT INTO {table} (rowid, {columns}) VALUES (?, {marks})",
            [fts_row(row, linked)[:width] for row in rows if fts_row(row, linked) != row],
        )


def _add_created_at(conn: sqlite3.Connection) -> None:
    """Add the `created_at` column (migration 9 -> 10), NULL in every stored row: "as
    `timestamp`". A file already holding it (a later one set back to 9) keeps it."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
    if "created_at" not in columns:
        conn.execute("ALTER TABLE entries ADD COLUMN created_at REAL")


def _fill_scope_stats(conn: sqlite3.Connection) -> None:
    """Compute `scope_stats` from the rows already stored (migration 5 -> 6)."""
    totals: dict[str | None, list[int]] = {}
    for scope, key, text, context in conn.execute("SELECT scope, key, text, context FROM entries"):
        row = totals.setdefault(scope, [0, 0, 0])
        row[0] += 1
        row[1] += text_length(f"{key} {text}")
        row[2] += text_length(context)
    conn.executemany(
        "INSERT INTO scope_stats (scope, docs, length, context_length) VALUES (?, ?, ?, ?)",
        [(scope, *row) for scope, row in totals.items()],
    )


SCOPE_MARK_TRIGGERS = (
    """
    CREATE TRIGGER IF NOT EXISTS scope_mark_new AFTER INSERT ON scope_stats BEGIN
        UPDATE scope_stats SET mark = random() WHERE rowid = new.rowid;
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS scope_mark_insert AFTER INSERT ON entries BEGIN
        UPDATE scope_stats SET mark = random()
        WHERE ifnull(scope, X'00') = ifnull(new.scope, X'00');
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS scope_mark_update AFTER UPDATE ON entries BEGIN
        UPDATE scope_stats SET mark = random()
        WHERE ifnull(scope, X'00') IN (ifnull(old.scope, X'00'), ifnull(new.scope, X'00'));
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS scope_mark_delete AFTER DELETE ON entries BEGIN
        UPDATE scope_stats SET mark = random()
        WHERE ifnull(scope, X'00') = ifnull(old.scope, X'00');
    END
    """,
)
"""What draws `scope_stats.mark` again (schema 12): a new scope row, and every insert,
update or delete of an entry of the scope (the old and the new scope of an update)."""


def _add_scope_marks(conn: sqlite3.Connection) -> None:
    """Add `scope_stats.mark` and its triggers (migration 11 -> 12), a mark drawn for
    every scope already stored. A file already holding them (a later one set back to
    11) keeps them."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(scope_stats)")}
    if "mark" not in columns:
        conn.execute("ALTER TABLE scope_stats ADD COLUMN mark INTEGER")
    conn.execute("UPDATE scope_stats SET mark = random()")
    for trigger in SCOPE_MARK_TRIGGERS:
        conn.execute(trigger)


MIGRATIONS: tuple[Sequence[Step], ...] = (
    # 0 -> 1: the rows and their indexes.
    (
        """
        CREATE TABLE entries (
            id            INTEGER PRIMARY KEY,
            scope         TEXT,
            key           TEXT NOT NULL,
            key_lc        TEXT,
            value_json    TEXT NOT NULL,
            text          TEXT NOT NULL,
            text_lc       TEXT,
            metadata_json TEXT NOT NULL DEFAULT '{}',
            timestamp     REAL NOT NULL,
            expires_at    REAL
        )
        """,
        "CREATE UNIQUE INDEX entries_identity ON entries (ifnull(scope, X'00'), key)",
        # Recency order per scope, covering the key tiers of `exact` (no row lookups).
        "CREATE INDEX entries_recent ON entries "
        "(scope, timestamp DESC, id, expires_at, key, key_lc)",
        "CREATE INDEX entries_expires ON entries (expires_at) WHERE expires_at IS NOT NULL",
        f"CREATE INDEX entries_key_lc ON entries ({KEY_LC})",
    ),
    # 1 -> 2: full-text index over key and text (maintained by `upsert_rows`/`delete_rows`).
    (
        """
        CREATE VIRTUAL TABLE entries_fts USING fts5 (
            key, text, content='entries', content_rowid='id',
            tokenize='porter unicode61'
        )
        """,
        "INSERT INTO entries_fts (entries_fts) VALUES ('rebuild')",
    ),
    # 2 -> 3: embeddings beside the rows.
    (
        """
        CREATE TABLE vectors (
            seq      INTEGER PRIMARY KEY AUTOINCREMENT,
            entry_id INTEGER NOT NULL UNIQUE REFERENCES entries (id) ON DELETE CASCADE,
            model    TEXT NOT NULL,
            dim      INTEGER NOT NULL,
            vector   BLOB NOT NULL
        )
        """,
        "CREATE INDEX vectors_model ON vectors (model, seq)",
        """
        CREATE TRIGGER vectors_stale AFTER UPDATE OF text ON entries
        WHEN old.text IS NOT new.text BEGIN
            DELETE FROM vectors WHERE entry_id = new.id;
        END
        """,
    ),
    # 3 -> 4: each entry's context (the text stored just before it in its scope) is
    # indexed for keyword search too; existing rows get theirs from the stored order.
    (
        "ALTER TABLE entries ADD COLUMN context TEXT NOT NULL DEFAULT ''",
        """
        UPDATE entries SET context = ifnull((
            SELECT p.text FROM entries AS p
            WHERE p.scope IS entries.scope AND (p.timestamp, p.id) < (entries.timestamp, entries.id)
            ORDER BY p.timestamp DESC, p.id DESC LIMIT 1
        ), '')
        """,
        "DROP TABLE entries_fts",
        """
        CREATE VIRTUAL TABLE entries_fts USING fts5 (
            key, text, context, content='entries', content_rowid='id',
            tokenize='porter unicode61'
        )
        """,
        "INSERT INTO entries_fts (entries_fts) VALUES ('rebuild')",
        # `rank` weighs a context word at text.CONTEXT_WEIGHT (0.5) of a key or text word
        "INSERT INTO entries_fts (entries_fts, rank) "
        f"VALUES ('rank', 'bm25(1.0, 1.0, {CONTEXT_WEIGHT})')",
    ),
    # 4 -> 5: entries are independent unless their memory is linked (docs/language.md §6 recall):
    # the context moves to its own index, `entries_fts` goes back to key and text.
    (
        """
        CREATE VIRTUAL TABLE entries_fts_linked USING fts5 (
            key, text, context, content='entries', content_rowid='id',
            tokenize='porter unicode61'
        )
        """,
        "INSERT INTO entries_fts_linked (entries_fts_linked) VALUES ('rebuild')",
        "INSERT INTO entries_fts_linked (entries_fts_linked, rank) "
        f"VALUES ('rank', 'bm25(1.0, 1.0, {CONTEXT_WEIGHT})')",
        "DROP TABLE entries_fts",
        """
        CREATE VIRTUAL TABLE entries_fts USING fts5 (
            key, text, content='entries', content_rowid='id', tokenize='porter unicode61'
        )
        """,
        "INSERT INTO entries_fts (entries_fts) VALUES ('rebuild')",
    ),
    # 5 -> 6: per-scope BM25 statistics, so keyword scores are those of the memory's
    # own entries (`retrieval.scores`), not of the whole file: entries and lengths
    # per scope here, document frequencies whole-file from the vocabulary tables.
    (
        """
        CREATE TABLE scope_stats (
            scope          TEXT,
            docs           INTEGER NOT NULL,
            length         INTEGER NOT NULL,
            context_length INTEGER NOT NULL
        )
        """,
        "CREATE UNIQUE INDEX scope_stats_identity ON scope_stats (ifnull(scope, X'00'))",
        "CREATE VIRTUAL TABLE entries_fts_terms USING fts5vocab (entries_fts, row)",
        "CREATE VIRTUAL TABLE entries_fts_linked_terms USING fts5vocab (entries_fts_linked, row)",
        _fill_scope_stats,
    ),
    # 6 -> 7: `exact` recall finds substrings through a trigram index instead of scanning:
    # contentless (the lower-cased key and text are not stored twice) and without
    # positions (`detail='none'`: a needle then matches the rows holding all its
    # trigrams, a superset that `seed_score` narrows; half the index, faster writes),
    # kept by `upsert_rows` and `delete_rows` beside the full-text indexes.
    (
        f"""
        CREATE VIRTUAL TABLE {SUBSTRING_TABLE} USING fts5 (
            key, text, content='', detail='none', tokenize='trigram case_sensitive 1'
        )
        """,
        _fill_substrings,
    ),
    # 7 -> 8: a log of the changes to `vectors`, so an approximate index saved beside the
    # file (`sqlite_ann`) can catch up with deletes, rewrites and other processes' writes.
    # Triggers, not the backend's write path: vectors also go by ON DELETE CASCADE and by
    # `vectors_stale`. INSERT OR REPLACE fires only the insert trigger (no recursive
    # triggers), which is enough: the log names the entry, and the entry's state is read.
    (
        "CREATE TABLE vector_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "entry_id INTEGER NOT NULL)",
        """
        CREATE TRIGGER vector_log_insert AFTER INSERT ON vectors BEGIN
            INSERT INTO vector_log (entry_id) VALUES (new.entry_id);
        END
        """,
        """
        CREATE TRIGGER vector_log_update AFTER UPDATE ON vectors BEGIN
            INSERT INTO vector_log (entry_id) VALUES (old.entry_id);
            INSERT INTO vector_log (entry_id) SELECT new.entry_id
            WHERE new.entry_id IS NOT old.entry_id;
        END
        """,
        """
        CREATE TRIGGER vector_log_delete AFTER DELETE ON vectors BEGIN
            INSERT INTO vector_log (entry_id) VALUES (old.entry_id);
        END
        """,
        "CREATE TABLE ann_state (id INTEGER PRIMARY KEY CHECK (id = 1), "
        "file_id TEXT NOT NULL, pruned_through INTEGER NOT NULL)",
        "INSERT INTO ann_state (id, file_id, pruned_through) "
        "VALUES (1, lower(hex(randomblob(16))), 0)",
    ),
    # 8 -> 9: rows with non-ASCII text are indexed as their shared stems (`sqlite_fts`), so
    # keyword recall finds what the other backends find ("İstanbul"); they were indexed
    # as written, and are deleted from the full-text indexes with those values.
    (_reindex_non_ascii,),
    # 9 -> 10: `created_at`, an entry's first write, kept when a live entry is stored
    # again (`timestamp` is its last write, `updated_at`). NULL means "as `timestamp`":
    # what every row stored before has (both were one time), at no cost per row.
    (_add_created_at,),
    # 10 -> 11: `versions`, the history of the entries of memories declared with
    # `history:` (`sqlite_versions`): one row per recorded write, `seq` its order, `keep`
    # the history setting it was recorded with. `IF NOT EXISTS`: a file whose version
    # number was set back (as tests do to replay an earlier migration) opens too.
    (
        """
        CREATE TABLE IF NOT EXISTS versions (
            seq           INTEGER PRIMARY KEY AUTOINCREMENT,
            scope         TEXT,
            key           TEXT NOT NULL,
            op            TEXT NOT NULL,
            value_json    TEXT,
            metadata_json TEXT,
            updated_at    REAL NOT NULL,
            expires_at    REAL,
            keep          INTEGER NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS versions_entry ON versions (ifnull(scope, X'00'), key, seq)",
    ),
    # 11 -> 12: `scope_stats.mark`, drawn at random whenever one of the scope's rows is
    # inserted, updated or deleted (by anyone: triggers, so every writer of `entries`
    # and every process) and when the scope's row is created: keyword recall keeps a
    # small scope's term counts in the process while its mark is unchanged
    # (`sqlite_scope_terms`). Random, not a counter: a scope erased and written again
    # starts a new `scope_stats` row, whose counter would repeat an old value.
    (_add_scope_marks,),
)

FTS_TABLES = ("entries_fts", "entries_fts_linked")
"""The full-text indexes: key and text (unlinked recall); key, text and context (linked)."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The version this code writes and understands."""

Row = WriteRow
"""A row to write (`sql_common.WriteRow`: the column order of `entries` after `id`)."""


def schema_version(conn: sqlite3.Connection) -> int:
    """The `user_version` of the open file (0 for a new, empty file)."""
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def migrate(conn: sqlite3.Connection, *, path: str, target: int = SCHEMA_VERSION) -> int:
    """Bring the file up to `target`, atomically; returns the version found before.

    `conn` must be in autocommit mode (`isolation_level=None`) and outside a
    transaction. Raises `AxonMemoryError` for a file newer than this code.
    """
    found = schema_version(conn)
    if found == target:
        return found
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = schema_version(conn)  # another process may have migrated meanwhile
        if found > SCHEMA_VERSION:
            raise AxonMemoryError(
                f"memory file {path} has schema version {found}, newer than this AXON "
                f"understands ({SCHEMA_VERSION}); upgrade AXON to open it"
            )
        for version in range(found, target):
            for step in MIGRATIONS[version]:
                if isinstance(step, str):
                    conn.execute(step)
                else:
                    step(conn)
        if found < target:
            conn.execute(f"PRAGMA user_version = {int(target)}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return found


def _existing(
    conn: sqlite3.Connection, identities: Sequence[tuple[str | None, str]]
) -> dict[tuple[str | None, str], tuple[int, str, str]]:
    """`(id, text, context)` of the stored rows among `identities` (via the identity index)."""
    by_scope: dict[str | None, list[str]] = {}
    for scope, key in identities:
        by_scope.setdefault(scope, []).append(key)
    found: dict[tuple[str | None, str], tuple[int, str, str]] = {}
    for scope, keys in by_scope.items():
        ident: str | bytes = scope if scope is not None else b"\x00"
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row_id, key, text, context in conn.execute(
                f"SELECT id, key, text, context FROM entries "
                f"WHERE ifnull(scope, X'00') = ? AND key IN ({marks})",
                (ident, *chunk),
            ):
                found[(scope, key)] = (row_id, text, context)
    return found


def upsert_rows(
    conn: sqlite3.Connection,
    rows: Sequence[Row],
    contexts: Mapping[tuple[str | None, str], str] | None = None,
    created: Mapping[tuple[str | None, str], float] | None = None,
) -> None:
    """Insert or replace rows by `(scope, key)`, with their full-text entries.

    Runs inside the caller's write transaction. A replaced row keeps its id (its
    place in tie order); within one batch the last row of an identity wins and the
    first one's position counts. New rows get ids after the current maximum, which
    no other writer can take while this transaction holds the write lock. A row's
    context is the text stored just before it in its scope, kept when it is replaced,
    unless `contexts` gives one for its identity (an import's), which it then keeps.
    A row's `created_at` is the one `created` gives for its identity (`given_created`);
    without one a new row's is NULL (its `timestamp`) and a replaced row keeps its own
    while it is live at the new row's `timestamp` (`FRESH_CREATED`).
    """
    given = contexts or {}
    firsts = created or {}
    latest: dict[tuple[str | None, str], Row] = {}
    for row in rows:
        latest[(row[0], row[1])] = row
    next_id = int(conn.execute("SELECT ifnull(max(id), 0) + 1 FROM entries").fetchone()[0])
    inserts: list[tuple[Any, ...]] = []
    updates: list[tuple[Any, ...]] = []
    fts_delete: list[tuple[int, str, str, str]] = []
    fts_insert: list[tuple[int, str, str, str]] = []
    existing = _existing(conn, list(latest))
    last_text: dict[str | None, tuple[str, int]] = {}  # text and its length, per scope
    stats: dict[str | None, list[int]] = {}
    for (scope, key), row in latest.items():
        if scope not in last_text:
            previous = _latest_text(conn, scope)
            last_text[scope] = (previous, text_length(previous))
        delta = stats.setdefault(scope, [0, 0, 0])
        length = text_length(row[4])  # a token never spans the space of "key text"
        old = existing.get((scope, key))
        own = given.get((scope, key))
        if old is None:
            context, context_length = (
                last_text[scope] if own is None else (own, text_length(own))
            )
            inserts.append((next_id, *row, context, firsts.get((scope, key))))
            fts_insert.append((next_id, key, row[4], context))
            next_id += 1
            delta[0] += 1
            delta[1] += text_length(key) + length
            delta[2] += context_length
        else:
            ident, old_text, old_context = old
            context = old_context if own is None else own
            first = firsts.get((scope, key))
            updates.append((*row[3:], context, first, first, row[7], ident))
            if old_text != row[4] or context != old_context:
                fts_delete.append((ident, key, old_text, old_context))
                fts_insert.append((ident, key, row[4], context))
                delta[1] += length - text_length(old_text)
                delta[2] += text_length(context) - text_length(old_context)
        last_text[scope] = (row[4], length)
    conn.executemany(
        "INSERT INTO entries (id, scope, key, key_lc, value_json, text, text_lc, "
        "metadata_json, timestamp, expires_at, context, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        inserts,
    )
    conn.executemany(
        "UPDATE entries SET value_json = ?, text = ?, text_lc = ?, metadata_json = ?, "
        "timestamp = ?, expires_at = ?, context = ?, created_at = CASE WHEN ? IS NOT NULL "
        f"THEN ? ELSE {FRESH_CREATED.format(now='?')} END WHERE id = ?",
        updates,
    )
    _fts_delete(conn, fts_delete)
    _fts_insert(conn, fts_insert)
    _add_scope_stats(conn, stats)


def _add_scope_stats(conn: sqlite3.Connection, deltas: dict[str | None, list[int]]) -> None:
    """Add `[docs, length, context_length]` to each scope's row of `scope_stats`."""
    changed = [(scope, *delta) for scope, delta in deltas.items() if any(delta)]
    conn.executemany(
        "INSERT INTO scope_stats (scope, docs, length, context_length) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (ifnull(scope, X'00')) DO UPDATE SET docs = docs + excluded.docs, "
        "length = length + excluded.length, "
        "context_length = context_length + excluded.context_length",
        changed,
    )
    if any(delta[0] < 0 for delta in deltas.values()):
        conn.execute("DELETE FROM scope_stats WHERE docs <= 0")


def _fts_delete(conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Remove `(id, key, text, context)` rows, as they were indexed (`fts_row`), from
    every index."""
    conn.executemany(
        "INSERT INTO entries_fts (entries_fts, rowid, key, text) VALUES ('delete', ?, ?, ?)",
        [fts_row(row, linked=False)[:3] for row in rows],
    )
    conn.executemany(
        "INSERT INTO entries_fts_linked (entries_fts_linked, rowid, key, text, context) "
        "VALUES ('delete', ?, ?, ?, ?)",
        [fts_row(row, linked=True) for row in rows],
    )
    conn.executemany(
        f"INSERT INTO {SUBSTRING_TABLE} ({SUBSTRING_TABLE}, rowid, key, text) "
        "VALUES ('delete', ?, ?, ?)",
        [substring_row(*row[:3]) for row in rows],
    )


def _fts_insert(conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Index `(id, key, text, context)` rows (`fts_row`) in both full-text indexes and
    the substring one."""
    conn.executemany(
        "INSERT INTO entries_fts (rowid, key, text) VALUES (?, ?, ?)",
        [fts_row(row, linked=False)[:3] for row in rows],
    )
    conn.executemany(
        "INSERT INTO entries_fts_linked (rowid, key, text, context) VALUES (?, ?, ?, ?)",
        [fts_row(row, linked=True) for row in rows],
    )
    conn.executemany(
        f"INSERT INTO {SUBSTRING_TABLE} (rowid, key, text) VALUES (?, ?, ?)",
        [substring_row(*row[:3]) for row in rows],
    )


def _latest_text(conn: sqlite3.Connection, scope: str | None) -> str:
    """The text of the entry stored last in `scope` ("" when it is empty): a new row's context."""
    row = conn.execute(
        "SELECT text FROM entries WHERE scope IS ? ORDER BY timestamp DESC, id DESC LIMIT 1",
        (scope,),
    ).fetchone()
    return str(row[0]) if row else ""


def delete_rows(
    conn: sqlite3.Connection, where: str, params: Sequence[Any], now: float
) -> tuple[int, int]:
    """Delete the entries matching `where` with their full-text entries (and vectors).

    Runs inside the caller's write transaction. Returns `(removed, visible)`:
    how many rows went, and how many of them had not expired at `now`.
    """
    if where == "1":
        removed, visible = conn.execute(
            f"SELECT count(*), ifnull(sum({LIVE}), 0) FROM entries", (now,)
        ).fetchone()
        for table in (*FTS_TABLES, SUBSTRING_TABLE):
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('delete-all')")
        conn.execute("DELETE FROM entries")
        conn.execute("DELETE FROM scope_stats")
        return int(removed), int(visible)
    doomed = conn.execute(
        f"SELECT id, key, text, context, {LIVE}, scope FROM entries WHERE {where}", (now, *params)
    ).fetchall()
    _fts_delete(conn, [row[:4] for row in doomed])
    conn.executemany("DELETE FROM entries WHERE id = ?", [row[:1] for row in doomed])
    stats: dict[str | None, list[int]] = {}
    for _, key, text, context, _, scope in doomed:
        delta = stats.setdefault(scope, [0, 0, 0])
        delta[0] -= 1
        delta[1] -= text_length(f"{key} {text}")
        delta[2] -= text_length(context)
    _add_scope_stats(conn, stats)
    return len(doomed), sum(1 for row in doomed if row[4])
