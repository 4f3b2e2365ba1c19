"""`handle.update(key, ...)` (docs/language.md §5.2): changes only what it is given,
keeps `created_at` (and the expiry unless `expires_in` is given), sets `updated_at`;
an unknown key is an `AxonMemoryError` naming memory and key; one `memory_update`
event; sync and async alike; on a tiered memory, the tier holding the key."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import axon
from axon.errors import AxonMemoryError
from axon.runtime.session import Session
from axon.testing import FakeClock

NOTES = "memory N { store: persistent backend: sqlite retrieval: keyword }"


def _updates(session: Session) -> list[dict[str, Any]]:
    return [e["data"] for e in session.events if e["event_type"] == "memory_update"]


def test_update_changes_only_what_it_is_given(session: Session, clock: FakeClock) -> None:
    session.execute(NOTES)
    notes = session.memory("N")
    first = clock.now
    notes.remember("draft", key="r", tags=["work"], importance="high",
                   metadata={"project": "apollo"}, expires_in="1h")
    clock.advance(60)
    entry = notes.update("r", value="final")
    assert entry.value == "final"
    assert entry.metadata["tags"] == ["work"] and entry.importance == 0.75
    assert entry.metadata["project"] == "apollo" and entry.metadata["source"] == "python"
    assert (entry.created_at, entry.updated_at) == (first, first + 60)
    assert entry.expires_at == first + 3600  # kept: no expires_in given
    assert notes.get("r") == entry
    clock.advance(60)
    entry = notes.update("r", tags=[], metadata={"phase": 2}, type="long_term")
    assert entry.value == "final" and entry.metadata["tags"] == []
    assert "project" not in entry.metadata and entry.metadata["phase"] == 2
    assert entry.type == "long_term" and entry.importance == 0.75
    entry = notes.update("r", expires_in="2h")
    assert entry.expires_at == clock.now + 7200
    entry = notes.update("r", expires_in="never")
    assert entry.expires_at is None
    assert [u["fields"] for u in _updates(session)] == [
        ["value"], ["metadata", "tags", "type"], ["expires_in"], ["expires_in"]
    ]
    assert all(u["memory"] == "N" and u["key"] == "r" for u in _updates(session))


def test_update_keeps_associations(session: Session) -> None:
    session.execute(NOTES)
    notes = session.memory("N")
    notes.remember("a", key="a")
    notes.remember("b", key="b", related=["a"])
    notes.update("b", value="b2", metadata={"x": 1})
    entry = notes.get("b")
    assert entry is not None and [e.key for e in entry.associated] == ["a"]


def test_an_unknown_key_is_an_error_naming_memory_and_key(
    session: Session, clock: FakeClock
) -> None:
    session.execute(NOTES)
    notes = session.memory("N")
    with pytest.raises(AxonMemoryError, match="no entry to update") as caught:
        notes.update("missing", value=1)
    assert (caught.value.memory, caught.value.key) == ("N", "missing")
    notes.remember("soon gone", key="g", expires_in=10)
    clock.advance(11)
    with pytest.raises(AxonMemoryError, match="no entry to update"):
        notes.update("g", value=1)
    assert notes.count() == 0 and _updates(session) == []


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        ({}, TypeError, "give at least one of"),
        ({"value": {1, 2}}, TypeError, "use a list"),
        ({"tags": "x"}, TypeError, "tags"),
        ({"importance": 7}, AxonMemoryError, "importance"),
        ({"type": "weekly"}, AxonMemoryError, "weekly"),
        ({"metadata": {"scope": "x"}}, AxonMemoryError, "set by the runtime"),
        ({"expires_in": -1}, AxonMemoryError, "more than 0 seconds"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_written(
    session: Session, kwargs: dict[str, Any], error: type[Exception], fragment: str
) -> None:
    session.execute(NOTES)
    notes = session.memory("N")
    notes.remember("kept", key="k")
    with pytest.raises(error, match=fragment):
        notes.update("k", **kwargs)
    entry = notes.get("k")
    assert entry is not None and entry.value == "kept"


def test_the_async_handle_updates_too(tmp_path: Path) -> None:
    async def main() -> None:
        async with axon.AsyncSession(memory_dir=tmp_path / "m") as session:
            await session.execute(NOTES)
            notes = session.memory("N")
            await notes.remember("one", key="k")
            entry = await notes.update("k", value="two", tags=["t"])
            assert (entry.value, entry.metadata["tags"]) == ("two", ["t"])

    asyncio.run(main())


def test_a_tiered_memory_updates_the_tier_holding_the_key(
    session: Session, clock: FakeClock
) -> None:
    session.execute(
        "memory A { tiers: [session, persistent] store: session retrieval: keyword "
        "backend: sqlite }"
    )
    notes = session.memory("A")
    notes.remember("the gate is green", key="gate", tier="persistent")
    notes.remember("the garden", key="garden")
    clock.advance(5)
    entry = notes.update("gate", value="the gate is red")
    assert (entry.value, entry.tier) == ("the gate is red", "persistent")
    assert entry.created_at == clock.now - 5 and entry.updated_at == clock.now
    assert {e.key: e.tier for e in notes.list()} == {"gate": "persistent", "garden": "session"}
    [event] = _updates(session)
    assert event["tier"] == "persistent" and event["fields"] == ["value"]
    with pytest.raises(AxonMemoryError, match="no entry to update"):
        notes.update("nowhere", value=1)
