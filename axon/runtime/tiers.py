"""A tiered memory's tiers and a key, entry or results -> the tier rules: the tier a write
goes to, one copy of each key, one ranking across tiers, the persistent counters
(docs/language.md §9 Tiered memories).

A memory declared with `tiers: [...]` is one memory over several stores, fastest
first. Each tier is a `PlainMemory` of its own (`MemoryManager.bind` makes them);
`axon.runtime.tiered.TieredMemory` runs the operations over them with these rules:

- `ephemeral` and `session`: the in-process backend (`in_memory`) under this
  session's owned scopes (`axon.memory.lifetimes`), exactly the lifetimes of an
  untiered memory with that `store:`;
- `persistent`: the memory's `backend:` (default `sqlite`) under the memory's name.

A key lives in exactly one tier. What each operation does:

- write: to `with { tier: ... }`, else the tier the `persist_if` policy picks
  (`persistent` for an entry at least that important or of one of those types),
  else the memory's `store:`, else `persistent` (`choose_tier`). The copy in any
  other tier is removed after the new one is written.
- recall: every tier (or `with { tiers: [...] }`) is searched with the same mode;
  the results are ranked together by score, ties broken by tier order (faster
  first), cut to `top_k`. Scores are the absolute scores of
  `axon.memory.retrieval.scores` (keyword statistics are each tier's own scope's,
  as for any memory). Each result's metadata carries `tier`.
- get, delete, list, count, forget (by filter), clear: across every tier.
- promotion: an entry returned by `promote_after` recalls in this session moves
  one tier toward persistent. Demotion: an entry of a tier that lives in this
  session (session -> ephemeral) idle for `demote_after` (since the later of its
  write time and its last recall or get in this session) moves one tier back.
  Demotion never takes an entry out of the persistent tier: the tiers below it
  end with the session, whose close would delete what it had moved there, and
  this session's count of use says nothing of the other sessions sharing the
  store (`DEMOTABLE`). Idle entries are looked for before the memory's
  operations (at most every `DEMOTE_INTERVAL` seconds of the session clock) and
  on `sweep`, never at bind: declaring a memory changes none of its entries.
  A move keeps key, value, metadata and both timestamps, and is crash-safe: the
  target copy is written first, then the source copy deleted (`move`).
- one key in two tiers (a move cut short, or another session writing the key to
  the persistent tier while this one holds it in a fast tier): every read keeps
  the copy in the slower tier and deletes the other, so a key is got, listed,
  paged, recalled, counted, cleared and exported once, as the slower tier's copy
  (`find` for one key, `drop_shadowed` for the fast-tier entries a read met,
  `reconcile` for a whole memory); since the fast tiers live in the process, a
  process killed between the two writes of a move leaves one copy in any case.
- counters (`TierStats`): per tier `stores`, `recalls` (recalls that searched
  it), `forgets` (entries deleted), `promotions` and `demotions` (moves out of
  it). Those of the persistent tier are kept in its backend under the reserved
  scope `STATS_SCOPE_PREFIX + memory` (key `STATS_KEY`, an ordinary entry that no
  memory listing shows): read at bind, written after each operation that changed
  them, so they survive restarts with no schema change. Two processes updating the
  same memory's counters at once may lose an increment of one of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from axon.compiler.check_tiers import TIER_ORDER
from axon.compiler.ir import IRMemory
from axon.errors import AxonMemoryError
from axon.memory.entry import DEFAULT_IMPORTANCE, MemoryEntry, NewEntry
from axon.memory.lifetimes import OWNED_MARKER
from axon.memory.namespaces import ROOT, Namespace
from axon.runtime.counters import COUNTERS as COUNTERS
from axon.runtime.counters import TierStats

if TYPE_CHECKING:
    from axon.runtime.plain import PlainMemory

T = TypeVar("T")

STATS_SCOPE_PREFIX = OWNED_MARKER + "stats|"
"""The reserved scope (per memory) of the persistent tier's counters."""
STATS_KEY = "counters"

KILL_HOOK_ENV = "AXON_TEST_KILL_BETWEEN_TIER_WRITES"
"""Test only: `promote` or `demote` makes the process SIGKILL itself between the two
writes of that move (after the target copy is written, before the source is deleted)."""


