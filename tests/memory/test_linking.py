"""Entries are independent unless the memory declares `link: sequence` (docs/language.md, recall).

Every backend stores each entry's context (the text of the entry stored just
before it in its memory); only a linked recall (`retrieve(..., linked=True)`) may
find or rank an entry by those words. Run on every registered backend (the
`backend` fixture), plus files and schemas written before `link` existed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.backends.sqlite_schema import migrate
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.registry import registry
from tests.memory.conftest import FakeClock

OFFICE = [
    ("q3", "Q3 revenue growth was 12 percent, ahead of plan"),
    ("board", "Board meeting moved to the 14th"),
    ("globex", "Globex invoice 4471 was paid on March 3"),
    ("initech", "Initech renewed their support contract"),
    ("lunch", "Team lunch on Friday at the Thai place"),
]
"""Stored in this order, so each entry's context is the one above it."""


async def _store_office(backend: MemoryBackend, clock: FakeClock) -> None:
    for key, text in OFFICE:
        await backend.store(key, text, {"scope": "Office"})
        clock.advance(1)


def _keys(found: list[object]) -> list[str]:
    return [entry.key for entry in found]  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
async def test_unlinked_recall_never_ranks_by_the_previous_entry(
    backend: MemoryBackend, clock: FakeClock, mode: str
) -> None:
    if mode not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no {mode} retrieval")
    await _store_office(backend, clock)
    revenue = await backend.retrieve("revenue growth", 5, "Office", mode="keyword")
    assert _keys(revenue) == ["q3"]
    invoice = await backend.retrieve("was the Globex invoice paid", 5, "Office", mode="keyword")
    assert _keys(invoice) == ["globex"]
    if mode == "hybrid":
        fused = await backend.retrieve("was the Globex invoice paid", 5, "Office", mode=mode)
        assert fused[0].key == "globex"
        initech = next(entry for entry in fused if entry.key == "initech")
        assert initech.signals is not None and initech.signals["keyword"] == 0.0


async def test_linked_recall_reads_each_entry_with_the_one_before(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    if "keyword" not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no keyword retrieval")
    await _store_office(backend, clock)
    revenue = await backend.retrieve("revenue growth", 5, "Office", mode="keyword", linked=True)
    assert _keys(revenue) == ["q3", "board"]
    invoice = await backend.retrieve(
        "was the Globex invoice paid", 5, "Office", mode="keyword", linked=True
    )
    assert _keys(invoice) == ["globex", "initech"]
    assert invoice[0].score > invoice[1].score > 0
    # The switch is per recall: the same entries, unlinked again, are independent.
    again = await backend.retrieve("was the Globex invoice paid", 5, "Office", mode="keyword")
    assert _keys(again) == ["globex"]


async def test_a_conversation_reply_is_found_through_its_question(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    if "keyword" not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no keyword retrieval")
    turns = [
        ("t1", "Caroline: Do you still go swimming at the lake?"),
        ("t2", "Melanie: Yes, every Sunday morning"),
        ("t3", "Caroline: I started pottery classes last week"),
    ]
    for key, text in turns:
        await backend.store(key, text, {"scope": "Chat"})
        clock.advance(1)
    linked = await backend.retrieve("swimming lake", 5, "Chat", mode="keyword", linked=True)
    assert _keys(linked) == ["t1", "t2"]
    unlinked = await backend.retrieve("swimming lake", 5, "Chat", mode="keyword")
    assert _keys(unlinked) == ["t1"]


async def test_linked_index_follows_writes_and_deletes(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """After a first linked recall, later writes, overwrites and deletes are seen by the next."""
    if "keyword" not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no keyword retrieval")
    await _store_office(backend, clock)
    await backend.retrieve("anything", 5, "Office", mode="keyword", linked=True)
    await backend.store("followup", "Send the reminder", {"scope": "Office"})
    found = await backend.retrieve("thai lunch", 5, "Office", mode="keyword", linked=True)
    assert _keys(found) == ["lunch", "followup"]
    await backend.store("lunch", "Team lunch cancelled", {"scope": "Office"})
    found = await backend.retrieve("thai", 5, "Office", mode="keyword", linked=True)
    assert _keys(found) == ["followup"]  # a context is fixed when its entry is first stored
    assert await backend.delete("board", "Office")
    found = await backend.retrieve("board meeting", 5, "Office", mode="keyword", linked=True)
    assert _keys(found) == ["globex"]


# ---------------------------------------------------------------------- stored by older versions


@pytest.mark.parametrize("version", [3, 4])
async def test_sqlite_rows_migrated_from_an_older_file_are_independent(
    tmp_path: Path, version: int
) -> None:
    """Files before contexts (3) and with contexts in one index (4) migrate with real rows."""
    conn = sqlite3.connect(tmp_path / "memory.db", isolation_level=None)
    migrate(conn, path="test", target=version)
    for i, (key, text) in enumerate(OFFICE):
        conn.execute(
            "INSERT INTO entries (scope, key, value_json, text, timestamp) "
            "VALUES ('Office', ?, ?, ?, ?)",
            (key, f'"{text}"', text, float(i)),
        )
    if version == 4:  # as version 4 wrote them: each row's context in the one index
        conn.execute(
            "UPDATE entries SET context = ifnull((SELECT p.text FROM entries AS p "
            "WHERE p.id = entries.id - 1), '')"
        )
        conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('rebuild')")
    conn.close()
    backend = registry.create("sqlite", memory_dir=tmp_path, embedder=HashingEmbedder())
    try:
        raw = sqlite3.connect(tmp_path / "memory.db")
        contexts = dict(raw.execute("SELECT key, context FROM entries").fetchall())
        assert contexts["board"] == OFFICE[0][1]  # the migration filled the contexts
        for table in ("entries_fts", "entries_fts_linked"):
            raw.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
        raw.close()
        plain = await backend.retrieve("was the Globex invoice paid", 5, "Office", mode="keyword")
        assert _keys(plain) == ["globex"]
        linked = await backend.retrieve(
            "was the Globex invoice paid", 5, "Office", mode="keyword", linked=True
        )
        assert _keys(linked) == ["globex", "initech"]
    finally:
        await backend.close()


async def test_an_unlinked_score_does_not_depend_on_the_previous_entry(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """Same entries, other order: the neighbour's length must not move the score either."""
    if "keyword" not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no keyword retrieval")
    long = "the weather in the mountains was cold and windy for the whole long week"
    short = "hello there"
    for scope, order in (
        ("A", [long, "apple pie recipe", short]),
        ("B", [short, "apple pie recipe", long]),
    ):
        for i, text in enumerate(order):
            await backend.store(f"k{i}", text, {"scope": scope})
            clock.advance(1)
    [a] = await backend.retrieve("apple pie", 5, "A", mode="keyword")
    [b] = await backend.retrieve("apple pie", 5, "B", mode="keyword")
    assert a.key == b.key == "k1"
    assert a.score == pytest.approx(b.score, rel=1e-9)
