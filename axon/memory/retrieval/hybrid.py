"""Hybrid retrieval: keyword and semantic candidates in, one fused ranking with absolute scores out.

Every signal is already a score in [0, 1] that means the same on every backend
(`axon.memory.retrieval.scores`); the fused score is their weighted mean
(`HybridWeights`), so it is in [0, 1] too, and a result's score depends on the
result alone, never on which other candidates were in the pool (no pool
min-max or divide-by-best: those gave the weakest candidate 0 whatever its
match):

- `keyword`: the normalised BM25 of the entry (0 when the keyword search did not
  find it: it shares no word with the query, or ranked below the pool).
- `semantic`: the calibrated cosine (0 when the semantic search did not return it).
- `mention`: 1 when a short metadata value of the entry (a speaker, an author, a
  tag; any string or list of strings except `scope`) is named in the query, all
  of its words present. "What did Caroline research?" then favours what Caroline
  said over what was said to her, which neither text signal can tell apart. It
  is a bonus: its weight joins the mean only for an entry that is named, so an
  entry nobody names is not marked down, and a named one moves up.
- `recency` (exponential half-life) and `importance` (the entry's `importance`
  metadata in [0, 1]), off unless weighted.

Measured on LoCoMo dev (`benchmarks/locomo.py`), weighted fusion beat reciprocal
rank fusion (RRF k=60 was worse than BM25 alone). Every result carries
`signals`: what each signal contributed; they add up to `score`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from axon.memory.entry import MemoryEntry
from axon.memory.retrieval.scores import clip
from axon.memory.retrieval.text import tokenize


@attrs.frozen
class HybridWeights:
    """How `hybrid` weighs its signals (each a score in [0, 1]; the fused score is their mean).

    The fused score is `sum(weight * signal) / sum(weights)` over the signals in
    play, so only the weights' ratios matter. `mention` rewards an entry whose
    short metadata value (a speaker, a tag) is named in the query; see the module
    docstring for every signal. The defaults were chosen on LoCoMo dev
    (`benchmarks/locomo.py`) and checked on the independent notes
    (`benchmarks/notes.py`); see docs/performance.md.
    """

    keyword: float = 0.8
    semantic: float = 0.4
    mention: float = 0.3
    recency: float = 0.0
    importance: float = 0.0
    recency_half_life: float = 30 * 86400.0


CANDIDATES_PER_RESULT = 10
"""How many candidates each signal contributes per requested result (at least 50)."""

MENTION_MAX_WORDS = 4
"""Metadata values longer than this many words are descriptions, not names: never matched."""

_Ident = tuple[str | None, str]


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
    """The best `top_k` entries by weighted mean score; ties go to the newer entry.

    `keyword` and `semantic` are the candidate lists of each search, best first,
    with their scores in [0, 1] (`axon.memory.retrieval.scores`); `query` (when
    given) feeds the `mention` signal.
    """
    entries: dict[_Ident, MemoryEntry] = {}
    kw: dict[_Ident, float] = {}
    sem: dict[_Ident, float] = {}
    for entry in keyword:
        ident = (entry.scope, entry.key)
        entries.setdefault(ident, entry)
        kw[ident] = clip(entry.score)
    for entry in semantic:
        ident = (entry.scope, entry.key)
        entries.setdefault(ident, entry)
        sem[ident] = clip(entry.score)
    query_words = frozenset(tokenize(query)) if (query and weights.mention) else frozenset()
    base = {
        "keyword": max(weights.keyword, 0.0),
        "semantic": max(weights.semantic, 0.0),
        "recency": max(weights.recency, 0.0),
        "importance": max(weights.importance, 0.0),
    }
    fused: list[tuple[float, float, MemoryEntry, dict[str, float]]] = []
    for ident, entry in entries.items():
        parts = {"keyword": kw.get(ident, 0.0), "semantic": sem.get(ident, 0.0)}
        used = dict(base)
        if query_words:
            if mentioned(entry.metadata, query_words):
                parts["mention"] = 1.0
                used["mention"] = max(weights.mention, 0.0)
            else:
                parts["mention"] = 0.0
                used["mention"] = 0.0
        if weights.recency:
            age = max(0.0, now - entry.timestamp)
            parts["recency"] = math.exp(-math.log(2) * age / weights.recency_half_life)
        if weights.importance:
            value = entry.metadata.get("importance", 0.0)
            importance = float(value) if isinstance(value, int | float) else 0.0
            parts["importance"] = min(max(importance, 0.0), 1.0)
        total = sum(used[name] for name in parts)
        signals = {
            name: (used[name] * value / total if total > 0 else 0.0)
            for name, value in parts.items()
        }
        fused.append((clip(sum(signals.values())), entry.timestamp, entry, signals))
    fused.sort(key=lambda item: (-item[0], -item[1]))
    return [entry.with_score(score, signals) for score, _, entry, signals in fused[:top_k]]
