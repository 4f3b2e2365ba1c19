"""The seed's substring retrieval made fast: lower-cased keys and value texts in, ranked ids out.

`seed_score` is the seed `000` scoring, the definition every backend follows:
1.0 when the key equals the query, 0.7 when the key contains it, 0.4 when the
value's text contains it (all case-insensitive through `str.lower`), 0.0 otherwise.
Results are ordered by score, then newest first (timestamp descending), then by
the seed dict's iteration order, which we call `seq` (the position at which an
identity was first stored; overwriting keeps it, deleting forgets it).

`SubstringIndex` returns exactly what a linear scan with `seed_score` returns,
without scanning. Every document (one per identity) has:

- a trigram posting list entry for each distinct trigram of its lower-cased key
  and, separately, of its lower-cased value text (a text shorter than three
  characters is indexed as itself); a map from every one- and two-character
  string to the grams containing it answers queries shorter than a trigram;
- a row in per-document arrays (timestamp, seq, run, prefix maximum timestamp).

A query is answered tier by tier (key equal from a dict, key contains from the key
grams, value contains from the value grams). Within a tier, candidates are walked
in descending document order and verified with the real substring test; a bounded
heap keeps the best `top_k` by `(timestamp desc, seq asc)`. Documents are numbered
in store order, and a batch is numbered back to front, so descending document
order is newest first and, within one timestamp, seed order: the walk can stop
after a handful of candidates. It stops only when provably nothing unseen can
rank better, using two bounds: a *run* is a stretch of consecutive documents with
one timestamp and seq decreasing (so inside it the rest of the run ranks below what
was seen), and `prefmax[d]` is the largest timestamp among documents `0..d`. A
clock that goes backwards or many equal timestamps only make the walk longer,
never the answer different.

Deleted or replaced documents stay in the posting lists as tombstones until a
rebuild (when they outnumber the live ones).
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from axon.memory.entry import value_text

GRAM = 3
"""Length of the indexed n-grams."""

SCORE_EQUAL = 1.0
SCORE_KEY = 0.7
SCORE_VALUE = 0.4

_DIRECT_LIMIT = 2048
"""A driver posting list up to this long is walked as is; longer ones are pre-filtered."""

_UNION_LIMIT = 4096
"""Short queries: merge the posting lists when they hold at most this many ids in all,
else walk every document (the query is then common enough to stop early)."""

_COMPACT_MIN_DEAD = 1024

_BATCH_MIN = 32
"""`add_many` with fewer new documents indexes them one by one (numpy's fixed cost dominates)."""


def seed_score(query_lower: str, key: str, value: Any) -> float:
    """The seed's score of one entry for a lower-cased query (0.0: no match).

    Exactly seed `000`: `key.lower() == q` -> 1.0, `q in key.lower()` -> 0.7,
    `q in str(value).lower()` -> 0.4.
    """
    key_lower = key.lower()
    if key_lower == query_lower:
        return SCORE_EQUAL
    if query_lower in key_lower:
        return SCORE_KEY
    if query_lower in value_text(value).lower():
        return SCORE_VALUE
    return 0.0


def grams_of(text: str) -> set[str]:
    """The distinct trigrams of `text`; a shorter non-empty text is its own gram."""
    if len(text) >= GRAM:
        return {text[i : i + GRAM] for i in range(len(text) - GRAM + 1)}
    return {text} if text else set()


class ExactHit(NamedTuple):
    """One result of `SubstringIndex.search`: the seed score and the sort keys."""

    score: float
    timestamp: float
    seq: int
    ident: Hashable


class _Grams:
    """Trigram posting lists (document ids ascending) of one field, plus the short-gram map."""

    __slots__ = ("postings", "short")

    def __init__(self) -> None:
        self.postings: dict[str, array[int]] = {}
        self.short: dict[str, set[str]] = {}

    def add(self, doc: int, text: str) -> None:
        lists = self.postings
        for gram in grams_of(text):
            postings = lists.get(gram)
            if postings is None:
                postings = lists[gram] = array("i")
                self._register(gram)
            try:
                postings.append(doc)
            except BufferError:  # a numpy view is still alive somewhere: detach from it
                lists[gram] = array("i", postings)
                lists[gram].append(doc)

    def add_many(self, first: int, texts: Sequence[str]) -> None:
        """Index `texts[i]` as document `first + i`, every document newer than any indexed.

        What `add` does for each, with numpy doing the per-character work: the texts'
        code points in one array, every trigram as one 63-bit number (three 21-bit
        code points), a stable sort that groups each trigram's documents (ascending,
        duplicates within a document dropped), then one posting-list extension per
        distinct trigram of the batch instead of one append per trigram per document.
        """
        import numpy as np  # here, not at import: only batched writes get this far

        long: list[str] = []
        docs: list[int] = []
        for doc, text in enumerate(texts, first):
            if len(text) >= GRAM:
                long.append(text)
                docs.append(doc)
            elif text:
                self.add(doc, text)  # a short text is its own gram, apart from trigrams
        if not long:
            return
        joined = "".join(long)
        points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        codes = points.astype(np.uint64)
        lengths = np.fromiter(map(len, long), dtype=np.int64, count=len(long))
        owner = np.repeat(np.asarray(docs, dtype=np.int64), lengths)
        grams = (codes[:-2] << np.uint64(42)) | (codes[1:-1] << np.uint64(21)) | codes[2:]
        at = np.flatnonzero(owner[:-2] == owner[2:])  # trigrams inside one text
        grams = grams[at]
        order = np.argsort(grams, kind="stable")  # stable: documents stay ascending
        grams, at = grams[order], at[order]
        holders = owner[at]
        fresh = np.empty(len(grams), dtype=bool)
        fresh[0] = True
        np.not_equal(grams[1:], grams[:-1], out=fresh[1:])
        starts = np.flatnonzero(fresh)  # the first occurrence of each distinct trigram
        fresh[1:] |= holders[1:] != holders[:-1]
        kept = np.flatnonzero(fresh)  # one per (trigram, document)
        ids = memoryview(holders[kept].astype(np.int32).tobytes())
        bounds = np.searchsorted(kept, starts).tolist()
        bounds.append(len(kept))
        size = 4  # bytes of an int32 id
        lists = self.postings
        for i, pos in enumerate(at[starts].tolist()):
            gram = joined[pos : pos + GRAM]
            part = ids[bounds[i] * size : bounds[i + 1] * size]
            postings = lists.get(gram)
            if postings is None:
                postings = lists[gram] = array("i")
                self._register(gram)
            try:
                postings.frombytes(part)
            except BufferError:  # a numpy view is still alive somewhere: detach from it
                lists[gram] = array("i", postings)
                lists[gram].frombytes(part)

    def _register(self, gram: str) -> None:
        for size in range(1, min(len(gram), GRAM - 1) + 1):
            for i in range(len(gram) - size + 1):
                self.short.setdefault(gram[i : i + size], set()).add(gram)

    def candidates(self, query: str) -> Iterable[int] | None:
        """Document ids, descending, that may contain `query`; None means "every document".

        A superset is fine (the caller verifies); missing a document is not.
        """
        if not query:
            return None
        if len(query) >= GRAM:
            lists = []
            for gram in grams_of(query):
                postings = self.postings.get(gram)
                if not postings:
                    return ()
                lists.append(postings)
            lists.sort(key=len)
            if len(lists) == 1 or len(lists[0]) <= _DIRECT_LIMIT:
                return reversed(lists[0])
            return _filtered_descending(lists[0], lists[1:4])
        grams = self.short.get(query)
        if not grams:
            return ()
        lists = [self.postings[gram] for gram in grams]
        if sum(len(p) for p in lists) > _UNION_LIMIT:
            return None
        union: set[int] = set()
        for postings in lists:
            union.update(postings)
        return sorted(union, reverse=True)


def _filtered_descending(driver: array[int], others: Sequence[array[int]]) -> Iterator[int]:
    """The ids of `driver` that also occur in every list of `others`, descending.

    Works back from the end in growing chunks, so a walk that stops early costs little.
    """
    import numpy as np  # here, not at import: most programs never get this far

    ids = np.frombuffer(driver, dtype=np.int32)
    rest = [np.frombuffer(other, dtype=np.int32) for other in others]
    hi = len(ids)
    chunk = 256
    while hi > 0:
        lo = max(0, hi - chunk)
        part = ids[lo:hi]
        for other in rest:
            pos = np.searchsorted(other, part)
            np.minimum(pos, len(other) - 1, out=pos)
            part = part[other[pos] == part]
            if not len(part):
                break
        yield from reversed(part.tolist())
        hi = lo
        chunk = min(chunk * 4, 65536)


class SubstringIndex:
    """The documents of one scope, searchable with the seed's scoring (see the module doc).

    `ident` is the caller's name for a document (the entry key within a scope).
    `seq` must be unique among live documents and define the seed's tie order.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._doc_of: dict[Hashable, int] = {}
        self._ident: list[Hashable | None] = []
        self._key: list[str] = []
        self._text: list[str] = []
        self._ts: array[float] = array("d")
        self._seq: array[int] = array("q")
        self._run: array[int] = array("q")
        self._run_start: array[int] = array("q")
        self._prefmax: array[float] = array("d")
        # lower-cased key -> its document, or the set of them when keys differ by case
        self._equal: dict[str, int | set[int]] = {}
        self._keys = _Grams()
        self._values = _Grams()
        self._dead = 0

    def __len__(self) -> int:
        return len(self._doc_of)

    def __contains__(self, ident: object) -> bool:
        return ident in self._doc_of

    # ------------------------------------------------------------------ updates

    def add(
        self, ident: Hashable, key_lower: str, text_lower: str, timestamp: float, seq: int
    ) -> None:
        """Index (or re-index) one document: its lower-cased key and value text."""
        self.remove(ident)
        doc = self._place(ident, key_lower, text_lower, timestamp, seq)
        self._keys.add(doc, key_lower)
        self._values.add(doc, text_lower)

    def _place(
        self, ident: Hashable, key_lower: str, text_lower: str, timestamp: float, seq: int
    ) -> int:
        """Give a document (not indexed now) the next number and its rows; returns it."""
        doc = len(self._ident)
        self._doc_of[ident] = doc
        self._ident.append(ident)
        self._key.append(key_lower)
        self._text.append(text_lower)
        if doc and timestamp == self._ts[doc - 1] and seq < self._seq[doc - 1]:
            self._run.append(self._run[doc - 1])
        else:
            self._run_start.append(doc)
            self._run.append(len(self._run_start) - 1)
        self._ts.append(timestamp)
        self._seq.append(seq)
        self._prefmax.append(max(self._prefmax[doc - 1], timestamp) if doc else timestamp)
        same = self._equal.get(key_lower)
        if same is None:
            self._equal[key_lower] = doc
        elif isinstance(same, int):
            self._equal[key_lower] = {same, doc}
        else:
            same.add(doc)
        return doc

    def add_many(self, items: Sequence[tuple[Hashable, str, str, float, int]]) -> None:
        """Index a batch `(ident, key_lower, text_lower, timestamp, seq)`; the last of a
        repeated ident wins. Numbered back to front so a batch stored at one instant
        walks in seed order."""
        seen: set[Hashable] = set()
        batch = []
        for item in reversed(items):
            if item[0] not in seen:
                seen.add(item[0])
                batch.append(item)
        if len(batch) < _BATCH_MIN:
            for item in batch:
                self.add(*item)
            return
        # As `add` one by one, with the removals first: the same documents in the same
        # order (a compaction keeps the relative order), the grams added in two batches.
        for item in batch:
            self.remove(item[0])
        first = len(self._ident)
        for item in batch:
            self._place(*item)
        self._keys.add_many(first, [item[1] for item in batch])
        self._values.add_many(first, [item[2] for item in batch])

    def remove(self, ident: Hashable) -> bool:
        """Forget a document; True when it was indexed."""
        doc = self._doc_of.pop(ident, None)
        if doc is None:
            return False
        key_lower = self._key[doc]
        same = self._equal[key_lower]
        if isinstance(same, int):
            del self._equal[key_lower]
        else:
            same.discard(doc)
            if len(same) == 1:
                self._equal[key_lower] = same.pop()
        self._ident[doc] = None
        self._key[doc] = ""
        self._text[doc] = ""
        self._dead += 1
        if self._dead >= _COMPACT_MIN_DEAD and self._dead > len(self._doc_of):
            self._compact()
        return True

    def clear(self) -> None:
        self._reset()

    def _compact(self) -> None:
        """Rebuild without tombstones, keeping the relative order of the live documents."""
        live = [
            (ident, self._key[doc], self._text[doc], self._ts[doc], self._seq[doc])
            for doc, ident in enumerate(self._ident)
            if ident is not None
        ]
        self._reset()
        for item in live:
            self.add(*item)

    # ------------------------------------------------------------------ search

    def search(
        self,
        query_lower: str,
        top_k: int,
        accept: Callable[[Hashable], bool] | None = None,
    ) -> list[ExactHit]:
        """The best `top_k` documents by the seed's scoring for a lower-cased query.

        `accept(ident)` can veto documents (expired, filtered out); the result is
        what a linear scan of the accepted documents with `seed_score` would give,
        in the same order.
        """
        q = query_lower
        keys, texts, idents = self._key, self._text, self._ident
        ts, seqs = self._ts, self._seq
        hits: list[ExactHit] = []

        same = self._equal.get(q)
        if same is not None:
            equal = (
                [same] if isinstance(same, int) else sorted(same, key=lambda d: (-ts[d], seqs[d]))
            )
            for doc in equal:
                if accept is None or accept(idents[doc]):
                    hits.append(ExactHit(SCORE_EQUAL, ts[doc], seqs[doc], idents[doc]))
                    if len(hits) == top_k:
                        return hits

        def key_contains(doc: int) -> bool:
            key = keys[doc]
            return q in key and key != q and (accept is None or accept(idents[doc]))

        for doc in self._walk(self._keys.candidates(q), key_contains, top_k - len(hits)):
            hits.append(ExactHit(SCORE_KEY, ts[doc], seqs[doc], idents[doc]))
        if len(hits) == top_k or not q:
            return hits

        def value_contains(doc: int) -> bool:
            return (
                q in texts[doc] and q not in keys[doc] and (accept is None or accept(idents[doc]))
            )

        for doc in self._walk(self._values.candidates(q), value_contains, top_k - len(hits)):
            hits.append(ExactHit(SCORE_VALUE, ts[doc], seqs[doc], idents[doc]))
        return hits

    def _walk(
        self, candidates: Iterable[int] | None, verify: Callable[[int], bool], need: int
    ) -> list[int]:
        """The best `need` verified candidates by `(timestamp desc, seq asc)`.

        `candidates` must be descending document ids (None: every document).
        """
        if need <= 0:
            return []
        if candidates is None:
            candidates = range(len(self._ident) - 1, -1, -1)
        ts, seqs, runs = self._ts, self._seq, self._run
        run_start, prefmax, idents = self._run_start, self._prefmax, self._ident
        heap: list[tuple[float, int, int]] = []  # (timestamp, -seq, doc); heap[0] is the worst
        for doc in candidates:
            if len(heap) == need:
                worst_ts, worst_neg_seq, _ = heap[0]
                t = ts[doc]
                # Unseen documents of this run rank at best (t, seqs[doc]); documents
                # before the run at best have timestamp prefmax[start - 1].
                if worst_ts > t or (worst_ts == t and -worst_neg_seq < seqs[doc]):
                    start = run_start[runs[doc]]
                    if start == 0 or worst_ts > prefmax[start - 1]:
                        break
            if idents[doc] is None or not verify(doc):
                continue
            item = (ts[doc], -seqs[doc], doc)
            if len(heap) < need:
                heapq.heappush(heap, item)
            elif item > heap[0]:
                heapq.heapreplace(heap, item)
        heap.sort(reverse=True)
        return [doc for _, _, doc in heap]
