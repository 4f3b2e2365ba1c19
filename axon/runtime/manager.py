"""Declared memories -> live backends: binding, lifetimes, decay and traced operations.

`MemoryManager.bind(IRMemory)` finds the backend named by `backend:` in the
registry and shares one instance per (backend, location, memory directory);
memories are isolated inside it by scope. Every operation goes through here so
that each emits its trace event (with the memory, the backend and a duration),
expiry times are stamped from `decay:`, expired entries are swept (each purge
that removes rows is a `memory_expire` event), and `store:` lifetimes are owned
(docs/language.md, Memory declarations; `axon.memory.lifetimes`):

- `persistent`: the scope is the memory's name; entries stay.
- `session` and `ephemeral`: the scope is an owned scope naming this session
  (`Owner`), so no other session, and no persistent memory of the same name,
  sees the entries; returned entries still carry `scope: <memory name>`.
  Ephemeral entries are deleted when the flow (or top-level input) that wrote
  them ends (`push_lifetime` / `pop_lifetime`); `close()` clears this session's
  owned scopes, and only those. A session killed before closing leaves its
  owned scopes behind: the first bind to a persistent backend clears the owned
  scopes of owners that are dead (same host, process gone).

A memory that spans tiers (`tiers: [...]`) is bound as one memory per tier; its
operations across them are `axon.runtime.tiered_ops`, its policy `axon.runtime.tiers`.
The reads (recall, get, list, page, count) are `axon.runtime.reads`; the sweeps,
lifetime ends and closing are `axon.runtime.sweeps`: the methods here delegate to them.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from axon.compiler.ir import IRMemory
from axon.errors import AxonMemoryError
from axon.memory.backend import LIST_PAGE as LIST_PAGE
from axon.memory.backend import MemoryBackend, resolve_memory_dir
from axon.memory.embeddings.base import Embedder
from axon.memory.entry import Clock, MemoryEntry, NewEntry, number_text
from axon.memory.lifetimes import OWNED_MARKER, Owner, is_reserved
from axon.memory.links import LinkChange, MissingLinkTarget
from axon.memory.registry import BackendRegistry
from axon.runtime import reads, sweeps, tiered_ops
from axon.runtime import tiers as tiering
from axon.runtime.associations import (
    back_links,
    delete_entry,
    missing_associate,
    missing_related,
    related_keys,
)
from axon.runtime.reads import _named, _stored_filters
from axon.runtime.records import expiry_of
from axon.runtime.reporting import elapsed_ms, errors_named
from axon.runtime.sweeps import SWEEP_INTERVAL as SWEEP_INTERVAL
from axon.runtime.tiers import COUNTERS, Tiered, TierStats
from axon.runtime.tracer import TraceEventType, Tracer

if TYPE_CHECKING:
    from axon.memory.embeddings.worker import VectorWorker, WaitProgress

EmbedderProvider = Callable[[], Embedder | None]
"""What `Session(embedder=...)` takes besides an `Embedder`: a zero-argument callable
returning one (or None: no model, semantic memories run keyword), called once, when a
semantic or hybrid memory is first bound."""

DEFAULT_EMBED_WAIT = 0.5
"""Seconds a handle's recall waits for pending vectors by default (`Session(embed_wait=)`).

