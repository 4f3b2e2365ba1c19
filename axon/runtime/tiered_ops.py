"""A memory that spans tiers and an operation -> that operation over its tiers: remember,
associate, recall, delete and a filtered forget, the merge of their listings and paging
through them (docs/language.md, Tiered memories).

`MemoryManager` calls these for a tiered memory (`tiers: [...]`) and keeps everything
else (binding, lifetimes, the one-tier operations each tier runs); the tier policy
itself (choosing a tier, ranking across tiers, promotion and demotion, counters) is
`axon.runtime.tiers`. Each function takes the manager that owns the memory: the tiers'
expiry sweeps, one-tier recalls and write events are its.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from axon.errors import AxonMemoryError
from axon.memory.entry import MemoryEntry, NewEntry, matches_filters
from axon.memory.links import LinkChange, MissingLinkTarget
from axon.runtime import tiers as tiering
from axon.runtime.associations import (
    back_links,
    missing_associate,
    missing_related,
    related_keys,
)
from axon.runtime.records import expiry_of
from axon.runtime.reporting import elapsed_ms, emit_listing, errors_named
from axon.runtime.tiers import Tiered
from axon.runtime.tracer import TraceEventType

if TYPE_CHECKING:
    from axon.runtime.manager import MemoryManager


def merged(found: Sequence[tuple[str, MemoryEntry]], limit: int | None) -> list[MemoryEntry]:
    """Entries of several tiers as one list, newest first, each key once."""
    seen: dict[str, tuple[str, MemoryEntry]] = {}
    for tier, entry in found:
        seen[entry.key] = (tier, entry)  # tiers come fastest first: the slower wins
    merged = sorted(seen.values(), key=lambda item: -item[1].timestamp)  # stable: ties
    # keep each tier's own order, faster tiers first
    entries = [tiering.located(e, e.metadata.get("scope") or "", t) for t, e in merged]
    return entries[:limit] if limit is not None else entries


async def maintain(manager: MemoryManager, tiered: Tiered, *, flush: bool = False) -> None:
    """Before a tiered operation: each tier's expiry sweep, then due demotions
    (and, with `flush`, the counters written when those changed them)."""
    for one in tiered.tiers.values():
        await manager.maybe_sweep(one)
    with errors_named(tiered.name):
        await tiering.demote_idle(manager, tiered)
        if flush:
            await tiering.flush_stats(tiered)


async def remember(
    manager: MemoryManager,
    tiered: Tiered,
    key: str,
    value: Any,
    metadata: Mapping[str, Any],
    expires_in: float | None,
    asked: str | None,
) -> MemoryEntry:
    """Write to the chosen tier (`tiers.choose_tier`), then remove the key's copy from
    any other tier. Associations may cross tiers: each named entry gains its link back
    where it lives (`write_links`: one transaction per tier, the entry's own tier in
    the transaction that stores it). A failure before the first write changes nothing."""
    name = tiered.name
    decl = tiered.decl
    with errors_named(name):
        await maintain(manager, tiered)
    tier = tiering.choose_tier(decl, metadata, asked)
    target = tiered.tiers[tier]
    now = manager.clock()
    expires_at = expiry_of(decl, metadata, now, expires_in)
    meta = {**metadata, "scope": target.scope}
    started = time.perf_counter()
    with errors_named(name):
        old = await tiering.find(tiered, key)
        given = list(dict.fromkeys(related_keys(meta)))
        if key in given:
            raise AxonMemoryError("an entry cannot be related to itself", memory=name, key=key)
        if old is not None and old[0] != tier:  # the target tier's store keeps its own
            given = list(dict.fromkeys([*related_keys(old[1].metadata), *given]))
        if given:
            meta["related"] = given
        else:
            meta.pop("related", None)
        changes: dict[str, list[LinkChange]] = {}
        for change in back_links(key, related_keys(meta)):
            where = await tiering.find(tiered, change.key)
            if where is None:
                raise missing_related(MissingLinkTarget(change.key), name, key)
            changes.setdefault(where[0], []).append(change)
        try:
            done = await target.backend.write_links(
                target.scope,
                changes.pop(tier, []),
                store=NewEntry(key, value, meta, expires_at, timestamp=now),
            )
            for other_tier, batch in changes.items():
                one = tiered.tiers[other_tier]
                await one.backend.write_links(one.scope, batch)
        except MissingLinkTarget as exc:
            raise missing_related(exc, name, key) from None
        stored = done.stored
        assert stored is not None
        if old is not None and old[0] != tier:
            one = tiered.tiers[old[0]]
            await one.backend.delete(key, scope=one.scope)
        tiered.stats.add(tier, "stores")
        tiered.used[key] = now
        tiered.recalls.pop(key, None)
        await tiering.flush_stats(tiered)
    manager.written(target, key, value, tier, expires_at, stored.metadata, started, tier=tier)
    return tiering.located(stored, name, tier)


async def associate(manager: MemoryManager, tiered: Tiered, a: str, b: str) -> None:
    """`associate` across tiers: each entry's `related` gains the other in the tier it
    lives in (`write_links`: both in one transaction when they share a tier)."""
    name = tiered.name
    started = time.perf_counter()
    with errors_named(name):
        changes: dict[str, list[LinkChange]] = {}
        for key, other in ((a, b), (b, a)):
            where = await tiering.find(tiered, key)
            if where is None:
                raise AxonMemoryError("cannot associate: no such entry", memory=name, key=key)
            changes.setdefault(where[0], []).append(LinkChange(key, add=(other,)))
        count = 0
        try:
            for tier, batch in changes.items():
                one = tiered.tiers[tier]
                count += len((await one.backend.write_links(one.scope, batch)).changed)
        except MissingLinkTarget as exc:
            raise missing_associate(exc, name) from None
    manager.tracer.emit(
        TraceEventType.MEMORY_WRITE,
        data={
            "op": "associate",
            "key": a,
            "related": b,
            "count": count,
            "memory": name,
            "backend": manager.get(name).backend_key[0],
            "duration_ms": elapsed_ms(started),
        },
        duration_ms=elapsed_ms(started),
    )


async def recall(
    manager: MemoryManager,
    tiered: Tiered,
    query: str,
    top_k: int,
    mode: str,
    filters: Mapping[str, Any] | None,
    asked: Sequence[str] | None,
    *,
    embed_wait: float | None = None,
    min_score: float | None = None,
) -> tuple[list[MemoryEntry], str, int, int]:
    """Search the tiers (all, or `asked`), rank the results together (`tiers.rank`),
    count the recall, promote what has been recalled `promote_after` times. One
    `memory_read` event with `tiers` and each result's tier; also returns how many
    entries of the searched tiers were still without a vector, and `below_floor`: how
    many more results `min_score: 0` would have given (each tier's nearest together)."""
    name = tiered.name
    started = time.perf_counter()
    chosen = tiered.selected(asked)
    with errors_named(name):
        await maintain(manager, tiered)
    effective = mode
    data: dict[str, Any] = {}
    pending = 0
    nearest = 0

    async def search() -> list[tuple[str, MemoryEntry]]:
        nonlocal effective, data, pending, nearest
        found: list[tuple[str, MemoryEntry]] = []
        pending = nearest = 0
        for tier in chosen:
            one = tiered.tiers[tier]
            results, effective, data, waiting = await manager.recall_one(
                one, query, top_k, mode, filters, embed_wait=embed_wait, min_score=min_score
            )
            pending += waiting
            nearest += len(results) + data["below_floor"]
            found += [(tier, tiering.located(e, name, tier)) for e in results]
        return found

    # A fast tier's copy of a key a slower tier holds must not stand in for that copy,
    # even when only the faster one matches: such copies are deleted and searched again.
    with errors_named(name):
        found = await tiering.read_once(tiered, search, tiering.copies)
    for tier in chosen:
        tiered.stats.add(tier, "recalls")
    ranked = tiering.rank(found, tiered.decl.tiers, top_k)
    with errors_named(name):
        await tiering.after_recall(manager, tiered, ranked)
        await tiering.flush_stats(tiered)
    # The memory's own binding is its fastest tier (in_memory for `session`), which a
    # recall of `tiers: [persistent]` never read: name the backends searched instead.
    backends = {tier: tiered.tiers[tier].backend_key[0] for tier in chosen}
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
    manager.tracer.emit(TraceEventType.MEMORY_READ, data=data, duration_ms=elapsed_ms(started))
    return ranked, effective, pending, data["below_floor"]


async def delete(manager: MemoryManager, tiered: Tiered, key: str) -> str | None:
    """Delete `key` from the tier holding it, unlinking it from the entries of that tier
    in the same transaction (`write_links`), then from those of the other tiers;
    returns that tier or None."""
    await maintain(manager, tiered)
    where = await tiering.find(tiered, key)
    if where is None:
        return None
    tier, entry = where
    one = tiered.tiers[tier]
    if not (await one.backend.write_links(one.scope, delete=key)).deleted:
        return None
    tiered.stats.add(tier, "forgets")
    tiered.recalls.pop(key, None)
    tiered.used.pop(key, None)
    unlink = [LinkChange(other, remove=(key,)) for other in related_keys(entry.metadata)]
    for other_tier, holder in tiered.tiers.items():
        if other_tier != tier and unlink:  # an entry that is not there is skipped
            await holder.backend.write_links(holder.scope, unlink)
    return tier


async def delete_matching(
    manager: MemoryManager, tiered: Tiered, filters: Mapping[str, Any]
) -> int:
    """A filtered forget over every tier: the matching keys first, then each deleted
    (`delete`); one `memory_delete` event."""
    name = tiered.name
    if not filters:
        raise AxonMemoryError("forget with an empty filter would delete everything", memory=name)
    started = time.perf_counter()
    keys = [e.key for e in await manager.list_matching(name, None, filters)]
    deleted = 0
    with errors_named(name):
        for key in keys:
            deleted += int(await delete(manager, tiered, key) is not None)
        await tiering.flush_stats(tiered)
    manager.tracer.emit(
        TraceEventType.MEMORY_DELETE,
        data={
            "filter": dict(filters),
            "count": deleted,
            "memory": name,
            "backend": manager.get(name).backend_key[0],
            "store": tiered.decl.store,
            "duration_ms": elapsed_ms(started),
        },
        duration_ms=elapsed_ms(started),
    )
    return deleted


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


async def page(
    manager: MemoryManager,
    tiered: Tiered,
    limit: int,
    after: str | None,
    filters: Mapping[str, Any] | None,
) -> tuple[list[MemoryEntry], str | None]:
    """One page of a tiered memory's listing: every tier, newest first (the order of
    `merged`: ties faster tier first), those matching `filters` kept, and the cursor of
    the next page (None: the last).

    The cursor holds each tier's own keyset cursor (`MemoryBackend.list_page`): each
    tier is read from its place, the reads merged, and each tier's place moved past
    exactly the entries the page took from it (a second read of that many when it took
    only some), so a walk repeats and skips nothing that stayed, as on one store. One
    `memory_read` event (`op: page`) with `tiers` and `backends`."""
    name = tiered.name
    places = _page_places(after, tiered)
    with errors_named(name):
        await maintain(manager, tiered, flush=True)
    started = time.perf_counter()
    ends: dict[str, str | None] = {}

    async def read_places() -> dict[str, list[MemoryEntry]]:
        read: dict[str, list[MemoryEntry]] = {}
        for tier, one in tiered.tiers.items():
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
        read = await tiering.read_once(tiered, read_places, met)
    candidates: list[tuple[float, int, int, str, MemoryEntry]] = []
    for tier, entries in read.items():
        rank = tiered.order(tier)
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
            one = tiered.tiers[tier]
            with errors_named(name):
                again = await one.backend.list_page(
                    one.scope, limit=taken[tier], after=places[tier]
                )
            if again.cursor is not None:
                following[tier] = again.cursor
    entries = [tiering.located(e, name, tier) for _, _, _, tier, e in chosen]
    if filters:
        entries = [e for e in entries if matches_filters(e.metadata, filters)]
    cursor = _page_cursor(following)
    backends = {tier: one.backend_key[0] for tier, one in tiered.tiers.items()}
    emit_listing(
        manager.tracer, "page", name, count=len(entries), limit=limit,
        backend=backends[tiering.most_durable(list(tiered.tiers))], filters=filters,
        started=started, backends=backends, tiers=list(tiered.tiers), more=cursor is not None,
    )
    return entries, cursor
