"""Keyword recall of a small scope in a big SQLite file from the scope's term counts kept in
the process (`sqlite_scope_terms`): read once, used while `scope_stats.mark` says the
scope is unchanged, read again after any change to its rows by anyone, and answering,
score for score, as the full-text path does."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from axon.memory.backends import sqlite_text_search
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.backends.sqlite_schema import SCHEMA_VERSION, migrate
from axon.memory.entry import EXPIRY_DURATION, NewEntry
from axon.memory.namespaces import Namespace
from axon.memory.retrieval.text import tokenize
from axon.testing import FakeClock

WORDS = ("tea", "coffee", "milk", "sugar", "dentist", "friday", "plan", "ledger", "harbour",
         "train", "ticket", "café", "Øre")
SMALL = Namespace.of("acme/u1").scope("Notes")
QUERIES = ["tea milk", "dentist friday ticket", "café", "Øre ledger", "harbour", "zebra tea"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(6))


async def _fill(backend: SQLiteBackend, clock: FakeClock, rng: random.Random) -> None:
    """`SMALL` (40 entries, some expiring) among two scopes of 400: a small scope."""
    for scope, n in ((SMALL, 40), ("Notes", 400), (Namespace.of("x").scope("Notes"), 400)):
        await backend.store_many(
            [
                NewEntry(
                    f"k{i}",
                    _text(rng),
                    {"scope": scope, "tags": ["a"] if i % 3 else ["b"], EXPIRY_DURATION: 50},
                    expires_at=clock.now + 50 if i % 7 == 0 else None,
                )
                for i in range(n)
            ]
        )
        clock.advance(1)


async def _answers(
    backend: SQLiteBackend, monkeypatch: pytest.MonkeyPatch, scope: str = SMALL
) -> list[Any]:
    """Every query's answers in `scope` (unlinked and linked, with and without a filter,
    the first 5 and every match)
    from the kept term counts, checked equal (keys, order, exact scores) to the answers
    of the full-text index path."""
    found = {}
    scope_scan = sqlite_text_search.SCOPE_SCAN
    for scan in (scope_scan, 0):
        monkeypatch.setattr(sqlite_text_search, "SCOPE_SCAN", scan)
        found[scan] = [
            [
                (e.key, e.score, e.value)
                for e in await backend.retrieve(
                    q, top_k, scope, mode="keyword", filters=filters, linked=linked
                )
            ]
            for q in QUERIES
            for top_k in (5, 60)
            for linked in (False, True)
            for filters in (None, {"tags": ["b"]})
        ]
    monkeypatch.setattr(sqlite_text_search, "SCOPE_SCAN", scope_scan)
    assert found[0] == found[scope_scan]
    return found[0]


async def test_kept_terms_are_used_until_the_scope_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(11)
    clock = FakeClock()
    backend = SQLiteBackend(memory_dir=tmp_path, clock=clock)
    other = SQLiteBackend(memory_dir=tmp_path, clock=clock)  # another connection
    try:
        await _fill(backend, clock, rng)
        kept = backend._scope_terms
        first = await _answers(backend, monkeypatch)
        assert any(first) and kept.reads == 2  # once unlinked, once linked
        await _answers(backend, monkeypatch)
        assert kept.reads == 2

        # Writes to other scopes, from either connection, leave the kept copy valid.
        await backend.store("k1", "tea tea tea", {"scope": "Notes"})
        await other.store("new", "milk tea", {"scope": "Notes"})
        await other.delete("k2", "Notes")
        assert await _answers(backend, monkeypatch) == first
        assert kept.reads == 2

        changes: list[Callable[[], Awaitable[Any]]] = [
            # a new entry, from this connection
            lambda: backend.store("n1", "tea milk tea", {"scope": SMALL}),
            # an entry's text replaced by one of as many words, by the other connection
            lambda: other.store("k3", "harbour harbour ledger", {"scope": SMALL}),
            lambda: other.store("k3", "dentist dentist friday", {"scope": SMALL}),
            # a deletion
            lambda: backend.delete("k4", SMALL),
            # an expiry restarted: the kept expiry is not the entry's any more
            lambda: backend.restart_expiry(SMALL, ["k0", "k7"]),
        ]
        before = first
        for change in changes:
            reads = kept.reads
            await change()
            now = await _answers(backend, monkeypatch)
            assert kept.reads == reads + 2
            assert now != before or change is changes[-1]  # an expiry changes answers later
            before = now

        # Entries expire (written at T with 50 s, restarted at T + 3): hidden, purged or not.
        clock.advance(49)
        expired = await _answers(backend, monkeypatch)
        assert expired != before
        keys = {key for answer in expired for key, _, _ in answer}
        assert "k14" not in keys and "k0" in keys  # k0's expiry was restarted

        # Erased and written again with as many entries: a new `scope_stats` row, a new mark.
        count = await backend.count(SMALL)
        await backend.erase(Namespace.of("acme/u1").scope_prefix)
        await other.store_many(
            [NewEntry(f"k{i}", "ticket train plan", {"scope": SMALL}) for i in range(count)]
        )
        again = await _answers(backend, monkeypatch)
        assert {value for answer in again for _, _, value in answer} == {"ticket train plan"}
    finally:
        await backend.close()
        await other.close()


async def test_kept_terms_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `limit` rows, the scopes recalled least recently are dropped, and read again."""
    rng = random.Random(5)
    clock = FakeClock()
    backend = SQLiteBackend(memory_dir=tmp_path, clock=clock)
    try:
        await _fill(backend, clock, rng)
        small = [Namespace.of(f"s/u{i}").scope("Notes") for i in range(3)]
        for scope in small:
            await backend.store_many(
                [NewEntry(f"k{i}", _text(rng), {"scope": scope}) for i in range(30)]
            )
        kept = backend._scope_terms
        kept.limit = 70  # two scopes of 30 at most
        for scope in (*small, small[0]):
            await backend.retrieve("tea", 5, scope, mode="keyword")
        assert kept.reads == 4 and kept._rows == 60
        await backend.retrieve("tea", 5, small[2], mode="keyword")
        assert kept.reads == 4
        assert [e.key for e in await backend.retrieve("tea", 5, small[1], mode="keyword")]
        assert kept.reads == 5
    finally:
        await backend.close()