Vectors are computed in the background (`axon.memory.embeddings.worker`): a remember
never waits for the model. A recall of a semantic or hybrid memory waits for its
memory's pending vectors at most its budget; past it, it runs with the vectors there
are (entries still without one are found by keyword in hybrid recall) and its record
and `memory_read` event say how many were pending (`pending_vectors`). 0.5 s keeps the
first recall after thousands of remembers under about a second: the query embedding
itself may wait for the batch in flight. Recall statements of a program
(`Session.execute`, `axon run`) wait for every vector unless `Session(embed_wait=...)`
says otherwise, so a program's output does not depend on the machine's speed.
"""

WAIT_ALL = "all"
"""`embed_wait="all"`: wait until every pending vector of the memory is computed."""


def embed_wait_seconds(value: Any, where: str, memory: str | None = None) -> float:
    """`embed_wait` as seconds (`math.inf` for "all"); a TypeError, or an `AxonMemoryError`
    for a wrong number (a `ValueError`, one `except AxonError` away), naming `where`."""
    if value == WAIT_ALL and isinstance(value, str):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{where}: embed_wait must be a number of seconds or 'all', "
            f"not {type(value).__name__}"
        )
    try:
        seconds = float(value)
    except OverflowError:  # an int past what a float holds
        raise AxonMemoryError(
            f"{where}: embed_wait must be seconds a float can hold, got "
            f"{number_text(value)}; to wait for every vector, pass 'all'",
            memory=memory,
        ) from None
    if math.isnan(seconds) or seconds < 0:
        raise AxonMemoryError(
            f"{where}: embed_wait must be 0 or more seconds (or 'all'), got {value!r}",
            memory=memory,
        )
    return seconds


def _default_embedder() -> Embedder | None:
    from axon.memory.embeddings.default import default_embedder

    return default_embedder()


@attrs.define
class BoundMemory:
    """A declared memory and the backend instance that holds its entries."""

    decl: IRMemory
    backend: MemoryBackend
    backend_key: tuple[str, str | None, str]
    scope: str
    """The physical scope of the entries: the name, or an owned scope (session, ephemeral)."""

    @property
    def name(self) -> str:
        return self.decl.name


@attrs.define
class _BackendState:
    instance: MemoryBackend
    last_sweep: float = float("-inf")


class MemoryManager:
    """The memories of one session: binds them, runs their operations, closes them."""

    def __init__(
        self,
        *,
        registry: BackendRegistry,
        tracer: Tracer,
        clock: Clock | None = None,
        memory_dir: str | os.PathLike[str] | None = None,
        embedder: EmbedderProvider = _default_embedder,
        pg_dsn: str | None = None,
        embed_wait: float | str | None = None,
        pg_schema: str | None = None,
    ) -> None:
        self.registry = registry
        explicit = None if embed_wait is None else embed_wait_seconds(embed_wait, "Session")
        self.statement_embed_wait = math.inf if explicit is None else explicit
        """Budget of a recall statement (seconds, inf: all); see `DEFAULT_EMBED_WAIT`."""
        self.call_embed_wait = DEFAULT_EMBED_WAIT if explicit is None else explicit
        """Budget of a handle's recall that does not give one."""
        self._vectors: VectorWorker | None = None
        self.wait_progress: WaitProgress | None = None
        """What a recall waiting for pending vectors shows (`worker.WaitProgress`; the CLI's
        progress bar); None shows nothing (a library never prints)."""
        self.pg_dsn = pg_dsn
        """The server of `pgvector` memories that give no `location:` (else `AXON_PG_DSN`)."""
        self.pg_schema = pg_schema
        """The schema of every `pgvector` memory (else `AXON_PG_SCHEMA`, else `axon`)."""
        self.tracer = tracer
        self.clock: Clock = clock or time.time
        self.memory_dir = resolve_memory_dir(memory_dir)
        self._embedder_provider = embedder
        self._embedder: Embedder | None = None
        self._embedder_resolved = False
        self._backends: dict[tuple[str, str | None, str], _BackendState] = {}
        self.bound: dict[str, BoundMemory] = {}
        self._lifetimes: list[list[tuple[str, str]]] = []
        self.owner = Owner.current()
        self._fallback_warned: set[str] = set()
        self.tiered: dict[str, Tiered] = {}
        """The tiered memories (`axon.runtime.tiers`): each tier bound on its own."""
        self._counters: dict[str, TierStats] = {}
        """The `stats()` counters of the untiered memories (in-process only)."""

    # ------------------------------------------------------------ binding
    def embedder(self) -> Embedder | None:
        if not self._embedder_resolved:
            from axon.memory.embeddings.errors import EmbedderUnavailableError

            try:
                self._embedder = self._embedder_provider()
            except EmbedderUnavailableError as exc:  # e.g. AXON_EMBEDDER names no model
                raise AxonMemoryError(str(exc)) from None
            self._embedder_resolved = True
        return self._embedder

    async def bind(self, decl: IRMemory) -> BoundMemory:
        """Attach a declared memory to its backend instance (created on first use).

        A tiered memory gets one binding per tier (`_bind_tiered`); `self.bound` then
        holds its default write tier's, with the memory's own declaration.
        """
        if decl.tiers:
            return await self._bind_tiered(decl)
        bound = await self._bind_one(decl)
        self.tiered.pop(decl.name, None)
        self._counters.setdefault(decl.name, TierStats.empty([decl.store]))
        if decl.store not in self._counters[decl.name].counts:  # redeclared otherwise
            self._counters[decl.name] = TierStats.empty([decl.store])
        return bound

    async def _bind_tiered(self, decl: IRMemory) -> BoundMemory:
        """Bind each tier: `in_memory` for ephemeral and session (owned scopes), the
        memory's backend and location for persistent; then read the persistent tier's
        counters. Binding changes no entry (no demotion: `tiers.demote_idle` runs
        before the memory's operations)."""
        previous = self.bound.get(decl.name)
        bound_tiers: dict[str, BoundMemory] = {}
        try:
            for tier in decl.tiers:
                persistent = tier == "persistent"
                tier_decl = attrs.evolve(
                    decl,
                    store=tier,
                    backend=decl.backend if persistent else "in_memory",
                    location=decl.location if persistent else None,
                    tiers=(),
                    promote_after=None,
                    demote_after=None,
                    demote_after_seconds=None,
                    persist_if=None,
                )
                bound_tiers[tier] = await self._bind_one(tier_decl)
            tiered = Tiered(decl, bound_tiers, TierStats.empty(decl.tiers))
            with errors_named(decl.name):
                await tiering.load_stats(tiered)
        except BaseException:
            if previous is None:
                self.bound.pop(decl.name, None)
            else:
                self.bound[decl.name] = previous
            raise
        face = bound_tiers[decl.store]
        bound = BoundMemory(decl, face.backend, face.backend_key, face.scope)
        self.bound[decl.name] = bound
        self.tiered[decl.name] = tiered
        self._counters.pop(decl.name, None)
        return bound

    async def _bind_one(self, decl: IRMemory) -> BoundMemory:
        """Attach one memory of one lifetime (or one tier) to its backend instance."""
        if is_reserved(decl.name):
            raise AxonMemoryError(
                f"memory names may not start with '{OWNED_MARKER}' (reserved)", memory=decl.name
            )
        info = self.registry.lookup(decl.backend)
        if info is None:
            raise AxonMemoryError(f"unknown backend '{decl.backend}'", memory=decl.name)
        location = decl.location
        if location is None and info.name == "pgvector" and self.pg_dsn:
            location = self.pg_dsn
        key = (info.name, location, str(self.memory_dir))
        state = self._backends.get(key)
        fresh = state is None
        if state is None:
            cls = info.load()
            needs_embedder = decl.retrieval in ("semantic", "hybrid")
            options: dict[str, Any] = {}
            if info.name == "pgvector" and self.pg_schema is not None:
                options["schema"] = self.pg_schema
            instance = cls(
                location=location,
                memory_dir=self.memory_dir,
                clock=self.clock,
                embedder=self.embedder() if needs_embedder else None,
                **options,
            )
            state = _BackendState(instance)
            self._backends[key] = state
            instance.set_purge_listener(sweeps.purge_reporter(self, info.name))
        elif state.instance.embedder is None and decl.retrieval in ("semantic", "hybrid"):
            state.instance.embedder = self.embedder()
        owned = decl.store != "persistent"
        scope = self.owner.scope(decl.store, decl.name) if owned else decl.name
        bound = BoundMemory(decl, state.instance, key, scope)
        previous = self.bound.get(decl.name)
        self.bound[decl.name] = bound
        try:
            if fresh and (
                state.instance.capabilities.persistent or state.instance.capabilities.shared
            ):
                await sweeps.sweep_dead_owners(self, state.instance, info.name)
            await self.maybe_sweep(bound, force=state.last_sweep == float("-inf"))
        except BaseException:
            # The store could not be used (an unreachable server, a newer schema): forget
            # it, so the memory stays undeclared and closing the session does not try again.
            if previous is None:
                self.bound.pop(decl.name, None)
            else:
                self.bound[decl.name] = previous
            if fresh:
                self._backends.pop(key, None)
                with contextlib.suppress(Exception):
                    await state.instance.close()
            raise
        if decl.retrieval in ("semantic", "hybrid"):
            self._background_vectors(bound)  # resumes what a previous run left pending
        return bound

    def _background_vectors(self, bound: BoundMemory) -> VectorWorker | None:
        """Hand the vectors of `bound`'s scope to the background worker; None without a model."""
        backend = bound.backend
        if backend.embedder is None:
            return None
        if self._vectors is None:
            from axon.memory.embeddings.worker import VectorWorker

            self._vectors = VectorWorker()
        backend.embed_on_recall = False
        self._vectors.wait_progress = self.wait_progress
        self._vectors.notify(backend, bound.scope)
        return self._vectors

    async def embed(
        self, name: str, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Compute every pending vector of memory `name` now; returns how many.

        0 for a memory whose recall uses no vectors, or when no model is available.
        `progress(done, total)` is told after each batch. A tiered memory embeds every
        tier, one after the other (`progress` counts on across them).
        """
        tiered = self.tiered.get(name)
        if tiered is not None:
            total = 0
            for one in tiered.tiers.values():
                with self._as_tier(name, one):
                    total += await self.embed(name, _counting_on(progress, total))
            return total
        bound = self.get(name)
        if bound.decl.retrieval not in ("semantic", "hybrid"):
            return 0
        worker = self._background_vectors(bound)
        if worker is None:
            return 0
        with errors_named(name):
            return await worker.embed_all(bound.backend, bound.scope, progress)

    async def resume_vectors(self, name: str) -> int:
        """Hand memory `name`'s entries without a vector to the background worker (after
        entries were written around it: an import); returns how many are pending.

        0 for a memory whose recall uses no vectors, or when no model is available. The
        worker computes them while the session goes on; a recall waits as always.
        """
        tiered = self.tiered.get(name)
        bindings = list(tiered.tiers.values()) if tiered is not None else [self.get(name)]
        pending = 0
        for bound in bindings:
            if bound.decl.retrieval not in ("semantic", "hybrid"):
                continue
            if self._background_vectors(bound) is None:
                continue
            embedder = bound.backend.embedder
            assert embedder is not None  # a worker is only made with a model
            with errors_named(name):
                found = await bound.backend._pending_texts(bound.scope, embedder.model_id)
            pending += len(found)
        return pending

    def get(self, name: str) -> BoundMemory:
        bound = self.bound.get(name)
        if bound is None:
            raise AxonMemoryError(f"memory '{name}' is not declared", memory=name)
        return bound

    # ------------------------------------------------------------ lifetimes
    def push_lifetime(self) -> None:
        """Start a flow (or top-level input): ephemeral writes are tracked until `pop`."""
        self._lifetimes.append([])

    async def pop_lifetime(self) -> int:
        """End it: delete what it wrote to ephemeral memories (`sweeps.pop_lifetime`)."""
        return await sweeps.pop_lifetime(self)

    def written_ephemeral(self, name: str, key: str) -> None:
        """`key` now lives in the ephemeral store (or tier) of `name`: a remember, or a
        demotion into the ephemeral tier. It goes when the current flow or input ends."""
        if self._lifetimes:
            self._lifetimes[-1].append((name, key))

    # ------------------------------------------------------------ operations
    def effective_mode(self, bound: BoundMemory, mode: str) -> str:
        """The retrieval mode that will run: semantic modes need an embedding model."""
        if mode in ("semantic", "hybrid") and bound.backend.embedder is None:
            return "keyword"
        return mode

    async def remember(
        self,
        name: str,
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
        by another process is kept too. `tier` (tiered
        memories only) is `with { tier: ... }`: see `tiered_ops.remember`.
        """
        tiered = self.tiered.get(name)
        if tiered is not None:
            return await tiered_ops.remember(self, tiered, key, value, metadata, expires_in, tier)
        if tier is not None:
            raise AxonMemoryError(
                f"memory has no tiers: cannot write to tier '{tier}'", memory=name, key=key
            )
        self._count(name, "stores")
        bound = self.get(name)
        decl = bound.decl
        await self.maybe_sweep(bound)
        now = self.clock()
        expires_at = expiry_of(decl, metadata, now, expires_in)
        meta = {**metadata, "scope": bound.scope}
        started = time.perf_counter()
        with errors_named(name):
            given = related_keys(meta)
            if key in given:
                raise AxonMemoryError(
                    "an entry cannot be related to itself", memory=bound.name, key=key
                )
            if not given:
                meta.pop("related", None)  # `related: []`: nothing to record
            try:
                done = await bound.backend.write_links(
                    bound.scope,
                    back_links(key, given),
                    store=NewEntry(key, value, meta, expires_at, timestamp=now),
                )
            except MissingLinkTarget as exc:
                raise missing_related(exc, name, key) from None
            stored = done.stored
            assert stored is not None
        self.written(bound, key, value, decl.store, expires_at, stored.metadata, started)
        return _named(stored, name)

    def written(
        self,
        bound: BoundMemory,
        key: str,
        value: Any,
        store: str,
        expires_at: float | None,
        meta: Mapping[str, Any],
        started: float,
        tier: str | None = None,
    ) -> None:
        """After a remember stored `key` in `bound` (a memory, or a tier of one): wake the
        vector worker, record an ephemeral write for its flow's end, emit `memory_write`."""
        name = bound.name
        if self._vectors is not None and not bound.backend.embed_on_recall:
            self._vectors.notify(bound.backend, bound.scope)
        if store == "ephemeral":
            self.written_ephemeral(name, key)
        self.tracer.emit(
            TraceEventType.MEMORY_WRITE,
            data={
                "key": key,
                "value_type": type(value).__name__,
                "memory": name,
                "backend": bound.backend_key[0],
                "store": store,
                **({"tier": tier} if tier is not None else {}),
                "expires_at": expires_at,
                **({"type": meta["type"]} if "type" in meta else {}),
                **({"related": meta["related"]} if "related" in meta else {}),
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )

    async def associate(self, name: str, a: str, b: str) -> None:
        """Associate the entries under `a` and `b`, both ways (`related` metadata of each).

        Both must be stored (unexpired) and differ; the `related` of each gains the other
        in one `write_links` transaction, nothing else of them changes (values, times,
        expiry), and a link that would push either one's metadata past the 1 MB cap
        changes neither. One `memory_write` event (`op: associate`). Associating twice
        changes nothing.
        """
        bound = self.get(name)
        await self.maybe_sweep(bound)
        if a == b:
            raise AxonMemoryError("an entry cannot be related to itself", memory=name, key=a)
        tiered = self.tiered.get(name)
        if tiered is not None:
            await tiered_ops.associate(self, tiered, a, b)
            return
        started = time.perf_counter()
        with errors_named(name):
            try:
                done = await bound.backend.write_links(
                    bound.scope, [LinkChange(a, add=(b,)), LinkChange(b, add=(a,))]
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
                "backend": bound.backend_key[0],
                "store": bound.decl.store,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )

    async def associated(self, name: str, entry: MemoryEntry) -> list[MemoryEntry]:
        """The stored (unexpired) entries `entry` is associated with, in its `related`
        order; keys whose entry has gone (expired) are skipped."""
        bound = self.get(name)
        found: list[MemoryEntry] = []
        tiered = self.tiered.get(name)
        if tiered is not None:
            with errors_named(name):
                for key in related_keys(entry.metadata):
                    where = await tiering.find(tiered, key)
                    if where is not None:
                        found.append(tiering.located(where[1], name, where[0]))
            return found
        with errors_named(name):
            for key in related_keys(entry.metadata):
                other = await bound.backend.get(key, scope=bound.scope)
                if other is not None:
                    found.append(_named(other, name))
        return found

    async def recall(
        self,
        name: str,
        query: str,
        top_k: int,
        mode: str,
        filters: Mapping[str, Any] | None = None,
        *,
        tiers: Sequence[str] | None = None,
        min_score: float | None = None,
    ) -> tuple[list[MemoryEntry], str]:
        """The results of a recall and the retrieval mode that produced them.

        `tiers` (tiered memories only) is `with { tiers: [...] }`: see `tiered_ops.recall`;
        `min_score` the relevance floor (None: the default, `scores.relevant`).
        """
        entries, effective, _, _ = await self.recall_pending(
            name, query, top_k, mode, filters, tiers=tiers, min_score=min_score
        )
        return entries, effective

    async def recall_pending(
        self,
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
        """`recall`, how many entries were still without a vector, and how many scored
        below the floor (`reads.recall_pending`)."""
        return await reads.recall_pending(
            self, name, query, top_k, mode, filters, tiers=tiers, embed_wait=embed_wait,
            min_score=min_score,
        )

    async def recall_one(
        self,
        bound: BoundMemory,
        query: str,
        top_k: int,
        mode: str,
        filters: Mapping[str, Any] | None,
        *,
        embed_wait: float | None = None,
        min_score: float | None = None,
    ) -> tuple[list[MemoryEntry], str, dict[str, Any], int]:
        """One memory's (or one tier's) recall and its event's data (`reads.recall_one`)."""
        return await reads.recall_one(
            self, bound, query, top_k, mode, filters, embed_wait=embed_wait,
            min_score=min_score,
        )

    async def clear(self, name: str) -> int:
        tiered = self.tiered.get(name)
        if tiered is not None:
            with errors_named(name):
                await tiering.reconcile(tiered)  # a key held by two tiers: one forget
            total = 0
            for tier, bound in tiered.tiers.items():
                with self._as_tier(name, bound):
                    count = await self.clear(name)
                tiered.stats.add(tier, "forgets", count)
                total += count
            tiered.recalls.clear()
            tiered.used.clear()
            with errors_named(name):
                await tiering.flush_stats(tiered)
            return total
        bound = self.get(name)
        started = time.perf_counter()
        with errors_named(name):
            count = await bound.backend.clear(scope=bound.scope)
        self._count(name, "forgets", count)
        self.tracer.emit(
            TraceEventType.MEMORY_CLEAR,
            data={"memory": name, "backend": bound.backend_key[0], "count": count,
                  "duration_ms": elapsed_ms(started)},
            duration_ms=elapsed_ms(started),
        )
        return count

    async def get_entry(self, name: str, key: str) -> MemoryEntry | None:
        """The unexpired entry under `key`, or None (`reads.get_entry`)."""
        return await reads.get_entry(self, name, key)

    async def delete(self, name: str, key: str) -> bool:
        """Remove the entry under `key`; True when there was one. A `memory_delete` event.

        The path of every delete (the handle's `delete`, the `forget` statement): the
        entries associated with `key` stop naming it, in the same transaction
        (`associations.delete_entry`).
        """
        bound = self.get(name)
        started = time.perf_counter()
        tiered = self.tiered.get(name)
        if tiered is not None:
            with errors_named(name):
                tier = await tiered_ops.delete(self, tiered, key)
                await tiering.flush_stats(tiered)
            self.tracer.emit(
                TraceEventType.MEMORY_DELETE,
                data={
                    "key": key, "count": int(tier is not None), "memory": name,
                    "backend": bound.backend_key[0], "store": tier or bound.decl.store,
                    **({"tier": tier} if tier is not None else {}),
                    "duration_ms": elapsed_ms(started),
                },
                duration_ms=elapsed_ms(started),
            )
            return tier is not None
        with errors_named(name):
            removed = await delete_entry(bound.backend, key, bound.scope)
        self._count(name, "forgets", int(removed))
        self.tracer.emit(
            TraceEventType.MEMORY_DELETE,
            data={
                "key": key,
                "count": int(removed),
                "memory": name,
                "backend": bound.backend_key[0],
                "store": bound.decl.store,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return removed

    async def delete_matching(self, name: str, filters: Mapping[str, Any]) -> int:
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
        if not filters:  # the checker and the callers never ask for this: refuse it here too
            raise AxonMemoryError(
                "forget with an empty filter would delete everything", memory=name
            )
        tiered = self.tiered.get(name)
        if tiered is not None:
            return await tiered_ops.delete_matching(self, tiered, filters)
        bound = self.get(name)
        await self.maybe_sweep(bound)
        started = time.perf_counter()
        keys: list[str] = []
        deleted = 0
        with errors_named(name):
            stored = _stored_filters(filters, name)
            if stored is not None:
                found = await bound.backend.list_matching(bound.scope, stored)
                keys = [entry.key for entry in found]
            for key in keys:  # one by one through delete_entry: associations go too
                deleted += int(await delete_entry(bound.backend, key, bound.scope))
        self._count(name, "forgets", deleted)
        self.tracer.emit(
            TraceEventType.MEMORY_DELETE,
            data={
                "filter": dict(filters),
                "count": deleted,
                "memory": name,
                "backend": bound.backend_key[0],
                "store": bound.decl.store,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return deleted

    async def list_matching(
        self, name: str, limit: int | None = None, filters: Mapping[str, Any] | None = None
    ) -> list[MemoryEntry]:
        """Unexpired entries matching `filters`, newest first (`reads.list_matching`)."""
        return await reads.list_matching(self, name, limit, filters)

    async def page_matching(
        self,
        name: str,
        limit: int,
        after: str | None,
        filters: Mapping[str, Any] | None = None,
    ) -> tuple[list[MemoryEntry], str | None]:
        """One keyset page and the next cursor (`reads.page_matching`)."""
        return await reads.page_matching(self, name, limit, after, filters)

    async def count(self, name: str) -> int:
        """How many unexpired entries `name` holds (`reads.count`)."""
        return await reads.count(self, name)

    async def entries(self, name: str, limit: int | None = None) -> list[MemoryEntry]:
        """Unexpired entries of `name`, newest first (`reads.entries`)."""
        return await reads.entries(self, name, limit)

    async def sweep(self, name: str) -> int:
        """Purge expired entries of `name`'s backend (or tiers) now (`sweeps.sweep`)."""
        return await sweeps.sweep(self, name)

    async def maybe_sweep(self, bound: BoundMemory, *, force: bool = False) -> int:
        """An expiry sweep when `SWEEP_INTERVAL` has passed (`sweeps.maybe_sweep`)."""
        return await sweeps.maybe_sweep(self, bound, force=force)

    # ------------------------------------------------------------ stats
    def stats(self, name: str) -> dict[str, dict[str, int]]:
        """Per tier: `stores`, `recalls`, `forgets`, `promotions`, `demotions` (seed 004).

        An untiered memory has one tier, its `store`, counted in this session only; a
        tiered memory's persistent tier counts across sessions (`axon.runtime.tiers`).
        """
        self.get(name)
        tiered = self.tiered.get(name)
        if tiered is not None:
            return tiered.stats.snapshot()
        counters = self._counters.get(name)
        if counters is None:
            return {self.get(name).decl.store: dict.fromkeys(COUNTERS, 0)}
        return counters.snapshot()

    def _count(self, name: str, counter: str, n: int = 1) -> None:
        counters = self._counters.get(name)
        if counters is not None:
            for tier in counters.counts:
                counters.add(tier, counter, n)

    # ------------------------------------------------------------ tiered memories
    @contextlib.contextmanager
    def _as_tier(self, name: str, bound: BoundMemory) -> Iterator[None]:
        """Run a one-tier operation on one tier of `name` (calls are serialised)."""
        face = self.bound[name]
        tiered = self.tiered.pop(name)
        self.bound[name] = bound
        try:
            yield
        finally:
            self.bound[name] = face
            self.tiered[name] = tiered

    # ------------------------------------------------------------ closing
    async def close(self) -> None:
        """End the session: clear its own owned scopes, close every backend
        (`sweeps.close`); the failures are raised as one `AxonMemoryError`."""
        await sweeps.close(self)


def _counting_on(
    progress: Callable[[int, int], None] | None, before: int
) -> Callable[[int, int], None] | None:
    """`progress` told `(before + done, before + total)`: one count over several tiers."""
    if progress is None or before == 0:
        return progress
    return lambda done, total: progress(before + done, before + total)
