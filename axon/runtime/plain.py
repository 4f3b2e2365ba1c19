"""A memory bound to one store and an operation -> its entries as the language shows them:
remember, recall, get, list, page, count, delete, forget by filter, clear, associate,
each traced as its event (docs/language.md §4 Memory declarations and §8 Memory records).

A `PlainMemory` is built by `MemoryManager.bind` from its collaborators: the
declaration, the shared backend instance and the scope its entries are stored under
(the memory's name, or an owned scope for `session` and `ephemeral`:
`axon.memory.lifetimes`), the tracer and clock, the session's `Vectors` and
`Lifetimes`, and its counters. Expiry times are stamped from `decay:`; expired entries
are swept before the operations (`SharedBackend.maybe_sweep`). A tiered memory is one
`PlainMemory` per tier (`axon.runtime.tiered`), whose tiers count nothing themselves.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from axon.compiler.ir import IRMemory
from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.availability import keyword_fallback_warning
from axon.memory.entry import (
    Clock,
    MemoryEntry,
    NewEntry,
    matches_filters,
    matching_entries,
    shown_filters,
)
from axon.memory.links import LinkChange, MissingLinkTarget, kept_related
from axon.memory.namespaces import ROOT, Namespace
from axon.memory.versions import Version, keep_of
from axon.runtime.associations import (
    back_links,
    delete_entry,
    missing_associate,
    missing_related,
    related_keys,
)
from axon.runtime.counters import COUNTERS, TierStats
from axon.runtime.memory import (
    UNCHANGED,
    Change,
    Write,
    batch_error,
    changed_entry,
    item_error,
)
from axon.runtime.records import expiry_of, keep_duration
from axon.runtime.reporting import elapsed_ms, emit_listing, errors_named
from axon.runtime.sweeps import Lifetimes, SharedBackend
from axon.runtime.tracer import TraceEventType, Tracer
from axon.runtime.vectors import Vectors

SEMANTIC_MODES = ("semantic", "hybrid")
"""The retrieval modes that need an embedding model (else they run keyword)."""


class PlainMemory:
    """One declared memory (or one tier of a tiered memory) over one store."""

    def __init__(
        self,
        decl: IRMemory,
        shared: SharedBackend,
        scope: str,
        *,
        tracer: Tracer,
        clock: Clock,
        vectors: Vectors,
        lifetimes: Lifetimes,
        counters: TierStats | None,
        namespace: Namespace = ROOT,
    ) -> None:
        self.decl = decl
        self.shared = shared
        self.scope = scope
        """The physical scope of the entries: the name, or an owned scope (session, ephemeral),
        in `namespace` (`Namespace.scope`)."""
        self.namespace = namespace
        """The namespace this memory reads and writes in (the root: no label)."""
        self.tracer = tracer
        self.clock = clock
        self.vectors = vectors
        self.lifetimes = lifetimes
        self.counters = counters
        """This session's `stats()` counters; None for a tier (its memory counts)."""

    @property
    def name(self) -> str:
        return self.decl.name

    @property
    def backend(self) -> MemoryBackend:
        return self.shared.instance

    @property
    def backend_name(self) -> str:
        return self.shared.name

    def _count(self, counter: str, n: int = 1) -> None:
        if self.counters is not None:
            self.counters.add_all(counter, n)

    async def maybe_sweep(self, *, force: bool = False) -> int:
        """An expiry sweep of the backend when `SWEEP_INTERVAL` has passed (or `force`)."""
        return await self.shared.maybe_sweep(self.clock(), force=force)

    async def sweep(self) -> int:
        return await self.maybe_sweep(force=True)

    # ------------------------------------------------------------ writes
    async def remember(
        self,
        key: str,
        value: Any,
        metadata: Mapping[str, Any],
        *,
        expires_in: float | None = None,
        tier: str | None = None,
    ) -> MemoryEntry:
        """Store one entry; its expiry from `expiry_of` (`expires_in` seconds or `NEVER`).

        With `related` metadata, the entry and the links back from the entries it names
        are written in one `write_links` transaction (every named key must exist: else
        nothing is written), each side naming the other. Replacing an entry keeps the
        associations it had, read in that transaction, so an association made meanwhile
        by another process is kept too.
        """
        name = self.name
        if tier is not None:
            raise AxonMemoryError(
                f"memory has no tiers: cannot write to tier '{tier}'", memory=name, key=key
            )
        self._count("stores")
        await self.maybe_sweep()
        now = self.clock()
        expires_at = expiry_of(self.decl, metadata, now, expires_in)
        meta = {**metadata, "scope": self.scope}
        keep_duration(self.decl, name, key, meta, expires_at, now)
        started = time.perf_counter()
        with errors_named(name):
            given = related_keys(meta)
            if key in given:
                raise AxonMemoryError("an entry cannot be related to itself", memory=name, key=key)
            if not given:
                meta.pop("related", None)  # `related: []`: nothing to record
            try:
                done = await self.backend.write_links(
                    self.scope,
                    back_links(key, given),
                    store=NewEntry(key, value, meta, expires_at, timestamp=now),
                )
            except MissingLinkTarget as exc:
                raise missing_related(exc, name, key) from None
            stored = done.stored
            assert stored is not None
            await self.record([Version.of(stored, "remember")])
        self.written(key, value, self.decl.store, expires_at, stored.metadata, started)
        return named(stored, name)

    async def remember_many(self, writes: Sequence[Write]) -> list[MemoryEntry]:
        """Store every write in one `store_many` (one transaction on SQLite and PostgreSQL:
        all or none). Each is checked and stamped first (`batch`), so a bad one raises an
        `AxonMemoryError` naming its index before anything is written. A replaced entry
        keeps its associations, as with `remember`; a write may not make new ones
        (`related`: use `remember`). One `memory_write` event with the `count`."""
        name = self.name
        for index, write in enumerate(writes):
            if write.tier is not None:
                raise AxonMemoryError(
                    f"item {index}: memory has no tiers: cannot write to tier '{write.tier}'",
                    memory=name, key=write.key,
                )
        self._count("stores", len(writes))
        await self.maybe_sweep()
        now = self.clock()
        started = time.perf_counter()
        with errors_named(name):
            batch = await self.batch(writes, self.decl, now)
            try:
                stored = await self.backend.store_many(batch)
            except AxonMemoryError as exc:  # the backend's own checks (size caps, text)
                raise batch_error(exc, [write.key for write in writes]) from None
            await self.record([Version.of(entry, "remember") for entry in stored])
        self.batch_written(stored, self.decl.store, started)
        return [named(entry, name) for entry in stored]

    async def batch(
        self, writes: Sequence[Write], decl: IRMemory, now: float, first: int = 0
    ) -> list[NewEntry]:
        """`writes` as this store's entries, stamped `now` (expiry from `decl`, the
        memory's declaration), each replaced live entry's associations kept; raises
        `AxonMemoryError` naming the item (`first` + its place in `writes`)."""
        batch: list[NewEntry] = []
        for index, write in enumerate(writes, first):
            try:
                if "related" in write.metadata:
                    raise AxonMemoryError(
                        "remember_many makes no associations: give related to remember",
                        memory=self.name, key=write.key,
                    )
                expires_at = expiry_of(decl, write.metadata, now, write.expires_in)
                meta = {**write.metadata, "scope": self.scope}
                keep_duration(decl, self.name, write.key, meta, expires_at, now)
                old = await self.backend.get(write.key, scope=self.scope)
                meta = kept_related(
                    meta, None if old is None else old.metadata, memory=self.name, key=write.key
                )
            except AxonMemoryError as exc:
                raise item_error(index, exc) from None
            batch.append(NewEntry(write.key, write.value, meta, expires_at, timestamp=now))
        return batch

    def batch_written(
        self, stored: Sequence[MemoryEntry], store: str, started: float, **data: Any
    ) -> None:
        """After `remember_many` stored `stored` here: wake the vector worker, record the
        ephemeral writes, emit one `memory_write` event (`op: remember_many`, `count`)."""
        self.vectors.wrote(self.backend, self.scope)
        if store == "ephemeral":
            for entry in stored:
                self.lifetimes.written(self.name, self.shared, self.scope, entry.key)
        self.tracer.emit(
            TraceEventType.MEMORY_WRITE,
            data={
                "op": "remember_many",
                "count": len(stored),
                "memory": self.name,
                "backend": self.backend_name,
                "store": store,
                **data,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )

    def written(
        self,
        key: str,
        value: Any,
        store: str,
        expires_at: float | None,
        meta: Mapping[str, Any],
        started: float,
        tier: str | None = None,
    ) -> None:
        """After a remember stored `key` here: wake the vector worker, record an ephemeral
        write for its flow's end, emit `memory_write` (with `tier` for a tier's write)."""
        self.vectors.wrote(self.backend, self.scope)
        if store == "ephemeral":
            self.lifetimes.written(self.name, self.shared, self.scope, key)
        self.tracer.emit(
            TraceEventType.MEMORY_WRITE,
            data={
                "key": key,
                "value_type": type(value).__name__,
                "memory": self.name,
                "backend": self.backend_name,
                "store": store,
                **({"tier": tier} if tier is not None else {}),
                "expires_at": expires_at,
                **({"type": meta["type"]} if "type" in meta else {}),
                **({"related": meta["related"]} if "related" in meta else {}),
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )

    async def associate(self, a: str, b: str) -> None:
        """Associate the entries under `a` and `b`, both ways (`related` metadata of each).

        Both must be stored (unexpired) and differ; the `related` of each gains the other
        in one `write_links` transaction, nothing else of them changes (values, times,
        expiry), and a link that would push either one's metadata past the 1 MB cap
        changes neither. One `memory_write` event (`op: associate`). Associating twice
        changes nothing.
        """
        name = self.name
        await self.maybe_sweep()
        if a == b:
            raise AxonMemoryError("an entry cannot be related to itself", memory=name, key=a)
        started = time.perf_counter()
        with errors_named(name):
            try:
                done = await self.backend.write_links(
                    self.scope, [LinkChange(a, add=(b,)), LinkChange(b, add=(a,))]
                )
            except MissingLinkTarget as exc:
                raise missing_associate(exc, name) from None
        self.tracer.emit(
            TraceEventType.MEMORY_WRITE,
            data={
                "op": "associate",
                "key": a,
                "related": b,
                "count": len(done.changed),
                "memory": name,
                "backend": self.backend_name,
                "store": self.decl.store,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )

    # ------------------------------------------------------------ history
    @property
    def keep(self) -> int:
        """How many earlier versions of each entry the memory keeps (`versions.keep_of`
        of its `history:`; 0: none, and no version is recorded)."""
        return keep_of(self.decl.history)

    async def record(self, versions: list[Version]) -> None:
        """Record what a write just did in the entries' history (`history:` memories):
        `MemoryBackend.record_versions`, right after the write it records."""
        if self.keep and versions:
            await self.backend.record_versions(self.scope, versions, self.keep)

    async def history(self, key: str) -> list[Version]:
        """See `Memory.history`."""
        if self.decl.history is None:
            raise AxonMemoryError(
                "the memory keeps no history: declare history: N (or history: all)",
                memory=self.name, key=key,
            )
        started = time.perf_counter()
        with errors_named(self.name):
            versions = await self.backend.history(key, self.scope)
        self.tracer.emit(
            TraceEventType.MEMORY_READ,
            data={
                "op": "history",
                "key": key,
                "results_count": len(versions),
                "memory": self.name,
                "backend": self.backend_name,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return versions

    async def purge_history(self) -> int:
        """See `Memory.purge_history`."""
        started = time.perf_counter()
        with errors_named(self.name):
            count = await self.backend.purge_history(self.scope)
        self.tracer.emit(
            TraceEventType.MEMORY_CLEAR,
            data={"op": "purge_history", "memory": self.name, "backend": self.backend_name,
                  "count": count, "duration_ms": elapsed_ms(started)},
            duration_ms=elapsed_ms(started),
        )
        return count

    async def clear(self) -> int:
        started = time.perf_counter()
        with errors_named(self.name):
            count = await self.backend.clear(scope=self.scope)
        self._count("forgets", count)
        self.tracer.emit(
            TraceEventType.MEMORY_CLEAR,
            data={"memory": self.name, "backend": self.backend_name, "count": count,
                  "duration_ms": elapsed_ms(started)},
            duration_ms=elapsed_ms(started),
        )
        return count

    async def update(self, key: str, change: Change) -> MemoryEntry:
        """See `Memory.update`: `changed` in one backend transaction, then a
        `memory_update` event."""
        started = time.perf_counter()
        await self.maybe_sweep()
        done = await self.changed(key, change)
        self.tracer.emit(
            TraceEventType.MEMORY_UPDATE,
            data={
                "key": key,
                "fields": change.fields(),
                "memory": self.name,
                "backend": self.backend_name,
                "store": self.decl.store,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return named(done, self.name)

    async def changed(self, key: str, change: Change) -> MemoryEntry:
        """The entry under `key` changed as `change` says (`MemoryBackend.update`: read,
        built and written in one transaction), without an event; no entry is an
        `AxonMemoryError` naming the memory and the key."""
        name = self.name
        now = self.clock()

        def build(old: MemoryEntry) -> NewEntry:
            return changed_entry(self.decl, name, key, old, change, now)

        with errors_named(name):
            done = await self.backend.update(key, self.scope, build)
            if done is not None:
                await self.record([Version.of(done, "update")])
        if done is None:
            raise AxonMemoryError(
                "no entry to update (update changes a stored entry; remember writes one)",
                memory=name,
                key=key,
            )
        if change.value is not UNCHANGED:
            self.vectors.wrote(self.backend, self.scope)  # its vector is computed again
        return done

    async def delete(self, key: str) -> bool:
        """Remove the entry under `key`; True when there was one. A `memory_delete` event.

        The path of every delete (the handle's `delete`, the `forget` statement): the
        entries associated with `key` stop naming it, in the same transaction
        (`associations.delete_entry`).
        """
        started = time.perf_counter()
        with errors_named(self.name):
            removed = await delete_entry(self.backend, key, self.scope)
            if removed:
                await self.record([Version.forget(key, self.clock())])
        self._count("forgets", int(removed))
        self.tracer.emit(
            TraceEventType.MEMORY_DELETE,
            data={
                "key": key,
                "count": int(removed),
                "memory": self.name,
                "backend": self.backend_name,
                "store": self.decl.store,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return removed

    async def delete_matching(self, filters: Mapping[str, Any]) -> int:
        """Remove every unexpired entry whose metadata matches `filters` (as recall's and
        `list_matching`'s); returns how many went. One `memory_delete` event with the filter.

        Built from the backends' public methods, list then delete, so it is not atomic:
        the matching keys are read first (page by page, before anything is deleted, so
        no page shifts under the reader), then deleted one by one. In one session that
        is exact (its calls are serialised). A writer in another process between the two
        phases can make it miss an entry added meanwhile, or delete an entry that was
        replaced meanwhile by one that no longer matches. Only this memory's own scope
        is read: a session or ephemeral memory loses only this session's entries. A
        storage error part way raises; what was deleted before it stays deleted.
        """
        name = self.name
        if not filters:  # the checker and the callers never ask for this: refuse it here too
            raise AxonMemoryError(
                "forget with an empty filter would delete everything", memory=name
            )
        await self.maybe_sweep()
        started = time.perf_counter()
        keys: list[str] = []
        with errors_named(name):
            stored = stored_filters(filters, name)
            if stored is not None:
                found = await self.backend.list_matching(self.scope, stored)
                keys = [entry.key for entry in found]
            gone: list[str] = []
            for key in keys:  # one by one through delete_entry: associations go too
                if await delete_entry(self.backend, key, self.scope):
                    gone.append(key)
            deleted = len(gone)
            now = self.clock()
            await self.record([Version.forget(key, now) for key in gone])
        self._count("forgets", deleted)
        self.tracer.emit(
            TraceEventType.MEMORY_DELETE,
            data={
                "filter": dict(filters),
                "count": deleted,
                "memory": name,
                "backend": self.backend_name,
                "store": self.decl.store,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return deleted

    # ------------------------------------------------------------ reads
    def effective_mode(self, mode: str) -> str:
        """The retrieval mode that will run: semantic modes need an embedding model."""
        if mode in SEMANTIC_MODES and self.backend.embedder is None:
            return "keyword"
        return mode

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
        """The results, the mode that produced them, how many entries of the memory were
        still without a vector after waiting at most `embed_wait` seconds for them (None:
        the session's `statement_wait`), and how many of the `top_k` nearest scored below
        the floor (`min_score`, None: the default floor; `scores.cut_at_floor`). One
        `memory_read` event."""
        if tiers is not None:
            raise AxonMemoryError("memory has no tiers: cannot recall from tiers", memory=self.name)
        self._count("recalls")
        started = time.perf_counter()
        results, effective, data, pending = await self.search(
            query, top_k, mode, filters, embed_wait=embed_wait, min_score=min_score
        )
        results = await self.refreshed(results)
        data["duration_ms"] = elapsed_ms(started)
        self.tracer.emit(TraceEventType.MEMORY_READ, data=data, duration_ms=elapsed_ms(started))
        return results, effective, pending, data["below_floor"]

    async def search(
        self,
        query: str,
        top_k: int,
        mode: str,
        filters: Mapping[str, Any] | None,
        *,
        embed_wait: float | None = None,
        min_score: float | None = None,
    ) -> tuple[list[MemoryEntry], str, dict[str, Any], int]:
        """The recall of this store without its event: results, mode, the event's data
        (with `below_floor`) and how many of its entries were still without a vector (see
        `recall`). A tiered memory's recall runs this on each tier."""
        name = self.name
        backend = self.backend
        await self.maybe_sweep()
        if mode in SEMANTIC_MODES and backend.embedder is None:
            # An override (`with { retrieval: semantic }`) gets the model it asks for.
            backend.embedder = self.vectors.embedder()
        effective = self.effective_mode(mode)
        started = time.perf_counter()
        pending = 0
        if effective in SEMANTIC_MODES:
            # Also what other processes wrote: the worker asks the store what is pending.
            worker = self.vectors.background(backend, self.scope)
            if worker is not None:
                budget = self.vectors.statement_wait if embed_wait is None else embed_wait
                with errors_named(name):
                    pending = await worker.wait(backend, self.scope, budget, name=name)
        physical_filters = dict(filters) if filters else None
        if physical_filters is not None and physical_filters.get("scope") == name:
            physical_filters["scope"] = self.scope
        with errors_named(name):
            found = await backend.retrieve_counted(
                query,
                top_k,
                self.scope,
                mode=effective,
                filters=physical_filters,
                linked=self.decl.link == "sequence",
                min_score=min_score,
            )
        results = [named(entry, name) for entry in found.entries]
        data: dict[str, Any] = {
            "query": query,
            "results_count": len(results),
            "top_k": top_k,
            "below_floor": found.below_floor,
            **({"min_score": min_score} if min_score is not None else {}),
            "memory": name,
            "backend": self.backend_name,
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
            if name not in self.vectors.fallback_warned:  # once per memory and session
                self.vectors.fallback_warned.add(name)
                data["warning"] = keyword_fallback_warning(name, mode) or data["note"]
        if filters:
            data["filters"] = shown_filters(filters)
        return results, effective, data, pending

    async def get(self, key: str) -> MemoryEntry | None:
        """The unexpired entry under `key`, or None; a `memory_read` event (`op: get`)."""
        await self.maybe_sweep()
        started = time.perf_counter()
        with errors_named(self.name):
            found = await self.backend.get(key, scope=self.scope)
        if found is not None:
            [found] = await self.refreshed([found])
        self.tracer.emit(
            TraceEventType.MEMORY_READ,
            data={
                "op": "get",
                "query": key,
                "key": key,
                "results_count": int(found is not None),
                "top_k": 1,
                "memory": self.name,
                "backend": self.backend_name,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return None if found is None else named(found, self.name)

    async def refreshed(self, entries: list[MemoryEntry]) -> list[MemoryEntry]:
        """`entries` a get or a recall returns from this store: on a memory with
        `refresh_on_read`, their expiry restarted as if written now (one
        `MemoryBackend.restart_expiry` of their keys; an entry that keeps no duration,
        see `records.keep_duration`, keeps its expiry) and shown with it; else as they are.
        """
        if not self.decl.refresh_on_read or not entries:
            return entries
        with errors_named(self.name):
            restarted = await self.backend.restart_expiry(
                self.scope, [entry.key for entry in entries]
            )
        return [
            dataclasses.replace(entry, expires_at=restarted[entry.key])
            if entry.key in restarted
            else entry
            for entry in entries
        ]

    async def associated(self, entry: MemoryEntry) -> list[MemoryEntry]:
        """The stored (unexpired) entries `entry` is associated with, in its `related`
        order; keys whose entry has gone (expired) are skipped."""
        found: list[MemoryEntry] = []
        with errors_named(self.name):
            for key in related_keys(entry.metadata):
                other = await self.backend.get(key, scope=self.scope)
                if other is not None:
                    found.append(named(other, self.name))
        return found

    async def list_matching(
        self, limit: int | None = None, filters: Mapping[str, Any] | None = None
    ) -> list[MemoryEntry]:
        """Unexpired entries, newest first, those matching `filters` (as recall's), at most
        `limit`; a `memory_read` event (`op: list`). The backend filters
        (`MemoryBackend.list_matching`: SQLite and PostgreSQL in their query)."""
        name = self.name
        await self.maybe_sweep()
        started = time.perf_counter()
        with errors_named(name):
            stored = stored_filters(filters, name) if filters else None
            if not filters:
                found = await self.backend.list_entries(scope=self.scope, limit=limit)
            elif stored is None:
                found = []
            else:
                found = await self.backend.list_matching(self.scope, stored, limit=limit)
            entries = [named(entry, name) for entry in found]
        emit_listing(
            self.tracer, "list", name, count=len(entries), limit=limit,
            backend=self.backend_name, filters=filters, started=started,
        )
        return entries

    async def page_matching(
        self, limit: int, after: str | None, filters: Mapping[str, Any] | None = None
    ) -> tuple[list[MemoryEntry], str | None]:
        """One keyset page (`MemoryBackend.list_page`) of `limit` entries, newest first,
        those matching `filters` kept, and the cursor of the next page (None: the last).

        With a filter a page may hold fewer than `limit` entries (even none) before
        the listing ends. A `memory_read` event (`op: page`)."""
        name = self.name
        await self.maybe_sweep()
        started = time.perf_counter()
        with errors_named(name):
            page = await self.backend.list_page(self.scope, limit=limit, after=after)
        entries = matching_entries(
            [named(entry, name) for entry in page.entries], filters, self.clock()
        )
        emit_listing(
            self.tracer, "page", name, count=len(entries), limit=limit,
            backend=self.backend_name, filters=filters, started=started,
            more=page.cursor is not None,
        )
        return entries, page.cursor

    async def count(self) -> int:
        with errors_named(self.name):
            return await self.backend.count(scope=self.scope)

    async def entries(self, limit: int | None = None) -> list[MemoryEntry]:
        with errors_named(self.name):
            found = await self.backend.list_entries(scope=self.scope, limit=limit)
        return [named(entry, self.name) for entry in found]

    # ------------------------------------------------------------ vectors, stats, stores
    async def embed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Compute every pending vector now; returns how many.

        0 for a memory whose recall uses no vectors, or when no model is available.
        `progress(done, total)` is told after each batch.
        """
        if self.decl.retrieval not in SEMANTIC_MODES:
            return 0
        worker = self.vectors.background(self.backend, self.scope)
        if worker is None:
            return 0
        with errors_named(self.name):
            return await worker.embed_all(self.backend, self.scope, progress)

    async def resume_vectors(self) -> int:
        """Hand the entries without a vector to the background worker (after entries were
        written around the memory: an import); returns how many are pending.

        0 for a memory whose recall uses no vectors, or when no model is available. The
        worker computes them while the session goes on; a recall waits as always.
        """
        if self.decl.retrieval not in SEMANTIC_MODES:
            return 0
        if self.vectors.background(self.backend, self.scope) is None:
            return 0
        embedder = self.backend.embedder
        assert embedder is not None  # a worker is only made with a model
        with errors_named(self.name):
            found = await self.backend._pending_texts(self.scope, embedder.model_id)
        return len(found)

    def stats(self) -> dict[str, dict[str, int]]:
        """Its one tier, its `store`: `stores`, `recalls`, `forgets`, `promotions`,
        `demotions`, counted in this session only."""
        if self.counters is None:
            return {self.decl.store: dict.fromkeys(COUNTERS, 0)}
        return self.counters.snapshot()

    async def sources(self) -> list[tuple[MemoryBackend, str]]:
        return [(self.backend, self.scope)]

    async def place(self, key: str, metadata: Mapping[str, Any]) -> tuple[MemoryBackend, str]:
        return self.backend, self.scope

    async def flush(self) -> None:
        return None


def stored_filters(filters: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """`filters` as the backend tests them on stored metadata; None when no entry can match.

    The language shows `metadata["scope"]` as the memory's name (`named`), whatever
    scope the backend stores: a `scope` filter is decided here, once, on that name.
    """
    rest = {field: wanted for field, wanted in filters.items() if field != "scope"}
    if len(rest) < len(filters) and not matches_filters(
        {"scope": name}, {"scope": filters["scope"]}
    ):
        return None
    return rest


def named(entry: MemoryEntry, name: str) -> MemoryEntry:
    """`entry` as the language shows it: `metadata["scope"]` is the memory's name."""
    if entry.metadata.get("scope") == name:
        return entry
    return dataclasses.replace(entry, metadata={**entry.metadata, "scope": name})
