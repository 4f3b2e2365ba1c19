"""An entry's two times through the handles (docs/language.md §13): `created_at`, its
first write, kept when its key is remembered again while it lives; `updated_at`, its
last write (`timestamp` by its old name), what newest first orders by and what a
remember's expiry counts from. Export and import carry both; a line of an older export
(only `created_at`, then the entry's one time) imports with it as both."""

from __future__ import annotations

import io
import json
from pathlib import Path

import axon
from axon.memory.transfer import export_memories, import_memories
from axon.runtime.session import Session
from axon.testing import FakeClock

NOTES = "memory N { store: persistent backend: sqlite retrieval: keyword }"


def test_remembering_again_keeps_created_at_and_sets_updated_at(
    session: Session, clock: FakeClock
) -> None:
    session.execute(NOTES)
    notes = session.memory("N")
    first = clock.now
    notes.remember("draft", key="a", tags=["x"], expires_in="1h")
    clock.advance(10)
    notes.remember("other", key="b")
    clock.advance(10)
    notes.remember("final", key="a", importance="high")
    entry = notes.get("a")
    assert entry is not None
    assert (entry.created_at, entry.updated_at, entry.timestamp) == (first, first + 20, first + 20)
    # value and options replaced: no tags, and no expiry (none given this time)
    assert entry.value == "final" and "tags" not in entry.metadata and entry.expires_at is None
    assert [e.key for e in notes.list()] == ["a", "b"]  # newest first: by updated_at
    [result] = notes.recall("final", top_k=1)
    assert (result.created_at, result.updated_at) == (first, first + 20)
    clock.advance(10)
    notes.remember("again", key="a", expires_in="1h")
    entry = notes.get("a")
    assert entry is not None and entry.expires_at == clock.now + 3600  # from this write


def test_an_expired_entry_remembered_again_starts_over(session: Session, clock: FakeClock) -> None:
    session.execute(NOTES)
    notes = session.memory("N")
    notes.remember("old", key="a", expires_in="1m")
    clock.advance(120)
    notes.remember("new", key="a")
    entry = notes.get("a")
    assert entry is not None and entry.created_at == entry.updated_at == clock.now


async def test_export_and_import_carry_both_times(tmp_path: Path) -> None:
    clock = FakeClock()
    with axon.Session(memory_dir=tmp_path / "one", clock=clock) as session:
        session.execute(NOTES)
        notes = session.memory("N")
        notes.remember("draft", key="a")
        clock.advance(30)
        notes.remember("final", key="a")
        backend = session.memories["N"].backend
        out = io.StringIO()
        await export_memories(backend, out, ["N"])
    [line] = [json.loads(text) for text in out.getvalue().splitlines()[1:]]
    assert (line["created_at"], line["updated_at"]) == (clock.now - 30, clock.now)
    older = {k: v for k, v in line.items() if k != "updated_at"}  # an older export's line
    older["key"] = "old"
    text = out.getvalue() + json.dumps(older) + "\n"
    with axon.Session(memory_dir=tmp_path / "two", clock=clock) as session:
        session.execute(NOTES)
        await import_memories(session.memories["N"].backend, io.StringIO(text))
        notes = session.memory("N")
        entry, old = notes.get("a"), notes.get("old")
        assert entry is not None and (entry.created_at, entry.updated_at) == (
            clock.now - 30, clock.now
        )
        assert old is not None and old.created_at == old.updated_at == clock.now - 30


def test_a_tiered_memory_keeps_created_at_when_the_key_moves_tier(
    session: Session, clock: FakeClock
) -> None:
    session.execute(
        "memory A { tiers: [session, persistent] store: session retrieval: keyword "
        "backend: sqlite }"
    )
    notes = session.memory("A")
    first = clock.now
    notes.remember("draft", key="k")
    clock.advance(10)
    notes.remember("final", key="k", tier="persistent")
    entry = notes.get("k")
    assert entry is not None and entry.tier == "persistent"
    assert (entry.created_at, entry.updated_at) == (first, first + 10)
