"""Stores written by older AXON versions, opened by today's code: nothing lost, nothing stale.

The fixtures in `fixtures/` were written by the AXON releases that used each old
schema (SQLite 3, 4, 5 and 6, PostgreSQL 1, 2, 3 and 4; `fixtures/make_fixtures.py` says how),
with rows chosen so that every later migration has work to do on them. Opening an
old store must migrate it to the current schema so that it holds exactly what a
store written by the newest fixture's code holds after the same migration: the
same rows column for column (back-filled columns included), the same full-text
index, the same vectors, the same answers to recall.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.backends.sqlite_schema import SCHEMA_VERSION
from axon.memory.embeddings.hashing import HashingEmbedder
from tests.memory.conftest import FakeClock, load_postgres_dump, pg_test_schema
from tests.memory.fixtures.make_fixtures import ROWS, T0

FIXTURES = Path(__file__).parent / "fixtures"
SQLITE_FIXTURES = ["sqlite_v3.db", "sqlite_v4.db", "sqlite_v5.db", "sqlite_v6.db"]
POSTGRES_FIXTURES = ["postgres_v1.sql", "postgres_v2.sql", "postgres_v3.sql", "postgres_v4.sql"]

QUERIES = [
    "Kaffeemaschine",
    "invoice paid",
    "support contract renewed",
    "door code",
    "paint",
    "Ada",
    "stored without a scope",
]
"""Keyword queries whose answers a migrated store must give exactly as a new one does."""


def _scope(row: tuple[Any, ...]) -> str | None:
    return row[0]


async def _contents(backend: MemoryBackend) -> dict[str, Any]:
    """What a user can observe of a store: every entry, and keyword and exact answers."""
    entries = {
        (entry.scope, entry.key): (entry.value, entry.metadata, entry.timestamp, entry.expires_at)
        for entry in await backend.list_entries()
    }
    keyword = {
        (scope, query): [(r.key, round(r.score, 9)) for r in await backend.retrieve(
            query, 10, scope, mode="keyword"
        )]
        for scope in ("Notes", "Chat", "Facts", None)
        for query in QUERIES
    }
    exact = {
        query: [(r.key, r.score) for r in await backend.retrieve(query, 10, mode="exact")]
        for query in ("ärger", "büro", "BÜRO", "d1:", "globex")
    }
    return {"entries": entries, "keyword": keyword, "exact": exact}


def _check_rows(contents: dict[str, Any], *, now: float) -> None:
    """Every fixture row is there with its value, metadata, timestamp and expiry."""
    entries = contents["entries"]
    last_timestamp = T0 - 1
    for scope, key, value, extra, expires_at in ROWS:
        if expires_at is not None and now >= expires_at:
            assert (scope, key) not in entries
            continue
        stored_value, metadata, timestamp, stored_expiry = entries[(scope, key)]
        assert stored_value == value and type(stored_value) is type(value)
        assert {k: v for k, v in metadata.items() if k != "scope"} == extra
        assert metadata.get("scope") == scope
        assert last_timestamp <= timestamp < T0 + 100  # written in ROWS order, after T0
        last_timestamp = timestamp
        assert stored_expiry == expires_at


# ---------------------------------------------------------------------- SQLite


def _open_sqlite(path: Path, clock: FakeClock) -> SQLiteBackend:
    return SQLiteBackend(location=str(path), clock=clock, embedder=HashingEmbedder())


def _raw_rows(path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every column of every entry (less the row id) and every vector, in a stable order."""
    conn = sqlite3.connect(path)
    try:
        cursor = conn.execute("SELECT * FROM entries")
        names = [d[0] for d in cursor.description]
        rows = sorted(
            (tuple(v for n, v in zip(names, row, strict=True) if n != "id") for row in cursor),
            key=lambda r: (str(r[0]), r[1]),
        )
        vectors = sorted(
            conn.execute(
                "SELECT e.scope, e.key, v.model, v.dim, v.vector FROM vectors AS v "
                "JOIN entries AS e ON e.id = v.entry_id"
            ).fetchall(),
            key=lambda r: (str(r[0]), r[1]),
        )
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('integrity-check')")
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    finally:
        conn.close()
    return rows, vectors


