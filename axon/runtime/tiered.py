"""A memory that spans tiers and an operation -> that operation over its tiers: remember,
recall, get, list, page, count, delete, forget by filter, clear, associate, the moves
between tiers (promotion, demotion) and the counters (docs/language.md §9 Tiered memories).

A `TieredMemory` is composed of one `PlainMemory` per tier (fastest first; each runs
its one-store operations: expiry sweeps, one tier's recall and write events) and the
tier rules of `axon.runtime.tiers` (which tier a write goes to, one copy of each key,
one ranking across tiers, the persistent counters). `MemoryManager.bind` builds it;
it answers the `Memory` protocol as a `PlainMemory` does.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from axon.compiler.ir import IRMemory
from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.entry import Clock, MemoryEntry, NewEntry, matching_entries
from axon.memory.links import LinkChange, MissingLinkTarget, kept_related
from axon.memory.versions import Version
from axon.runtime import tiers as tiering
from axon.runtime.associations import (
    back_links,
    missing_associate,
    missing_related,
    related_keys,
)
from axon.runtime.memory import Change, Write, batch_error, item_error
from axon.runtime.plain import PlainMemory
from axon.runtime.records import expiry_of, keep_duration
from axon.runtime.reporting import elapsed_ms, emit_listing, errors_named
from axon.runtime.sweeps import Lifetimes
from axon.runtime.tiers import Tiered
from axon.runtime.tracer import TraceEventType, Tracer

T = TypeVar("T")

DEMOTE_INTERVAL = 60.0
"""Seconds (of the session clock) between two looks for idle entries of a tiered memory."""
DEMOTE_PAGE = 500
"""Entries read per page while looking for idle entries."""

DEMOTABLE = frozenset({"session"})
"""The tiers demotion moves entries out of: those living in this session and having a
tier below them. Never `persistent`: its entries may be in use by other sessions this
one cannot see, and a demoted one would be deleted when this session closes."""


class TieredMemory:
    """One declared memory over its tiers (`tiers.Tiered`: the tiers and what they track)."""

    def __init__(
        self, state: Tiered, *, tracer: Tracer, clock: Clock, lifetimes: Lifetimes
    ) -> None:
        self.state = state
        self.tracer = tracer
        self.clock = clock
        self.lifetimes = lifetimes

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def decl(self) -> IRMemory:
        return self.state.decl

    @property
    def tiers(self) -> dict[str, PlainMemory]:
        """Each tier, fastest first, as one store of its own."""
        return self.state.tiers

    @property
    def face(self) -> PlainMemory:
        """The `store:` tier: where a write that names no tier goes, when no policy says."""
        return self.state.tiers[self.decl.store]

    @property
    def backend(self) -> MemoryBackend:
        return self.face.backend

    # ------------------------------------------------------------ upkeep
    async def maintain(self, *, flush: bool = False) -> None:
        """Before a tiered operation: each tier's expiry sweep, then due demotions
        (and, with `flush`, the counters written when those changed them)."""
        for one in self.tiers.values():
            await one.maybe_sweep()
        with errors_named(self.name):
            await self.demote_idle()
            if flush:
                await tiering.flush_stats(self.state)

    async def sweep(self) -> int:
        """Purge expired entries of every tier's backend now, then demote idle entries."""
        total = 0
        for one in self.tiers.values():
            total += await one.maybe_sweep(force=True)
        with errors_named(self.name):
            await self.demote_idle(force=True)
            await tiering.flush_stats(self.state)
        return total

    async def flush(self) -> None:
        await tiering.flush_stats(self.state)

    def stats(self) -> dict[str, dict[str, int]]:
        """Per tier: `stores`, `recalls`, `forgets`, `promotions`, `demotions`; the
        persistent tier's across sessions (`tiers.flush_stats`)."""
        return self.state.stats.snapshot()

    async def move(self, key: str, source: str, target: str) -> bool:
        """Move the entry under `key` from tier `source` to `target`: written to the target
        first, then deleted from the source, so a crash in between leaves a copy (and
        `tiers.find` keeps one). Emits `memory_promote` or `memory_demote`; False when the
        entry is no longer in `source`."""
        state = self.state
        promote = state.order(target) > state.order(source)
        kind = "promote" if promote else "demote"
        started = time.perf_counter()
        src, dst = self.tiers[source], self.tiers[target]
        entry = await src.backend.get(key, scope=src.scope)
        if entry is None:
            return False
        await dst.backend.store_many([tiering.stored_copy(entry, dst.scope)])
        if os.environ.get(tiering.KILL_HOOK_ENV) == kind:  # test only: die between the writes
            os.kill(os.getpid(), signal.SIGKILL)
        await src.backend.delete(key, scope=src.scope)
        if target == "ephemeral":  # its lifetime is now the current flow's or input's
            self.lifetimes.written(self.name, dst.shared, dst.scope, key)
        state.stats.add(source, "promotions" if promote else "demotions")
        state.recalls.pop(key, None)
        self.tracer.emit(
            TraceEventType.MEMORY_PROMOTE if promote else TraceEventType.MEMORY_DEMOTE,
            data={
                "memory": self.name,
                "key": key,
                "from": source,
                "to": target,
                "backend": dst.backend_name,
                "duration_ms": elapsed_ms(started),
            },
        )
        return True

    async def after_recall(self, hits: Sequence[MemoryEntry]) -> None:
        """Count the recall of each result; promote those recalled `promote_after` times."""
        state = self.state
        now = self.clock()
        for hit in hits:
            state.used[hit.key] = now
            tier = str(hit.metadata["tier"])
            count = state.recalls.get(hit.key, 0) + 1
            state.recalls[hit.key] = count
            limit = state.decl.promote_after
            index = state.order(tier)
            if limit is not None and count >= limit and index + 1 < len(state.decl.tiers):
                await self.move(hit.key, tier, state.decl.tiers[index + 1])

    async def demote_idle(self, *, force: bool = False) -> int:
        """Move every entry of a `DEMOTABLE` tier idle for `demote_after` one tier back;
        returns how many moved.

        Runs at most every `DEMOTE_INTERVAL` seconds of the session clock unless `force`.
        Each tier above the fastest is read by keyset pages of `DEMOTE_PAGE`; the moves come
        after the reading, so no page shifts under the reader.
        """
        state = self.state
        idle = state.decl.demote_after_seconds
        now = self.clock()
        if idle is None or (not force and now - state.last_check < DEMOTE_INTERVAL):
            return 0
        state.last_check = now
        moves: list[tuple[str, str, str]] = []
        names = state.decl.tiers
        for index in range(1, len(names)):
            if names[index] not in DEMOTABLE:
                continue
            one = self.tiers[names[index]]
            cursor: str | None = None
            while True:
                page = await one.backend.list_page(one.scope, limit=DEMOTE_PAGE, after=cursor)
                for entry in page.entries:
                    last = max(entry.timestamp, state.used.get(entry.key, float("-inf")))
                    if now - last >= idle:
                        moves.append((entry.key, names[index], names[index - 1]))
                if page.cursor is None:
                    break
                cursor = page.cursor
        moved = 0
        for key, source, target in moves:
            moved += int(await self.move(key, source, target))
            state.used[key] = now  # it starts its idle time again in the tier below
        return moved

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
        """Write to the chosen tier (`tiers.choose_tier`: `tier`, the `with { tier }`, first),
        then remove the key's copy from any other tier. Associations may cross tiers: each
        named entry gains its link back where it lives (`write_links`: one transaction per
        tier, the entry's own tier in the transaction that stores it). A failure before the
        first write changes nothing."""
        name = self.name
        state = self.state
        with errors_named(name):
            await self.maintain()
        chosen = tiering.choose_tier(self.decl, metadata, tier)
        target = self.tiers[chosen]
        now = self.clock()
        expires_at = expiry_of(self.decl, metadata, now, expires_in)
        meta = {**metadata, "scope": target.scope}
        keep_duration(self.decl, name, key, meta, expires_at, now)
        started = time.perf_counter()
        with errors_named(name):
            old = await tiering.find(state, key)
            given = list(dict.fromkeys(related_keys(meta)))
            if key in given:
                raise AxonMemoryError("an entry cannot be related to itself", memory=name, key=key)
            if old is not None and old[0] != chosen:  # the target tier's store keeps its own
                given = list(dict.fromkeys([*related_keys(old[1].metadata), *given]))
            if given:
                meta["related"] = given
            else:
                meta.pop("related", None)
            changes: dict[str, list[LinkChange]] = {}
            for change in back_links(key, related_keys(meta)):
                where = await tiering.find(state, change.key)
                if where is None:
                    raise missing_related(MissingLinkTarget(change.key), name, key)
                changes.setdefault(where[0], []).append(change)
            try:
                # A live copy in another tier: its first write is the entry's (the target
                # tier's store keeps its own copy's by itself).
                first = old[1].created_at if old is not None and old[0] != chosen else None
                done = await target.backend.write_links(
                    target.scope,
                    changes.pop(chosen, []),
                    store=NewEntry(
                        key, value, meta, expires_at, timestamp=now, created_at=first
                    ),
                )
                for other_tier, batch in changes.items():
                    one = self.tiers[other_tier]
                    await one.backend.write_links(one.scope, batch)
            except MissingLinkTarget as exc:
                raise missing_related(exc, name, key) from None
            stored = done.stored
            assert stored is not None
            if old is not None and old[0] != chosen:
                one = self.tiers[old[0]]
                await one.backend.delete(key, scope=one.scope)
            state.stats.add(chosen, "stores")
            state.used[key] = now
            state.recalls.pop(key, None)
            await tiering.flush_stats(state)
        target.written(key, value, chosen, expires_at, stored.metadata, started, tier=chosen)
        return tiering.located(stored, name, chosen)

    async def remember_many(self, writes: Sequence[Write]) -> list[MemoryEntry]:
        """Each write to its tier (`tiers.choose_tier`, as `remember`), one `store_many` per
        tier, then each key's copy in another tier removed. Every item is checked and
        stamped before the first write (a bad one is an `AxonMemoryError` naming its
        index, nothing written); each tier's batch is all or none, but a tier that fails
        after another stored its batch leaves that batch stored (no transaction spans two
        stores). A replaced entry keeps its associations; no new ones (`related`). One
        `memory_write` event with the `count` and the count per tier."""
        name = self.name
        state = self.state
        with errors_named(name):
            await self.maintain()
        now = self.clock()
        started = time.perf_counter()
        chosen: list[str] = []
        olds: list[tuple[str, MemoryEntry] | None] = []
        batches: dict[str, list[NewEntry]] = {}
        with errors_named(name):
            for index, write in enumerate(writes):
                try:
                    tier = tiering.choose_tier(self.decl, write.metadata, write.tier)
                    if "related" in write.metadata:
                        raise AxonMemoryError(
                            "remember_many makes no associations: give related to remember",
                            memory=name, key=write.key,
                        )
                    target = self.tiers[tier]
                    expires_at = expiry_of(self.decl, write.metadata, now, write.expires_in)
                    meta = {**write.metadata, "scope": target.scope}
                    keep_duration(self.decl, name, write.key, meta, expires_at, now)
                    old = await tiering.find(state, write.key)
                    meta = kept_related(
                        meta, None if old is None else old[1].metadata, memory=name, key=write.key
                    )
                except AxonMemoryError as exc:
                    raise item_error(index, exc) from None
                chosen.append(tier)
                olds.append(old)
                # A live copy in another tier: its first write is the entry's, as in
                # `remember` (the target tier's store keeps its own copy's by itself).
                first = old[1].created_at if old is not None and old[0] != tier else None
                batches.setdefault(tier, []).append(
                    NewEntry(
                        write.key, write.value, meta, expires_at, timestamp=now, created_at=first
                    )
                )
            stored: dict[tuple[str, str], MemoryEntry] = {}
            for tier, batch in batches.items():
                target = self.tiers[tier]
                try:
                    written = await target.backend.store_many(batch)
                except AxonMemoryError as exc:  # the backend's own checks (size caps, text)
                    raise batch_error(exc, [write.key for write in writes]) from None
                for entry in written:
                    stored[(tier, entry.key)] = entry
                target.vectors.wrote(target.backend, target.scope)
                state.stats.add(tier, "stores", len(batch))
            for write, tier, old in zip(writes, chosen, olds, strict=True):
                if old is not None and old[0] != tier:
                    one = self.tiers[old[0]]
                    await one.backend.delete(write.key, scope=one.scope)
                if tier == "ephemeral":
                    one = self.tiers[tier]
                    self.lifetimes.written(name, one.shared, one.scope, write.key)
                state.used[write.key] = now
                state.recalls.pop(write.key, None)
            await tiering.flush_stats(state)
        self.tracer.emit(
            TraceEventType.MEMORY_WRITE,
            data={
                "op": "remember_many",
                "count": len(writes),
                "tiers": {tier: len(batch) for tier, batch in batches.items()},
                "memory": name,
                "backend": self.face.backend_name,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return [
            tiering.located(stored[(tier, write.key)], name, tier)
            for write, tier in zip(writes, chosen, strict=True)
        ]

    async def associate(self, a: str, b: str) -> None:
        """`associate` across tiers: each entry's `related` gains the other in the tier it
        lives in (`write_links`: both in one transaction when they share a tier)."""
        name = self.name
        await self.face.maybe_sweep()
        if a == b:
            raise AxonMemoryError("an entry cannot be related to itself", memory=name, key=a)
        started = time.perf_counter()
        with errors_named(name):
            changes: dict[str, list[LinkChange]] = {}
            for key, other in ((a, b), (b, a)):
                where = await tiering.find(self.state, key)
                if where is None:
                    raise AxonMemoryError("cannot associate: no such entry", memory=name, key=key)
                changes.setdefault(where[0], []).append(LinkChange(key, add=(other,)))
            count = 0
            try:
                for tier, batch in changes.items():
                    one = self.tiers[tier]
                    count += len((await one.backend.write_links(one.scope, batch)).changed)
            except MissingLinkTarget as exc:
                raise missing_associate(exc, name) from None
        self.tracer.emit(
            TraceEventType.MEMORY_WRITE,
            data={
                "op": "associate",
                "key": a,
                "related": b,
                "count": count,
                "memory": name,
                "backend": self.face.backend_name,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )

    async def _delete_one(self, key: str) -> str | None:
        """Delete `key` from the tier holding it, unlinking it from the entries of that tier
        in the same transaction (`write_links`), then from those of the other tiers;
        returns that tier or None."""
        state = self.state
        await self.maintain()
        where = await tiering.find(state, key)
        if where is None:
            return None
        tier, entry = where
        one = self.tiers[tier]
        if not (await one.backend.write_links(one.scope, delete=key)).deleted:
            return None
        state.stats.add(tier, "forgets")
        state.recalls.pop(key, None)
        state.used.pop(key, None)
        unlink = [LinkChange(other, remove=(key,)) for other in related_keys(entry.metadata)]
        for other_tier, holder in self.tiers.items():
            if other_tier != tier and unlink:  # an entry that is not there is skipped
                await holder.backend.write_links(holder.scope, unlink)
        return tier

    async def delete(self, key: str) -> bool:
        """Remove the entry under `key` from the tier holding it; a `memory_delete` event
        naming that tier."""
        name = self.name
        started = time.perf_counter()
        with errors_named(name):
            tier = await self._delete_one(key)
            await tiering.flush_stats(self.state)
        self.tracer.emit(
            TraceEventType.MEMORY_DELETE,
            data={
                "key": key, "count": int(tier is not None), "memory": name,
                "backend": self.face.backend_name, "store": tier or self.decl.store,
                **({"tier": tier} if tier is not None else {}),
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return tier is not None

    async def delete_matching(self, filters: Mapping[str, Any]) -> int:
        """A filtered forget over every tier: the matching keys first, then each deleted
        (`delete`); one `memory_delete` event."""
        name = self.name
        if not filters:
            raise AxonMemoryError(
                "forget with an empty filter would delete everything", memory=name
            )
        started = time.perf_counter()
        keys = [e.key for e in await self.list_matching(None, filters)]
        deleted = 0
        with errors_named(name):
            for key in keys:
                deleted += int(await self._delete_one(key) is not None)
            await tiering.flush_stats(self.state)
        self.tracer.emit(
            TraceEventType.MEMORY_DELETE,
            data={
                "filter": dict(filters),
                "count": deleted,
                "memory": name,
                "backend": self.face.backend_name,
                "store": self.decl.store,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return deleted

    async def clear(self) -> int:
        """Clear every tier (a `memory_clear` event each); a key held by two tiers is one
        forget."""
        state = self.state
        with errors_named(self.name):
            await tiering.reconcile(state)
        total = 0
        for tier, one in self.tiers.items():
            count = await one.clear()
            state.stats.add(tier, "forgets", count)
            total += count
        state.recalls.clear()
        state.used.clear()
        with errors_named(self.name):
            await tiering.flush_stats(state)
        return total

    async def history(self, key: str) -> list[Version]:
        """A tiered memory keeps no history (the checker refuses `history:` on one: an
        entry moves between stores); an `AxonMemoryError` saying so."""
        raise AxonMemoryError(
            "a tiered memory keeps no history (declare history on a memory of one lifetime)",
            memory=self.name, key=key,
        )

    async def purge_history(self) -> int:
        """Nothing to purge: a tiered memory keeps no history."""
        return 0

    # ------------------------------------------------------------ reads
    async def _read_once(
        self, read: Callable[[], Awaitable[T]], met: Callable[[T], Iterable[tuple[str, str]]]
    ) -> T:
        """`read()` of several tiers, done again while what it met (`met(result)`: the
        `(tier, key)` of each entry it read from a tier) had copies shadowed by a slower
        tier, which `tiers.drop_shadowed` deletes: the result holds each key once, the
        slower tier's copy. Each round deletes one copy or more of the (finite) fast
        tiers. A method, not a helper of tiers.py, so that a recall stays in this file
        on its way to the tiers' `PlainMemory.search`."""
        while True:
            result = await read()
            if not await tiering.drop_shadowed(self.state, met(result)):
                return result

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
        """Search the tiers (all, or `tiers`), rank the results together (`tiers.rank`),
        count the recall, promote what has been recalled `promote_after` times. One
        `memory_read` event with `tiers` and each result's tier; also returns how many
        entries of the searched tiers were still without a vector, and `below_floor`: how
        many more results `min_score: 0` would have given (each tier's nearest together)."""
        name = self.name
        state = self.state
        started = time.perf_counter()
        chosen = state.selected(tiers)
        with errors_named(name):
            await self.maintain()
        effective = mode
        data: dict[str, Any] = {}
        pending = 0
        nearest = 0

        async def search() -> list[tuple[str, MemoryEntry]]:
            nonlocal effective, data, pending, nearest
            found: list[tuple[str, MemoryEntry]] = []
            pending = nearest = 0
            for tier in chosen:
                results, effective, data, waiting = await self.tiers[tier].search(
                    query, top_k, mode, filters, embed_wait=embed_wait, min_score=min_score
                )
                pending += waiting
                nearest += len(results) + data["below_floor"]
                found += [(tier, tiering.located(e, name, tier)) for e in results]
            return found

        # A fast tier's copy of a key a slower tier holds must not stand in for that copy,
        # even when only the faster one matches: such copies are deleted and searched again.
        with errors_named(name):
            found = await self._read_once(search, tiering.copies)
        for tier in chosen:
            state.stats.add(tier, "recalls")
        ranked = tiering.rank(found, state.decl.tiers, top_k)
        with errors_named(name):
            ranked = await self._refreshed(ranked)
            await self.after_recall(ranked)
            await tiering.flush_stats(state)
        # The memory's `store:` tier may be one a recall of `tiers: [persistent]` never
        # read: name the backends searched instead.
        backends = {tier: self.tiers[tier].backend_name for tier in chosen}
        data.update(
            memory=name,
            backend=backends[tiering.most_durable(chosen)],
            backends=backends,
            tiers=chosen,
            results_count=len(ranked),
            below_floor=max(0, min(top_k, nearest) - len(ranked)),
            results=[
                {
                    "key": r.key,
                    "score": r.score,
                    "tier": r.metadata["tier"],
                    **({"signals": r.signals} if r.signals else {}),
                }
                for r in ranked
            ],
            duration_ms=elapsed_ms(started),
        )
        if pending:
            data["pending_vectors"] = pending
        else:
            data.pop("pending_vectors", None)
        self.tracer.emit(TraceEventType.MEMORY_READ, data=data, duration_ms=elapsed_ms(started))
        return ranked, effective, pending, data["below_floor"]

    async def _refreshed(self, ranked: list[MemoryEntry]) -> list[MemoryEntry]:
        """A recall's results (each with its `tier` metadata), with their expiry restarted
        in the tier that holds each (`PlainMemory.refreshed`: on `refresh_on_read`)."""
        if not self.decl.refresh_on_read:
            return ranked
        restarted: dict[str, MemoryEntry] = {}
        for tier, one in self.tiers.items():
            held = [entry for entry in ranked if entry.metadata.get("tier") == tier]
            restarted.update((entry.key, entry) for entry in await one.refreshed(held))
        return [restarted.get(entry.key, entry) for entry in ranked]

    async def get(self, key: str) -> MemoryEntry | None:
        """The unexpired entry under `key` in whichever tier holds it (its metadata says
        which: `tier`), or None; a `memory_read` event (`op: get`)."""
        name = self.name
        state = self.state
        await self.face.maybe_sweep()
        started = time.perf_counter()
        with errors_named(name):
            await self.maintain()
            where = await tiering.find(state, key)
            if where is not None:
                [refreshed] = await self.tiers[where[0]].refreshed([where[1]])
                where = (where[0], refreshed)
            await tiering.flush_stats(state)
        if where is not None:
            state.used[key] = self.clock()
        self.tracer.emit(
            TraceEventType.MEMORY_READ,
            data={
                "op": "get", "query": key, "key": key,
                "results_count": int(where is not None), "top_k": 1, "memory": name,
                "backend": self.face.backend_name,
                **({"tier": where[0]} if where is not None else {}),
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return None if where is None else tiering.located(where[1], name, where[0])

    async def update(self, key: str, change: Change) -> MemoryEntry:
        """See `Memory.update`: the tier holding `key` changes it (`PlainMemory.changed`,
        one transaction of that tier's store), and the memory emits one `memory_update`
        event naming the tier. No tier holds it: an `AxonMemoryError` naming memory and
        key. The tier is found first: an entry moved to another tier in between (by
        another process) is not found there, and that is the error."""
        name = self.name
        await self.face.maybe_sweep()
        started = time.perf_counter()
        with errors_named(name):
            await self.maintain()
            where = await tiering.find(self.state, key)
        if where is None:
            raise AxonMemoryError(
                "no entry to update (update changes a stored entry; remember writes one)",
                memory=name,
                key=key,
            )
        tier = where[0]
        done = await self.tiers[tier].changed(key, change)
        self.state.used[key] = self.clock()
        self.tracer.emit(
            TraceEventType.MEMORY_UPDATE,
            data={
                "key": key,
                "fields": change.fields(),
                "memory": name,
                "backend": self.tiers[tier].backend_name,
                "tier": tier,
                "duration_ms": elapsed_ms(started),
            },
            duration_ms=elapsed_ms(started),
        )
        return tiering.located(done, name, tier)

    async def associated(self, entry: MemoryEntry) -> list[MemoryEntry]:
        """The stored entries `entry` is associated with, in whichever tier each lives."""
        found: list[MemoryEntry] = []
        with errors_named(self.name):
            for key in related_keys(entry.metadata):
                where = await tiering.find(self.state, key)
                if where is not None:
                    found.append(tiering.located(where[1], self.name, where[0]))
        return found

    async def list_matching(
        self, limit: int | None = None, filters: Mapping[str, Any] | None = None
    ) -> list[MemoryEntry]:
        """Every tier's entries matching `filters` (one `memory_read` event per tier),
        newest first overall, each key once, at most `limit`."""
        await self.maintain(flush=True)

        async def read() -> list[tuple[str, MemoryEntry]]:
            listed: list[tuple[str, MemoryEntry]] = []
            for tier, one in self.tiers.items():
                listed += [(tier, e) for e in await one.list_matching(limit, filters)]
            return listed

        with errors_named(self.name):
            per_tier = await self._read_once(read, tiering.copies)
        return merged(per_tier, limit)

    async def entries(self, limit: int | None = None) -> list[MemoryEntry]:
        async def read() -> list[tuple[str, MemoryEntry]]:
            found: list[tuple[str, MemoryEntry]] = []
            for tier, one in self.tiers.items():
                found += [(tier, e) for e in await one.entries(limit)]
            return found

        with errors_named(self.name):
            return merged(await self._read_once(read, tiering.copies), limit)

    async def count(self) -> int:
        """Every tier's entries; a key held by two tiers counts once."""
        await self.maintain(flush=True)
        with errors_named(self.name):
            await tiering.reconcile(self.state)
        total = 0
        for one in self.tiers.values():
            total += await one.count()
        return total

    async def page_matching(
        self, limit: int, after: str | None, filters: Mapping[str, Any] | None = None
    ) -> tuple[list[MemoryEntry], str | None]:
        """One page of the listing of every tier, newest first (the order of `merged`:
        ties faster tier first), those matching `filters` kept, and the cursor of the
        next page (None: the last).

        The cursor holds each tier's own keyset cursor (`MemoryBackend.list_page`): each
        tier is read from its place, the reads merged, and each tier's place moved past
        exactly the entries the page took from it (a second read of that many when it took
        only some), so a walk repeats and skips nothing that stayed, as on one store. One
        `memory_read` event (`op: page`) with `tiers` and `backends`."""
        name = self.name
        state = self.state
        places = _page_places(after, state)
        with errors_named(name):
            await self.maintain(flush=True)
        started = time.perf_counter()
        ends: dict[str, str | None] = {}

        async def read_places() -> dict[str, list[MemoryEntry]]:
            read: dict[str, list[MemoryEntry]] = {}
            for tier, one in self.tiers.items():
                if tier not in places:
                    continue  # read to its end on an earlier page
                got = await one.backend.list_page(one.scope, limit=limit, after=places[tier])
                read[tier], ends[tier] = got.entries, got.cursor
            return read

        def met(read: dict[str, list[MemoryEntry]]) -> list[tuple[str, str]]:
            return [(tier, e.key) for tier, entries in read.items() for e in entries]

        # A key held by two tiers is paged once, as the slower tier's copy: the faster
        # copies this page met are deleted and the places read again (keyset places
        # stay valid when entries go).
        with errors_named(name):
            read = await self._read_once(read_places, met)
        candidates: list[tuple[float, int, int, str, MemoryEntry]] = []
        for tier, entries in read.items():
            rank = state.order(tier)
            candidates += [(-e.timestamp, rank, i, tier, e) for i, e in enumerate(entries)]
        candidates.sort(key=lambda c: c[:3])
        chosen = candidates[:limit]
        taken = {tier: sum(1 for c in chosen if c[3] == tier) for tier in read}
        following: dict[str, str | None] = {}  # a tier left out is read through
        for tier, entries in read.items():
            if taken[tier] == len(entries):  # all it read was taken (or it had none)
                if ends[tier] is not None:
                    following[tier] = ends[tier]
            elif taken[tier] == 0:
                following[tier] = places[tier]  # none taken: from the same place (None: start)
            else:
                one = self.tiers[tier]
                with errors_named(name):
                    again = await one.backend.list_page(
                        one.scope, limit=taken[tier], after=places[tier]
                    )
                if again.cursor is not None:
                    following[tier] = again.cursor
        entries = matching_entries(
            [tiering.located(e, name, tier) for _, _, _, tier, e in chosen], filters, self.clock()
        )
        cursor = _page_cursor(following)
        backends = {tier: one.backend_name for tier, one in self.tiers.items()}
        emit_listing(
            self.tracer, "page", name, count=len(entries), limit=limit,
            backend=backends[tiering.most_durable(list(self.tiers))], filters=filters,
            started=started, backends=backends, tiers=list(self.tiers),
            more=cursor is not None,
        )
        return entries, cursor

    # ------------------------------------------------------------ vectors and stores
    async def embed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Every tier's pending vectors, one tier after the other (`progress` counts on
        across them); returns how many."""
        total = 0
        for one in self.tiers.values():
            total += await one.embed(_counting_on(progress, total))
        return total

    async def resume_vectors(self) -> int:
        pending = 0
        for one in self.tiers.values():
            pending += await one.resume_vectors()
        return pending

    async def sources(self) -> list[tuple[MemoryBackend, str]]:
        """Every tier's store and scope, after a key held by two tiers kept one copy (the
        slower tier's)."""
        with errors_named(self.name):
            await tiering.reconcile(self.state)
        return [(one.backend, one.scope) for one in self.tiers.values()]

    async def place(self, key: str, metadata: Mapping[str, Any]) -> tuple[MemoryBackend, str]:
        """The tier holding `key`, else the one a remember would write (`choose_tier`: its
        `persist_if` policy, else the memory's `store:`)."""
        held = await tiering.find(self.state, key)
        tier = held[0] if held is not None else tiering.choose_tier(self.decl, metadata, None)
        one = self.tiers[tier]
        return one.backend, one.scope


def merged(found: Sequence[tuple[str, MemoryEntry]], limit: int | None) -> list[MemoryEntry]:
    """Entries of several tiers as one list, newest first, each key once."""
    seen: dict[str, tuple[str, MemoryEntry]] = {}
    for tier, entry in found:
        seen[entry.key] = (tier, entry)  # tiers come fastest first: the slower wins
    ordered = sorted(seen.values(), key=lambda item: -item[1].timestamp)  # stable: ties
    # keep each tier's own order, faster tiers first
    entries = [tiering.located(e, e.metadata.get("scope") or "", t) for t, e in ordered]
    return entries[:limit] if limit is not None else entries


def _counting_on(
    progress: Callable[[int, int], None] | None, before: int
) -> Callable[[int, int], None] | None:
    """`progress` told `(before + done, before + total)`: one count over several tiers."""
    if progress is None or before == 0:
        return progress
    return lambda done, total: progress(before + done, before + total)

_PAGE_PREFIX = "tiers"
"""The first element of a tiered listing's cursor (an untiered cursor is refused)."""


def _page_places(text: str | None, tiered: Tiered) -> dict[str, str | None]:
    """Each tier still to read and its own keyset cursor (None: from its newest entry),
    from a cursor `page` made; every tier for the first page."""
    if text is None:
        return dict.fromkeys(tiered.tiers)
    refused = AxonMemoryError(
        f"{str(text)[:40]!r} is not a cursor of this listing (pass the cursor of the "
        "previous page, or none for the first)",
        memory=tiered.name,
    )
    try:
        data = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise refused from None
    if not (isinstance(data, list) and len(data) == 2 and data[0] == _PAGE_PREFIX):
        raise refused
    places = data[1]
    if not isinstance(places, dict) or not places:
        raise refused
    for tier, place in places.items():
        if tier not in tiered.tiers or not (place is None or isinstance(place, str)):
            raise refused
    return places


def _page_cursor(places: dict[str, str | None]) -> str | None:
    if not places:
        return None
    raw = json.dumps([_PAGE_PREFIX, places], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


