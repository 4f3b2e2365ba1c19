"""Hybrid retrieval: keyword (BM25) and semantic (cosine) candidates in, one fused ranking out.

Each signal is normalised to [0, 1] within the candidate pool, then combined as
a weighted sum (`HybridWeights`):

- `keyword`: BM25 divided by the best BM25 of the pool. BM25 has no fixed scale,
  so only its ratio to the best match means anything.
- `semantic`: cosine min-max scaled over the semantic candidates. Cosines of
  one model crowd in a narrow band (e5's sit between 0.7 and 0.9), so the raw
  value says little; its place between the pool's worst and best does. An entry
  that only the keyword search found gets 0 here.
- `mention`: 1 when a short metadata value of the entry (a speaker, an author, a
  tag; any string or list of strings except `scope`) is named in the query, all
  of its words present. "What did Caroline research?" then favours what Caroline
  said over what was said to her, which neither text signal can tell apart.
- `recency` (exponential half-life) and `importance` (the entry's `importance`
  metadata in [0, 1]), off unless weighted.

Measured on LoCoMo dev (`benchmarks/locomo.py`), weighted fusion of normalised
scores beat reciprocal rank fusion (RRF k=60 was worse than BM25 alone). Every
result carries `signals`: what each signal contributed; they add up to `score`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from axon.memory.entry import MemoryEntry
from axon.memory.retrieval.text import tokenize

if TYPE_CHECKING:
    from axon.memory.backend import HybridWeights

CANDIDATES_PER_RESULT = 10
"""How many candidates each signal contributes per requested result (at least 50)."""

MENTION_MAX_WORDS = 4
"""Metadata values longer than this many words are descriptions, not names: never matched."""

_Ident = tuple[str | None, str]


def _normalise_max(scores: dict[_Ident, float]) -> dict[_Ident, float]:
    top = max(scores.values(), default=0.0)
    return {k: (v / top if top > 0 else 0.0) for k, v in scores.items()}


def _normalise_minmax(scores: dict[_Ident, float]) -> dict[_Ident, float]:
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    span = hi - lo
    return {k: ((v - lo) / span if span > 0 else 1.0) for k, v in scores.items()}


@functools.lru_cache(maxsize=4096)
def _name_words(value: str) -> frozenset[str] | None:
    words = tokenize(value)
    if not words or len(words) > MENTION_MAX_WORDS:
        return None
    return frozenset(words)


def _metadata_names(metadata: Mapping[str, Any]) -> Iterable[str]:
    for name, value in metadata.items():
        if name == "scope":
            continue
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            yield from (item for item in value if isinstance(item, str))


def mentioned(metadata: Mapping[str, Any], query_words: frozenset[str]) -> bool:
    """Whether some short metadata value (not `scope`) has all its words in `query_words`."""
    for value in _metadata_names(metadata):
        words = _name_words(value)
        if words is not None and words <= query_words:
            return True
    return False


def fuse(
    keyword: Sequence[MemoryEntry],
    semantic: Sequence[MemoryEntry],
    *,
    top_k: int,
    now: float,
    weights: HybridWeights,
    query: str | None = None,
) -> list[MemoryEntry]:
    """The best `top_k` entries by weighted normalised score; ties go to the newer entry.

    `keyword` and `semantic` are the candidate lists of each search, best first,
    with their raw scores; `query` (when given) feeds the `mention` signal.
    """
    entries: dict[_Ident, MemoryEntry] = {}
    kw: dict[_Ident, float] = {}
    sem: dict[_Ident, float] = {}
    for entry in keyword:
        ident = (entry.scope, entry.key)
        entries.setdefault(ident, entry)
        kw[ident] = entry.score
    for entry in semantic:
        ident = (entry.scope, entry.key)
        entries.setdefault(ident, entry)
        sem[ident] = entry.score
    kw_n = _normalise_max(kw)
    sem_n = _normalise_minmax(sem)
    mention_weight = weights.mention
    query_words = frozenset(tokenize(query)) if (query and mention_weight) else frozenset()
    fused: list[tuple[float, float, MemoryEntry, dict[str, float]]] = []
    for ident, entry in entries.items():
        signals = {
            "keyword": weights.keyword * kw_n.get(ident, 0.0),
            "semantic": weights.semantic * sem_n.get(ident, 0.0),
        }
        if query_words:
            signals["mention"] = mention_weight if mentioned(entry.metadata, query_words) else 0.0
        if weights.recency:
            age = max(0.0, now - entry.timestamp)
            signals["recency"] = weights.recency * math.exp(
                -math.log(2) * age / weights.recency_half_life
            )
        if weights.importance:
            raw = entry.metadata.get("importance", 0.0)
            importance = float(raw) if isinstance(raw, int | float) else 0.0
            signals["importance"] = weights.importance * min(max(importance, 0.0), 1.0)
        fused.append((sum(signals.values()), entry.timestamp, entry, signals))
    fused.sort(key=lambda item: (-item[0], -item[1]))
    return [entry.with_score(score, signals) for score, _, entry, signals in fused[:top_k]]
