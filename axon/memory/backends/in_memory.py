"""The in-process memory backend: entries in dicts, indexed for every retrieval mode.

The reference implementation of the backend contract and the seed's
`InMemoryBackend` (`000`), made fast without changing a result:

- `exact` (the default, so a plain `retrieve()` is the seed's): `SubstringIndex`
  (trigram postings walked newest first) gives exactly the seed's linear-scan
  results and order, in well under a millisecond at a million entries.
- `keyword`: BM25 (`BM25Index`, scored as `retrieval.scores` says) over the
  Porter-stemmed tokens of key and value text, with `text.index_terms` /
  `text.search_terms`, the same stems as FTS5's `porter`. A linked recall
  (`link: sequence`) uses a second index that also holds each entry's context
  at `text.CONTEXT_WEIGHT` (the text of the entry stored just before in the
  same scope); it is built on the scope's first linked
  recall and kept up to date from then on, so unlinked memories never pay for it.
  Statistics (document count, document frequencies, average length) are kept
  **per scope**: a memory's ranking depends only on what that memory holds. An
  unscoped recall merges the per-scope rankings by score.
- `semantic` / `hybrid`: one exact `VectorIndex` per scope, filled lazily by the
  base class (`ensure_vectors`) and tagged with the embedder's model id; storing an
  entry again drops its vector, so the new text gets embedded.

Identity and order. An entry is identified by `(scope, key)`. Results tie-break as
the seed's dict would if it were keyed by `(scope, key)`: by timestamp (newest
first), then by the position at which the identity was first stored (`seq`;
overwriting keeps the position, deleting or clearing forgets it). For one scope
this is exactly the seed's behaviour. As in the seed, a falsy `scope` in
`retrieve` (None or "") searches every scope (the base class makes it None);
`clear`, `list_entries`, `count`, `get` and `delete` treat only None as "every scope".

Expiry. An entry with `expires_at` is invisible from that instant on, to every
operation (recall, get, list, count, delete, and the counts clear returns); a heap
of expiry times makes `purge_expired` cost only what it removes.
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from axon.memory.backend import (
    RETRIEVAL_MODES,
    Capabilities,
    MemoryBackend,
    best_first,
    keyset_page,
)
from axon.memory.entry import (
    Clock,
    MemoryEntry,
    expiry_duration,
    filter_predicate,
    kept_created,
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
from axon.memory.retrieval.bm25 import BM25Index
from axon.memory.retrieval.exact import SubstringIndex
from axon.memory.retrieval.scores import upper_bound
from axon.memory.retrieval.text import CONTEXT_WEIGHT, index_terms, search_terms
from axon.memory.versions import KEEP_ALL, Version

if TYPE_CHECKING:
    import numpy as np

    from axon.memory.embeddings.base import Embedder
    from axon.memory.retrieval.vectors import VectorIndex
    from axon.trace import TraceSink

_Accept = Callable[[Hashable], bool] | None


def _lower(text: str) -> str:
    """`text.lower()`, sharing the original string when it is already lower case."""
    lowered = text.lower()
    return text if lowered == text else lowered


@dataclass(eq=False)
class _Scope:
    """Everything one scope holds: entries by key and an index per retrieval mode."""

    name: str | None
    entries: dict[str, MemoryEntry] = field(default_factory=dict)
    seq: dict[str, int] = field(default_factory=dict)
    expiring: dict[str, float] = field(default_factory=dict)
    exact: SubstringIndex = field(default_factory=SubstringIndex)
    keyword: BM25Index = field(default_factory=BM25Index)
    linked: BM25Index | None = None  # key, text and context: built on the first linked recall
    vectors: VectorIndex | None = None
    vector_model: str | None = None
    unvectored: dict[str, None] = field(default_factory=dict)
    """Keys without a vector of `vector_model`, oldest first: what `_pending_texts` reads,
    so asking what is pending costs what is pending, not what the scope holds."""
    context: dict[str, str] = field(default_factory=dict)
    last_text: str = ""
    order: list[tuple[float, int, str]] = field(default_factory=list)
    """`(timestamp, -seq, key)` of every entry, sorted: the newest is last, so `list` reads
    from the end and a write (nearly always the newest) is an append or a short insert."""

    def place(self, entry: MemoryEntry, seq: int) -> None:
        """Put `entry` (stored under `seq`) in `order`."""
        bisect.insort(self.order, (entry.timestamp, -seq, entry.key))

    def unplace(self, entry: MemoryEntry, seq: int) -> None:
        """Take `entry` (as stored under `seq`) out of `order`."""
        item = (entry.timestamp, -seq, entry.key)
        at = bisect.bisect_left(self.order, item)
        if at < len(self.order) and self.order[at] == item:
            del self.order[at]

    def newest(self, now: float) -> Iterable[tuple[float, int, MemoryEntry]]:
        """`(-timestamp, seq, entry)` of the live entries, newest first (the seed's order)."""
        order, entries = self.order, self.entries
        check = bool(self.expiring)
        for at in range(len(order) - 1, -1, -1):
            timestamp, negative_seq, key = order[at]
            if check and not self.live(key, now):
                continue
            yield (-timestamp, -negative_seq, entries[key])

    def live(self, key: str, now: float) -> bool:
        expires_at = self.expiring.get(key)
        return expires_at is None or now < expires_at

    def acceptor(self, filters: Mapping[str, Any] | None, now: float) -> _Accept:
        """A veto for index searches (expired or filtered out), or None when nothing is."""
        if not filters and not self.expiring:
            return None
        entries, expiring = self.entries, self.expiring
        matches = filter_predicate(filters)
        inside = window_test(filters)

        def accept(key: Hashable) -> bool:
            assert isinstance(key, str)
            expires_at = expiring.get(key)
            if expires_at is not None and now >= expires_at:
                return False
            entry = entries[key]
            return matches(entry.metadata) and inside(entry.timestamp)

        return accept

    def live_entries(self, now: float) -> Iterable[MemoryEntry]:
        if not self.expiring:
            return self.entries.values()
        return (e for k, e in self.entries.items() if self.live(k, now))

    def index_linked(self, key: str, text: str, terms: list[str] | None = None) -> None:
        """Index `key` with its context in the linked index (when that index exists);
        `terms` are `index_terms` of key and text when the caller has them already."""
        if self.linked is not None:
            self.linked.add(
                key,
                index_terms(f"{key} {text}") if terms is None else terms,
                index_terms(self.context.get(key, "")),
                CONTEXT_WEIGHT,
            )

    def linked_index(self) -> BM25Index:
        """The index of key, text and context, built from the entries on first use."""
        if self.linked is None:
            self.linked = BM25Index()
            for key, entry in self.entries.items():
                self.index_linked(key, value_text(entry.value))
        return self.linked

    def live_count(self, now: float) -> int:
        expired = sum(1 for t in self.expiring.values() if now >= t)
        return len(self.entries) - expired


class InMemoryBackend(MemoryBackend):
    """Dict-based memory backend, seed-compatible, with indexes for every retrieval mode.

    `InMemoryBackend(tracer=tracer)` works as in seed `000`; the other keywords are
    the base class's (`clock`, `embedder`, ...). Nothing outlives the process.
    """

    name = "in_memory"
    capabilities = Capabilities(
        persistent=False, retrieval=frozenset(RETRIEVAL_MODES), history=True
    )
    default_mode = "exact"

    def __init__(
        self,
        tracer: TraceSink | None = None,
        *,
        location: str | None = None,
        memory_dir: str | Path | None = None,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        super().__init__(
            tracer, location=location, memory_dir=memory_dir, clock=clock, embedder=embedder
        )
        self._scopes: dict[str | None, _Scope] = {}
        self._next_seq = itertools.count()
        self._expiry: list[tuple[float, int, str | None, str]] = []
        self._expiry_counter = itertools.count()
        self._versions: dict[tuple[str | None, str], list[Version]] = {}
        """Each entry's versions (`record_versions`), oldest first."""
        self._version_seq = itertools.count(1)

    # ------------------------------------------------------------------ helpers

    def _named(self, scope: str | None) -> list[_Scope]:
        """The scopes a call looks at: all only for None (retrieval's empty scope is
        None by then: the base class normalises it)."""
        if scope is None:
            return list(self._scopes.values())
        state = self._scopes.get(scope)
        return [state] if state is not None else []

    def _remove(self, state: _Scope, key: str) -> None:
        state.unplace(state.entries.pop(key), state.seq.pop(key))
        state.expiring.pop(key, None)
        state.exact.remove(key)
        state.keyword.remove(key)
        if state.linked is not None:
            state.linked.remove(key)
        state.context.pop(key, None)
        state.unvectored.pop(key, None)
        if state.vectors is not None:
            state.vectors.remove(key)
        if not state.entries:
            del self._scopes[state.name]

    def _rank(self, found: list[tuple[float, _Scope, str]], top_k: int) -> list[MemoryEntry]:
        """Entries for `(score, scope, key)` hits: score desc, newest first, seed order."""

        def order(hit: tuple[float, _Scope, str]) -> tuple[float, float, int]:
            score, state, key = hit
            return best_first(score, state.entries[key].timestamp, state.seq[key])

        found.sort(key=order)
        return [state.entries[key].with_score(score) for score, state, key in found[:top_k]]

    # ------------------------------------------------------------------ writes

    async def _put(self, entries: Sequence[MemoryEntry]) -> None:
        latest: dict[tuple[str | None, str], MemoryEntry] = {}
        for entry in entries:
            latest[(entry.scope, entry.key)] = entry
        # Everything that can fail (text analysis of arbitrary user text) runs before the
        # first change: a write that raises leaves the backend as it was, never an entry
        # stored but missing from an index.
        prepared = [
            (scope, key, entry, text, index_terms(f"{key} {text}"))
            for (scope, key), entry in latest.items()
            for text in (value_text(entry.value),)
        ]
        batches: dict[str | None, list[tuple[Hashable, str, str, float, int]]] = {}
        now = self.clock()
        for scope, key, entry, text, terms in prepared:
            given = entry.context
            state = self._scopes.get(scope)
            if state is None:
                state = self._scopes[scope] = _Scope(scope)
            old = state.entries.get(key)
            created = entry.created_at
            if entry.fresh and old is not None and not old.is_expired(now):
                created = old.created_at  # a live entry stored again keeps its first write
            if given is not None or entry.fresh or created != entry.created_at:
                # the stored entry carries neither the context (kept below) nor `fresh`
                entry = dataclasses.replace(entry, context=None, fresh=False, created_at=created)
            seq = state.seq.get(key)
            if seq is None:
                seq = state.seq[key] = next(self._next_seq)
            else:
                state.unplace(state.entries[key], seq)
            state.entries[key] = entry
            state.place(entry, seq)
            if entry.expires_at is not None:
                state.expiring[key] = entry.expires_at
                heapq.heappush(
                    self._expiry, (entry.expires_at, next(self._expiry_counter), scope, key)
                )
            else:
                state.expiring.pop(key, None)
            # The context (see `text.CONTEXT_WEIGHT`) is fixed when a key is first stored,
            # unless the entry gives its own (an import's).
            if given is not None:
                state.context[key] = given
            else:
                state.context.setdefault(key, state.last_text)
            state.last_text = text
            state.keyword.add(key, terms)
            state.index_linked(key, text, terms)
            if state.vectors is not None:
                state.vectors.remove(key)
            state.unvectored.pop(key, None)
            state.unvectored[key] = None  # pending again, as the newest
            batches.setdefault(scope, []).append(
                (key, _lower(key), _lower(text), entry.timestamp, seq)
            )
        for scope, items in batches.items():
            self._scopes[scope].exact.add_many(items)
        self._trim_expiry()

    async def _restart_expiry(
        self, scope: str | None, keys: list[str], now: float
    ) -> dict[str, float]:
        """See `MemoryBackend.restart_expiry`: the entries change in place, without yielding
        to the event loop (index places, vectors and context stay)."""
        state = self._scopes.get(scope)
        restarted: dict[str, float] = {}
        if state is None:
            return restarted
        for key in keys:
            entry = state.entries.get(key)
            if entry is None or key not in state.expiring or not state.live(key, now):
                continue
            seconds = expiry_duration(entry.metadata)
            if seconds is None:
                continue
            expires_at = restarted[key] = now + seconds
            state.entries[key] = dataclasses.replace(entry, expires_at=expires_at)
            state.expiring[key] = expires_at
            heapq.heappush(self._expiry, (expires_at, next(self._expiry_counter), scope, key))
        self._trim_expiry()
        return restarted

    async def _read_contexts(self, scope: str | None, keys: list[str]) -> dict[str, str]:
        state = self._scopes.get(scope)
        if state is None:
            return {}
        return {key: state.context[key] for key in keys if key in state.entries}

    async def _update(
        self,
        key: str,
        scope: str | None,
        build: Callable[[MemoryEntry], MemoryEntry],
        now: float,
    ) -> MemoryEntry | None:
        """See `MemoryBackend.update`: the read, `build` and the write run without
        yielding to the event loop, so no other call comes in between."""
        state = self._scopes.get(scope)
        if state is None or key not in state.entries or not state.live(key, now):
            return None
        new = build(state.entries[key])
        await self._put([new])  # never yields: no await inside
        return new

    async def _write_links(
        self,
        scope: str | None,
        changes: list[LinkChange],
        store: MemoryEntry | None,
        delete: str | None,
        now: float,
    ) -> LinkWrite:
        """See `MemoryBackend.write_links`: every check and every new metadata is worked
        out first, then applied without yielding to the event loop, so no other call
        comes in between; a linked entry changes its metadata only (same object
        otherwise: index places, vectors and context stay)."""
        state = self._scopes.get(scope)

        def live(key: str) -> MemoryEntry | None:
            if state is None or key not in state.entries or not state.live(key, now):
                return None
            return state.entries[key]

        unlink: list[LinkChange] = []
        if delete is not None and state is not None and delete in state.entries:
            unlink = unlink_changes(delete, state.entries[delete].metadata)
        if store is not None:
            old = live(store.key) if store.key != delete else None
            kept = old.metadata if old is not None else None
            meta = kept_related(store.metadata, kept, memory=scope, key=store.key)
            store = dataclasses.replace(
                store, metadata=meta, **kept_created(store, None if old is None else old.created_at)
            )
        edits: list[MemoryEntry] = []
        for change in [*unlink, *changes]:
            found = live(change.key) if change.key != delete else None
            if found is None:
                if change.add:
                    raise MissingLinkTarget(change.key, memory=scope)
                continue
            edited = edited_metadata(found.metadata, change, memory=scope)
            if edited is not None:
                edits.append(dataclasses.replace(found, metadata=edited[0]))
        deleted = await self._delete(delete, scope) if delete is not None else False
        if store is not None:
            await self._put([store])
        state = self._scopes.get(scope)
        for entry in edits:
            assert state is not None
            state.entries[entry.key] = entry
        return LinkWrite(store, deleted, tuple(entry.key for entry in edits))

    async def _clear(self, scope: str | None) -> int:
        now = self.clock()
        states = self._named(scope)
        removed = sum(state.live_count(now) for state in states)
        for state in states:
            del self._scopes[state.name]
        if not self._scopes:
            self._expiry.clear()
        self._trim_expiry()
        return removed

    async def _record_versions(
        self, scope: str | None, versions: list[Version], keep: int
    ) -> None:
        for version in versions:
            kept = self._versions.setdefault((scope, version.key), [])
            kept.append(dataclasses.replace(version, seq=next(self._version_seq), keep=keep))
            if keep != KEEP_ALL and len(kept) > keep + 1:
                del kept[: len(kept) - keep - 1]

    async def _read_versions(self, scope: str | None, key: str) -> list[Version]:
        return list(self._versions.get((scope, key), ()))

    async def _drop_versions(self, scope: str | None, *, prefix: bool) -> int:
        def doomed(name: str | None) -> bool:
            if scope is None:
                return True
            return name is not None and name.startswith(scope) if prefix else name == scope

        gone = [ident for ident in self._versions if doomed(ident[0])]
        return sum(len(self._versions.pop(ident)) for ident in gone)

    async def _delete(self, key: str, scope: str | None) -> bool:
        state = self._scopes.get(scope)
        if state is None or key not in state.entries:
            return False
        visible = state.live(key, self.clock())
        self._remove(state, key)
        return visible

    async def _purge_expired(self, now: float) -> int:
        removed = 0
        by_scope: dict[str | None, int] = {}
        heap = self._expiry
        while heap and heap[0][0] <= now:
            expires_at, _, scope, key = heapq.heappop(heap)
            state = self._scopes.get(scope)
            if state is not None and state.expiring.get(key) == expires_at:
                self._remove(state, key)
                removed += 1
                by_scope[scope] = by_scope.get(scope, 0) + 1
        self._trim_expiry()
        self._purged(removed, by_scope)
        return removed

    async def _list_scopes(self, prefix: str) -> list[str]:
        return [name for name in self._scopes if name is not None and name.startswith(prefix)]

    def _trim_expiry(self) -> None:
        """Drop heap items of replaced, deleted or cleared entries once they dominate."""
        if len(self._expiry) <= 1024:
            return
        live = sum(len(state.expiring) for state in self._scopes.values())
        if len(self._expiry) > 2 * live + 1024:
            self._expiry = [item for item in self._expiry if self._current(item)]
            heapq.heapify(self._expiry)

    def _current(self, item: tuple[float, int, str | None, str]) -> bool:
        state = self._scopes.get(item[2])
        return state is not None and state.expiring.get(item[3]) == item[0]

    async def _close(self) -> None:
        self._scopes.clear()
        self._expiry.clear()

    # ------------------------------------------------------------------ reads

    async def _get(self, key: str, scope: str | None) -> MemoryEntry | None:
        state = self._scopes.get(scope)
        return state.entries.get(key) if state is not None else None

    async def _list(
        self, scope: str | None, limit: int | None, offset: int, now: float
    ) -> list[MemoryEntry]:
        end = None if limit is None else offset + limit
        return list(itertools.islice(self._newest(scope, now), offset, end))

    def _newest(self, scope: str | None, now: float) -> Iterator[MemoryEntry]:
        """Live entries newest first: each scope's ordered index, merged, read lazily."""
        states = self._named(scope)
        rows = (
            states[0].newest(now)
            if len(states) == 1
            else heapq.merge(*(state.newest(now) for state in states), key=lambda r: r[:2])
        )
        return (entry for _, _, entry in rows)

    async def _list_matching(
        self, scope: str | None, filters: Mapping[str, Any], limit: int | None, now: float
    ) -> list[MemoryEntry]:
        """The ordered index walked newest first, each entry tested, stopping at `limit`:
        a filter that matches often reads a few entries, not every one."""
        matches = filter_predicate(filters)
        inside = window_test(filters)
        found = (e for e in self._newest(scope, now) if matches(e.metadata) and inside(e.timestamp))
        return list(itertools.islice(found, limit))

    async def _count(self, scope: str | None, now: float) -> int:
        return sum(state.live_count(now) for state in self._named(scope))

    async def _retrieve_exact(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
    ) -> list[MemoryEntry]:
        query_lower = query.lower()
        states = self._named(scope)
        if len(states) == 1:
            state = states[0]
            hits = state.exact.search(query_lower, top_k, state.acceptor(filters, now))
            return [state.entries[str(hit.ident)].with_score(hit.score) for hit in hits]
        found = [
            (hit.score, state, str(hit.ident))
            for state in states
            for hit in state.exact.search(query_lower, top_k, state.acceptor(filters, now))
        ]
        return self._rank(found, top_k)

    async def _retrieve_keyword(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
        linked: bool = False,
    ) -> list[MemoryEntry]:
        terms = search_terms(query)
        if not terms:
            return []
        found: list[tuple[float, _Scope, str]] = []
        for state in self._named(scope):
            index = state.linked_index() if linked else state.keyword
            bound = upper_bound(terms, index.stats(terms))
            for key, raw in index.search(terms, top_k, state.acceptor(filters, now)):
                found.append((min(raw / bound, 1.0), state, str(key)))
        return self._rank(found, top_k)

    # ------------------------------------------------------------------ semantic hooks

    async def _pending_texts(self, scope: str | None, model_id: str) -> list[tuple[Any, str]]:
        now = self.clock()
        pending: list[tuple[Any, str]] = []
        for state in self._named(scope):
            if state.vector_model != model_id:
                state.vectors = None
                state.vector_model = model_id
                state.unvectored = dict.fromkeys(state.entries)
            for key in state.unvectored:
                if state.live(key, now):
                    entry = state.entries[key]
                    pending.append(((state.name, key, entry), value_text(entry.value)))
        return pending

    async def _save_vectors(self, model_id: str, items: Sequence[tuple[Any, np.ndarray]]) -> None:
        for (scope, key, entry), vector in items:
            state = self._scopes.get(scope)
            if state is None or state.vector_model != model_id:
                continue
            if state.entries.get(key) is not entry:  # re-stored meanwhile: stale text
                continue
            if state.vectors is None:
                from axon.memory.retrieval.vectors import VectorIndex

                state.vectors = VectorIndex(len(vector))
            state.vectors.upsert(key, vector)
            state.unvectored.pop(key, None)

    async def _semantic_search(
        self,
        query_vector: np.ndarray,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
    ) -> list[MemoryEntry]:
        found: list[tuple[float, _Scope, str]] = []
        for state in self._named(scope):
            if state.vectors is None:
                continue
            accept = state.acceptor(filters, now)
            for key, cosine in state.vectors.search(query_vector, top_k, accept):
                found.append((cosine, state, str(key)))
        return self._rank(found, top_k)

    # ------------------------------------------------------------------ paging and vectors

    async def _list_after(
        self,
        scope: str | None,
        limit: int,
        after: tuple[float, Any] | None,
        now: float,
        oldest_first: bool,
    ) -> list[tuple[MemoryEntry, Any]]:
        """A keyset page, tie = the identity's first-store position (`seq`).

        One pass over the live entries keeping the `limit` smallest (no full sort):
        O(n log limit) per page.
        """
        rows = (
            (entry.timestamp, state.seq[entry.key], entry)
            for state in self._named(scope)
            for entry in state.live_entries(now)
        )
        return keyset_page(rows, limit, after, oldest_first)

    async def _read_vectors(
        self, scope: str | None, keys: list[str], model_id: str
    ) -> dict[str, np.ndarray]:
        state = self._scopes.get(scope)
        if state is None or state.vectors is None or state.vector_model != model_id:
            return {}
        found = {}
        for key in keys:
            vector = state.vectors.vector(key)
            if vector is not None:
                found[key] = vector
        return found

    async def _write_vectors(
        self, scope: str | None, model_id: str, items: Sequence[tuple[str, np.ndarray]]
    ) -> int:
        state = self._scopes.get(scope)
        if state is None:
            return 0
        if state.vector_model != model_id:
            state.vectors = None
            state.vector_model = model_id
        kept = [
            ((scope, key, state.entries[key]), vector)
            for key, vector in items
            if key in state.entries
        ]
        await self._save_vectors(model_id, kept)
        return len(kept)
