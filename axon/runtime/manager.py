"""Declared memories -> bound `Memory` objects: binding, shared backends, lifetimes and closing.

`MemoryManager.bind(IRMemory)` finds the backend named by `backend:` in the
registry and shares one instance per (backend, location, memory directory);
memories are isolated inside it by scope. `manager[name]` is the bound memory, a
`Memory` (`axon.runtime.memory`): every operation of the language, the handles, the
REPL and the MCP server goes to it, and it emits its trace event. The manager owns
what memories share (docs/language.md §4 Memory declarations;
`axon.memory.lifetimes`):

- `persistent`: the scope is the memory's name; entries stay.
- `session` and `ephemeral`: the scope is an owned scope naming this session
  (`Owner`), so no other session, and no persistent memory of the same name,
  sees the entries; returned entries still carry `scope: <memory name>`.
  Ephemeral entries are deleted when the flow (or top-level input) that wrote
  them ends (`push_lifetime` / `pop_lifetime`); `close()` clears this session's
  owned scopes, and only those. A session killed before closing leaves its
  owned scopes behind: the first bind to a persistent backend clears the owned
  scopes of owners that are dead (same host, process gone).

A memory that spans tiers (`tiers: [...]`) is bound as one `PlainMemory` per tier
composed into a `TieredMemory` (`axon.runtime.tiered`); any other one is a
`PlainMemory` (`axon.runtime.plain`).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING, Any

import attrs

from axon.compiler.ir import IRMemory
from axon.errors import AxonMemoryError
from axon.memory.backend import LIST_PAGE as LIST_PAGE
from axon.memory.backend import resolve_memory_dir
from axon.memory.entry import Clock
from axon.memory.lifetimes import OWNED_MARKER, Owner, is_reserved, parse_owned
from axon.memory.registry import BackendRegistry
from axon.runtime import tiers as tiering
from axon.runtime.counters import TierStats
from axon.runtime.memory import Memory
from axon.runtime.plain import SEMANTIC_MODES, PlainMemory
from axon.runtime.reporting import errors_named
from axon.runtime.sweeps import SWEEP_INTERVAL as SWEEP_INTERVAL
from axon.runtime.sweeps import (
    Lifetimes,
    SharedBackend,
    emit_lifetime_end,
    purge_reporter,
    sweep_dead_owners,
)
from axon.runtime.tiered import TieredMemory
from axon.runtime.tracer import Tracer
from axon.runtime.vectors import DEFAULT_EMBED_WAIT as DEFAULT_EMBED_WAIT
from axon.runtime.vectors import WAIT_ALL as WAIT_ALL
from axon.runtime.vectors import EmbedderProvider as EmbedderProvider
from axon.runtime.vectors import Vectors, default_embedder
from axon.runtime.vectors import embed_wait_seconds as embed_wait_seconds

if TYPE_CHECKING:
    from axon.memory.embeddings.worker import WaitProgress

BackendKey = tuple[str, str | None, str]
"""What a backend instance is shared by: its registry name, location, memory directory."""


class MemoryManager:
    """The memories of one session: binds them, hands them out, ends their lifetimes,
    closes them."""

    def __init__(
        self,
        *,
        registry: BackendRegistry,
        tracer: Tracer,
        clock: Clock | None = None,
        memory_dir: str | os.PathLike[str] | None = None,
        embedder: EmbedderProvider = default_embedder,
        pg_dsn: str | None = None,
        embed_wait: float | str | None = None,
        pg_schema: str | None = None,
    ) -> None:
        self.registry = registry
        self.vectors = Vectors(embedder, embed_wait)
        """The session's embedding model and background vector worker."""
        self.pg_dsn = pg_dsn
        """The server of `pgvector` memories that give no `location:` (else `AXON_PG_DSN`)."""
        self.pg_schema = pg_schema
        """The schema of every `pgvector` memory (else `AXON_PG_SCHEMA`, else `axon`)."""
        self.tracer = tracer
        self.clock: Clock = clock or time.time
        self.memory_dir = resolve_memory_dir(memory_dir)
        self.lifetimes = Lifetimes(tracer)
        self.owner = Owner.current()
        self._backends: dict[BackendKey, SharedBackend] = {}
        self._memories: dict[str, Memory] = {}

    @property
    def call_embed_wait(self) -> float:
        """Budget of a handle's recall that does not give one (seconds)."""
        return self.vectors.call_wait

    @property
    def wait_progress(self) -> WaitProgress | None:
        """What a recall waiting for pending vectors shows (`worker.WaitProgress`; the CLI's
        progress bar); None shows nothing (a library never prints)."""
        return self.vectors.wait_progress

    @wait_progress.setter
    def wait_progress(self, shown: WaitProgress | None) -> None:
        self.vectors.wait_progress = shown

    def __getitem__(self, name: str) -> Memory:
        """The bound memory `name`; an `AxonMemoryError` when it is not declared."""
        memory = self._memories.get(name)
        if memory is None:
            raise AxonMemoryError(f"memory '{name}' is not declared", memory=name)
        return memory

    def __contains__(self, name: object) -> bool:
        return name in self._memories

    # ------------------------------------------------------------ binding
    async def bind(self, decl: IRMemory) -> Memory:
        """Attach a declared memory to its backend instance (created on first use).

        A tiered memory gets one `PlainMemory` per tier: `in_memory` for ephemeral and
        session (owned scopes), the memory's backend and location for persistent; then
        the persistent tier's counters are read. Binding changes no entry (no demotion:
        that runs before the memory's operations). An untiered memory declared again
        with the same `store:` keeps this session's counters.
        """
        if not decl.tiers:
            previous = self._memories.get(decl.name)
            counters = previous.counters if isinstance(previous, PlainMemory) else None
            if counters is None or decl.store not in counters.counts:
                counters = TierStats.empty([decl.store])
            memory: Memory = await self._plain(decl, counters)
        else:
            tiers: dict[str, PlainMemory] = {}
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
                tiers[tier] = await self._plain(tier_decl, None)
            state = tiering.Tiered(decl, tiers, TierStats.empty(decl.tiers))
            with errors_named(decl.name):
                await tiering.load_stats(state)
            memory = TieredMemory(
                state, tracer=self.tracer, clock=self.clock, lifetimes=self.lifetimes
            )
        self._memories[decl.name] = memory
        return memory

    async def _plain(self, decl: IRMemory, counters: TierStats | None) -> PlainMemory:
        """One memory of one lifetime (or one tier) on its shared backend instance."""
        if is_reserved(decl.name):
            raise AxonMemoryError(
                f"memory names may not start with '{OWNED_MARKER}' (reserved)", memory=decl.name
            )
        info = self.registry.lookup(decl.backend)
        if info is None:
            raise AxonMemoryError(f"unknown backend '{decl.backend}'", memory=decl.name)
        semantic = decl.retrieval in SEMANTIC_MODES
        location = decl.location
        options: dict[str, Any] = {}
        if info.name == "pgvector":  # its server settings (`Session(pg_dsn=, pg_schema=)`)
            if location is None and self.pg_dsn:
                location = self.pg_dsn
            if self.pg_schema is not None:
                options["schema"] = self.pg_schema
        key = (info.name, location, str(self.memory_dir))
        shared = self._backends.get(key)
        fresh = shared is None
        if shared is None:
            instance = info.load()(
                location=location,
                memory_dir=self.memory_dir,
                clock=self.clock,
                embedder=self.vectors.embedder() if semantic else None,
                **options,
            )
            shared = SharedBackend(instance, info.name)
            self._backends[key] = shared
            instance.set_purge_listener(purge_reporter(self.tracer, self.owner, info.name))
        elif shared.instance.embedder is None and semantic:
            shared.instance.embedder = self.vectors.embedder()
        owned = decl.store != "persistent"
        scope = self.owner.scope(decl.store, decl.name) if owned else decl.name
        memory = PlainMemory(
            decl, shared, scope, tracer=self.tracer, clock=self.clock, vectors=self.vectors,
            lifetimes=self.lifetimes, counters=counters,
        )
        try:
            capabilities = shared.instance.capabilities
            if fresh and (capabilities.persistent or capabilities.shared):
                await sweep_dead_owners(shared, self.owner, self.tracer)
            await memory.maybe_sweep(force=shared.last_sweep == float("-inf"))
        except BaseException:
            # The store could not be used (an unreachable server, a newer schema): forget
            # it, so the memory stays undeclared and closing the session does not try again.
            if fresh:
                self._backends.pop(key, None)
                with contextlib.suppress(Exception):
                    await shared.instance.close()
            raise
        if semantic:
            self.vectors.background(shared.instance, scope)  # resumes what a run left pending
        return memory

    # ------------------------------------------------------------ lifetimes
    def push_lifetime(self) -> None:
        """Start a flow (or top-level input): ephemeral writes are tracked until `pop`."""
        self.lifetimes.push()

    async def pop_lifetime(self) -> int:
        """End it: delete what it wrote to ephemeral memories; returns how many."""
        return await self.lifetimes.pop()

    # ------------------------------------------------------------ closing
    async def close(self) -> None:
        """End the session: clear its own owned scopes, close every backend.

        Every backend is tried even when one fails; the failures are raised
        afterwards as one `AxonMemoryError` naming each backend.
        """
        failures: list[str] = []
        await self.vectors.close()  # before the stores close: no batch is saved after
        try:
            while self.lifetimes:
                await self.lifetimes.pop()
        except AxonMemoryError as exc:
            failures.append(str(exc))
        for name, memory in self._memories.items():
            try:
                await memory.flush()
            except AxonMemoryError as exc:
                failures.append(f"memory '{name}': {exc}")
        for shared in self._backends.values():
            backend = shared.instance
            try:
                if not backend.closed:
                    for scope in await backend.scopes(self.owner.prefix):
                        started = time.perf_counter()
                        count = await backend.clear(scope=scope)
                        owned = parse_owned(scope)
                        if owned is not None:
                            emit_lifetime_end(
                                self.tracer, owned.memory, shared.name, owned.lifetime, count,
                                "the session closed", started,
                            )
            except AxonMemoryError as exc:
                failures.append(f"backend '{shared.name}': {exc}")
            try:
                await backend.close()
            except AxonMemoryError as exc:
                failures.append(f"backend '{shared.name}': {exc}")
        self._backends.clear()
        self.owner.release()
        if failures:
            raise AxonMemoryError("closing the session failed: " + "; ".join(failures))