async def _migrated_sqlite(
    name: str, tmp_path: Path, now: float, source: Path = FIXTURES
) -> tuple[Any, ...]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / name
    shutil.copyfile(source / name, path)
    clock = FakeClock(now)
    backend = _open_sqlite(path, clock)
    try:
        contents = await _contents(backend)
    finally:
        await backend.close()
    return (contents, *_raw_rows(path))


@pytest.mark.parametrize("name", SQLITE_FIXTURES)
async def test_sqlite_fixture_opens_with_every_row(name: str, tmp_path: Path) -> None:
    before = sqlite3.connect(FIXTURES / name)
    old_version = before.execute("PRAGMA user_version").fetchone()[0]
    old_count = before.execute("SELECT count(*) FROM entries").fetchone()[0]
    before.close()
    assert old_version <= SCHEMA_VERSION and old_count == len(ROWS)
    contents, rows, vectors = await _migrated_sqlite(name, tmp_path, T0 + 100)
    _check_rows(contents, now=T0 + 100)
    assert len(rows) == len(ROWS)
    assert len(vectors) == len([r for r in ROWS if _scope(r) is not None])
    assert contents["exact"]["ärger"][0] == ("Ärger_im_Büro", 0.7)
    assert contents["keyword"][("Notes", "Kaffeemaschine")][0][0] == "Ärger_im_Büro"


async def test_sqlite_fixture_expiry_still_applies(tmp_path: Path) -> None:
    contents, rows, _ = await _migrated_sqlite(SQLITE_FIXTURES[0], tmp_path, T0 + 7200)
    _check_rows(contents, now=T0 + 7200)
    assert "temp_code" not in {row[1] for row in rows}  # purged on open, not only hidden


@pytest.mark.parametrize("name", SQLITE_FIXTURES[:-1])
async def test_sqlite_old_fixture_migrates_to_what_newer_code_wrote(
    name: str, tmp_path: Path
) -> None:
    """Column for column, an old file migrated equals the newest fixture migrated."""
    old = await _migrated_sqlite(name, tmp_path / "old", T0 + 100)
    new = await _migrated_sqlite(SQLITE_FIXTURES[-1], tmp_path / "new", T0 + 100)
    old_contents, old_rows, old_vectors = old
    new_contents, new_rows, new_vectors = new
    assert old_rows == new_rows
    assert old_vectors == new_vectors
    assert old_contents == new_contents


