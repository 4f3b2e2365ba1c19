"""The SQLite memory file's layout: a connection in, a migrated schema out.

The schema version lives in `PRAGMA user_version`. `MIGRATIONS[i]` takes a file
from version `i` to `i + 1`; opening a file applies the missing steps in one
`BEGIN IMMEDIATE` transaction (so two processes opening a fresh file at once do
not both migrate), and a file written by a newer AXON (a version above
`SCHEMA_VERSION`) is refused with an `AxonMemoryError` instead of being guessed at.

Layout (version 3):

- `entries`: one row per `(scope, key)`. `scope` is NULL for an unscoped entry; the
  unique index on `(ifnull(scope, X'00'), key)` keeps an unscoped entry distinct from
  one whose scope is the empty string. `value_json` and `metadata_json` are JSON
  (types round-trip); `text` is `value_text(value)`, what retrieval matches;
  `key_lc`/`text_lc` hold Python's `str.lower()` of a non-ASCII key or text (NULL for
  ASCII, where SQLite's `lower()` gives the same string), so `exact` can be decided
  in SQL with Python's case folding.
- `entries_fts`: an FTS5 external-content index over `key` and `text` (porter stemmer
  on unicode61), kept up to date by triggers, in the same transaction as the rows.
- `vectors`: at most one embedding per entry, tagged with the model that made it.
  `seq` only grows (AUTOINCREMENT), so a process can load the vectors written since
  it last looked; a vector disappears with its entry (ON DELETE CASCADE) and when the
  entry's text changes (trigger).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from axon.errors import AxonMemoryError

LIVE = "(expires_at IS NULL OR expires_at > ?)"
"""SQL condition (one parameter: now) true for rows that have not expired."""

LIVE_E = "(e.expires_at IS NULL OR e.expires_at > ?)"
"""`LIVE` for a query where the entries table is aliased `e`."""

KEY_LC = "coalesce(key_lc, lower(key))"
"""The key lower-cased exactly as Python's `str.lower()` does it (indexed)."""

TEXT_LC = "coalesce(text_lc, lower(text))"
"""The value text lower-cased exactly as Python's `str.lower()` does it."""

MIGRATIONS: tuple[Sequence[str], ...] = (
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
        "CREATE INDEX entries_recent ON entries (scope, timestamp DESC, id)",
        "CREATE INDEX entries_expires ON entries (expires_at) WHERE expires_at IS NOT NULL",
        f"CREATE INDEX entries_key_lc ON entries ({KEY_LC})",
    ),
    # 1 -> 2: full-text index over key and text, maintained by triggers.
    (
        """
        CREATE VIRTUAL TABLE entries_fts USING fts5 (
            key, text, content='entries', content_rowid='id',
            tokenize='porter unicode61'
        )
        """,
        """
        CREATE TRIGGER entries_fts_insert AFTER INSERT ON entries BEGIN
            INSERT INTO entries_fts (rowid, key, text) VALUES (new.id, new.key, new.text);
        END
        """,
        """
        CREATE TRIGGER entries_fts_delete AFTER DELETE ON entries BEGIN
            INSERT INTO entries_fts (entries_fts, rowid, key, text)
            VALUES ('delete', old.id, old.key, old.text);
        END
        """,
        """
        CREATE TRIGGER entries_fts_update AFTER UPDATE OF key, text ON entries
        WHEN old.key IS NOT new.key OR old.text IS NOT new.text BEGIN
            INSERT INTO entries_fts (entries_fts, rowid, key, text)
            VALUES ('delete', old.id, old.key, old.text);
            INSERT INTO entries_fts (rowid, key, text) VALUES (new.id, new.key, new.text);
        END
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
)

SCHEMA_VERSION = len(MIGRATIONS)
"""The version this code writes and understands."""


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
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
        if found < target:
            conn.execute(f"PRAGMA user_version = {int(target)}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return found
