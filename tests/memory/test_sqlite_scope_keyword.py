"""Recall of a small scope in a big SQLite file (one namespace of many) reads that scope:
keyword its rows, not the whole file's full-text matches, answering exactly as the
full-text path does; semantic its own vector index, not every vector of the file."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from axon.memory.backends import sqlite_text_search
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.entry import NewEntry
from axon.memory.namespaces import Namespace
from axon.testing import FakeClock

WORDS = ("tea", "coffee", "milk", "sugar", "dentist", "friday", "plan", "ledger", "harbour",
         "train", "ticket", "café", "Øre")


@pytest.mark.parametrize("linked", [False, True])
async def test_small_scope_path_answers_as_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, linked: bool
) -> None:
    rng = random.Random(7)
    clock = FakeClock()
    backend = SQLiteBackend(memory_dir=tmp_path, clock=clock)
    small = Namespace.of("acme/u1").scope("Notes")
    try:
        for scope, n in ((small, 60), ("Notes", 400), (Namespace.of("x").scope("Notes"), 400)):
            await backend.store_many(
                [
                    NewEntry(
                        f"k{i}",
                        " ".join(rng.choice(WORDS) for _ in range(6)),
                        {"scope": scope, "tags": ["a"] if i % 3 else ["b"]},
                        expires_at=clock.now + 5 if i % 11 == 0 else None,
                    )
                    for i in range(n)
                ]
            )
            clock.advance(1)
        clock.advance(10)  # some rows expired, not yet purged: counted as the index counts
        queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(25)] + ["café", "Øre ticket"]
        for filters in (None, {"tags": ["b"]}):
            answers = {}
            for scan in (sqlite_text_search.SCOPE_SCAN, 0):
                monkeypatch.setattr(sqlite_text_search, "SCOPE_SCAN", scan)
                answers[scan] = [
                    [
                        (e.key, round(e.score, 9))
                        for e in await backend.retrieve(
                            q, 10, small, mode="keyword", filters=filters, linked=linked
                        )
                    ]
                    for q in queries
                ]
            assert answers[0] == answers[sqlite_text_search.SCOPE_SCAN]
            assert any(answers[0])
    finally:
        await backend.close()


def test_only_a_small_share_of_the_file_takes_the_scope_path(tmp_path: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE scope_stats (scope TEXT, docs INTEGER)")
    conn.executemany("INSERT INTO scope_stats VALUES (?, ?)", [("a", 10), ("b", 30), ("c", 0)])
    assert sqlite_text_search._small_scope(conn, (" AND scope = ?", ("a",)))
    assert not sqlite_text_search._small_scope(conn, (" AND scope = ?", ("b",)))
    assert not sqlite_text_search._small_scope(conn, (" AND scope = ?", ("c",)))
    assert not sqlite_text_search._small_scope(conn, ("", ()))


async def test_semantic_scan_reads_only_its_scopes_vectors(tmp_path: Path) -> None:
    """The exact vector search keeps one index per scope: a recall in a namespace of 30
    entries multiplies 30 vectors, not the file's 630, and finds what a search of every
    vector filtered to the scope finds."""
    from axon.memory.embeddings.hashing import HashingEmbedder

    embedder = HashingEmbedder()
    backend = SQLiteBackend(memory_dir=tmp_path, embedder=embedder)
    rng = random.Random(3)
    small = Namespace.of("acme/u1").scope("Notes")
    try:
        for scope, n in ((small, 30), ("Notes", 300), (Namespace.of("x").scope("Notes"), 300)):
            await backend.store_many(
                [
                    NewEntry(f"k{i}", " ".join(rng.sample(WORDS, 6)), {"scope": scope})
                    for i in range(n)
                ]
            )
        for scope in (small, "Notes"):
            await backend.ensure_vectors(scope)
        found = await backend.retrieve("tea ledger", 5, small, mode="semantic")
        cache = backend._vectors._models[embedder.model_id]
        assert len(cache.indexes[small]) == 30
        everything = await backend.retrieve("tea ledger", 1000, None, mode="semantic")
        assert [e.key for e in found] == [e.key for e in everything if e.scope == small][:5]
    finally:
        await backend.close()