def _scope_stats(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return sorted(
            conn.execute("SELECT scope, docs, length, context_length FROM scope_stats"),
            key=lambda r: str(r[0]),
        )
    finally:
        conn.close()


@pytest.mark.parametrize("name", SQLITE_FIXTURES)
async def test_sqlite_migrated_scope_statistics_are_those_today_writes(
    name: str, tmp_path: Path
) -> None:
    """Schema 6's per-scope BM25 statistics, filled by the migration, equal a fresh store's.

    And keyword scores of the migrated file are those of a store written today.
    """
    from tests.memory.fixtures.make_fixtures import make_sqlite

    migrated = await _migrated_sqlite(name, tmp_path / "old", T0 + 100)
    fresh_path = tmp_path / "fresh.db"
    await asyncio.to_thread(make_sqlite, str(fresh_path))  # it runs its own event loop
    fresh = await _migrated_sqlite("fresh.db", tmp_path / "copy", T0 + 100, source=tmp_path)
    assert _scope_stats(tmp_path / "old" / name) == _scope_stats(tmp_path / "copy" / "fresh.db")
    # Chat, Facts, None, Notes
    assert [row[1] for row in _scope_stats(tmp_path / "old" / name)] == [3, 2, 1, 5]
    assert migrated[0]["keyword"] == fresh[0]["keyword"]


# ---------------------------------------------------------------------- PostgreSQL


async def _migrated_postgres(name: str, dsn: str, tmp_path: Path, now: float) -> dict[str, Any]:
    from axon.memory.backends.postgres import PostgresBackend

    schema = pg_test_schema(tmp_path)
    load_postgres_dump(name, dsn, schema)
    backend = PostgresBackend(
        location=dsn, schema=schema, pool_size=2, clock=FakeClock(now), embedder=HashingEmbedder()
    )
    try:
        contents = await _contents(backend)
        contents["semantic"] = [
            r.key for r in await backend.retrieve("support group", 3, "Chat", mode="semantic")
        ]
        contents["pending"] = [  # the fixture embedded every scoped entry
            item
            for scope in ("Notes", "Chat", "Facts")
            for item in await backend._pending_texts(scope, "hashing:64")
        ]
    finally:
        await backend.close()
    return contents


@pytest.mark.postgres
@pytest.mark.parametrize("name", POSTGRES_FIXTURES)
async def test_postgres_fixture_opens_with_every_row(
    name: str, pg_dsn: str, tmp_path: Path
) -> None:
    contents = await _migrated_postgres(name, pg_dsn, tmp_path, T0 + 100)
    _check_rows(contents, now=T0 + 100)
    assert contents["pending"] == []  # the stored vectors were kept, nothing to re-embed
    assert contents["exact"]["ärger"][0] == ("Ärger_im_Büro", 0.7)


@pytest.mark.postgres
@pytest.mark.parametrize("name", POSTGRES_FIXTURES[:-1])
async def test_postgres_old_fixture_migrates_to_what_newer_code_wrote(
    name: str, pg_dsn: str, tmp_path: Path
) -> None:
    old = await _migrated_postgres(name, pg_dsn, tmp_path / "old", T0 + 100)
    new = await _migrated_postgres(POSTGRES_FIXTURES[-1], pg_dsn, tmp_path / "new", T0 + 100)
    assert old == new


# ---------------------------------------------------------------------- created_at


async def _rewritten_later(backend: MemoryBackend, clock: FakeClock) -> None:
    """After migrating a store written without `created_at`: each stored entry's first
    write is its stored time; storing it again keeps that and moves `updated_at`."""
    [entry] = await backend.list_entries("S")
    assert (entry.key, entry.created_at, entry.updated_at) == ("k", T0, T0)
    clock.advance(60)
    await backend.store("k", "again", {"scope": "S"})
    again = await backend.get("k", "S")
    assert again is not None and (again.created_at, again.updated_at) == (T0, T0 + 60)


async def test_sqlite_version_9_file_gets_created_at(tmp_path: Path) -> None:
    """A file as schema 9 wrote it (no `created_at` column: today's code before it)
    opens at version 10, each row's `created_at` its stored timestamp."""
    path = tmp_path / "memory.db"
    clock = FakeClock(T0)
    backend = _open_sqlite(path, clock)
    await backend.store("k", "first", {"scope": "S"})
    await backend.close()
    conn = sqlite3.connect(path)
    with conn:  # back to what version 9 wrote
        conn.execute("ALTER TABLE entries DROP COLUMN created_at")
        conn.execute("PRAGMA user_version = 9")
    conn.close()
    backend = _open_sqlite(path, clock)
    try:
        await _rewritten_later(backend, clock)
    finally:
        await backend.close()
    _raw_rows(path)  # integrity, version 10


@pytest.mark.postgres
async def test_postgres_version_6_schema_gets_created_at(pg_dsn: str, tmp_path: Path) -> None:
    """A schema as version 6 wrote it (no `created_at` column) migrates to 7 and on to
    today's version, each row's `created_at` its stored timestamp."""
    import psycopg

    from axon.memory.backends.postgres import PostgresBackend

    schema = pg_test_schema(tmp_path)
    clock = FakeClock(T0)

    def backend() -> PostgresBackend:
        return PostgresBackend(location=pg_dsn, schema=schema, pool_size=2, clock=clock)

    first = backend()
    await first.store("k", "first", {"scope": "S"})
    await first.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # back to what version 6 wrote
        conn.execute(f'ALTER TABLE "{schema}".entries DROP COLUMN created_at')
        conn.execute(f"UPDATE \"{schema}\".meta SET value = '6' WHERE name = 'schema_version'")
    second = backend()
    try:
        await _rewritten_later(second, clock)
    finally:
        await second.close()
    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute(
            f"SELECT value FROM \"{schema}\".meta WHERE name = 'schema_version'"
        ).fetchone()
    from axon.memory.backends.postgres_schema import SCHEMA_VERSION

    assert row == (str(SCHEMA_VERSION),)  # and on through every later migration
