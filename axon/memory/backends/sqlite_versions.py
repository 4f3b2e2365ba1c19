"""The `versions` table of a SQLite memory file: each entry's history (`axon.memory.versions`).

Functions of a connection, run inside the backend's transactions (`SQLiteBackend._write`
and `_read`). A version's value and metadata are stored as the entry's are (JSON text);
a `forget` has neither. `seq` (AUTOINCREMENT: never reused, even after a purge) orders
the versions of the file.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from axon.memory.entry import encode_json
from axon.memory.versions import KEEP_ALL, Version, version_from_row

_ENTRY = "ifnull(scope, X'00') = ? AND key = ?"


def _ident(scope: str | None) -> str | bytes:
    return scope if scope is not None else b"\x00"


def record(conn: sqlite3.Connection, scope: str | None, versions: Sequence[Version],
           keep: int) -> None:
    """Append `versions` to their keys' history in `scope`, then keep each key's newest
    `keep + 1` (all with `KEEP_ALL`)."""
    conn.executemany(
        "INSERT INTO versions (scope, key, op, value_json, metadata_json, updated_at, "
        "expires_at, keep) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                scope,
                v.key,
                v.op,
                None if v.op == "forget" else encode_json(v.value),
                None if v.op == "forget" else encode_json(v.metadata),
                v.updated_at,
                v.expires_at,
                keep,
            )
            for v in versions
        ],
    )
    if keep == KEEP_ALL:
        return
    for key in dict.fromkeys(v.key for v in versions):
        conn.execute(
            f"DELETE FROM versions WHERE {_ENTRY} AND seq NOT IN "
            f"(SELECT seq FROM versions WHERE {_ENTRY} ORDER BY seq DESC LIMIT ?)",
            (_ident(scope), key, _ident(scope), key, keep + 1),
        )


def read(conn: sqlite3.Connection, scope: str | None, key: str) -> list[Version]:
    """The versions of `(scope, key)`, newest first."""
    rows = conn.execute(
        "SELECT key, op, value_json, metadata_json, updated_at, expires_at, seq, keep "
        f"FROM versions WHERE {_ENTRY} ORDER BY seq DESC",
        (_ident(scope), key),
    ).fetchall()
    return [
        version_from_row(
            key, op, None if value is None else json.loads(value),
            None if meta is None else json.loads(meta), updated, expires, seq, kept,
        )
        for key, op, value, meta, updated, expires, seq, kept in rows
    ]


def drop(conn: sqlite3.Connection, scope: str | None, *, prefix: bool) -> int:
    """Delete the versions of `scope` (of every scope starting with it with `prefix`, of
    every scope when None); how many went."""
    if scope is None:
        return conn.execute("DELETE FROM versions").rowcount
    if prefix:
        return conn.execute(
            "DELETE FROM versions WHERE substr(scope, 1, ?) = ?", (len(scope), scope)
        ).rowcount
    return conn.execute("DELETE FROM versions WHERE scope = ?", (scope,)).rowcount
