"""Declared memories -> live backends: binding, lifetimes, decay and traced operations.

`MemoryManager.bind(IRMemory)` finds the backend named by `backend:` in the
registry and shares one instance per (backend, location, memory directory);
memories are isolated inside it by scope (= the memory's name). Every
operation goes through here so that each emits its trace event (with the
memory, the backend and a duration), expiry times are stamped from `decay:`,
expired entries are swept, and `store:` lifetimes are honoured:

- `ephemeral`: entries are deleted when the flow (or top-level input) that
  wrote them ends (`push_lifetime` / `pop_lifetime`);
- `session`: they live until `close()`; on a persistent backend they are
  deleted then, so nothing outlives the session;
- `persistent`: they stay.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from axon.compiler.ir import IRMemory
from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.availability import keyword_fallback_warning
from axon.memory.embeddings.base import Embedder
from axon.memory.entry import Clock, MemoryEntry
from axon.memory.registry import BackendRegistry
from axon.runtime.tracer import TraceEventType, Tracer

DEFAULT_MEMORY_DIR = ".axon"
MEMORY_DIR_ENV = "AXON_MEMORY_DIR"
SWEEP_INTERVAL = 60.0
"""Seconds (of the session clock) between expiry sweeps of a backend while in use."""

EmbedderProvider = Callable[[], Embedder | None]


def resolve_memory_dir(memory_dir: str | os.PathLike[str] | None) -> Path:
    """The directory of embedded persistent stores: argument, `AXON_MEMORY_DIR`, `./.axon`."""
    if memory_dir is not None:
        return Path(memory_dir)
    return Path(os.environ.get(MEMORY_DIR_ENV) or DEFAULT_MEMORY_DIR)


def _default_embedder() -> Embedder | None:
    from axon.memory.embeddings.default import default_embedder

    return default_embedder()


@attrs.define
class BoundMemory:
    """A declared memory and the backend instance that holds its entries."""

    decl: IRMemory
    backend: MemoryBackend
    backend_key: tuple[str, str | None, str]

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
    ) -> None:
        self.registry = registry
        self.tracer = tracer
        self.clock: Clock = clock or time.time
        self.memory_dir = resolve_memory_dir(memory_dir)
        self._embedder_provider = embedder
        self._embedder: Embedder | None = None
        self._embedder_resolved = False
        self._backends: dict[tuple[str, str | None, str], _BackendState] = {}
        self.bound: dict[str, BoundMemory] = {}
        self._lifetimes: list[list[tuple[str, str]]] = []
        self._fallback_warned: set[str] = set()

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
        """Attach a declared memory to its backend instance (created on first use)."""
        info = self.registry.lookup(decl.backend)
        if info is None:
            raise AxonMemoryError(f"unknown backend '{decl.backend}'", memory=decl.name)
        key = (info.name, decl.location, str(self.memory_dir))
        state = self._backends.get(key)
        if state is None:
            cls = info.load()
            needs_embedder = decl.retrieval in ("semantic", "hybrid")
            instance = cls(
                location=decl.location,
                memory_dir=self.memory_dir,
                clock=self.clock,
                embedder=self.embedder() if needs_embedder else None,
            )
            state = _BackendState(instance)
            self._backends[key] = state
        elif state.instance.embedder is None and decl.retrieval in ("semantic", "hybrid"):
            state.instance.embedder = self.embedder()
        bound = BoundMemory(decl, state.instance, key)
        self.bound[decl.name] = bound
        await self._maybe_sweep(bound, force=state.last_sweep == float("-inf"))
        return bound

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
        dropped = 0
        for memory, key in dict.fromkeys(written):
            bound = self.bound.get(memory)
            if bound is not None and await bound.backend.delete(key, scope=memory):
                dropped += 1
        return dropped

    # ------------------------------------------------------------ operations
    def effective_mode(self, bound: BoundMemory, mode: str) -> str:
        """The retrieval mode that will run: semantic modes need an embedding model."""
        if mode in ("semantic", "hybrid") and bound.backend.embedder is None:
            return "keyword"
        return mode

    async def remember(
        self, name: str, key: str, value: Any, metadata: Mapping[str, Any]
    ) -> MemoryEntry:
        bound = self.get(name)
        decl = bound.decl
        await self._maybe_sweep(bound)
        now = self.clock()
        expires_at = now + decl.decay_seconds if decl.decay_seconds is not None else None
        meta = {**metadata, "scope": name}
        started = time.perf_counter()
        entry = await bound.backend.store(key, value, meta, expires_at=expires_at)
        if decl.store == "ephemeral" and self._lifetimes:
            self._lifetimes[-1].append((name, key))
        self.tracer.emit(
            TraceEventType.MEMORY_WRITE,
            data={
                "key": key,
                "value_type": type(value).__name__,
                "memory": name,
                "backend": bound.backend_key[0],
                "store": decl.store,
                "expires_at": expires_at,
                "duration_ms": _ms(started),
            },
            duration_ms=_ms(started),
        )
        return entry

    async def recall(
        self,
        name: str,
        query: str,
        top_k: int,
        mode: str,
        filters: Mapping[str, Any] | None = None,
    ) -> tuple[list[MemoryEntry], str]:
        """The results of a recall and the retrieval mode that produced them."""
        bound = self.get(name)
        await self._maybe_sweep(bound)
        effective = self.effective_mode(bound, mode)
        started = time.perf_counter()
        results = await bound.backend.retrieve(
            query, top_k, name, mode=effective, filters=dict(filters) if filters else None
        )
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
            "duration_ms": _ms(started),
        }
        if effective != mode:
            data["requested_retrieval"] = mode
            data["note"] = "no embedding model available: fell back to keyword retrieval"
            if name not in self._fallback_warned:  # once per memory and session
                self._fallback_warned.add(name)
                data["warning"] = keyword_fallback_warning(name, mode) or data["note"]
        if filters:
            data["filters"] = dict(filters)
        self.tracer.emit(TraceEventType.MEMORY_READ, data=data, duration_ms=_ms(started))
        return results, effective

    async def clear(self, name: str) -> int:
        bound = self.get(name)
        started = time.perf_counter()
        count = await bound.backend.clear(scope=name)
        self.tracer.emit(
            TraceEventType.MEMORY_CLEAR,
            data={"memory": name, "backend": bound.backend_key[0], "count": count,
                  "duration_ms": _ms(started)},
            duration_ms=_ms(started),
        )
        return count

    async def count(self, name: str) -> int:
        return await self.get(name).backend.count(scope=name)

    async def entries(self, name: str, limit: int | None = None) -> list[MemoryEntry]:
        return await self.get(name).backend.list_entries(scope=name, limit=limit)

    async def sweep(self, name: str) -> int:
        """Purge expired entries of the backend holding `name` now; returns the count."""
        return await self._maybe_sweep(self.get(name), force=True)

    async def _maybe_sweep(self, bound: BoundMemory, *, force: bool = False) -> int:
        state = self._backends[bound.backend_key]
        now = self.clock()
        if not force and now - state.last_sweep < SWEEP_INTERVAL:
            return 0
        state.last_sweep = now
        started = time.perf_counter()
        count = await state.instance.purge_expired()
        if count:
            self.tracer.emit(
                TraceEventType.MEMORY_EXPIRE,
                data={
                    "memory": bound.name,
                    "backend": bound.backend_key[0],
                    "count": count,
                    "duration_ms": _ms(started),
                },
                duration_ms=_ms(started),
            )
        return count

    # ------------------------------------------------------------ closing
    async def close(self) -> None:
        """End the session: drop session entries kept on persistent backends, close all."""
        while self._lifetimes:
            await self.pop_lifetime()
        for name, bound in self.bound.items():
            persistent = bound.backend.capabilities.persistent
            if bound.decl.store != "persistent" and persistent and not bound.backend.closed:
                await bound.backend.clear(scope=name)
        for state in self._backends.values():
            await state.instance.close()
        self._backends.clear()


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
