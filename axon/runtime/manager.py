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
"""

from __future__ import annotations

import contextlib
import dataclasses
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
from axon.memory.embeddings.availability import keyword_fallback_warning
from axon.memory.embeddings.base import Embedder
from axon.memory.entry import (
    Clock,
    MemoryEntry,
    NewEntry,
    matches_filters,
)
from axon.memory.lifetimes import OWNED_MARKER, Owner, is_reserved, parse_owned
from axon.memory.registry import BackendRegistry
from axon.runtime import tiered_ops
from axon.runtime import tiers as tiering
from axon.runtime.associations import delete_entry, related_keys, with_related
from axon.runtime.records import expiry_of
from axon.runtime.reporting import elapsed_ms, errors_named
from axon.runtime.tiers import COUNTERS, Tiered, TierStats
from axon.runtime.tracer import TraceEventType, Tracer

if TYPE_CHECKING:
    from axon.memory.embeddings.worker import VectorWorker

SWEEP_INTERVAL = 60.0
"""Seconds (of the session clock) between expiry sweeps of a backend while in use."""

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


def embed_wait_seconds(value: Any, where: str) -> float:
    """`embed_wait` as seconds (`math.inf` for "all"); TypeError/ValueError naming `where`."""
    if value == WAIT_ALL and isinstance(value, str):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{where}: embed_wait must be a number of seconds or 'all', "
            f"not {type(value).__name__}"
        )
    if math.isnan(value) or value < 0:
        raise ValueError(f"{where}: embed_wait must be 0 or more seconds (or 'all'), got {value!r}")
    return float(value)


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
        counters and demote what has been idle too long."""
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
        with errors_named(decl.name):
            await tiering.demote_idle(self, tiered, force=True)
            await tiering.flush_stats(tiered)
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
            instance.set_purge_listener(self._purge_reporter(info.name))
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
                await self._sweep_dead_owners(state.instance, info.name)
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
        self._vectors.notify(backend, bound.scope)
        return self._vectors

    async def embed(
        self, name: str, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Compute every pending vector of memory `name` now; returns how many.

        0 for a memory whose recall uses no vectors, or when no model is available.
        `progress(done, total)` is told after each batch.
        """
        bound = self.get(name)
        if bound.decl.retrieval not in ("semantic", "hybrid"):
            return 0
        worker = self._background_vectors(bound)
        if worker is None:
            return 0
        with errors_named(name):
            return await worker.embed_all(bound.backend, bound.scope, progress)

    async def _sweep_dead_owners(self, backend: MemoryBackend, backend_name: str) -> int:
        """Clear the owned scopes of dead sessions (killed before closing); returns rows."""
        total = 0
        for scope in await backend.scopes(OWNED_MARKER):
            owned = parse_owned(scope)
            if owned is None or owned.owner == self.owner or owned.owner.alive():
                continue
            started = time.perf_counter()
            count = await backend.clear(scope=scope)
            total += count
            self.tracer.emit(
                TraceEventType.MEMORY_CLEAR,
                data={
                    "memory": owned.memory,
                    "backend": backend_name,
                    "count": count,
                    "store": owned.lifetime,
                    "reason": f"session of process {owned.owner.pid} on "
                    f"{owned.owner.host} ended without closing",
                    "duration_ms": elapsed_ms(started),
                },
                duration_ms=elapsed_ms(started),
            )
        return total

    def _purge_reporter(self, backend_name: str) -> Callable[[int, Any], None]:
        """The backend's purge listener: one `memory_expire` event per memory purged."""

        def report(count: int, by_scope: Mapping[str | None, int] | None) -> None:
            if by_scope is None:
                self.tracer.emit(
                    TraceEventType.MEMORY_EXPIRE, data={"backend": backend_name, "count": count}
                )
                return
            for scope, removed in by_scope.items():
                owned = parse_owned(scope)
                data: dict[str, Any] = {
                    "memory": owned.memory if owned is not None else scope,
                    "backend": backend_name,
                    "count": removed,
                }
                if owned is not None:
                    data["store"] = owned.lifetime
                    if owned.owner != self.owner:
                        data["other_session"] = True
                self.tracer.emit(TraceEventType.MEMORY_EXPIRE, data=data)

        return report

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
        """End it: delete what it wrote to ephemeral memories; returns how many."""
        written = self._lifetimes.pop() if self._lifetimes else []
        dropped: dict[str, tuple[str, int]] = {}  # memory -> (backend, entries deleted)
        started = time.perf_counter()
        for memory, key in dict.fromkeys(written):
            tiered = self.tiered.get(memory)
            bound = tiered.tiers.get("ephemeral") if tiered else self.bound.get(memory)
            if bound is None:
                continue
            deleted = await bound.backend.delete(key, scope=bound.scope)
            count = dropped.get(memory, ("", 0))[1] + int(deleted)
            dropped[memory] = (bound.backend_key[0], count)
        for memory, (backend, count) in dropped.items():  # one event per memory written to
            self._emit_lifetime_end(
                memory, backend, "ephemeral", count, "its flow or input ended", started
            )
        return sum(count for _, count in dropped.values())

    def written_ephemeral(self, name: str, key: str) -> None:
        """`key` now lives in the ephemeral store (or tier) of `name`: a remember, or a
        demotion into the ephemeral tier. It goes when the current flow or input ends."""
        if self._lifetimes:
            self._lifetimes[-1].append((name, key))

    def _emit_lifetime_end(
        self, memory: str, backend: str, store: str, count: int, reason: str, started: float
    ) -> None:
        """A `memory_clear` event for entries a lifetime took with it (ephemeral at the end
        of a flow or input, session at close): every memory operation leaves a trace."""
        self.tracer.emit(
            TraceEventType.MEMORY_CLEAR,
            data={"memory": memory, "backend": backend, "count": count, "store": store,
                  "reason": reason, "duration_ms": elapsed_ms(started)},
            duration_ms=elapsed_ms(started),
        )

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

        With `related` metadata, the entry and the entries it names are written in one
        batch (every named key must exist: else nothing is written), each side naming
        the other. Replacing an entry keeps the associations it had. `tier` (tiered
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
            batch = await self._associations(bound, key, meta)
            stored, *_ = await bound.backend.store_many(
                [NewEntry(key, value, meta, expires_at, timestamp=now), *batch]
            )
        self.written(bound, key, value, decl.store, expires_at, meta, started)
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

    async def _associations(
        self, bound: BoundMemory, key: str, meta: dict[str, Any]
    ) -> list[NewEntry]:
        """Complete `meta["related"]` of the entry about to be stored under `key` and
        return the other entries to rewrite so that each names it back.

        The associations of the entry being replaced are kept. A named key that is
        not stored (or expired), or the entry's own key, is an `AxonMemoryError`
        naming the memory and the key; nothing has been written then.
        """
        given = related_keys(meta)
        old = await bound.backend.get(key, scope=bound.scope)
        kept = related_keys(old.metadata) if old is not None else []
        if not given and not kept:
            meta.pop("related", None)  # `related: []` on a new entry: nothing to record
            return []
        if key in given:
            raise AxonMemoryError(
                "an entry cannot be related to itself", memory=bound.name, key=key
            )
        others: list[NewEntry] = []
        for other_key in given:
            if other_key in kept:
                continue
            other = await bound.backend.get(other_key, scope=bound.scope)
            if other is None:
                raise AxonMemoryError(
                    f"related entry '{other_key}' is not stored in this memory",
                    memory=bound.name,
                    key=key,
                )
            back = related_keys(other.metadata)
            if key not in back:
                others.append(with_related(other, [*back, key]))
        meta["related"] = list(dict.fromkeys([*kept, *given]))
        return others

    async def associate(self, name: str, a: str, b: str) -> None:
        """Associate the entries under `a` and `b`, both ways (`related` metadata of each).

        Both must be stored (unexpired) and differ; the two are rewritten in one batch
        with their values, times and expiry unchanged. One `memory_write` event
        (`op: associate`). Associating twice changes nothing.
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
            entries = []
            for key in (a, b):
                found = await bound.backend.get(key, scope=bound.scope)
                if found is None:
                    raise AxonMemoryError(
                        "cannot associate: no such entry", memory=name, key=key
                    )
                entries.append(found)
            first, second = entries
            batch = []
            if b not in related_keys(first.metadata):
                batch.append(with_related(first, [*related_keys(first.metadata), b]))
            if a not in related_keys(second.metadata):
                batch.append(with_related(second, [*related_keys(second.metadata), a]))
            if batch:
                await bound.backend.store_many(batch)
        self.tracer.emit(
            TraceEventType.MEMORY_WRITE,
            data={
                "op": "associate",
                "key": a,
                "related": b,
                "count": len(batch),
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
    ) -> tuple[list[MemoryEntry], str]:
        """The results of a recall and the retrieval mode that produced them.

        `tiers` (tiered memories only) is `with { tiers: [...] }`: see `tiered_ops.recall`.
        """
        entries, effective, _ = await self.recall_pending(
            name, query, top_k, mode, filters, tiers=tiers
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
    ) -> tuple[list[MemoryEntry], str, int]:
        """`recall`, and how many entries of the memory were still without a vector after
        waiting at most `embed_wait` seconds for them (None: `statement_embed_wait`)."""
        tiered = self.tiered.get(name)
        if tiered is not None:
            return await tiered_ops.recall(self,
                tiered, query, top_k, mode, filters, tiers, embed_wait=embed_wait
            )
        if tiers is not None:
            raise AxonMemoryError("memory has no tiers: cannot recall from tiers", memory=name)
        self._count(name, "recalls")
        started = time.perf_counter()
        results, effective, data, pending = await self.recall_one(
            self.get(name), query, top_k, mode, filters, embed_wait=embed_wait
        )
        data["duration_ms"] = elapsed_ms(started)
        self.tracer.emit(TraceEventType.MEMORY_READ, data=data, duration_ms=elapsed_ms(started))
        return results, effective, pending

    async def recall_one(
        self,
        bound: BoundMemory,
        query: str,
        top_k: int,
        mode: str,
        filters: Mapping[str, Any] | None,
        *,
        embed_wait: float | None = None,
    ) -> tuple[list[MemoryEntry], str, dict[str, Any], int]:
        """One memory's (or one tier's) recall: results, mode, its event's data and how
        many of its entries were still without a vector (see `recall_pending`)."""
        name = bound.name
        await self.maybe_sweep(bound)
        if mode in ("semantic", "hybrid") and bound.backend.embedder is None:
            # An override (`with { retrieval: semantic }`) gets the model it asks for.
            bound.backend.embedder = self.embedder()
        effective = self.effective_mode(bound, mode)
        started = time.perf_counter()
        pending = 0
        if effective in ("semantic", "hybrid"):
            # Also what other processes wrote: the worker asks the store what is pending.
            worker = self._background_vectors(bound)
            if worker is not None:
                budget = self.statement_embed_wait if embed_wait is None else embed_wait
                with errors_named(name):
                    pending = await worker.wait(bound.backend, bound.scope, budget)
        physical_filters = dict(filters) if filters else None
        if physical_filters is not None and physical_filters.get("scope") == name:
            physical_filters["scope"] = bound.scope
        with errors_named(name):
            found = await bound.backend.retrieve(
                query,
                top_k,
                bound.scope,
                mode=effective,
                filters=physical_filters,
                linked=bound.decl.link == "sequence",
            )
        results = [_named(entry, name) for entry in found]
        data: dict[str, Any] = {
            "query": query,
            "results_count": len(results),
            "top_k": top_k,
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
            if name not in self._fallback_warned:  # once per memory and session
                self._fallback_warned.add(name)
                data["warning"] = keyword_fallback_warning(name, mode) or data["note"]
        if filters:
            data["filters"] = dict(filters)
        return results, effective, data, pending

    async def clear(self, name: str) -> int:
        tiered = self.tiered.get(name)
        if tiered is not None:
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
        """The unexpired entry under `key`, or None; a `memory_read` event (`op: get`).

        In a tiered memory the entry is looked for in every tier (its metadata says
        which holds it: `tier`)."""
        bound = self.get(name)
        await self.maybe_sweep(bound)
        started = time.perf_counter()
        tiered = self.tiered.get(name)
        if tiered is not None:
            with errors_named(name):
                await tiered_ops.maintain(self, tiered)
                where = await tiering.find(tiered, key)
                await tiering.flush_stats(tiered)
            if where is not None:
                tiered.used[key] = self.clock()
            self.tracer.emit(
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
        self.tracer.emit(
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

    async def delete(self, name: str, key: str) -> bool:
        """Remove the entry under `key`; True when there was one. A `memory_delete` event.

        The path of every delete (the handle's `delete`, the `forget` statement): the
        entries associated with `key` stop naming it (`_unlink`).
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
        """Unexpired entries, newest first, those matching `filters` (as recall's), at most
        `limit`; a `memory_read` event (`op: list`). The backend filters
        (`MemoryBackend.list_matching`: SQLite and PostgreSQL in their query).
        A tiered memory lists every tier (one event per tier), newest first overall."""
        tiered = self.tiered.get(name)
        if tiered is not None:
            await tiered_ops.maintain(self, tiered, flush=True)
            per_tier: list[tuple[str, MemoryEntry]] = []
            for tier, one in tiered.tiers.items():
                with self._as_tier(name, one):
                    listed = await self.list_matching(name, limit, filters)
                per_tier += [(tier, e) for e in listed]
            return tiered_ops.merged(per_tier, limit)
        bound = self.get(name)
        await self.maybe_sweep(bound)
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
        data: dict[str, Any] = {
            "op": "list",
            "query": None,  # the seed's memory_read keys: a listing has no query
            "results_count": len(entries),
            "top_k": limit,
            "limit": limit,
            "memory": name,
            "backend": bound.backend_key[0],
            "duration_ms": elapsed_ms(started),
        }
        if filters:
            data["filters"] = dict(filters)
        self.tracer.emit(TraceEventType.MEMORY_READ, data=data, duration_ms=elapsed_ms(started))
        return entries

    async def page_matching(
        self,
        name: str,
        limit: int,
        after: str | None,
        filters: Mapping[str, Any] | None = None,
    ) -> tuple[list[MemoryEntry], str | None]:
        """One keyset page (`MemoryBackend.list_page`) of `limit` entries, newest first,
        those matching `filters` kept, and the cursor of the next page (None: the last).

        With a filter a page may hold fewer than `limit` entries (even none) before
        the listing ends. A `memory_read` event (`op: page`)."""
        bound = self.get(name)
        await self.maybe_sweep(bound)
        started = time.perf_counter()
        with errors_named(name):
            page = await bound.backend.list_page(bound.scope, limit=limit, after=after)
        entries = [_named(entry, name) for entry in page.entries]
        if filters:
            entries = [entry for entry in entries if matches_filters(entry.metadata, filters)]
        data: dict[str, Any] = {
            "op": "page",
            "query": None,  # the seed's memory_read keys: a listing has no query
            "results_count": len(entries),
            "top_k": limit,
            "limit": limit,
            "memory": name,
            "backend": bound.backend_key[0],
            "more": page.cursor is not None,
            "duration_ms": elapsed_ms(started),
        }
        if filters:
            data["filters"] = dict(filters)
        self.tracer.emit(TraceEventType.MEMORY_READ, data=data, duration_ms=elapsed_ms(started))
        return entries, page.cursor

    async def count(self, name: str) -> int:
        tiered = self.tiered.get(name)
        if tiered is not None:
            await tiered_ops.maintain(self, tiered, flush=True)
            total = 0
            for one in tiered.tiers.values():
                with self._as_tier(name, one):
                    total += await self.count(name)
            return total
        bound = self.get(name)
        with errors_named(name):
            return await bound.backend.count(scope=bound.scope)

    async def entries(self, name: str, limit: int | None = None) -> list[MemoryEntry]:
        tiered = self.tiered.get(name)
        if tiered is not None:
            found: list[tuple[str, MemoryEntry]] = []
            for tier, one in tiered.tiers.items():
                with self._as_tier(name, one):
                    found += [(tier, e) for e in await self.entries(name, limit)]
            return tiered_ops.merged(found, limit)
        bound = self.get(name)
        with errors_named(name):
            entries = await bound.backend.list_entries(scope=bound.scope, limit=limit)
        return [_named(entry, name) for entry in entries]

    async def sweep(self, name: str) -> int:
        """Purge expired entries of the backend holding `name` now; returns the count.

        For a tiered memory: every tier's backend, then idle entries are demoted."""
        tiered = self.tiered.get(name)
        if tiered is None:
            return await self.maybe_sweep(self.get(name), force=True)
        total = 0
        for one in tiered.tiers.values():
            total += await self.maybe_sweep(one, force=True)
        with errors_named(name):
            await tiering.demote_idle(self, tiered, force=True)
            await tiering.flush_stats(tiered)
        return total

    async def maybe_sweep(self, bound: BoundMemory, *, force: bool = False) -> int:
        state = self._backends[bound.backend_key]
        now = self.clock()
        if not force and now - state.last_sweep < SWEEP_INTERVAL:
            return 0
        state.last_sweep = now
        return await state.instance.purge_expired()  # reported by `_purge_reporter`

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
        """End the session: clear its own owned scopes, close every backend.

        Every backend is tried even when one fails; the failures are raised
        afterwards as one `AxonMemoryError` naming each backend.
        """
        failures: list[str] = []
        if self._vectors is not None:
            await self._vectors.close()  # before the stores close: no batch is saved after
        try:
            while self._lifetimes:
                await self.pop_lifetime()
        except AxonMemoryError as exc:
            failures.append(str(exc))
        for tiered in self.tiered.values():
            try:
                await tiering.flush_stats(tiered)
            except AxonMemoryError as exc:
                failures.append(f"memory '{tiered.name}': {exc}")
        for (backend_name, _, _), state in self._backends.items():
            backend = state.instance
            try:
                if not backend.closed:
                    for scope in await backend.scopes(self.owner.prefix):
                        started = time.perf_counter()
                        count = await backend.clear(scope=scope)
                        owned = parse_owned(scope)
                        if owned is not None:
                            self._emit_lifetime_end(
                                owned.memory, backend_name, owned.lifetime, count,
                                "the session closed", started,
                            )
            except AxonMemoryError as exc:
                failures.append(f"backend '{backend_name}': {exc}")
            try:
                await backend.close()
            except AxonMemoryError as exc:
                failures.append(f"backend '{backend_name}': {exc}")
        self._backends.clear()
        self.owner.release()
        if failures:
            raise AxonMemoryError("closing the session failed: " + "; ".join(failures))


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
