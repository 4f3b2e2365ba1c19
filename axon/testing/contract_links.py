"""The backend contract, associations and the metadata cap: `write_links` changes the
`related` metadata only, keeps links on a store, unlinks on delete, refuses all or
nothing; metadata past `MAX_VALUE_BYTES` is refused on every write (part of
`conformance`).
"""

from __future__ import annotations

from typing import Any

import pytest

from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.entry import MAX_VALUE_BYTES, MemoryEntry, NewEntry, encode_json
from axon.memory.links import LinkChange, MissingLinkTarget
from axon.testing import FakeClock


def _state(entry: MemoryEntry | None) -> tuple[Any, ...] | None:
    """Everything stored of an entry."""
    if entry is None:
        return None
    return (entry.key, entry.value, entry.metadata, entry.timestamp, entry.expires_at)


async def _entries(backend: MemoryBackend, *keys: str) -> list[tuple[Any, ...] | None]:
    return [_state(await backend.get(key, scope="S")) for key in keys]


async def test_a_link_changes_only_the_related_metadata(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    await backend.store("a", {"v": 1}, {"scope": "S", "tags": ["x"]}, expires_at=clock.now + 900)
    clock.advance(5)
    await backend.store("b", "bee", {"scope": "S"})
    clock.advance(5)
    done = await backend.write_links(
        "S", [LinkChange("a", add=("b",)), LinkChange("b", add=("a",))]
    )
    assert sorted(done.changed) == ["a", "b"]
    a, b = await backend.get("a", scope="S"), await backend.get("b", scope="S")
    assert a is not None and b is not None
    assert (a.value, a.metadata) == ({"v": 1}, {"scope": "S", "tags": ["x"], "related": ["b"]})
    assert (a.timestamp, a.expires_at) == (clock.now - 10, clock.now - 10 + 900)
    assert (b.value, b.metadata, b.timestamp) == ("bee", {"scope": "S", "related": ["a"]},
                                                  clock.now - 5)
    # Linking again changes nothing; removing drops the field when no key is left.
    again = await backend.write_links("S", [LinkChange("a", add=("b",))])
    assert again.changed == ()
    await backend.write_links("S", [LinkChange("a", remove=("b",))])
    a = await backend.get("a", scope="S")
    assert a is not None and a.metadata == {"scope": "S", "tags": ["x"]}
    assert [e.key for e in await backend.list_entries("S")] == ["b", "a"]  # order unchanged


async def test_a_store_keeps_the_links_of_the_entry_it_replaces(backend: MemoryBackend) -> None:
    await backend.store("t", "old", {"scope": "S", "related": ["x"]})
    await backend.store("y", "why", {"scope": "S"})
    done = await backend.write_links(
        "S",
        [LinkChange("y", add=("t",))],
        store=NewEntry("t", "new", {"scope": "S", "related": ["y"]}),
    )
    assert done.stored is not None and done.stored.metadata["related"] == ["x", "y"]
    t = await backend.get("t", scope="S")
    assert t is not None and (t.value, t.metadata["related"]) == ("new", ["x", "y"])
    y = await backend.get("y", scope="S")
    assert y is not None and y.metadata["related"] == ["t"]
    # The seed's `store` replaces whole: what an import writes is what it reads.
    await backend.store("t", "plain", {"scope": "S"})
    t = await backend.get("t", scope="S")
    assert t is not None and "related" not in t.metadata


async def test_a_delete_unlinks_the_entries_it_named(backend: MemoryBackend) -> None:
    await backend.store("a", "A", {"scope": "S", "related": ["b", "gone"]})
    await backend.store("b", "B", {"scope": "S", "related": ["a", "c"]})
    done = await backend.write_links("S", delete="a")
    assert done.deleted and done.changed == ("b",)
    assert await backend.get("a", scope="S") is None
    b = await backend.get("b", scope="S")
    assert b is not None and (b.value, b.metadata["related"]) == ("B", ["c"])
    assert not (await backend.write_links("S", delete="a")).deleted


async def test_a_link_to_a_missing_entry_writes_nothing(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    await backend.store("a", "A", {"scope": "S"})
    await backend.store("old", "O", {"scope": "S"}, expires_at=clock.now + 1)
    clock.advance(2)
    before = await _entries(backend, "a", "t")
    for missing in ("nope", "old", "bad\x00key"):
        with pytest.raises(MissingLinkTarget) as info:
            await backend.write_links(
                "S",
                [LinkChange("a", add=(missing,)), LinkChange(missing, add=("a",))],
                store=NewEntry("t", "T", {"scope": "S"}),
            )
        assert info.value.missing == missing and info.value.memory == "S"
        assert await _entries(backend, "a", "t") == before


async def test_a_link_past_the_metadata_cap_changes_neither_side(backend: MemoryBackend) -> None:
    leaf = "leaf" + "k" * 1000
    hub_meta: dict[str, Any] = {"scope": "S", "related": []}
    while len(encode_json(hub_meta)) + len(leaf) + 3 <= MAX_VALUE_BYTES:
        hub_meta["related"].append(f"{len(hub_meta['related'])}{'k' * 1000}")
    await backend.store("hub", "H", hub_meta)
    await backend.store(leaf, "L", {"scope": "S"})
    before = await _entries(backend, "hub", leaf)
    with pytest.raises(AxonMemoryError, match="Metadata is too large") as info:
        await backend.write_links(
            "S", [LinkChange(leaf, add=("hub",)), LinkChange("hub", add=(leaf,))]
        )
    assert (info.value.memory, info.value.key) == ("S", "hub")
    assert "the limit is 1,000,000" in str(info.value)
    assert await _entries(backend, "hub", leaf) == before
    # A store whose kept links would pass the cap is refused too.
    with pytest.raises(AxonMemoryError, match="Metadata is too large") as info:
        await backend.write_links(
            "S", store=NewEntry("hub", "H2", {"scope": "S", "pad": "p" * 20_000})
        )
    assert (info.value.memory, info.value.key) == ("S", "hub")
    assert await _entries(backend, "hub", leaf) == before


@pytest.mark.parametrize("size", [MAX_VALUE_BYTES, MAX_VALUE_BYTES + 1])
async def test_metadata_is_capped_like_a_value(backend: MemoryBackend, size: int) -> None:
    # {"scope":"S","pad":"..."}: 22 bytes around the padding
    meta = {"scope": "S", "pad": "p" * (size - 22)}
    if size <= MAX_VALUE_BYTES:
        await backend.store_many([NewEntry("k", "v", meta)])
        got = await backend.get("k", scope="S")
        assert got is not None and got.metadata == meta
        return
    with pytest.raises(AxonMemoryError) as info:
        await backend.store_many([NewEntry("ok", "v", {"scope": "S"}), NewEntry("k", "v", meta)])
    assert str(info.value) == (
        f"Metadata is too large to store: {size:,} bytes as JSON (the limit is 1,000,000) "
        "(memory 'S', key 'k')"
    )
    assert await backend.list_entries("S") == []


__all__ = sorted(name for name in dict(globals()) if name.startswith("test_"))
