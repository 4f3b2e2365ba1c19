"""What a bound memory answers: the `Memory` protocol every operation on a declared memory
goes through (the executor, the handles, the REPL, the MCP server).

`MemoryManager[name]` hands one out: a `PlainMemory` (`axon.runtime.plain`: one store)
or a `TieredMemory` (`axon.runtime.tiered`: one `PlainMemory` per tier and the tier
rules). Callers never ask which: both answer every operation, each traced as its
event, errors naming the memory (docs/language.md §4 Memory declarations and
§9 Tiered memories).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from axon.compiler.ir import IRMemory
from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.entry import DEFAULT_IMPORTANCE, EXPIRY_DURATION, MemoryEntry, NewEntry
from axon.memory.versions import Version
from axon.runtime.records import duration_given, expiry_of, keep_duration


@attrs.frozen
class Write:
    """One entry of `Memory.remember_many`: what `Memory.remember` takes for one entry."""

    key: str
    value: Any
    metadata: Mapping[str, Any]
    expires_in: float | None = None
    tier: str | None = None


class _Unchanged:
    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED: Any = _Unchanged()
"""A `Change` field left as it is (None is a value, and `expires_in=None` is "never")."""

KEPT_METADATA = ("scope", "source", "tags", "importance", "type", "related", "tier")
"""Metadata that is not free: the runtime's and the options' own fields (`related`
stays). `Change.metadata` replaces the others; on a `refresh_on_read` memory the
expiry duration (`EXPIRY_DURATION`) is the runtime's too (`changed_metadata`)."""


@attrs.frozen
class Change:
    """What `Memory.update` changes of a stored entry; a field left `UNCHANGED` (or None
    for `metadata`, `tags`, `importance`, `type`) stays as it is. `metadata` replaces
    the free fields (not `KEPT_METADATA`, nor a `refresh_on_read` memory's expiry
    duration: `changed_entry`); `tags=[]` leaves none; `expires_in` is seconds from
    the update (`math.inf`: never), as `remember`'s."""

    value: Any = UNCHANGED
    metadata: Mapping[str, Any] | None = None
    tags: Sequence[str] | None = None
    importance: float | None = None
    type: str | None = None
    expires_in: Any = UNCHANGED

    def fields(self) -> list[str]:
        """The names of the fields this change gives, in declaration order."""
        given = {
            "value": self.value is not UNCHANGED,
            "metadata": self.metadata is not None,
            "tags": self.tags is not None,
            "importance": self.importance is not None,
            "type": self.type is not None,
            "expires_in": self.expires_in is not UNCHANGED,
        }
        return [name for name, there in given.items() if there]


def changed_metadata(
    metadata: Mapping[str, Any], change: Change, *, refresh_on_read: bool = True
) -> dict[str, Any]:
    """An entry's `metadata` as `change` leaves it (its expiry apart): free fields
    replaced when given, then tags, importance and type; a `type` on an entry without
    importance gives it normal's, as a record.

    With `refresh_on_read` (the memory's field) the expiry duration the entry keeps
    (`EXPIRY_DURATION`) is not free: it stays when `metadata` is replaced (`changed_entry`
    resets it when `expires_in` is given). Without, `expires_in` is a free field like
    any other, replaced with them (docs/language.md §4.1 Refresh on read)."""
    meta = dict(metadata)
    if change.metadata is not None:
        kept = (*KEPT_METADATA, EXPIRY_DURATION) if refresh_on_read else KEPT_METADATA
        meta = {k: v for k, v in meta.items() if k in kept}
        meta.update(change.metadata)
    if change.tags is not None:
        meta["tags"] = list(change.tags)
    if change.importance is not None:
        meta["importance"] = change.importance
    if change.type is not None:
        meta["type"] = change.type
        meta.setdefault("importance", DEFAULT_IMPORTANCE)
    return meta


def changed_entry(
    decl: IRMemory, memory: str, key: str, old: MemoryEntry, change: Change, now: float
) -> NewEntry:
    """The entry `MemoryBackend.update` writes over `old` (the live entry under `key`)
    for `change` made at `now`: value and metadata as `change` says (`changed_metadata`),
    the expiry kept unless `expires_in` is given (then `expiry_of` from `now`).

    On a `refresh_on_read` memory the entry's expiry duration (`EXPIRY_DURATION`) follows
    its expiry: kept by every change that gives no `expires_in` (metadata, tags,
    importance, type, value), the new duration when one is given, none for "never";
    metadata giving `expires_in` is an `AxonMemoryError` naming the memory and the key,
    as in a remember (`keep_duration`). On another memory `expires_in` in metadata is a
    free field: replaced with the others, kept when the expiry changes."""
    refresh = decl.refresh_on_read
    if refresh and change.metadata is not None and EXPIRY_DURATION in change.metadata:
        raise duration_given(memory, key)
    meta = changed_metadata(old.metadata, change, refresh_on_read=refresh)
    expires_at = old.expires_at
    if change.expires_in is not UNCHANGED:
        expires_at = expiry_of(decl, meta, now, change.expires_in)
        if refresh:
            meta.pop(EXPIRY_DURATION, None)
            keep_duration(decl, memory, key, meta, expires_at, now)
    value = old.value if change.value is UNCHANGED else change.value
    return NewEntry(key, value, meta, expires_at)


def item_error(index: int, exc: AxonMemoryError) -> AxonMemoryError:
    """`exc` raised for item `index` of a batch: the same error, its message naming the item."""
    return AxonMemoryError(f"item {index}: {exc.message}", memory=exc.memory, key=exc.key)


