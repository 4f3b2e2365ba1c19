"""A declared memory and a query or listing -> its unexpired entries, as the language
shows them: recall, get, list, page, count, each traced as a `memory_read` event.

`MemoryManager` keeps binding and writes; its read operations are these, kept apart
so that each module stays small. Each function takes the manager that owns the
memory (its bindings, expiry sweeps, vector worker and counters); a tiered memory's
reads go on to `axon.runtime.tiered_ops`. `_named` and `_stored_filters` are shared
with the manager's writes: they map the physical scope a backend stores to the
memory's name the language shows.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from axon.errors import AxonMemoryError
from axon.memory.embeddings.availability import keyword_fallback_warning
from axon.memory.entry import MemoryEntry, matches_filters
from axon.runtime import tiered_ops
from axon.runtime import tiers as tiering
from axon.runtime.reporting import elapsed_ms, emit_listing, errors_named
from axon.runtime.tracer import TraceEventType

if TYPE_CHECKING:
    from axon.runtime.manager import BoundMemory, MemoryManager


async def recall_pending(
    manager: MemoryManager,
    name: str,
    query: str,
    top_k: int,
    mode: str,
    filters: Mapping[str, Any] | None = None,
    *,
    tiers: Sequence[str] | None = None,
    embed_wait: float | None = None,
    min_score: float | None = None,
) -> tuple[list[MemoryEntry], str, int, int]:
    """`recall`, how many entries of the memory were still without a vector after
    waiting at most `embed_wait` seconds for them (None: `statement_embed_wait`), and
    how many of the `top_k` nearest scored below the floor (`min_score`, None: the
    default floor; the event's `below_floor`, `scores.cut_at_floor`)."""
    tiered = manager.tiered.get(name)
    if tiered is not None:
        return await tiered_ops.recall(manager,
            tiered, query, top_k, mode, filters, tiers, embed_wait=embed_wait,
            min_score=min_score,
        )
    if tiers is not None:
        raise AxonMemoryError("memory has no tiers: cannot recall from tiers", memory=name)
    manager._count(name, "recalls")
    started = time.perf_counter()
    results, effective, data, pending = await manager.recall_one(
        manager.get(name), query, top_k, mode, filters, embed_wait=embed_wait,
        min_score=min_score,
    )
    data["duration_ms"] = elapsed_ms(started)
    manager.tracer.emit(TraceEventType.MEMORY_READ, data=data, duration_ms=elapsed_ms(started))
    return results, effective, pending, data["below_floor"]


async def recall_one(
    manager: MemoryManager,
    bound: BoundMemory,
    query: str,
    top_k: int,
    mode: str,
    filters: Mapping[str, Any] | None,
    *,
    embed_wait: float | None = None,
    min_score: float | None = None,
) -> tuple[list[MemoryEntry], str, dict[str, Any], int]:
    """One memory's (or one tier's) recall: results, mode, its event's data (with
    `below_floor`) and how many of its entries were still without a vector (see
    `recall_pending`)."""
    name = bound.name
    await manager.maybe_sweep(bound)
    if mode in ("semantic", "hybrid") and bound.backend.embedder is None:
        # An override (`with { retrieval: semantic }`) gets the model it asks for.
        bound.backend.embedder = manager.embedder()
    effective = manager.effective_mode(bound, mode)
    started = time.perf_counter()
    pending = 0
    if effective in ("semantic", "hybrid"):
        # Also what other processes wrote: the worker asks the store what is pending.
        worker = manager._background_vectors(bound)
        if worker is not None:
            budget = manager.statement_embed_wait if embed_wait is None else embed_wait
            with errors_named(name):
                pending = await worker.wait(bound.backend, bound.scope, budget, name=name)
    physical_filters = dict(filters) if filters else None
    if physical_filters is not None and physical_filters.get("scope") == name:
        physical_filters["scope"] = bound.scope
    with errors_named(name):
        found = await bound.backend.retrieve_counted(
            query,
            top_k,
            bound.scope,
            mode=effective,
            filters=physical_filters,
            linked=bound.decl.link == "sequence",
            min_score=min_score,
        )
    results = [_named(entry, name) for entry in found.entries]
    data: dict[str, Any] = {
        "query": query,
        "results_count": len(results),
        "top_k": top_k,
        "below_floor": found.below_floor,
        **({"min_score": min_score} if min_score is not None else {}),
        "memory": name,
        "backend": bound.backend_key[0],
        "retrieval": effective,
        "results": [
            {"key": r.key, "score": r.score, **({"signals": r.signals} if r.signals else {})}
            for r in results
        ],
        "duration_ms": elapsed_ms(started),
    }
    if pending:
        data["pending_vectors"] = pending
    if effective != mode:
        data["requested_retrieval"] = mode
        data["note"] = "no embedding model available: fell back to keyword retrieval"
        if name not in manager._fallback_warned:  # once per memory and session
            manager._fallback_warned.add(name)
            data["warning"] = keyword_fallback_warning(name, mode) or data["note"]
    if filters:
        data["filters"] = dict(filters)
    return results, effective, data, pending


async def get_entry(manager: MemoryManager, name: str, key: str) -> MemoryEntry | None:
    """The unexpired entry under `key`, or None; a `memory_read` event (`op: get`).

    In a tiered memory the entry is looked for in every tier (its metadata says
    which holds it: `tier`)."""
    bound = manager.get(name)
    await manager.maybe_sweep(bound)
    started = time.perf_counter()
    tiered = manager.tiered.get(name)
    if tiered is not None:
        with errors_named(name):
            await tiered_ops.maintain(manager, tiered)
            where = await tiering.find(tiered, key)
            await tiering.flush_stats(tiered)
        if where is not None:
            tiered.used[key] = manager.clock()
        manager.tracer.emit(
            TraceEventType.MEMORY_READ,
            data={
                "op": "get", "query": key, "key": key,
                "results_count": int(where is not None), "top_k": 1, "memory": name,
                "backend": bound.backend_key[0],
                **({"tier": where[0]} if where is not None else {}),
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return None if where is None else tiering.located(where[1], name, where[0])
    with errors_named(name):
        found = await bound.backend.get(key, scope=bound.scope)
    manager.tracer.emit(
        TraceEventType.MEMORY_READ,
        data={
            "op": "get",
            "query": key,
            "key": key,
            "results_count": int(found is not None),
            "top_k": 1,
            "memory": name,
            "backend": bound.backend_key[0],
            "duration_ms": elapsed_ms(started),
        },
        duration_ms=elapsed_ms(started),
    )
    return None if found is None else _named(found, name)


async def list_matching(
    manager: MemoryManager,
    name: str,
    limit: int | None = None,
    filters: Mapping[str, Any] | None = None,
) -> list[MemoryEntry]:
    """Unexpired entries, newest first, those matching `filters` (as recall's), at most
    `limit`; a `memory_read` event (`op: list`). The backend filters
    (`MemoryBackend.list_matching`: SQLite and PostgreSQL in their query).
    A tiered memory lists every tier (one event per tier), newest first overall."""
    tiered = manager.tiered.get(name)
    if tiered is not None:
        await tiered_ops.maintain(manager, tiered, flush=True)

        async def read() -> list[tuple[str, MemoryEntry]]:
            listed: list[tuple[str, MemoryEntry]] = []
            for tier, one in tiered.tiers.items():
                with manager._as_tier(name, one):
                    listed += [(tier, e) for e in await manager.list_matching(name, limit, filters)]
            return listed

        with errors_named(name):
            per_tier = await tiering.read_once(tiered, read, tiering.copies)
        return tiered_ops.merged(per_tier, limit)
    bound = manager.get(name)
    await manager.maybe_sweep(bound)
    started = time.perf_counter()
    with errors_named(name):
        stored = _stored_filters(filters, name) if filters else None
        if not filters:
            found = await bound.backend.list_entries(scope=bound.scope, limit=limit)
        elif stored is None:
            found = []
        else:
            found = await bound.backend.list_matching(bound.scope, stored, limit=limit)
        entries = [_named(entry, name) for entry in found]
    emit_listing(
        manager.tracer, "list", name, count=len(entries), limit=limit,
        backend=bound.backend_key[0], filters=filters, started=started,
    )
    return entries


async def page_matching(
    manager: MemoryManager,
    name: str,
    limit: int,
    after: str | None,
    filters: Mapping[str, Any] | None = None,
) -> tuple[list[MemoryEntry], str | None]:
    """One keyset page (`MemoryBackend.list_page`) of `limit` entries, newest first,
    those matching `filters` kept, and the cursor of the next page (None: the last).

    With a filter a page may hold fewer than `limit` entries (even none) before
    the listing ends. A `memory_read` event (`op: page`). A tiered memory pages
    through every tier (`tiered_ops.page`)."""
    tiered = manager.tiered.get(name)
    if tiered is not None:
        return await tiered_ops.page(manager, tiered, limit, after, filters)
    bound = manager.get(name)
    await manager.maybe_sweep(bound)
    started = time.perf_counter()
    with errors_named(name):
        page = await bound.backend.list_page(bound.scope, limit=limit, after=after)
    entries = [_named(entry, name) for entry in page.entries]
    if filters:
        entries = [entry for entry in entries if matches_filters(entry.metadata, filters)]
    emit_listing(
        manager.tracer, "page", name, count=len(entries), limit=limit,
        backend=bound.backend_key[0], filters=filters, started=started,
        more=page.cursor is not None,
    )
    return entries, page.cursor


async def count(manager: MemoryManager, name: str) -> int:
    tiered = manager.tiered.get(name)
    if tiered is not None:
        await tiered_ops.maintain(manager, tiered, flush=True)
        with errors_named(name):
            await tiering.reconcile(tiered)  # a key held by two tiers counts once
        total = 0
        for one in tiered.tiers.values():
            with manager._as_tier(name, one):
                total += await manager.count(name)
        return total
    bound = manager.get(name)
    with errors_named(name):
        return await bound.backend.count(scope=bound.scope)


async def entries(manager: MemoryManager, name: str, limit: int | None = None) -> list[MemoryEntry]:
    tiered = manager.tiered.get(name)
    if tiered is not None:

        async def read() -> list[tuple[str, MemoryEntry]]:
            found: list[tuple[str, MemoryEntry]] = []
            for tier, one in tiered.tiers.items():
                with manager._as_tier(name, one):
                    found += [(tier, e) for e in await manager.entries(name, limit)]
            return found

        with errors_named(name):
            return tiered_ops.merged(await tiering.read_once(tiered, read, tiering.copies), limit)
    bound = manager.get(name)
    with errors_named(name):
        entries = await bound.backend.list_entries(scope=bound.scope, limit=limit)
    return [_named(entry, name) for entry in entries]


def _stored_filters(filters: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """`filters` as the backend tests them on stored metadata; None when no entry can match.

    The language shows `metadata["scope"]` as the memory's name (`_named`), whatever
    scope the backend stores: a `scope` filter is decided here, once, on that name.
    """
    rest = {field: wanted for field, wanted in filters.items() if field != "scope"}
    if len(rest) < len(filters) and not matches_filters(
        {"scope": name}, {"scope": filters["scope"]}
    ):
        return None
    return rest


def _named(entry: MemoryEntry, name: str) -> MemoryEntry:
    """`entry` as the language shows it: `metadata["scope"]` is the memory's name."""
    if entry.metadata.get("scope") == name:
        return entry
    return dataclasses.replace(entry, metadata={**entry.metadata, "scope": name})
