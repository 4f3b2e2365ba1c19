"""Purges a backend starts on its own (SQLite on open and while in use, PostgreSQL during
writes) reach the purge listener, and through it become `memory_expire` events."""

from __future__ import annotations

from pathlib import Path

import axon
from axon.memory.backends.postgres import PURGE_INTERVAL as PG_PURGE_INTERVAL
from axon.memory.backends.postgres import PostgresBackend
from axon.memory.backends.sqlite import PURGE_EVERY_WRITES, PURGE_INTERVAL, SQLiteBackend
from axon.memory.entry import NewEntry
from tests.memory.conftest import FakeClock, pg_dsn_or_skip, pg_test_schema

Reports = list[tuple[int, dict[str | None, int] | None]]


async def test_sqlite_purge_on_open_is_reported_once_a_listener_is_set(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = SQLiteBackend(memory_dir=tmp_path, clock=clock)
    await backend.store("a", "x", {"scope": "Notes"}, expires_at=clock.now + 10)
    await backend.store("b", "x", {"scope": "Other"}, expires_at=clock.now + 10)
    await backend.store("c", "x", {"scope": "Notes"})
    await backend.close()
    clock.advance(11)
    reopened = SQLiteBackend(memory_dir=tmp_path, clock=clock)  # purges in its constructor
    try:
        reports: Reports = []
        reopened.set_purge_listener(lambda count, by_scope: reports.append((count, by_scope)))
        assert reports == [(2, {"Notes": 1, "Other": 1})]
        assert await reopened.count() == 1
    finally:
        await reopened.close()


async def test_sqlite_periodic_purges_are_reported(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = SQLiteBackend(memory_dir=tmp_path, clock=clock)
    reports: Reports = []
    backend.set_purge_listener(lambda count, by_scope: reports.append((count, by_scope)))
    try:
        await backend.store("a", "x", {"scope": "Notes"}, expires_at=clock.now + 1)
        clock.advance(PURGE_INTERVAL)
        assert await backend.count("Notes") == 0  # a read past the interval purges
        assert reports == [(1, {"Notes": 1})]
        await backend.store("b", "x", {"scope": "Notes"}, expires_at=clock.now + 1)
        clock.advance(2)
        await backend.store_many(
            [NewEntry(f"k{i}", "y", {"scope": "Bulk"}) for i in range(PURGE_EVERY_WRITES)]
        )  # enough writes purge too
        assert reports == [(1, {"Notes": 1}), (1, {"Notes": 1})]
    finally:
        await backend.close()


async def test_postgres_purge_during_writes_is_reported(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = PostgresBackend(
        location=pg_dsn_or_skip(), schema=pg_test_schema(tmp_path), pool_size=1, clock=clock
    )
    reports: Reports = []
    backend.set_purge_listener(lambda count, by_scope: reports.append((count, by_scope)))
    try:
        await backend.store("a", "x", {"scope": "Notes"}, expires_at=clock.now + 1)
        await backend.store("b", "x", {"scope": "Notes"}, expires_at=clock.now + 1)
        clock.advance(PG_PURGE_INTERVAL)
        await backend.store("c", "x", {"scope": "Other"})  # a write past the interval purges
        assert reports == [(2, {"Notes": 2})]
        assert await backend.count() == 1
    finally:
        await backend.close()


def test_a_purge_when_sqlite_opens_is_a_memory_expire_event(tmp_path: Path) -> None:
    clock = FakeClock()
    decl = "memory Notes { store: persistent backend: sqlite decay: 1h }"
    with axon.Session(memory_dir=tmp_path, clock=clock) as s:
        s.execute(decl + '\nremember("old") -> Notes with { key: "a" }')
    clock.advance(7200)
    with axon.Session(memory_dir=tmp_path, clock=clock) as s:
        s.execute(decl)
        expire = [e["data"] for e in s.events if e["event_type"] == "memory_expire"]
        assert expire == [{"memory": "Notes", "backend": "sqlite", "count": 1}]
