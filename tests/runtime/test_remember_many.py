"""`handle.remember_many(items)`: each item a dict of `value` and remember's options, all
stored or none (a bad item named by its index), one batched write, one trace event with
the count; on tiered memories each item to its tier (docs/language.md §13.4)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import axon
from axon.errors import AxonMemoryError
from axon.memory.entry import MAX_VALUE_BYTES
from axon.runtime.session import Session
from axon.testing import FakeClock

NOTES = "memory N { store: persistent backend: sqlite retrieval: keyword }"


def _writes(session: Session) -> list[dict[str, Any]]:
    return [e["data"] for e in session.events if e["event_type"] == "memory_write"]


def test_every_item_is_stored_with_its_options_in_one_write(session: Session) -> None:
    session.execute(NOTES)
    notes = session.memory("N")
    notes.remember("old text", key="b")
    before = len(session.events)
    keys = notes.remember_many([
        {"value": "alpha", "key": "a", "tags": ["x"], "importance": "high"},
        {"value": "beta", "key": "b", "metadata": {"project": "apollo"}, "type": "long_term"},
        {"value": {"n": 3}, "expires_in": "1h"},
    ])
    assert keys[:2] == ["a", "b"] and len(keys) == 3
    a, b, c = (notes.get(key) for key in keys)
    assert a.value == "alpha" and a.metadata["tags"] == ["x"] and a.importance == 0.75
    assert b.value == "beta" and b.metadata["project"] == "apollo" and b.type == "long_term"
    assert c.value == {"n": 3} and c.expires_at == session.clock() + 3600
    assert notes.count() == 3
    [event] = [e for e in session.events[before:] if e["event_type"] == "memory_write"]
    assert event["data"]["op"] == "remember_many" and event["data"]["count"] == 3
    assert [r["key"] for r in session.records[-3:]] == keys  # one record per item
    assert notes.remember_many([]) == []


@pytest.mark.parametrize(
    ("bad", "error", "fragment"),
    [
        ({"value": "x", "importance": 7}, AxonMemoryError, "item 2: importance"),
        (
            {"value": "x", "tgas": ["a"]}, TypeError,
            "item 2: unknown option 'tgas' (did you mean 'tags'?)",
        ),
        ({"key": "k"}, TypeError, "item 2 has no 'value'"),
        ("just text", TypeError, "item 2 must be a dict"),
        (
            {"value": "x", "related": ["a"]}, TypeError,
            "item 2: remember_many makes no associations",
        ),
        (
            {"value": "x", "metadata": {"scope": "S"}}, AxonMemoryError,
            "item 2: 'scope' is set by the runtime",
        ),
        (
            {"value": "x", "expires_in": -1}, AxonMemoryError,
            "item 2: expires_in must be more than 0",
        ),
        ({"value": "x", "tier": "persistent"}, AxonMemoryError, "item 2: memory has no tiers"),
        # Refused by the backend's own check, still named by its item.
        ({"value": "x" * (MAX_VALUE_BYTES + 1), "key": "big"}, AxonMemoryError, "item 2: "),
    ],
)
def test_a_bad_item_is_named_by_its_index_and_nothing_is_written(
    session: Session, bad: Any, error: type[Exception], fragment: str
) -> None:
    session.execute(NOTES)
    notes = session.memory("N")
    with pytest.raises(error) as caught:
        notes.remember_many([{"value": "one", "key": "a"}, {"value": "two", "key": "b"}, bad])
    assert fragment in str(caught.value)
    assert "N.remember_many" in str(caught.value) or isinstance(caught.value, AxonMemoryError)
    if isinstance(caught.value, AxonMemoryError):
        assert caught.value.memory == "N"
    assert notes.count() == 0
    assert not [w for w in _writes(session) if w.get("op") == "remember_many"]


@pytest.mark.parametrize("items", ["text", {"value": "x"}, 3])
def test_items_must_be_a_list_of_dicts(session: Session, items: Any) -> None:
    session.execute(NOTES)
    with pytest.raises(TypeError, match="items must be a list of dicts"):
        session.memory("N").remember_many(items)


def test_a_replaced_entry_keeps_its_associations(session: Session) -> None:
    session.execute(NOTES)
    notes = session.memory("N")
    notes.remember("first", key="a")
    notes.remember("second", key="b", related=["a"])
    notes.remember_many([{"value": "first again", "key": "a"}])
    a = notes.get("a")
    assert a.value == "first again" and a.metadata["related"] == ["b"]
    assert [e.key for e in a.associated] == ["b"]


def test_a_refreshing_memory_keeps_each_items_duration(tmp_path: Path) -> None:
    with axon.Session(memory_dir=tmp_path, clock=FakeClock()) as session:
        session.execute("memory R { decay: 10m refresh_on_read: true }")
        notes = session.memory("R")
        notes.remember_many(
            [{"value": "a", "key": "a"}, {"value": "b", "key": "b", "expires_in": 60}]
        )
        assert notes.get("a").metadata["expires_in"] == 600
        assert notes.get("b").metadata["expires_in"] == 60


def test_a_tiered_memory_sends_each_item_to_its_tier(session: Session) -> None:
    session.execute(
        "memory A { tiers: [session, persistent] store: session retrieval: keyword "
        "persist_if: { importance: high } }"
    )
    notes = session.memory("A")
    notes.remember("was persistent", key="moved", tier="persistent")
    before = len(session.events)
    keys = notes.remember_many([
        {"value": "plain", "key": "plain"},
        {"value": "vital", "key": "vital", "importance": "high"},
        {"value": "asked", "key": "asked", "tier": "persistent"},
        {"value": "now in session", "key": "moved", "tier": "session"},
    ])
    assert keys == ["plain", "vital", "asked", "moved"]
    assert {e.key: e.tier for e in notes.list()} == {
        "plain": "session", "vital": "persistent", "asked": "persistent", "moved": "session",
    }
    assert notes.get("moved").value == "now in session"  # its persistent copy is gone
    persistent = session.memories["A"].tiers["persistent"]
    stored = asyncio.run(persistent.backend.list_entries(scope=persistent.scope))
    assert sorted(e.key for e in stored) == ["asked", "vital"]
    [event] = [e for e in session.events[before:] if e["event_type"] == "memory_write"]
    assert event["data"]["count"] == 4
    assert event["data"]["tiers"] == {"session": 2, "persistent": 2}
    with pytest.raises(AxonMemoryError, match="item 1: no tier 'ephemeral'"):
        notes.remember_many([{"value": "x", "key": "x"}, {"value": "y", "tier": "ephemeral"}])
    assert notes.get("x") is None


async def test_the_async_handle_stores_every_item(tmp_path: Path) -> None:
    async with axon.AsyncSession(memory_dir=tmp_path) as session:
        await session.execute(NOTES)
        notes = session.memory("N")
        items = [{"value": f"note {i}", "key": f"k{i}"} for i in range(50)]
        keys = await notes.remember_many(items)
        assert keys == [f"k{i}" for i in range(50)]
        assert await notes.count() == 50
