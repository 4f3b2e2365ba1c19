"""An incremental in-process BM25 index: token lists in by id, ranked `(id, score)` pairs out.

Okapi BM25 with the Lucene idf, `log(1 + (N - df + 0.5) / (df + 0.5))`, which is
always positive, so every matching document scores above zero. `N`, `df` and the
average document length count live documents only, and are updated on every add
and remove, so scores are always those of the current collection.

Postings are typed arrays (document id, term frequency) appended in id order;
scoring a query is vectorised with numpy: for each query term, one gather of
document lengths and one scatter-add into a score array (dense for common terms,
sparse via `np.unique` for rare ones). Removed documents stay in the postings as
tombstones, masked out at query time, until they outnumber the live ones and the
index is rebuilt.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from axon.memory.retrieval.scores import K1, B, ScopeStats, saturation
from axon.memory.retrieval.scores import idf as lucene_idf

if TYPE_CHECKING:
    import numpy as np

_COMPACT_MIN_DEAD = 1024

_Buf = TypeVar("_Buf", "array[Any]", bytearray)


def _appended(buffer: _Buf, value: Any) -> _Buf:
    """`buffer` with `value` appended; a copy if a numpy view still pins the original."""
    try:
        buffer.append(value)
    except BufferError:
        buffer = (
            type(buffer)(buffer)
            if isinstance(buffer, bytearray)
            else array(buffer.typecode, buffer)
        )
        buffer.append(value)
    return buffer


class BM25Index:
    """Documents by id, each a list of tokens; `search` ranks them for a list of terms."""

    def __init__(self) -> None:
        self.k1 = K1
        self.b = B
        self._reset()

    def _reset(self) -> None:
        self._doc_of: dict[Hashable, int] = {}
        self._ident: list[Hashable | None] = []
        self._terms: list[tuple[str, ...] | None] = []  # distinct terms, to undo df on remove
        self._length: array[float] = array("d")
        self._alive = bytearray()
        self._ids: dict[str, array[int]] = {}
        self._tfs: dict[str, array[float]] = {}
        self._df: dict[str, int] = {}
        self._total_length = 0.0
        self._dead = 0

    def __len__(self) -> int:
        return len(self._doc_of)

    def __contains__(self, ident: object) -> bool:
        return ident in self._doc_of

    def add(
        self,
        ident: Hashable,
        tokens: Sequence[str],
        context: Sequence[str] = (),
        context_weight: float = 1.0,
    ) -> None:
        """Index (or re-index) a document given its tokens (see `text.tokenize`).

        `context` tokens count `context_weight` each, in term frequency and length
        (as FTS5's bm25 column weights do): a match only in the context ranks below
        a comparable match in the document itself.
        """
        counts: dict[str, float] = dict(Counter(tokens))
        for term in context:
            counts[term] = counts.get(term, 0.0) + context_weight
        self._add_counts(ident, counts, len(tokens) + context_weight * len(context))

    def _add_counts(self, ident: Hashable, counts: dict[str, float], length: float) -> None:
        self.remove(ident)
        doc = len(self._ident)
        self._doc_of[ident] = doc
        self._ident.append(ident)
        self._terms.append(tuple(counts))
        self._length = _appended(self._length, float(length))
        self._alive = _appended(self._alive, 1)
        self._total_length += length
        all_ids, all_tfs, df = self._ids, self._tfs, self._df
        for term, tf in counts.items():
            ids = all_ids.get(term)
            if ids is None:
                ids = all_ids[term] = array("i")
                all_tfs[term] = array("f")
                df[term] = 0
            try:
                ids.append(doc)
            except BufferError:
                all_ids[term] = _appended(ids, doc)
            tfs = all_tfs[term]
            try:
                tfs.append(tf)
            except BufferError:
                all_tfs[term] = _appended(tfs, tf)
            df[term] += 1

    def remove(self, ident: Hashable) -> bool:
        """Forget a document; True when it was indexed."""
        doc = self._doc_of.pop(ident, None)
        if doc is None:
            return False
        terms = self._terms[doc]
        assert terms is not None
        for term in terms:
            self._df[term] -= 1
        self._total_length -= self._length[doc]
        self._terms[doc] = None
        self._ident[doc] = None
        self._alive[doc] = 0  # item assignment never resizes, so views do not block it
        self._dead += 1
        if self._dead >= _COMPACT_MIN_DEAD and self._dead > len(self._doc_of):
            self._compact()
        return True

    def clear(self) -> None:
        self._reset()

    def _compact(self) -> None:
        """Rebuild without tombstones (documents keep their relative order)."""
        live = [doc for doc, ident in enumerate(self._ident) if ident is not None]
        counts: dict[int, dict[str, float]] = {doc: {} for doc in live}
        for term, ids in self._ids.items():
            for doc, tf in zip(ids, self._tfs[term], strict=True):
                if doc in counts:
                    counts[doc][term] = tf
        idents, lengths = self._ident, self._length
        self._reset()
        for doc in live:
            self._add_counts(idents[doc], counts[doc], lengths[doc])

    def stats(self, terms: Sequence[str]) -> ScopeStats:
        """The statistics of the live documents, with the `df` of `terms`."""
        df = {term: self._df[term] for term in terms if self._df.get(term, 0) > 0}
        return ScopeStats(len(self._doc_of), self._total_length, df)

    def idf(self, term: str) -> float:
        """Inverse document frequency of `term` among the live documents (0.0 if absent)."""
        df = self._df.get(term, 0)
        if df <= 0:
            return 0.0
        return lucene_idf(df, len(self._doc_of))

    def scores(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np  # here, not at import: a program that never recalls needs none

        """`(doc ids, scores)` of every live document matching at least one term."""
        n_docs = len(self._ident)
        live = len(self._doc_of)
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        if live == 0:
            return empty
        avgdl = self.stats(()).average_length
        lengths = np.frombuffer(self._length, dtype=np.float64)
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        for term in dict.fromkeys(terms):
            idf = self.idf(term)
            if idf <= 0.0:
                continue
            ids = np.frombuffer(self._ids[term], dtype=np.int32)
            tf = np.frombuffer(self._tfs[term], dtype=np.float32).astype(np.float64)
            parts.append((ids, idf * saturation(tf, lengths[ids], avgdl)))
        if not parts:
            return empty
        alive = np.frombuffer(self._alive, dtype=np.uint8)
        total = sum(len(ids) for ids, _ in parts)
        if len(parts) == 1:
            ids, contrib = parts[0]
            keep = alive[ids].astype(bool)
            return ids[keep].astype(np.int64), contrib[keep]
        if total * 16 < n_docs:
            all_ids = np.concatenate([ids for ids, _ in parts])
            all_contrib = np.concatenate([c for _, c in parts])
            uniq, inverse = np.unique(all_ids, return_inverse=True)
            summed = np.bincount(inverse, weights=all_contrib)
            keep = alive[uniq].astype(bool)
            return uniq[keep].astype(np.int64), summed[keep]
        dense = np.zeros(n_docs, dtype=np.float64)
        for ids, contrib in parts:
            dense[ids] += contrib  # ids are unique within one term's postings
        dense *= alive
        found = np.flatnonzero(dense)
        return found, dense[found]

    def search(
        self,
        terms: Sequence[str],
        limit: int,
        accept: Callable[[Hashable], bool] | None = None,
    ) -> list[tuple[Hashable, float]]:
        """The best `limit` accepted documents as `(ident, score)`, best first.

        Documents tied with the last one kept are returned too (the list may be
        longer than `limit`), so the caller can break ties by its own order.
        """
        import numpy as np

        docs, scores = self.scores(terms)
        if limit <= 0 or not len(docs):
            return []
        idents = self._ident
        size = len(docs)
        pool = min(size, max(4 * limit, 64))
        while True:
            part = np.argpartition(-scores, pool - 1)[:pool] if pool < size else np.arange(size)
            order = part[np.lexsort((docs[part], -scores[part]))]
            found: list[tuple[Hashable, float]] = []
            threshold: float | None = None
            complete = pool >= size
            for i in order.tolist():
                score = float(scores[i])
                if threshold is not None and score < threshold:
                    complete = True
                    break
                ident = idents[int(docs[i])]
                if accept is None or accept(ident):
                    found.append((ident, score))
                    if len(found) == limit:
                        threshold = score
            if complete:
                return found
            pool = min(size, pool * 4)