def _layout(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """The schema's objects, less SQLite's own statistics (`PRAGMA optimize`)."""
    return sorted(
        conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_stat%'"
        )
    )


async def test_a_version_11_file_opens_with_marks_and_the_same_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of schema 11 (this code's file with the mark column and its triggers
    removed: the layout `migrate(target=11)` makes) opens at 12 with a mark in every
    scope's row, answers exactly as before, and its marks move on writes."""
    rng = random.Random(3)
    clock = FakeClock()
    backend = SQLiteBackend(memory_dir=tmp_path / "m", clock=clock)
    await _fill(backend, clock, rng)
    before = await _answers(backend, monkeypatch)
    await backend.close()
    path = tmp_path / "m" / "memory.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for trigger in ("scope_mark_new", "scope_mark_insert", "scope_mark_update",
                    "scope_mark_delete"):
        conn.execute(f"DROP TRIGGER {trigger}")
    conn.execute("ALTER TABLE scope_stats DROP COLUMN mark")
    conn.execute("PRAGMA user_version = 11")
    fresh = sqlite3.connect(tmp_path / "v11.db", isolation_level=None)
    migrate(fresh, path="v11", target=11)
    assert _layout(conn) == _layout(fresh)
    fresh.close()
    conn.close()

    backend = SQLiteBackend(memory_dir=tmp_path / "m", clock=clock)
    try:
        assert await _answers(backend, monkeypatch) == before
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        marks = dict(conn.execute("SELECT scope, mark FROM scope_stats"))
        assert len(marks) == 3 and None not in marks.values()
        await backend.store("n", "tea milk", {"scope": SMALL})
        moved = dict(conn.execute("SELECT scope, mark FROM scope_stats"))
        assert moved[SMALL] != marks[SMALL] and moved["Notes"] == marks["Notes"]
        conn.close()
        assert await _answers(backend, monkeypatch) != before
    finally:
        await backend.close()


async def test_a_changed_scope_tokenizes_only_its_changed_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a store in the scope, the next recall reads its rows again but tokenizes
    only the new or rewritten ones; the answers are still the full-text path's."""
    from axon.memory.backends import sqlite_scope_terms

    rng = random.Random(9)
    clock = FakeClock()
    backend = SQLiteBackend(memory_dir=tmp_path, clock=clock)
    tokenized: list[str] = []
    real = tokenize

    def counting(text: str) -> list[str]:
        tokenized.append(text)
        return real(text)

    monkeypatch.setattr(sqlite_scope_terms, "tokenize", counting)
    try:
        await _fill(backend, clock, rng)
        await backend.retrieve("tea", 5, SMALL, mode="keyword")
        assert len(tokenized) == 40
        tokenized.clear()
        await backend.store("k5", "harbour ledger", {"scope": SMALL})  # rewritten
        await backend.store("n", "ticket tea", {"scope": SMALL})  # new
        await backend.retrieve("tea", 5, SMALL, mode="keyword")
        assert sorted(tokenized) == ["k5 harbour ledger", "n ticket tea"]
        await _answers(backend, monkeypatch)
    finally:
        await backend.close()
