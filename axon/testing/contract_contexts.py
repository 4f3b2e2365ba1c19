"""The backend contract, `link: sequence` contexts: `read_contexts` gives each entry's,
fixed at its first store, and a store with `NewEntry.context` keeps the given one,
which linked recall then searches and scores (part of `conformance`).

A backend that keeps no contexts (`read_contexts` returns {}, the base default)
skips these tests: its import gives every entry the context it would give it anyway.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import MAX_CONTEXT_JSON_CHARS, MemoryEntry, NewEntry
from axon.testing import BackendEnv, FakeClock, in_memory_reference
from axon.testing.contract_helpers import keys


async def _keeps_contexts(backend: MemoryBackend, scope: str, key: str) -> None:
    if "keyword" not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no keyword retrieval")
    if not await backend.read_contexts(scope, [key]):
        pytest.skip(f"{backend.name} keeps no link: sequence contexts")


async def test_each_context_is_the_text_stored_before_the_first_store(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """An entry's context is the text stored just before it in its scope; storing it
    again later keeps it (its first store's)."""
    for key, text in (("a", "apple note"), ("b", "river note"), ("c", "stone note")):
        await backend.store(key, text, {"scope": "S"})
        clock.advance(1)
    await _keeps_contexts(backend, "S", "b")
    await backend.store("b", "river changed", {"scope": "S"})
    clock.advance(1)
    await backend.store("t", "other scope", {"scope": "T"})
    found = await backend.read_contexts("S", ["a", "b", "c", "missing", "t"])
    assert found == {"a": "", "b": "apple note", "c": "river note"}
    assert await backend.read_contexts("T", ["t", "a"]) == {"t": ""}
    assert await backend.read_contexts("S", []) == {}


async def _given_contexts(backend: MemoryBackend, clock: FakeClock) -> None:
    """Entries stored with and without contexts, new and replacing."""
    await backend.store_many(
        [
            NewEntry("a", "apple note", {"scope": "S"}),
            NewEntry("b", "river note", {"scope": "S"}, context="lantern harbour lantern"),
        ]
    )
    clock.advance(1)
    await backend.store("c", "stone note", {"scope": "S"})
    clock.advance(1)
    await backend.store("d", "cloud note", {"scope": "S"})
    clock.advance(1)
    # Replacing: the given context replaces the kept one, in the index and statistics.
    await backend.store_many(
        [
            NewEntry(
                "c", "stone changed", {"scope": "S"}, context="violin harbour bells on the quay"
            )
        ]
    )
    clock.advance(1)
    await backend.store("a", "apple changed", {"scope": "S"})  # keeps its context ("")
    clock.advance(1)


def _scored(entries: list[MemoryEntry]) -> dict[str, float]:
    return {e.key: e.score for e in entries}


async def test_a_given_context_is_kept_and_searched_by_linked_recall(
    backend: MemoryBackend, clock: FakeClock, tmp_path: Path
) -> None:
    """`NewEntry.context` is the entry's context from then on (new or replaced, until it
    is given another): `read_contexts` gives it, linked keyword recall matches it
    (unlinked does not), and scores equal the in-memory reference's."""
    await backend.store("probe", "probe", {"scope": "P"})
    await _keeps_contexts(backend, "P", "probe")
    await _given_contexts(backend, clock)
    found = await backend.read_contexts("S", ["a", "b", "c", "d"])
    assert found == {
        "a": "",
        "b": "lantern harbour lantern",
        "c": "violin harbour bells on the quay",
        "d": "stone note",  # the text stored before it, as always
    }
    assert keys(await backend.retrieve("lantern", 5, "S", mode="keyword", linked=True)) == ["b"]
    assert await backend.retrieve("lantern", 5, "S", mode="keyword") == []
    assert keys(await backend.retrieve("violin", 5, "S", mode="keyword", linked=True)) == ["c"]
    assert await backend.retrieve("cloud", 5, "S", mode="keyword", linked=True) != []
    embedder = backend.embedder
    assert isinstance(embedder, HashingEmbedder)
    reference_clock = FakeClock()
    reference = in_memory_reference(BackendEnv(tmp_path, reference_clock, embedder))
    try:
        await _given_contexts(reference, reference_clock)
        for query in ("harbour", "lantern note", "stone", "violin apple", "note changed"):
            got = await backend.retrieve(query, 10, "S", mode="keyword", linked=True)
            want = await reference.retrieve(query, 10, "S", mode="keyword", linked=True)
            assert _scored(got) == pytest.approx(_scored(want), abs=1e-6), query
            assert keys(got) == keys(want), query
    finally:
        await reference.close()


async def test_a_context_that_no_value_can_give_is_refused(backend: MemoryBackend) -> None:
    """A context that is not text, is past `MAX_CONTEXT_JSON_CHARS` as JSON or is not
    valid Unicode is an `AxonMemoryError` naming memory and key; nothing is stored."""
    bad: list[object] = [7, "\x01" * (MAX_CONTEXT_JSON_CHARS // 6 + 1), "half \ud800"]
    for context in bad:
        with pytest.raises(AxonMemoryError, match="context") as info:
            await backend.store_many(
                [NewEntry("k", "text", {"scope": "S"}, context=context)]  # type: ignore[arg-type]
            )
        assert "memory 'S', key 'k'" in str(info.value)
    assert await backend.count("S") == 0


__all__ = sorted(name for name in dict(globals()) if name.startswith("test_"))
