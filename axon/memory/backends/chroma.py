"""`backend: chroma`: memory entries in a Chroma collection, on a server or in a directory.

Where (`chroma_client`): `location:` is a Chroma server URL naming the collection
(`http://127.0.0.1:8000/axon`) or a directory for the embedded `PersistentClient`.

Layout. One collection (the location's) holds two kinds of records:

- an entry per `(scope, key)`, id `e<sha1 of scope and key>`; its metadata has
  fixed fields only (`kind`, `scope`, `key`, `value` and `meta` as typed JSON,
  `ts`, `exp`, `seq`, `vgen`, `vm`, `ctx`), since Chroma merges the metadata of
  an upsert into the old one; its document is the lower-cased key and text
  (`exact` candidates come from Chroma's `$contains`) followed by term markers
  (`keyword` candidates: `\x02stem\x03` per stem of key and text, `\x04stem\x03`
  per stem of the context: `ctx`, the scope's `last` text when the entry was first
  stored, or the one a store gives, `NewEntry.context`); its vector (Chroma needs
  one) is its BM25 lengths;
- a record per scope, id `s<sha1 of scope>`, holding the text last stored there
  (the context of `link: sequence`) and making `scopes(prefix)` cheap.

Every write of a batch is one `upsert` (one Chroma log transaction: all or
nothing), with the scope records. A batch larger than the server's maximum batch
size (5461 on Chroma 1.5) is split, and is then not atomic: a failure part way
raises an error saying how many entries were stored.

Vectors. AXON's embedder computes them (never Chroma's default embedding
function, which would download a model), lazily on the first semantic or hybrid
recall, into one collection per model (`<collection>-v<hash of the model id>`,
cosine space) whose records carry the entry's `vgen`: a rewrite gives the entry
a new `vgen` and clears `vm` (the model its vector was made with), so the entry
is embedded again, and a vector whose `vgen` no longer matches is ignored. A new
model gets a new collection, so vectors of two models never mix.

Scores (`retrieval.scores`): `exact` is the seed's, `keyword` BM25 with the
memory's own statistics, computed here from the scope's entries (Chroma has no
term statistics), `semantic` `1 - cosine distance`, `hybrid` fused by the base
class. So scores equal those of every other backend.

Expiry is `exp` (Unix seconds; a huge number for "never"): every read asks for
`exp > now`, and expired entries are deleted by `purge_expired` and, every
`PURGE_INTERVAL` seconds of the backend's clock, during writes.

Costs: `exact` and `keyword` read the entries holding the query (substring or a
term), and `keyword` the scope's length vectors; `list` and `count` read the whole
scope; `semantic` is Chroma's HNSW, restricted to the scope.

Residual: an entry rewritten by another process while this one embeds it may be
marked embedded (`vm`) with the vector of its old text; that vector is ignored
(its `vgen` differs), so the entry is missing from semantic results until it is
written again. Chroma has no conditional update to close that window.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from axon.errors import AxonMemoryError
from axon.memory.backend import RETRIEVAL_MODES, Capabilities, MemoryBackend, keyset_page
from axon.memory.backends import chroma_versions
from axon.memory.backends.chroma_client import (
    ChromaConnection,
    import_chromadb,
    parse_location,
)
from axon.memory.entry import (
    MemoryEntry,
    encode_json,
    expiry_duration,
    filter_predicate,
    kept_created,
    scope_of,
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
from axon.memory.registry import StorePlace
from axon.memory.retrieval.exact import seed_score
from axon.memory.retrieval.scores import (
    ScopeStats,
    entry_counts,
    entry_length,
    keyword_score,
    text_length,
)
from axon.memory.retrieval.text import CONTEXT_WEIGHT, index_terms, search_terms
from axon.memory.versions import Version

if TYPE_CHECKING:
    import numpy as np

    from axon.memory.embeddings.base import Embedder
    from axon.trace import TraceSink

NEVER = 1e300
"""`exp` of an entry that does not expire (Chroma filters cannot test a missing field)."""

SCOPE_VECTOR = [0.0, 0.0]
"""The vector of a scope record. Chroma needs one per record; an entry's is its BM25
lengths `[len(key and text), len(context)]` (tokens), so that a scope's statistics
are read without its values (real vectors live in the vector collections)."""

TERM, CONTEXT_TERM, TERM_END = "\x02", "\x04", "\x03"
"""Markers of the indexed terms in an entry's document: `\x02term\x03` for each stem of
key and text, `\x04term\x03` for each of the context; `$contains` finds them."""

_CACHE_LIMIT = 200_000

MAX_MARKERS = 64
"""A keyword query with more term markers than this reads the whole scope instead."""

MAX_MARKER = 200
"""Longer terms are looked for by their start (Chroma's LIKE refuses long patterns)."""

PURGE_INTERVAL = 60.0
DEFAULT_CONNECT_TIMEOUT = 15.0

Meta = dict[str, Any]


def _scope_code(scope: str | None) -> str:
    """`scope` as stored: Chroma metadata cannot be null, so None is `n`, a scope `s:...`."""
    return "n" if scope is None else f"s:{scope}"


def _scope_decode(code: str) -> str | None:
    return None if code == "n" else code[2:]


def _digest(*parts: Any) -> str:
    return hashlib.sha1(json.dumps(parts).encode()).hexdigest()


GET_PAGE = 5000
"""Records per `get` of a read that may match many: Chroma turns the ids of one answer
into SQL variables, and SQLite refuses more than 32,766 of them in one statement."""


def get_all(collection: Any, **query: Any) -> dict[str, Any]:
    """`collection.get(**query)` a page of `GET_PAGE` at a time, the pages joined: the
    answer Chroma would give if it had no limit (`ids`, and what `include` asks for)."""
    joined: dict[str, list[Any]] = {"ids": []}
    offset = 0
    while True:
        got = collection.get(**query, limit=GET_PAGE, offset=offset)
        joined["ids"] += list(got["ids"])
        for field in query.get("include", []):
            values = got.get(field)
            joined.setdefault(field, []).extend([] if values is None else list(values))
        if len(got["ids"]) < GET_PAGE:
            return joined
        offset += GET_PAGE


EXACT_SEARCH_LIMIT = 1000
"""Largest vector collection searched exactly (every vector of the scope read and
compared): HNSW is approximate, and below this size reading the vectors costs less
than a wrong neighbour (about 50 ms at 1,000 vectors of 384 dimensions)."""


def _nearest_first(
    query_vector: np.ndarray, got: Mapping[str, Any]
) -> tuple[list[str], list[Meta], list[float]]:
    """The ids, metadata and cosine distances of the vectors of a `get` answer, nearest
    first (equal distances in the answer's order: `_ranked` orders ties itself)."""
    import numpy as np

    if not got["ids"]:
        return [], [], []
    matrix = np.asarray(got["embeddings"], dtype=np.float64)
    query = np.asarray(query_vector, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
    distances = 1.0 - (matrix @ query) / np.where(norms == 0.0, 1.0, norms)
    order = np.argsort(distances, kind="stable")
    ids, metas = list(got["ids"]), list(got["metadatas"])
    return (
        [ids[i] for i in order],
        [dict(metas[i]) for i in order],
        [float(distances[i]) for i in order],
    )


def delete_ids(collection: Any, ids: Sequence[str]) -> None:
    """`collection.delete(ids=ids)` in pages of `GET_PAGE` ids (see `GET_PAGE`)."""
    for start in range(0, len(ids), GET_PAGE):
        collection.delete(ids=list(ids[start : start + GET_PAGE]))


def entry_id(scope: str | None, key: str) -> str:
    """The Chroma id of the entry `(scope, key)`."""
    return "e" + _digest(scope, key)


def scope_id(scope: str | None) -> str:
    """The Chroma id of the record of `scope`."""
    return "s" + _digest(scope)


def _and(*conditions: Mapping[str, Any] | None) -> dict[str, Any]:
    """Chroma's `where` for all of `conditions` (it wants `$and` only for two or more)."""
    parts = [dict(c) for c in conditions if c]
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _exact(meta: Meta, name: str) -> float:
    """The float `meta[name]` ("ts" or "exp") as it was written.

    Chroma hands a float metadata back rounded (1796189741.1539767 comes back as
    1796189741.153977), so each is also stored as its `repr` text (`ts_r`, `exp_r`),
    read here: an export through Chroma keeps timestamps bit-exact. Records written
    before have only the float, which is then what there is. The floats stay what
    Chroma's filters compare (`exp > now`): those decide within the rounding (under a
    microsecond at today's times), and every Python check reads the exact value.
    """
    text = meta.get(name + "_r")
    return float(text) if isinstance(text, str) else float(meta[name])


def _created(meta: Meta) -> float:
    """A record's first write (`created_at`): its `cr` text, the exact `repr` of the float;
    records written before there was one have only `ts`, both then one time."""
    text = meta.get("cr")
    return float(text) if isinstance(text, str) else _exact(meta, "ts")


def _exact_fields(timestamp: float, expires_at: float | None) -> Meta:
    """The `ts`/`exp` metadata of an entry and their exact twins (`_exact`)."""
    exp = NEVER if expires_at is None else float(expires_at)
    return {"ts": float(timestamp), "ts_r": repr(float(timestamp)), "exp": exp, "exp_r": repr(exp)}


def _decode(meta: Meta, score: float = 0.0) -> MemoryEntry:
    exp = _exact(meta, "exp")
    return MemoryEntry(
        key=str(meta["key"]),
        value=json.loads(meta["value"]),
        metadata=json.loads(meta["meta"]),
        score=score,
        timestamp=_exact(meta, "ts"),
        created_at=_created(meta),
        expires_at=None if exp >= NEVER else exp,
    )


def _marker(kind: str, term: str) -> str:
    """What `$contains` looks for to find `term`: the whole marker, or a long term's start
    (a superset: every candidate is scored from its text)."""
    if len(term) > MAX_MARKER:
        return f"{kind}{term[:MAX_MARKER]}"
    return f"{kind}{term}{TERM_END}"


def _document(key: str, text: str, context: str) -> str:
    """What Chroma's document filters search: the lower-cased key and text (`exact`), then
    the term markers of key and text and of the context (`keyword`)."""
    terms = "".join(f"{TERM}{t}{TERM_END}" for t in dict.fromkeys(index_terms(f"{key} {text}")))
    context_terms = "".join(
        f"{CONTEXT_TERM}{t}{TERM_END}" for t in dict.fromkeys(index_terms(context))
    )
    # Chroma's filters read a document only up to a NUL: each is a space there (the
    # candidates stay a superset; every one is scored on its real text).
    matched = text.lower().replace("\x00", " ")
    return f"{key.lower()}\x1f{matched}\x1e{terms}{context_terms}"


class _Seq:
    """Insertion order across processes: nanoseconds of the wall clock, strictly increasing
    in this process (the seed's tie order, first stored first, for equal timestamps)."""

    def __init__(self) -> None:
        self._last = 0

    def next(self) -> int:
        self._last = max(self._last + 1, time.time_ns())
        return self._last


_SEQ = _Seq()


class ChromaBackend(MemoryBackend):
    """Memory in a Chroma collection; a server shares it between processes and machines.

    Keywords beyond the base's: `connect_timeout` (seconds an operation waits for
    an unreachable server, e.g. one restarting, before it fails; default 15).
    """

    name: ClassVar[str] = "chroma"
    capabilities: ClassVar[Capabilities] = Capabilities(
        persistent=True, retrieval=frozenset(RETRIEVAL_MODES), shared=True, history=True
    )
    default_mode: ClassVar[str] = "exact"

    def __init__(
        self,
        tracer: TraceSink | None = None,
        *,
        location: str | None = None,
        memory_dir: str | Path | None = None,
        clock: Callable[[], float] | None = None,
        embedder: Embedder | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        super().__init__(
            tracer, location=location, memory_dir=memory_dir, clock=clock, embedder=embedder
        )
        self.target = parse_location(location, memory_dir)
        import_chromadb()
        self._db = ChromaConnection(self.target, timeout=float(connect_timeout))
        self.collection_name = self.target.collection
        self._last_purge: float | None = None
        # (id, vgen, linked) -> term counts and length: an entry's text is tokenized
        # once per version, not once per keyword recall.
        self._counted: dict[tuple[str, str, bool], tuple[dict[str, float], float]] = {}

    async def _close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------------ plumbing

    def _entries(self, db: ChromaConnection) -> Any:
        found = db.collection(self.collection_name)
        assert found is not None
        return found

    def _vector_name(self, model_id: str) -> str:
        return f"{self.collection_name}-v{hashlib.sha1(model_id.encode()).hexdigest()[:12]}"

    def _vector_collections(self, db: ChromaConnection) -> list[Any]:
        """Every vector collection of this memory collection (one per model used)."""
        prefix = f"{self.collection_name}-v"
        found = []
        for name in db._open().list_collections():
            text = name if isinstance(name, str) else name.name
            if text.startswith(prefix) and len(text) == len(prefix) + 12:
                collection = db.collection(text, create=False)
                if collection is not None:
                    found.append(collection)
        return found

    @staticmethod
    def _live(now: float) -> dict[str, Any]:
        return {"exp": {"$gt": now}}

    @staticmethod
    def _where_scope(scope: str | None, every: bool) -> dict[str, Any] | None:
        return None if every else {"scope": _scope_code(scope)}

    def _fetch(
        self,
        where: Mapping[str, Any],
        document: Mapping[str, Any] | None = None,
        *,
        include_meta: bool = True,
    ) -> tuple[list[str], list[Meta]]:
        def body(db: ChromaConnection) -> tuple[list[str], list[Meta]]:
            got = get_all(
                self._entries(db),
                where=dict(where),
                where_document=dict(document) if document else None,
                include=["metadatas"] if include_meta else [],
            )
            metas = [dict(m) for m in (got["metadatas"] or [])] if include_meta else []
            return list(got["ids"]), metas

        return self._db.run(body)

    # ------------------------------------------------------------------ writes

    async def _put(self, entries: Sequence[MemoryEntry]) -> None:
        # One record per (scope, key): the last value wins, stored in batch order.
        latest: dict[tuple[str | None, str], MemoryEntry] = {}
        for entry in entries:
            latest[(scope_of(entry.metadata), entry.key)] = entry
        ids = [entry_id(scope, key) for scope, key in latest]
        scopes = list(dict.fromkeys(scope for scope, _ in latest))

        def body(db: ChromaConnection) -> int:
            collection = self._entries(db)
            # What is there already: kept insertion order (`seq`) and contexts, and
            # the text last stored in each scope (the next entry's context).
            old = collection.get(ids=ids + [scope_id(s) for s in scopes], include=["metadatas"])
            known = {i: dict(m) for i, m in zip(old["ids"], old["metadatas"] or [], strict=True)}
            last = {s: str(known.get(scope_id(s), {}).get("last", "")) for s in scopes}
            record_ids: list[str] = []
            metas: list[Meta] = []
            documents: list[str] = []
            lengths: list[list[float]] = []
            now = self.clock()
            for ident, ((scope, key), entry) in zip(ids, latest.items(), strict=True):
                text = value_text(entry.value)
                before = known.get(ident)
                created = entry.created_at
                if entry.fresh and before and _exact(before, "exp") > now:
                    created = _created(before)  # a live entry stored again keeps its first write
                record_ids.append(ident)
                metas.append(
                    {
                        "kind": "e",
                        "scope": _scope_code(scope),
                        "key": key,
                        "value": encode_json(entry.value),
                        "meta": encode_json(entry.metadata),
                        **_exact_fields(entry.timestamp, entry.expires_at),
                        "cr": repr(float(created)),
                        "seq": int(before["seq"]) if before else _SEQ.next(),
                        "vgen": secrets.token_hex(8),
                        "vm": "",
                        "ctx": (
                            entry.context
                            if entry.context is not None  # an import's: kept as given
                            else str(before["ctx"]) if before else last[scope]
                        ),
                    }
                )
                context = str(metas[-1]["ctx"])
                documents.append(_document(key, text, context))
                lengths.append([entry_length(key, text), float(text_length(context))])
                last[scope] = text
            for scope in scopes:
                record_ids.append(scope_id(scope))
                metas.append({"kind": "s", "scope": _scope_code(scope), "last": last[scope]})
                documents.append("")
                lengths.append(SCOPE_VECTOR)
            limit = db.batch_limit()
            stored = 0
            for start in range(0, len(record_ids), limit):
                end = start + limit
                try:
                    collection.upsert(
                        ids=record_ids[start:end],
                        embeddings=lengths[start:end],
                        metadatas=metas[start:end],
                        documents=documents[start:end],
                    )
                except Exception:
                    if start:
                        raise AxonMemoryError(
                            f"a batch of {len(ids)} entries is larger than Chroma's largest "
                            f"atomic write ({limit}) and failed part way: the first "
                            f"{min(start, len(ids))} were stored"
                        ) from None
                    raise
                stored = end
            return stored

        self._db.run(body)
        await self._maybe_purge(self.clock())

    async def _maybe_purge(self, now: float) -> None:
        if self._last_purge is None or now - self._last_purge >= PURGE_INTERVAL:
            self._last_purge = now
            await self._purge_expired(now)

    async def _delete(self, key: str, scope: str | None) -> bool:
        ident = entry_id(scope, key)
        now = self.clock()

        def body(db: ChromaConnection) -> bool:
            collection = self._entries(db)
            got = collection.get(ids=[ident], include=["metadatas"])
            if not got["ids"]:
                return False
            meta = (got["metadatas"] or [{}])[0]
            collection.delete(ids=[ident])
            for vectors in self._vector_collections(db):
                vectors.delete(ids=[ident])
            return _exact(meta, "exp") > now

        return self._db.run(body)

    async def _clear(self, scope: str | None) -> int:
        now = self.clock()
        where = self._where_scope(scope, scope is None)

        def body(db: ChromaConnection) -> int:
            collection = self._entries(db)
            live = get_all(
                collection, where=_and({"kind": "e"}, where, self._live(now)), include=[]
            )
            if scope is None:
                # Records, not collections: other processes keep using their handles.
                collection.delete(where={"kind": {"$in": ["e", "s"]}})
                for vectors in self._vector_collections(db):
                    vectors.delete(where={"vgen": {"$ne": ""}})
            else:
                collection.delete(where=_and(where))
                for vectors in self._vector_collections(db):
                    vectors.delete(where=_and(where))
            return len(live["ids"])

        return self._db.run(body)

    async def _purge_expired(self, now: float) -> int:
        def body(db: ChromaConnection) -> dict[str | None, int]:
            collection = self._entries(db)
            got = get_all(
                collection,
                where=_and({"kind": "e"}, {"exp": {"$lte": now}}),
                include=["metadatas"],
            )
            if not got["ids"]:
                return {}
            by_scope: dict[str | None, int] = {}
            for meta in got["metadatas"] or []:
                scope = _scope_decode(str(meta["scope"]))
                by_scope[scope] = by_scope.get(scope, 0) + 1
            ids = list(got["ids"])
            delete_ids(collection, ids)
            for vectors in self._vector_collections(db):
                delete_ids(vectors, ids)
            return by_scope

        by_scope = self._db.run(body)
        removed = sum(by_scope.values())
        self._purged(removed, by_scope)
        return removed

    # ------------------------------------------------------------------ reads

    async def _write_links(
        self,
        scope: str | None,
        changes: list[LinkChange],
        store: MemoryEntry | None,
        delete: str | None,
        now: float,
    ) -> LinkWrite:
        """See `MemoryBackend.write_links`. Chroma has no transactions: everything is read
        and checked first (a refusal writes nothing), then the delete, the store and one
        `update` of the linked entries' `meta` field (Chroma merges it into the record, so
        value, times, vectors and context stay). Another process writing one of these
        entries between the read and the update can have its metadata reverted."""
        unlink: list[LinkChange] = []
        if delete is not None:
            gone = await self._get(delete, scope)
            if gone is not None:
                unlink = unlink_changes(delete, gone.metadata)
        if store is not None:
            old = await self._get(store.key, scope)
            alive = old is not None and not old.is_expired(now)
            live = old.metadata if old is not None and alive else None
            meta = kept_related(store.metadata, live, memory=scope, key=store.key)
            created = old.created_at if old is not None and alive else None
            store = dataclasses.replace(store, metadata=meta, **kept_created(store, created))
        ids: list[str] = []
        metas: list[Meta] = []
        changed: list[str] = []
        for change in [*unlink, *changes]:
            found = await self._get(change.key, scope)
            if found is None or found.is_expired(now):
                if change.add:
                    raise MissingLinkTarget(change.key, memory=scope)
                continue
            edited = edited_metadata(found.metadata, change, memory=scope)
            if edited is not None:
                ids.append(entry_id(scope, change.key))
                metas.append({"meta": edited[1]})
                changed.append(change.key)
        deleted = await self._delete(delete, scope) if delete is not None else False
        if store is not None:
            await self._put([store])
        if ids:
            self._db.run(lambda db: self._entries(db).update(ids=ids, metadatas=metas))
        return LinkWrite(store, deleted, tuple(changed))

    async def _restart_expiry(
        self, scope: str | None, keys: list[str], now: float
    ) -> dict[str, float]:
        """See `MemoryBackend.restart_expiry`: one read of the entries, then one `update` of
        their `exp` fields (Chroma merges them into each record: everything else stays).
        No transaction: a write of one of them by another process in between can have
        its expiry replaced by the restart."""

        def body(db: ChromaConnection) -> dict[str, float]:
            collection = self._entries(db)
            got = collection.get(ids=[entry_id(scope, key) for key in keys], include=["metadatas"])
            ids: list[str] = []
            metas: list[Meta] = []
            restarted: dict[str, float] = {}
            for ident, meta in zip(got["ids"], got["metadatas"] or [], strict=True):
                entry = _decode(dict(meta))
                seconds = expiry_duration(entry.metadata)
                if entry.expires_at is None or entry.is_expired(now) or seconds is None:
                    continue
                expires_at = restarted[entry.key] = now + seconds
                ids.append(ident)
                metas.append({"exp": expires_at, "exp_r": repr(expires_at)})  # as `_exact` reads
            if ids:
                collection.update(ids=ids, metadatas=metas)
            return restarted

        return self._db.run(body)

    async def _get(self, key: str, scope: str | None) -> MemoryEntry | None:
        ident = entry_id(scope, key)

        def body(db: ChromaConnection) -> MemoryEntry | None:
            got = self._entries(db).get(ids=[ident], include=["metadatas"])
            return _decode(dict(got["metadatas"][0])) if got["ids"] and got["metadatas"] else None

        return self._db.run(body)

    @staticmethod
    def _order(meta: Meta) -> tuple[float, int]:
        return (-_exact(meta, "ts"), int(meta["seq"]))

    async def _list(
        self, scope: str | None, limit: int | None, offset: int, now: float
    ) -> list[MemoryEntry]:
        where = _and({"kind": "e"}, self._where_scope(scope, scope is None), self._live(now))
        _, metas = self._fetch(where)
        metas.sort(key=self._order)
        end = None if limit is None else offset + limit
        return [_decode(meta) for meta in metas[offset:end]]

    async def _list_after(
        self,
        scope: str | None,
        limit: int,
        after: tuple[float, Any] | None,
        now: float,
        oldest_first: bool,
    ) -> list[tuple[MemoryEntry, Any]]:
        """A keyset page in `_list`'s order, tie = the entry's `seq` (first stored
        first at one `created_at`, as on every other backend)."""
        where = _and({"kind": "e"}, self._where_scope(scope, scope is None), self._live(now))
        _, metas = self._fetch(where)
        rows = ((_exact(meta, "ts"), int(meta["seq"]), meta) for meta in metas)
        page = keyset_page(rows, limit, after, oldest_first)
        return [(_decode(meta), seq) for meta, seq in page]

    async def _count(self, scope: str | None, now: float) -> int:
        where = _and({"kind": "e"}, self._where_scope(scope, scope is None), self._live(now))
        ids, _ = self._fetch(where, include_meta=False)
        return len(ids)

    # ------------------------------------------------------------------ history

    def _versions(self, db: ChromaConnection, *, create: bool) -> Any:
        """The collection of this memory collection's versions (`chroma_versions`)."""
        return db.collection(f"{self.collection_name}-h", create=create)

    async def _record_versions(
        self, scope: str | None, versions: list[Version], keep: int
    ) -> None:
        code = _scope_code(scope)
        self._db.run(
            lambda db: chroma_versions.record(
                self._versions(db, create=True), code, versions, keep, _SEQ.next
            )
        )

    async def _read_versions(self, scope: str | None, key: str) -> list[Version]:
        def body(db: ChromaConnection) -> list[Version]:
            found = self._versions(db, create=False)
            return [] if found is None else chroma_versions.read(found, _scope_code(scope), key)

        return self._db.run(body)

    async def _drop_versions(self, scope: str | None, *, prefix: bool) -> int:
        wanted: Callable[[str], bool] | str | None
        if scope is None:
            wanted = None
        elif prefix:
            start = _scope_code(scope)

            def under(code: str) -> bool:
                return code.startswith(start)

            wanted = under
        else:
            wanted = _scope_code(scope)

        def body(db: ChromaConnection) -> int:
            found = self._versions(db, create=False)
            return 0 if found is None else chroma_versions.drop(found, wanted)

        return self._db.run(body)

    async def _list_scopes(self, prefix: str) -> list[str]:
        def body(db: ChromaConnection) -> list[str]:
            collection = self._entries(db)
            got = collection.get(where={"kind": "s"}, include=["metadatas"])
            found = []
            for meta in got["metadatas"] or []:
                scope = _scope_decode(str(meta["scope"]))
                if scope is None or not scope.startswith(prefix):
                    continue
                held = collection.get(
                    where=_and({"kind": "e"}, {"scope": meta["scope"]}), limit=1, include=[]
                )
                if held["ids"]:
                    found.append(scope)
            return found

        return self._db.run(body)

    def _ranked(self, scored: Iterable[tuple[float, Meta]], top_k: int) -> list[MemoryEntry]:
        """Best first; equal scores newest first, then first stored first (the seed's order)."""
        ordered = sorted(scored, key=lambda item: (-item[0], *self._order(item[1])))
        return [_decode(meta, score) for score, meta in ordered[:top_k]]

    async def _retrieve_exact(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
    ) -> list[MemoryEntry]:
        """Candidates by Chroma's `$contains` on the lower-cased key and text; seed scores."""
        accepts = filter_predicate(filters)
        inside = window_test(filters)
        query_lower = query.lower()
        where = _and({"kind": "e"}, self._where_scope(scope, not scope), self._live(now))
        # A long query: its start picks the candidates (Chroma's LIKE refuses long patterns).
        needle = query_lower[:64].replace("\x00", " ")  # as in `_document`
        document = {"$contains": needle} if needle and "\x1f" not in needle else None
        _, metas = self._fetch(where, document)
        scored = []
        for meta in metas:
            if filters and not (inside(_exact(meta, "ts")) and accepts(json.loads(meta["meta"]))):
                continue
            score = seed_score(query_lower, str(meta["key"]), json.loads(meta["value"]))
            if score > 0:
                scored.append((score, meta))
        return self._ranked(scored, top_k)

    async def _retrieve_keyword(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
        linked: bool = False,
    ) -> list[MemoryEntry]:
        """BM25 with each scope's own statistics, as every backend scores it.

        The candidates are the entries holding a query term (Chroma's `$contains` on
        the term markers of the document, `\x02term\x03`, and `\x04term\x03` for the
        context when `linked`), expired ones included: they count in a term's
        document frequency until purged, as on every backend. The scope's entry count
        and total length come from the entries' length vectors (no values read).
        """
        accepts = filter_predicate(filters)
        inside = window_test(filters)
        terms = search_terms(query)
        if not terms:
            return []
        markers = [_marker(TERM, t) for t in terms]
        if linked:
            markers += [_marker(CONTEXT_TERM, t) for t in terms]
        document: dict[str, Any] | None = (
            None  # a query of very many words (Chroma's SQL has limits): read the scope
            if len(markers) > MAX_MARKERS
            else {"$contains": markers[0]}
            if len(markers) == 1
            else {"$or": [{"$contains": m} for m in markers]}
        )
        where = _and({"kind": "e"}, self._where_scope(scope, not scope))
        ids, metas = self._fetch(where, document)
        by_scope: dict[str, list[tuple[Meta, dict[str, float], float]]] = {}
        for ident, meta in zip(ids, metas, strict=True):
            counts, length = self._counts(ident, meta, linked)
            by_scope.setdefault(str(meta["scope"]), []).append((meta, counts, length))
        scored = []
        for code, members in by_scope.items():
            df = {t: sum(1 for _, counts, _ in members if counts.get(t)) for t in terms}
            docs, total = self._scope_lengths(code, linked)
            stats = ScopeStats(docs, total, df)
            for meta, counts, length in members:
                if _exact(meta, "exp") <= now:
                    continue
                if filters and not (
                    inside(_exact(meta, "ts")) and accepts(json.loads(meta["meta"]))
                ):
                    continue
                score = keyword_score(terms, counts, length, stats)
                if score > 0:
                    scored.append((score, meta))
        return self._ranked(scored, top_k)

    def _counts(self, ident: str, meta: Meta, linked: bool) -> tuple[dict[str, float], float]:
        """The term counts and BM25 length of one entry version (cached)."""
        mark = (ident, str(meta["vgen"]), linked)
        found = self._counted.get(mark)
        if found is None:
            text = value_text(json.loads(meta["value"]))
            context = str(meta["ctx"]) if linked else None
            key = str(meta["key"])
            found = (entry_counts(key, text, context), entry_length(key, text, context))
            if len(self._counted) >= _CACHE_LIMIT:
                self._counted.clear()
            self._counted[mark] = found
        return found

    def _scope_lengths(self, code: str, linked: bool) -> tuple[int, float]:
        """How many entries the scope holds (expired ones too) and their total length."""

        def body(db: ChromaConnection) -> tuple[int, float]:
            got = get_all(
                self._entries(db),
                where=_and({"kind": "e"}, {"scope": code}),
                include=["embeddings"],
            )
            rows = got["embeddings"]
            if rows is None or len(rows) == 0:
                return 0, 0.0
            import numpy as np

            # Token counts, stored as float32 vector components that Chroma may return
            # a rounding away from the integer: rounded back, so sums are exact.
            matrix = np.rint(np.asarray(rows, dtype=np.float64))
            total = float(matrix[:, 0].sum())
            if linked:
                total += CONTEXT_WEIGHT * float(matrix[:, 1].sum())
            return len(matrix), total

        return self._db.run(body)

    # ------------------------------------------------------------------ semantic

    async def _pending_texts(self, scope: str | None, model_id: str) -> list[tuple[Any, str]]:
        """Live entries of `scope` (every scope when falsy) not embedded by `model_id`."""
        now = self.clock()
        where = _and(self._where_scope(scope, not scope), {"vm": {"$ne": model_id}})
        ids, metas = self._fetch(where)
        return [
            ((ident, str(meta["vgen"])), value_text(json.loads(meta["value"])))
            for ident, meta in zip(ids, metas, strict=True)
            if meta.get("kind") == "e" and _exact(meta, "exp") > now
        ]

    async def _save_vectors(self, model_id: str, items: Sequence[tuple[Any, np.ndarray]]) -> None:
        if not items:
            return
        wanted = {ident: vgen for (ident, vgen), _ in items}

        def body(db: ChromaConnection) -> None:
            collection = self._entries(db)
            got = collection.get(ids=list(wanted), include=["metadatas"])
            # An entry rewritten or deleted since its text was read keeps no vector.
            current = {
                ident: dict(meta)
                for ident, meta in zip(got["ids"], got["metadatas"] or [], strict=True)
                if meta["vgen"] == wanted[ident]
            }
            keep = [(ident, vector) for (ident, _), vector in items if ident in current]
            if not keep:
                return
            vectors = db.collection(self._vector_name(model_id))
            assert vectors is not None
            vectors.upsert(
                ids=[ident for ident, _ in keep],
                embeddings=[[float(x) for x in vector] for _, vector in keep],
                metadatas=[
                    {
                        "scope": current[ident]["scope"],
                        "vgen": current[ident]["vgen"],
                        "exp": current[ident]["exp"],
                    }
                    for ident, _ in keep
                ],
            )
            collection.update(
                ids=[ident for ident, _ in keep], metadatas=[{"vm": model_id}] * len(keep)
            )

        self._db.run(body)

    async def _read_contexts(self, scope: str | None, keys: list[str]) -> dict[str, str]:
        """Each entry's `ctx` (its record's metadata)."""
        by_id = {entry_id(scope, key): key for key in keys}

        def body(db: ChromaConnection) -> dict[str, str]:
            got = self._entries(db).get(ids=list(by_id), include=["metadatas"])
            return {
                by_id[ident]: str(meta["ctx"])
                for ident, meta in zip(got["ids"], got["metadatas"] or [], strict=True)
            }

        found: dict[str, str] = self._db.run(body)
        return found

    async def _read_vectors(
        self, scope: str | None, keys: list[str], model_id: str
    ) -> dict[str, np.ndarray]:
        """The `model_id` vectors of `keys` whose `vgen` is still their entry's."""
        by_id = {entry_id(scope, key): key for key in keys}

        def body(db: ChromaConnection) -> dict[str, np.ndarray]:
            import numpy as np

            vectors = db.collection(self._vector_name(model_id), create=False)
            if vectors is None:
                return {}
            got = self._entries(db).get(ids=list(by_id), include=["metadatas"])
            current = {
                ident: meta["vgen"]
                for ident, meta in zip(got["ids"], got["metadatas"] or [], strict=True)
                if meta.get("vm") == model_id
            }
            if not current:
                return {}
            hits = vectors.get(ids=list(current), include=["embeddings", "metadatas"])
            embeddings = hits["embeddings"] if hits["embeddings"] is not None else []
            return {
                by_id[ident]: np.asarray(vector, dtype=np.float32)
                for ident, vector, meta in zip(
                    hits["ids"], embeddings, hits["metadatas"] or [], strict=True
                )
                if meta["vgen"] == current.get(ident)
            }

        result: dict[str, np.ndarray] = self._db.run(body)
        return result

    async def _write_vectors(
        self, scope: str | None, model_id: str, items: Sequence[tuple[str, np.ndarray]]
    ) -> int:
        """Keep vectors computed elsewhere for the current text of `(scope, key)` entries."""
        by_id = {entry_id(scope, key): vector for key, vector in items}

        def body(db: ChromaConnection) -> list[tuple[Any, np.ndarray]]:
            got = self._entries(db).get(ids=list(by_id), include=["metadatas"])
            return [
                ((ident, str(meta["vgen"])), by_id[ident])
                for ident, meta in zip(got["ids"], got["metadatas"] or [], strict=True)
                if meta.get("kind") == "e"
            ]

        found: list[tuple[Any, np.ndarray]] = self._db.run(body)
        await self._save_vectors(model_id, found)
        return len(found)

    async def _semantic_search(
        self,
        query_vector: np.ndarray,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
    ) -> list[MemoryEntry]:
        """Chroma's nearest vectors of the scope, joined to their entries; score = cosine."""
        accepts = filter_predicate(filters)
        inside = window_test(filters)
        model_id = self._require_embedder(scope).model_id
        where = self._where_scope(scope, not scope)  # expiry is checked on the entries
        query = [float(x) for x in query_vector]

        def body(db: ChromaConnection) -> list[MemoryEntry]:
            vectors = db.collection(self._vector_name(model_id), create=False)
            if vectors is None:
                return []
            total = vectors.count()
            exact = None
            if total <= EXACT_SEARCH_LIMIT:
                # Every vector of the scope, compared here: the same answer as every
                # other backend (HNSW may miss a neighbour, more so after updates).
                exact = _nearest_first(
                    query_vector, get_all(vectors, where=where, include=["embeddings", "metadatas"])
                )
            # More than top_k: results tied at the cut are then ranked by `_ranked`'s
            # order (newest, first stored), not by whichever of them the index returned.
            want = top_k + 16 if not filters else max(top_k * 4, 32)
            while True:
                if exact is not None:
                    ids, hit_metas, distances = exact[0][:want], exact[1][:want], exact[2][:want]
                else:
                    hits = vectors.query(
                        query_embeddings=[query],
                        n_results=max(1, min(want, total)),
                        where=where,
                        include=["metadatas", "distances"],
                    )
                    ids = hits["ids"][0]
                    hit_metas = (hits["metadatas"] or [[]])[0]
                    distances = (hits["distances"] or [[]])[0]
                got = self._entries(db).get(ids=list(ids), include=["metadatas"]) if ids else None
                entries = (
                    {i: dict(m) for i, m in zip(got["ids"], got["metadatas"] or [], strict=True)}
                    if got
                    else {}
                )
                scored = []
                for ident, hit, distance in zip(ids, hit_metas, distances, strict=True):
                    meta = entries.get(ident)
                    if meta is None or meta["vgen"] != hit["vgen"] or _exact(meta, "exp") <= now:
                        continue
                    if filters and not (
                        inside(_exact(meta, "ts")) and accepts(json.loads(meta["meta"]))
                    ):
                        continue
                    scored.append((1.0 - float(distance), meta))
                if len(scored) >= top_k or len(ids) < want or want >= total:
                    return self._ranked(scored, top_k)
                want *= 4

        return self._db.run(body)


def store_place(
    location: str | None, settings: Mapping[str, str], memory_dir: Path
) -> StorePlace:
    """The Chroma collection a command opens (the registry's `store` of chroma); a
    relative directory is in the memory directory, as in a declaration. There when the
    collection is (a missing directory is not created)."""
    target = parse_location(location, memory_dir)

    def exists() -> bool:
        if target.path is not None and not (target.path / "chroma.sqlite3").is_file():
            return False
        import_chromadb()
        db = ChromaConnection(target, timeout=DEFAULT_CONNECT_TIMEOUT)
        try:
            return db.run(lambda c: c.collection(target.collection, create=False)) is not None
        finally:
            db.close()

    return StorePlace(f"Chroma {target.shown}", "no such collection there", exists)
