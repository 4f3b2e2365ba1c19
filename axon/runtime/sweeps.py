"""A session's backends and lifetimes -> the entries that go without a forget: expiry
sweeps, lifetimes ending (ephemeral at a flow's end, session at close) and dead
sessions' leftovers, each removal a trace event.

The bookkeeping of when entries stop living (docs/language.md §4 Memory declarations;
`axon.memory.lifetimes`): `SharedBackend` is one backend instance of a session and
when it was last swept, shared by every memory bound to it; `Lifetimes` the flows
(and top-level inputs) running and the ephemeral entries each wrote. Both are given
the tracer and the session's owner; neither knows the memories that use them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from axon.memory.backend import MemoryBackend
from axon.memory.lifetimes import OWNED_MARKER, Owner, parse_owned
from axon.memory.namespaces import MARK, split_scope
from axon.runtime.reporting import elapsed_ms
from axon.runtime.tracer import TraceEventType, Tracer

SWEEP_INTERVAL = 60.0
"""Seconds (of the session clock) between expiry sweeps of a backend while in use."""


@attrs.define(eq=False)
class SharedBackend:
    """One backend instance of a session (per backend, location and memory directory),
    shared by the memories bound to it, and when it was last swept for expired entries."""

    instance: MemoryBackend
    name: str
    """The registry's name of the backend: what trace events call it."""
    last_sweep: float = float("-inf")

    async def maybe_sweep(self, now: float, *, force: bool = False) -> int:
        """Purge expired entries when `SWEEP_INTERVAL` has passed since the last sweep
        (or `force`); the purge listener reports them (`purge_reporter`)."""
        if not force and now - self.last_sweep < SWEEP_INTERVAL:
            return 0
        self.last_sweep = now
        return await self.instance.purge_expired()


async def sweep_dead_owners(shared: SharedBackend, owner: Owner, tracer: Tracer) -> int:
    """Clear the owned scopes of dead sessions (killed before closing), in the root and in
    every namespace; returns rows."""
    total = 0
    backend = shared.instance
    found = await backend.scopes(OWNED_MARKER)
    found += await backend.scopes(MARK)  # owned scopes inside a namespace
    for scope in found:
        owned = parse_owned(split_scope(scope)[1])
        if owned is None or owned.owner == owner or owned.owner.alive():
            continue
        started = time.perf_counter()
        count = await backend.clear(scope=scope)
        total += count
        tracer.emit(
            TraceEventType.MEMORY_CLEAR,
            data=marked({
                "memory": owned.memory,
                "backend": shared.name,
                "count": count,
                "store": owned.lifetime,
                "reason": f"session of process {owned.owner.pid} on "
                f"{owned.owner.host} ended without closing",
                "duration_ms": elapsed_ms(started),
            }, scope),
            duration_ms=elapsed_ms(started),
        )
    return total


def purge_reporter(
    tracer: Tracer, owner: Owner, backend_name: str
) -> Callable[[int, Any], None]:
    """The backend's purge listener: one `memory_expire` event per memory purged."""

    def report(count: int, by_scope: Mapping[str | None, int] | None) -> None:
        if by_scope is None:
            tracer.emit(
                TraceEventType.MEMORY_EXPIRE, data={"backend": backend_name, "count": count}
            )
            return
        for scope, removed in by_scope.items():
            base = split_scope(scope)[1] if scope is not None else None
            owned = parse_owned(base)
            data: dict[str, Any] = {
                "memory": owned.memory if owned is not None else base,
                "backend": backend_name,
                "count": removed,
            }
            if owned is not None:
                data["store"] = owned.lifetime
                if owned.owner != owner:
                    data["other_session"] = True
            tracer.emit(TraceEventType.MEMORY_EXPIRE, data=marked(data, scope))

    return report


def emit_lifetime_end(
    tracer: Tracer,
    memory: str,
    backend: str,
    store: str,
    count: int,
    reason: str,
    started: float,
    scope: str | None = None,
) -> None:
    """A `memory_clear` event for entries a lifetime took with it (ephemeral at the end
    of a flow or input, session at close): every memory operation leaves a trace, with
    `namespace` when `scope` is in one."""
    data = {"memory": memory, "backend": backend, "count": count, "store": store,
            "reason": reason, "duration_ms": elapsed_ms(started)}
    tracer.emit(TraceEventType.MEMORY_CLEAR, data=marked(data, scope),
                duration_ms=elapsed_ms(started))


def marked(data: dict[str, Any], scope: str | None) -> dict[str, Any]:
    """`data` with `namespace` ("acme/u42") when `scope` is in a namespace (not the root)."""
    namespace = split_scope(scope)[0] if scope is not None else None
    if namespace is not None and not namespace.is_root:
        data["namespace"] = namespace.text
    return data


class Lifetimes:
    """The flows (and top-level inputs) of a session, innermost last, and the ephemeral
    entries each wrote: they are deleted when it ends."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self._open: list[dict[tuple[str, str, str], SharedBackend]] = []

    def __bool__(self) -> bool:
        return bool(self._open)

    def push(self) -> None:
        """Start a flow (or top-level input): ephemeral writes are tracked until `pop`."""
        self._open.append({})

    def written(self, memory: str, shared: SharedBackend, scope: str, key: str) -> None:
        """`key` now lives in an ephemeral store (or tier) of `memory`, under `scope` of
        `shared`: it goes when the current flow or input ends."""
        if self._open:
            self._open[-1].setdefault((memory, scope, key), shared)

    async def pop(self) -> int:
        """End the innermost: delete what it wrote to ephemeral memories; returns how many.
        One `memory_clear` event per memory written to."""
        written = self._open.pop() if self._open else {}
        # (memory, scope) -> (backend, entries deleted)
        dropped: dict[tuple[str, str], tuple[str, int]] = {}
        started = time.perf_counter()
        for (memory, scope, key), shared in written.items():
            deleted = await shared.instance.delete(key, scope=scope)
            count = dropped.get((memory, scope), ("", 0))[1] + int(deleted)
            dropped[(memory, scope)] = (shared.name, count)
        for (memory, scope), (backend, count) in dropped.items():
            emit_lifetime_end(
                self.tracer, memory, backend, "ephemeral", count, "its flow or input ended",
                started, scope,
            )
        return sum(count for _, count in dropped.values())