def batch_error(exc: AxonMemoryError, keys: Sequence[str], first: int = 0) -> AxonMemoryError:
    """`exc` raised by a batched write of `keys` (items `first` on): named by the item of
    the key it names (the first with that key), else as it is."""
    if exc.key is None or exc.key not in keys:
        return exc
    return item_error(first + list(keys).index(exc.key), exc)


class Memory(Protocol):
    """One declared memory of a session, bound to its store (or stores, one per tier)."""

    @property
    def name(self) -> str: ...

    @property
    def decl(self) -> IRMemory:
        """The memory's declaration, as the checker made it."""
        ...

    @property
    def backend(self) -> MemoryBackend:
        """The backend a write goes to when it names no tier (the `store:` tier's)."""
        ...

    async def remember(
        self,
        key: str,
        value: Any,
        metadata: Mapping[str, Any],
        *,
        expires_in: float | None = None,
        tier: str | None = None,
    ) -> MemoryEntry:
        """Store one entry (`tier`: `with { tier: ... }`, tiered memories only)."""
        ...

    async def update(self, key: str, change: Change) -> MemoryEntry:
        """Change the stored entry under `key` (in the tier holding it) as `change` says,
        in one backend transaction (`MemoryBackend.update`): `created_at` and what is
        not given stay, `updated_at` is now. No entry: an `AxonMemoryError` naming the
        memory and the key. One `memory_update` event with the `fields` changed."""
        ...

    async def remember_many(self, writes: Sequence[Write]) -> list[MemoryEntry]:
        """Store every write, all or none (a bad one is an `AxonMemoryError` naming its
        index, before anything is written): one batched write per store. One
        `memory_write` event (`op: remember_many`) with the `count`."""
        ...

    async def recall(
        self,
        query: str,
        top_k: int,
        mode: str,
        filters: Mapping[str, Any] | None = None,
        *,
        tiers: Sequence[str] | None = None,
        embed_wait: float | None = None,
        min_score: float | None = None,
    ) -> tuple[list[MemoryEntry], str, int, int]:
        """The results of a recall, the retrieval mode that produced them, how many
        entries were still without a vector after waiting at most `embed_wait` seconds
        (None: the session's budget of a recall statement) and how many of the `top_k`
        nearest scored below the floor (`min_score`, None: the default floor). `tiers`
        is `with { tiers: [...] }`, tiered memories only. One `memory_read` event."""
        ...

    async def get(self, key: str) -> MemoryEntry | None:
        """The unexpired entry under `key`, or None; a `memory_read` event (`op: get`)."""
        ...

    async def associated(self, entry: MemoryEntry) -> list[MemoryEntry]:
        """The stored entries `entry` is associated with, in its `related` order."""
        ...

    async def list_matching(
        self, limit: int | None = None, filters: Mapping[str, Any] | None = None
    ) -> list[MemoryEntry]:
        """Unexpired entries matching `filters`, newest first, at most `limit`."""
        ...

    async def page_matching(
        self, limit: int, after: str | None, filters: Mapping[str, Any] | None = None
    ) -> tuple[list[MemoryEntry], str | None]:
        """One page of the listing, newest first, and the cursor of the next (None: last)."""
        ...

    async def entries(self, limit: int | None = None) -> list[MemoryEntry]:
        """Unexpired entries, newest first, at most `limit` (no event)."""
        ...

    async def count(self) -> int:
        """How many unexpired entries the memory holds."""
        ...

    async def delete(self, key: str) -> bool:
        """Remove the entry under `key` and its associations; True when there was one."""
        ...

    async def delete_matching(self, filters: Mapping[str, Any]) -> int:
        """Remove every unexpired entry matching `filters` (never empty); how many went."""
        ...

    async def clear(self) -> int:
        """Delete every entry (and its history); returns how many."""
        ...

    async def history(self, key: str) -> list[Version]:
        """The versions of the entry under `key` a `history:` memory keeps, newest first
        (the current one first, a `forget` when it was forgotten); a `memory_read` event
        (`op: history`). A memory without `history:` is an `AxonMemoryError`."""
        ...

    async def purge_history(self) -> int:
        """Delete every version the memory keeps (its entries stay); how many went."""
        ...

    async def associate(self, a: str, b: str) -> None:
        """Associate the entries under `a` and `b`, both ways."""
        ...

    async def embed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Compute every pending vector now; returns how many."""
        ...

    async def resume_vectors(self) -> int:
        """Hand the entries without a vector to the background worker; how many pend."""
        ...

    def stats(self) -> dict[str, dict[str, int]]:
        """Per tier: `stores`, `recalls`, `forgets`, `promotions`, `demotions`."""
        ...

    async def sweep(self) -> int:
        """Purge expired entries now; returns how many."""
        ...

    async def sources(self) -> list[tuple[MemoryBackend, str]]:
        """Each store of the memory and the scope its entries are under (every tier of a
        tiered memory, each key held by one): what an export reads."""
        ...

    async def place(self, key: str, metadata: Mapping[str, Any]) -> tuple[MemoryBackend, str]:
        """The store and scope an entry under `key` goes to when written around the
        memory's operations (an import): where the key lives, else where a remember
        would write it."""
        ...

    async def flush(self) -> None:
        """Write back what the memory keeps in the process for its store (a tiered
        memory's persistent counters); nothing for most memories."""
        ...
