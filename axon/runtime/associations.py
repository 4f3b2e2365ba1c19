"""Associations between entries (LANGUAGE.md §8): the `related` keys and the delete
that unlinks them.

An association is symmetric and stored on both entries, as each one's `related`
metadata, so `get` returns an entry with its associated entries without a join
on any backend. Deleting an entry must therefore also rewrite the entries that
name it; `delete_entry` is the one place that does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from axon.memory.backend import MemoryBackend
from axon.memory.entry import MemoryEntry, NewEntry


def related_keys(metadata: Mapping[str, Any]) -> list[str]:
    """The keys an entry is associated with (its `related` metadata)."""
    related = metadata.get("related")
    if not isinstance(related, list):
        return []
    return [k for k in related if isinstance(k, str)]


async def delete_entry(backend: MemoryBackend, key: str, scope: str) -> bool:
    """Delete one entry and its associations: the entries it was associated with stop
    naming it. True when there was an entry. Every delete of one entry goes through
    here (`MemoryManager.delete`, so the handle and the `forget` statement, and
    `axon memory forget`).

    The entry goes first, then the others are rewritten in one batch: a crash in
    between leaves a key that names a deleted entry, which `get` skips.
    """
    old = await backend.get(key, scope=scope)
    removed = await backend.delete(key, scope=scope)
    if not removed or old is None:
        return removed
    batch = []
    for other_key in related_keys(old.metadata):
        other = await backend.get(other_key, scope=scope)
        if other is not None and key in related_keys(other.metadata):
            batch.append(
                with_related(other, [k for k in related_keys(other.metadata) if k != key])
            )
    if batch:
        await backend.store_many(batch)
    return removed


def with_related(entry: MemoryEntry, related: Sequence[str]) -> NewEntry:
    """`entry` rewritten with other associations, keeping its value, times and expiry."""
    meta = {k: v for k, v in entry.metadata.items() if k != "related"}
    if related:
        meta["related"] = list(related)
    return NewEntry(entry.key, entry.value, meta, entry.expires_at, entry.timestamp)