def choose_tier(decl: IRMemory, metadata: Mapping[str, Any], asked: str | None) -> str:
    """The tier a write goes to: `asked` (`with { tier }`), the policy, `store:`.

    The checker has made `decl.store` one of the tiers (`persistent`, or the slowest
    tier, when no `store:` is written), so that is the last resort of seed 004.
    """
    if asked is not None:
        if asked not in decl.tiers:
            raise AxonMemoryError(
                f"no tier '{asked}' (its tiers: {', '.join(decl.tiers)})", memory=decl.name
            )
        return asked
    policy = decl.persist_if
    if policy is not None and "persistent" in decl.tiers:
        importance = metadata.get("importance", DEFAULT_IMPORTANCE)
        if (
            policy.min_importance is not None
            and isinstance(importance, int | float)
            and importance >= policy.min_importance
        ):
            return "persistent"
        if metadata.get("type") in policy.types:
            return "persistent"
    return decl.store


@attrs.define
class Tiered:
    """A tiered memory of one session: its tiers (fastest first) and what it tracks."""

    decl: IRMemory
    tiers: dict[str, PlainMemory]
    stats: TierStats
    recalls: dict[str, int] = attrs.field(factory=dict)
    """Recalls that returned each key in this session since it last moved."""
    used: dict[str, float] = attrs.field(factory=dict)
    """When each key was last written, recalled or read in this session."""
    persisted: dict[str, int] = attrs.field(factory=dict)
    """The persistent tier's counters as last read from or written to its backend."""
    last_check: float = float("-inf")

    @property
    def name(self) -> str:
        return self.decl.name

    def order(self, tier: str) -> int:
        return self.decl.tiers.index(tier)

    def selected(self, asked: Sequence[str] | None) -> list[str]:
        if asked is None:
            return list(self.decl.tiers)
        unknown = [t for t in asked if t not in self.tiers]
        if unknown:
            raise AxonMemoryError(
                f"no tier '{unknown[0]}' (its tiers: {', '.join(self.decl.tiers)})",
                memory=self.name,
            )
        return [t for t in self.decl.tiers if t in asked]


def most_durable(tiers: Sequence[str]) -> str:
    """The longest-lived of `tiers` (persistent, else session, else ephemeral): the tier
    whose backend a recall over several tiers names as its `backend` in `memory_read`."""
    return max(tiers, key=TIER_ORDER.index)


def stats_scope(memory: str, namespace: Namespace = ROOT) -> str:
    """The scope of the counters of `memory` in `namespace` (each namespace counts its own)."""
    return namespace.scope(STATS_SCOPE_PREFIX + memory)


async def read_persisted_stats(
    backend: Any, memory: str, namespace: Namespace = ROOT
) -> dict[str, int]:
    """The persistent tier's counters as stored (zeros when none are)."""
    found = await backend.get(STATS_KEY, scope=stats_scope(memory, namespace))
    counts = dict.fromkeys(COUNTERS, 0)
    if found is not None and isinstance(found.value, dict):
        for name in COUNTERS:
            value = found.value.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                counts[name] = value
    return counts


async def load_stats(tiered: Tiered) -> None:
    """Start the persistent tier's counters from what its backend kept."""
    bound = tiered.tiers.get("persistent")
    if bound is None:
        return
    stored = await read_persisted_stats(bound.backend, tiered.name, bound.namespace)
    tiered.persisted = dict(stored)
    tiered.stats.counts["persistent"] = dict(stored)


async def flush_stats(tiered: Tiered) -> None:
    """Write the persistent tier's counters back: what is stored now plus this
    session's increments since the last write (so two sessions one after the other
    add up)."""
    bound = tiered.tiers.get("persistent")
    if bound is None or not tiered.stats.dirty or bound.backend.closed:
        return
    mine = tiered.stats.counts["persistent"]
    stored = await read_persisted_stats(bound.backend, tiered.name, bound.namespace)
    total = {
        name: stored[name] + mine[name] - tiered.persisted.get(name, 0) for name in COUNTERS
    }
    await bound.backend.store_many(
        [NewEntry(STATS_KEY, total, {"scope": stats_scope(tiered.name, bound.namespace)})]
    )
    tiered.persisted = dict(total)
    tiered.stats.counts["persistent"] = dict(total)
    tiered.stats.dirty = False


async def count_persisted(
    backend: Any, memory: str, counter: str, n: int, namespace: Namespace = ROOT
) -> None:
    """Add `n` to one stored counter of `memory`'s persistent tier, if it has counters.

    For work done on the persistent store without a session (`axon memory forget`):
    only a memory that was ever bound as tiered has a counters entry; any other
    memory is left without one.
    """
    scope = stats_scope(memory, namespace)
    if n <= 0 or await backend.get(STATS_KEY, scope=scope) is None:
        return
    counts = await read_persisted_stats(backend, memory, namespace)
    counts[counter] += n
    await backend.store_many([NewEntry(STATS_KEY, counts, {"scope": scope})])


