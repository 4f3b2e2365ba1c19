"""A session's memories -> the entries that go without a forget: expiry sweeps,
lifetimes ending (ephemeral at a flow's end, session at close) and dead sessions'
leftovers, each removal a trace event.

`MemoryManager` keeps binding and the operations; this is its bookkeeping of when
entries stop living (docs/language.md, Memory declarations; `axon.memory.lifetimes`),
kept apart so that the manager reads as binding plus operations. Each function takes
the manager whose memories, backends and lifetimes it sweeps, and reads its state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.lifetimes import OWNED_MARKER, parse_owned
from axon.runtime import tiers as tiering
from axon.runtime.reporting import elapsed_ms, errors_named
from axon.runtime.tracer import TraceEventType

if TYPE_CHECKING:
    from axon.runtime.manager import BoundMemory, MemoryManager

SWEEP_INTERVAL = 60.0
"""Seconds (of the session clock) between expiry sweeps of a backend while in use."""


async def sweep_dead_owners(
    manager: MemoryManager, backend: MemoryBackend, backend_name: str
) -> int:
    """Clear the owned scopes of dead sessions (killed before closing); returns rows."""
    total = 0
    for scope in await backend.scopes(OWNED_MARKER):
        owned = parse_owned(scope)
        if owned is None or owned.owner == manager.owner or owned.owner.alive():
            continue
        started = time.perf_counter()
        count = await backend.clear(scope=scope)
        total += count
        manager.tracer.emit(
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


def purge_reporter(manager: MemoryManager, backend_name: str) -> Callable[[int, Any], None]:
    """The backend's purge listener: one `memory_expire` event per memory purged."""

    def report(count: int, by_scope: Mapping[str | None, int] | None) -> None:
        if by_scope is None:
            manager.tracer.emit(
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
                if owned.owner != manager.owner:
                    data["other_session"] = True
            manager.tracer.emit(TraceEventType.MEMORY_EXPIRE, data=data)

    return report


async def pop_lifetime(manager: MemoryManager) -> int:
    """End it: delete what it wrote to ephemeral memories; returns how many."""
    written = manager._lifetimes.pop() if manager._lifetimes else []
    dropped: dict[str, tuple[str, int]] = {}  # memory -> (backend, entries deleted)
    started = time.perf_counter()
    for memory, key in dict.fromkeys(written):
        tiered = manager.tiered.get(memory)
        bound = tiered.tiers.get("ephemeral") if tiered else manager.bound.get(memory)
        if bound is None:
            continue
        deleted = await bound.backend.delete(key, scope=bound.scope)
        count = dropped.get(memory, ("", 0))[1] + int(deleted)
        dropped[memory] = (bound.backend_key[0], count)
    for memory, (backend, count) in dropped.items():  # one event per memory written to
        emit_lifetime_end(
            manager, memory, backend, "ephemeral", count, "its flow or input ended", started
        )
    return sum(count for _, count in dropped.values())


def emit_lifetime_end(
    manager: MemoryManager,
    memory: str,
    backend: str,
    store: str,
    count: int,
    reason: str,
    started: float,
) -> None:
    """A `memory_clear` event for entries a lifetime took with it (ephemeral at the end
    of a flow or input, session at close): every memory operation leaves a trace."""
    manager.tracer.emit(
        TraceEventType.MEMORY_CLEAR,
        data={"memory": memory, "backend": backend, "count": count, "store": store,
              "reason": reason, "duration_ms": elapsed_ms(started)},
        duration_ms=elapsed_ms(started),
    )


async def sweep(manager: MemoryManager, name: str) -> int:
    """Purge expired entries of the backend holding `name` now; returns the count.

    For a tiered memory: every tier's backend, then idle entries are demoted."""
    tiered = manager.tiered.get(name)
    if tiered is None:
        return await maybe_sweep(manager, manager.get(name), force=True)
    total = 0
    for one in tiered.tiers.values():
        total += await maybe_sweep(manager, one, force=True)
    with errors_named(name):
        await tiering.demote_idle(manager, tiered, force=True)
        await tiering.flush_stats(tiered)
    return total


async def maybe_sweep(manager: MemoryManager, bound: BoundMemory, *, force: bool = False) -> int:
    state = manager._backends[bound.backend_key]
    now = manager.clock()
    if not force and now - state.last_sweep < SWEEP_INTERVAL:
        return 0
    state.last_sweep = now
    return await state.instance.purge_expired()  # reported by `purge_reporter`


async def close(manager: MemoryManager) -> None:
    """End the session: clear its own owned scopes, close every backend.

    Every backend is tried even when one fails; the failures are raised
    afterwards as one `AxonMemoryError` naming each backend.
    """
    failures: list[str] = []
    if manager._vectors is not None:
        await manager._vectors.close()  # before the stores close: no batch is saved after
    try:
        while manager._lifetimes:
            await pop_lifetime(manager)
    except AxonMemoryError as exc:
        failures.append(str(exc))
    for tiered in manager.tiered.values():
        try:
            await tiering.flush_stats(tiered)
        except AxonMemoryError as exc:
            failures.append(f"memory '{tiered.name}': {exc}")
    for (backend_name, _, _), state in manager._backends.items():
        backend = state.instance
        try:
            if not backend.closed:
                for scope in await backend.scopes(manager.owner.prefix):
                    started = time.perf_counter()
                    count = await backend.clear(scope=scope)
                    owned = parse_owned(scope)
                    if owned is not None:
                        emit_lifetime_end(
                            manager, owned.memory, backend_name, owned.lifetime, count,
                            "the session closed", started,
                        )
        except AxonMemoryError as exc:
            failures.append(f"backend '{backend_name}': {exc}")
        try:
            await backend.close()
        except AxonMemoryError as exc:
            failures.append(f"backend '{backend_name}': {exc}")
    manager._backends.clear()
    manager.owner.release()
    if failures:
        raise AxonMemoryError("closing the session failed: " + "; ".join(failures))
