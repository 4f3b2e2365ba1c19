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

Namespaces (`axon.memory.namespaces`, docs/language.md §14): `manager[name]` is the
memory in the session's namespace; `in_namespace(name, ns)` binds the same
declaration in another one (a handle's `namespace=`), over the same shared backend,
with every scope (entries, owned scopes, a tier's counters) inside that namespace,
and `view(ns)` hands those out by name. `namespaces()` lists what the session's
stores hold; `erase(ns)` deletes a namespace and everything below it, in every store
the session opened, and has each store forget the erased bytes (`MemoryBackend.erase`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from axon.compiler.ir import IRMemory
from axon.errors import AxonMemoryError
from axon.memory.backend import LIST_PAGE as LIST_PAGE
from axon.memory.backend import resolve_memory_dir
from axon.memory.entry import Clock
from axon.memory.lifetimes import OWNED_MARKER, Owner, is_reserved, parse_owned
from axon.memory.namespaces import ROOT, Namespace, split_scope
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
from axon.runtime.tracer import NamespacedTracer, Tracer
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
        settings: Mapping[str, Mapping[str, str]] | None = None,
        embed_wait: float | str | None = None,
        namespace: Namespace = ROOT,
    ) -> None:
        self.registry = registry
        self.namespace = namespace
        """The session's namespace: where `manager[name]` reads and writes."""
        self.vectors = Vectors(embedder, embed_wait)
        """The session's embedding model and background vector worker."""
        self.settings: dict[str, dict[str, str]] = {
            name: dict(values) for name, values in (settings or {}).items()
        }
        """Each backend's server settings by its registered name (`Session(backend_settings=)`,
        pgvector's `dsn` and `schema`); a backend reads what is not given from its own
        environment variables."""
        self.tracer = tracer
        self.clock: Clock = clock or time.time
        self.memory_dir = resolve_memory_dir(memory_dir)
        self.lifetimes = Lifetimes(tracer)
        self.owner = Owner.current()
        self._backends: dict[BackendKey, SharedBackend] = {}
        self._memories: dict[str, Memory] = {}
        self._elsewhere: dict[tuple[str, Namespace], Memory] = {}
        """Memories bound in a namespace other than the session's, by (name, namespace)."""
        self._owned_elsewhere: set[tuple[BackendKey, str]] = set()
        """This session's owned scopes in a namespace other than the root (cleared at close)."""

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
        previous = self._memories.get(decl.name)
        memory = await self._build(decl, self.namespace, previous)
        for where in [where for where in self._elsewhere if where[0] == decl.name]:
            del self._elsewhere[where]  # declared again: other namespaces bind it anew
        self._memories[decl.name] = memory
        return memory

    async def in_namespace(self, name: str, namespace: Namespace) -> Memory:
        """The declared memory `name` bound in `namespace` (the session's own: `self[name]`)."""
        own = self[name]
        if namespace == self.namespace:
            return own
        memory = self._elsewhere.get((name, namespace))
        if memory is None:
            memory = await self._build(own.decl, namespace, None)
            self._elsewhere[(name, namespace)] = memory
        return memory

    def view(self, namespace: Namespace) -> NamespaceView:
        """The memories of `namespace` by name, once `in_namespace` bound each one asked."""
        return NamespaceView(self, namespace)

    async def _build(self, decl: IRMemory, namespace: Namespace, previous: Memory | None) -> Memory:
        if not decl.tiers:
            counters = previous.counters if isinstance(previous, PlainMemory) else None
            if counters is None or decl.store not in counters.counts:
                counters = TierStats.empty([decl.store])
            memory: Memory = await self._plain(decl, counters, namespace)
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
                tiers[tier] = await self._plain(tier_decl, None, namespace)
            state = tiering.Tiered(decl, tiers, TierStats.empty(decl.tiers))
            with errors_named(decl.name):
                await tiering.load_stats(state)
            memory = TieredMemory(
                state, tracer=self._tracer_of(namespace), clock=self.clock,
                lifetimes=self.lifetimes,
            )
        return memory

    def _tracer_of(self, namespace: Namespace) -> Tracer:
        """The root's memories emit plain events; another namespace's carry its name."""
        return self.tracer if namespace.is_root else NamespacedTracer(self.tracer, namespace.text)

    async def _plain(
        self, decl: IRMemory, counters: TierStats | None, namespace: Namespace
    ) -> PlainMemory:
        """One memory of one lifetime (or one tier) on its shared backend instance."""
        if is_reserved(decl.name):
            raise AxonMemoryError(
                f"memory names may not start with '{OWNED_MARKER}' (reserved)", memory=decl.name
            )
        info = self.registry.lookup(decl.backend)
        if info is None:
            raise AxonMemoryError(f"unknown backend '{decl.backend}'", memory=decl.name)
        semantic = decl.retrieval in SEMANTIC_MODES
        settings = self.settings.get(info.name, {})
        location = decl.location if decl.location is not None else info.default_location(settings)
        key = (info.name, location, str(self.memory_dir))
        shared = self._backends.get(key)
        fresh = shared is None
        if shared is None:
            instance = info.open(
                location,
                settings,
                memory_dir=self.memory_dir,
                clock=self.clock,
                embedder=self.vectors.embedder() if semantic else None,
            )
            shared = SharedBackend(instance, info.name)
            self._backends[key] = shared
            instance.set_purge_listener(purge_reporter(self.tracer, self.owner, info.name))
        elif shared.instance.embedder is None and semantic:
            shared.instance.embedder = self.vectors.embedder()
        owned = decl.store != "persistent"
        scope = namespace.scope(self.owner.scope(decl.store, decl.name) if owned else decl.name)
        if owned and not namespace.is_root:  # not under `owner.prefix`: close clears it by name
            self._owned_elsewhere.add((key, scope))
        memory = PlainMemory(
            decl, shared, scope, tracer=self._tracer_of(namespace), clock=self.clock,
            vectors=self.vectors, lifetimes=self.lifetimes, counters=counters,
            namespace=namespace,
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
        bound = [*self._memories.items(), *((n, m) for (n, _), m in self._elsewhere.items())]
        for name, memory in bound:
            try:
                await memory.flush()
            except AxonMemoryError as exc:
                failures.append(f"memory '{name}': {exc}")
        for key, shared in self._backends.items():
            backend = shared.instance
            try:
                if not backend.closed:
                    mine = await backend.scopes(self.owner.prefix)
                    mine += [scope for (at, scope) in self._owned_elsewhere if at == key]
                    for scope in mine:
                        started = time.perf_counter()
                        count = await backend.clear(scope=scope)
                        owned = parse_owned(split_scope(scope)[1])
                        if owned is not None:
                            emit_lifetime_end(
                                self.tracer, owned.memory, shared.name, owned.lifetime, count,
                                "the session closed", started, scope,
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

    # ------------------------------------------------------------ namespaces
    async def namespaces(self, prefix: Namespace = ROOT) -> list[tuple[str, ...]]:
        """The namespaces that hold entries in the stores this session opened, at any depth
        under `prefix` (`prefix` itself included), sorted; the root is `()` (listed when
        it holds entries and `prefix` is the root)."""
        found: set[tuple[str, ...]] = set()
        for shared in self._backends.values():
            if shared.instance.closed:
                continue
            for scope in await shared.instance.scopes(prefix.scope_prefix):
                found.add(split_scope(scope)[0].labels)
        return sorted(found)

    async def erase(self, namespace: Namespace) -> int:
        """Delete every entry of `namespace` and below, in every store this session opened
        (every memory, tier, lifetime, vector, text index, association and the tiers'
        counters); returns how many entries (counters not included). Each store then
        forgets the erased bytes (`MemoryBackend.erase`)."""
        if namespace.is_root:
            raise AxonMemoryError(
                "erase needs a namespace of at least one label (the root holds every entry)"
            )
        total = 0
        for shared in self._backends.values():
            if shared.instance.closed:
                continue
            with errors_named(shared.name):
                erased = await shared.instance.erase(namespace.scope_prefix)
            total += sum(
                count
                for scope, count in erased.items()
                if not split_scope(scope)[1].startswith(tiering.STATS_SCOPE_PREFIX)
            )
        for name, where in list(self._elsewhere):
            if namespace.contains(where):
                del self._elsewhere[(name, where)]  # never flushed: its counters are erased
        if namespace.contains(self.namespace):
            for memory in self._memories.values():
                forget_counts(memory)
        return total


def forget_counts(memory: Memory) -> None:
    """Zero `memory`'s counters (its namespace was erased): nothing of it is written back."""
    if isinstance(memory, TieredMemory):
        memory.state.stats = TierStats.empty(memory.decl.tiers)
        memory.state.persisted = {}
    elif isinstance(memory, PlainMemory) and memory.counters is not None:
        memory.counters = TierStats.empty(list(memory.counters.counts))


class NamespaceView:
    """The memories of one namespace by name (what a handle's work gets): `view[name]` is
    the memory `MemoryManager.in_namespace` bound there."""

    def __init__(self, manager: MemoryManager, namespace: Namespace) -> None:
        self.manager = manager
        self.namespace = namespace

    def __getitem__(self, name: str) -> Memory:
        if self.namespace == self.manager.namespace:
            return self.manager[name]
        memory = self.manager._elsewhere.get((name, self.namespace))
        if memory is None:
            self.manager[name]  # an undeclared name: its own error
            raise AxonMemoryError(
                f"memory '{name}' is not bound in namespace '{self.namespace}'", memory=name
            )
        return memory

    def __contains__(self, name: object) -> bool:
        return name in self.manager

    @property
    def call_embed_wait(self) -> float:
        return self.manager.call_embed_wait


Memories = MemoryManager | NamespaceView
"""What a handle's work reads memories from by name: the session's namespace or another."""