def located(entry: MemoryEntry, name: str, tier: str) -> MemoryEntry:
    """`entry` as a tiered memory shows it: scope the memory's name, `tier` its tier."""
    meta = {**entry.metadata, "scope": name, "tier": tier}
    return MemoryEntry(
        key=entry.key,
        value=entry.value,
        metadata=meta,
        score=entry.score,
        timestamp=entry.timestamp,
        expires_at=entry.expires_at,
        signals=entry.signals,
        created_at=entry.created_at,
    )


def stored_copy(entry: MemoryEntry, scope: str) -> NewEntry:
    """`entry` to be written under `scope`: same key, value, metadata and its times
    (first and last write, expiry)."""
    meta = {k: v for k, v in entry.metadata.items() if k != "tier"}
    meta["scope"] = scope
    return NewEntry(
        entry.key, entry.value, meta, entry.expires_at, entry.timestamp,
        created_at=entry.created_at,
    )


async def find(tiered: Tiered, key: str) -> tuple[str, MemoryEntry] | None:
    """The tier holding `key` and its (unexpired) entry, or None; duplicates repaired."""
    found: list[tuple[str, MemoryEntry]] = []
    for tier, bound in tiered.tiers.items():
        entry = await bound.backend.get(key, scope=bound.scope)
        if entry is not None:
            found.append((tier, entry))
    if not found:
        return None
    return await _dedupe(tiered, key, found)


async def _dedupe(
    tiered: Tiered, key: str, found: list[tuple[str, MemoryEntry]]
) -> tuple[str, MemoryEntry]:
    """Of the copies of `key` (tier order), keep the slowest tier's; delete the others."""
    keep = found[-1]
    for tier, _ in found[:-1]:
        bound = tiered.tiers[tier]
        await bound.backend.delete(key, scope=bound.scope)
    return keep


async def drop_shadowed(tiered: Tiered, met: Iterable[tuple[str, str]]) -> int:
    """Of the `(tier, key)` copies a read met, delete each one a slower tier also holds
    (unexpired): the rule of `_dedupe` for reads of many keys. Returns how many were
    deleted; a read that meets any must read again (`TieredMemory._read_once`)."""
    names = tiered.decl.tiers
    deleted = 0
    for tier, key in dict.fromkeys(met):
        for slower in names[names.index(tier) + 1 :]:
            holder = tiered.tiers[slower]
            if await holder.backend.get(key, scope=holder.scope) is not None:
                fast = tiered.tiers[tier]
                deleted += int(await fast.backend.delete(key, scope=fast.scope))
                break
    return deleted


def copies(found: Iterable[tuple[str, MemoryEntry]]) -> list[tuple[str, str]]:
    """The `(tier, key)` of each `(tier, entry)` a read met: `TieredMemory._read_once`'s `met`."""
    return [(tier, entry.key) for tier, entry in found]


async def reconcile(tiered: Tiered) -> int:
    """Delete every copy in a fast tier of a key a slower tier holds (`drop_shadowed`
    over every entry of every tier but the slowest: those live in the process); before
    reads that take the whole memory (count, clear, export). Returns how many."""
    met: list[tuple[str, str]] = []
    for tier in tiered.decl.tiers[:-1]:
        bound = tiered.tiers[tier]
        met += [(tier, e.key) for e in await bound.backend.list_entries(scope=bound.scope)]
    return await drop_shadowed(tiered, met)


def rank(
    found: Sequence[tuple[str, MemoryEntry]], order: Sequence[str], top_k: int
) -> list[MemoryEntry]:
    """One ranking of the results of several tiers: score (best first), then tier order
    (faster first), then each tier's own order; a key found twice counts once (the
    slower tier's copy, as `_dedupe` keeps)."""
    by_key: dict[str, tuple[int, int, MemoryEntry]] = {}
    for position, (tier, entry) in enumerate(found):
        index = order.index(tier)
        seen = by_key.get(entry.key)
        if seen is None or index > seen[0]:
            by_key[entry.key] = (index, position, entry)
    ranked = sorted(
        by_key.values(), key=lambda item: (-round(item[2].score, 9), item[0], item[1])
    )
    return [entry for _, _, entry in ranked[:top_k]]
