"""The 1 MB metadata cap on every write of the Python API, links included.

An entry's metadata (its `related` keys with the rest) is capped like its value
(`axon.memory.entry.MAX_VALUE_BYTES`): a remember, a `related` back-link and an
`associate` that would pass it are refused with an `AxonMemoryError` naming the
memory, the key and the limit, and neither side of the association changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import axon
from axon.errors import AxonMemoryError
from axon.memory.entry import MAX_VALUE_BYTES


@pytest.fixture
def notes(tmp_path: Path) -> Iterator[Any]:
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute("memory Notes { store: persistent backend: sqlite }")
        yield session.memory("Notes")


def _state(notes: Any, key: str) -> Any:
    entry = notes.get(key)
    return None if entry is None else (entry.value, entry.metadata, entry.created_at)


def test_metadata_past_the_cap_is_refused_naming_memory_and_key(notes: Any) -> None:
    with pytest.raises(AxonMemoryError) as info:
        notes.remember("v", key="big", metadata={"pad": "p" * MAX_VALUE_BYTES})
    assert "Metadata is too large to store" in str(info.value)
    assert "(the limit is 1,000,000) (memory 'Notes', key 'big')" in str(info.value)
    assert notes.get("big") is None


def test_a_link_past_the_cap_changes_neither_side(notes: Any) -> None:
    long_key = "L" * 1000
    notes.remember("hub", key="hub", metadata={"pad": "p" * (MAX_VALUE_BYTES - 600)})
    notes.remember("leaf", key=long_key)
    before = (_state(notes, "hub"), _state(notes, long_key))
    with pytest.raises(AxonMemoryError, match="Metadata is too large") as info:
        notes.associate(long_key, "hub")
    assert (info.value.memory, info.value.key) == ("Notes", "hub")
    assert "the limit is 1,000,000" in str(info.value)
    assert (_state(notes, "hub"), _state(notes, long_key)) == before
    with pytest.raises(AxonMemoryError, match="Metadata is too large") as info:
        notes.remember("new", key="N" * 1000, related=["hub"])
    assert info.value.key == "hub"
    assert notes.get("N" * 1000) is None
    assert (_state(notes, "hub"), _state(notes, long_key)) == before


def test_a_link_keeps_the_other_entry_as_it_was(notes: Any) -> None:
    notes.remember("first", key="a", tags=["x"], expires_in=3600)
    a = notes.get("a")
    notes.remember("second", key="b", related=["a"])
    notes.remember("third", key="c")
    notes.associate("c", "a")
    after = notes.get("a")
    assert (after.value, after.created_at, after.expires_at) == (
        a.value, a.created_at, a.expires_at
    )
    assert after.metadata["related"] == ["b", "c"]
    notes.delete("b")
    assert notes.get("a").metadata["related"] == ["c"]
    notes.remember("first again", key="a")  # replacing keeps the associations
    assert notes.get("a").metadata["related"] == ["c"]
