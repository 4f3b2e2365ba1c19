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
- `time`: when the query names a date or a period (`axon.memory.retrieval.when`),
  an entry written in that window (or near it, `Window.nearness`) is lifted last,
  after every other signal and the learned ranker, to `(score + t) / (1 + t)`,
  `t = HybridWeights.time * nearness` (`scores.time_lift`): in every memory, linked
  or not. A query that names no time gets no `time` signal and ranks exactly as
  without it.

In a memory of independent entries (`link: none`, the default) that is all, and
semantic weighs `HybridWeights.semantic` (0.7): on independent notes keyword's
first hit is often a near-miss that shares a name with the answer, and meaning
decides (`benchmarks/notes.py`). In a linked memory semantic weighs
`linked_semantic` (0.4): there keyword, reading each entry with its context, is
the stronger signal (LoCoMo). A linked memory (`link: sequence`, a conversation
or a log written in order) adds three signals read from the candidates around an
entry, never from other memories and never in an unlinked one:

- `neighbour`: the best fused score of the candidates remembered just before and
  just after the entry (the nearest earlier and later candidate, when no more
  than `neighbour_seconds` apart; entries of one batch share a time and are not
  neighbours). An answer ("Yes, every Sunday") is lifted by the question next to it.
- `episode`: how well the entry's episode matches as a whole, the mean of the
  three best fused scores in it; an episode is a run of entries with no gap longer
  than `episode_gap_seconds` (a conversation's session). Turns of the session
  that the question is about move up together.
- `when`: 1 for an entry holding a relative time expression ("yesterday", "last
  week", "two days ago") when the question asks "when"; the answer is then read
  against the entry's date.

These are added to the fused score of the entry itself and the sum divided by
`1 + neighbour + episode (+ when, for a "when" question)`, the same for every
candidate of the query, so the score stays in [0, 1] and the ranking is what the
sum says. Neighbours and episodes come from the entries' timestamps, which every
backend stores, so every backend ranks alike.

A linked memory's candidates are then ordered by the learned ranker
(`axon.memory.retrieval.ranker`): a linear model over features read from these
signals, the hand-weighted score, the scores of the candidates around it and
its text, trained on LoCoMo dev by `benchmarks/locomo_ranker.py`. The score is
`(1 - learned) * hand + learned * ranker` (`HybridWeights.learned`, default 1),
and a result's signals are blended the same way, the ranker's being each
feature's share of its score; `learned=0` gives the hand-weighted ranking above.
An unlinked memory never gets the ranker.

Measured on LoCoMo dev (`benchmarks/locomo.py`), weighted fusion beat reciprocal
rank fusion (RRF k=60 was worse than BM25 alone). Every result carries
`signals`: what each signal contributed; they add up to `score`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from axon.memory.entry import MemoryEntry, value_text
from axon.memory.retrieval import ranker
from axon.memory.retrieval.scores import clip, importance_factor, time_lift, weighed
from axon.memory.retrieval.text import tokenize
from axon.memory.retrieval.when import query_window


@attrs.frozen
class HybridWeights:
    """How `hybrid` weighs its signals (each a score in [0, 1]; the fused score is their mean).

    The fused score is `sum(weight * signal) / sum(weights)` over the signals in
    play, so only the weights' ratios matter. `semantic` is the weight in a memory
    of independent entries, `linked_semantic` in a linked one; `neighbour`,
    `episode` and `when` (with `neighbour_seconds` and `episode_gap_seconds`)
    apply to linked memories only, and so does `learned`: in a linked memory
    the score is `(1 - learned) * hand + learned * ranker` (`learned` clipped to
    [0, 1]), where `hand` is the weighted mean above and `ranker` the learned
    ranker's score (`axon.memory.retrieval.ranker`), which reads `hand` and the
    signals as features, so the other weights still act through it; `learned=0`
    is the hand-weighted ranking alone. `mention` rewards an entry whose
    short metadata value (a speaker, a tag) is named in the query; see the module
    docstring for every signal. The defaults were chosen on LoCoMo dev
    (`benchmarks/locomo.py`) and checked on the independent notes
    (`benchmarks/notes.py`); see docs/performance.md.
    """

    keyword: float = 0.8
    semantic: float = 0.7
    """Chosen on the notes benchmark: 0.6 at the old semantic floor (cosine 0.8), 0.7 since
    the calibrated floor (0.775) gave semantic scores a new scale (docs/performance.md,
    "The relevance floor")."""
    mention: float = 0.3
    recency: float = 0.0
    importance: float = 0.0
    recency_half_life: float = 30 * 86400.0
    linked_semantic: float = 0.4
    neighbour: float = 0.1
    episode: float = 0.4
    when: float = 0.06
    neighbour_seconds: float = 90.0
    episode_gap_seconds: float = 1800.0
    learned: float = 1.0
    time: float = 0.25
    """The lift of an entry written in the window a query names (`scores.time_lift`), in
    every memory and every mode but `exact`; 0 turns it off (docs/language.md)."""


CANDIDATES_PER_RESULT = 10
"""How many candidates each signal contributes per requested result (at least 50)."""

MENTION_MAX_WORDS = 4
"""Metadata values longer than this many words are descriptions, not names: never matched."""

_Ident = tuple[str | None, str]

EPISODE_BEST = 3
"""An episode's score is the mean of this many of its best fused scores (fewer count 0)."""

RELATIVE_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|recently|lately"
    r"|(?:last|next|this) (?:week|month|year|weekend|night|morning|summer|winter|spring"
    r"|fall|autumn|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|(?:few|couple of) (?:days|weeks|months|years))\b",
    re.IGNORECASE,
)
"""A time said relative to when it was said: what a "when" question is answered from."""


@functools.lru_cache(maxsize=65536)
def holds_relative_time(text: str) -> bool:
    """Whether `text` says a time relative to when it was said (`RELATIVE_TIME`); cached,
    since the same entries come back query after query."""
    return RELATIVE_TIME.search(text) is not None


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


def asks_when(query_words: Iterable[str]) -> bool:
    """Whether a question asks "when" (the `when` signal of a linked memory)."""
    return "when" in query_words


def _nearest_neighbours(
    fused: Mapping[_Ident, float], times: Mapping[_Ident, float], window: float
) -> dict[_Ident, float]:
    """For each candidate, the best fused score of the nearest earlier and later candidates.

    Nearest in time, each at most `window` seconds away and never at the same
    time (a batch stored at once has no order); 0 when there is none.
    """
    order = sorted(times, key=lambda ident: times[ident])
    moments: list[float] = []
    best_at: list[float] = []
    for ident in order:
        if moments and times[ident] == moments[-1]:
            best_at[-1] = max(best_at[-1], fused[ident])
        else:
            moments.append(times[ident])
            best_at.append(fused[ident])
    at = {moment: n for n, moment in enumerate(moments)}
    found: dict[_Ident, float] = {}
    for ident, moment in times.items():
        n = at[moment]
        best = 0.0
        if n > 0 and moment - moments[n - 1] <= window:
            best = best_at[n - 1]
        if n + 1 < len(moments) and moments[n + 1] - moment <= window:
            best = max(best, best_at[n + 1])
        found[ident] = best
    return found


def _episodes(
    fused: Mapping[_Ident, float], times: Mapping[_Ident, float], gap: float
) -> dict[_Ident, float]:
    """For each candidate, the mean of the `EPISODE_BEST` best fused scores of its episode.

    Candidates sorted by time; a new episode starts after a gap longer than `gap`.
    """
    order = sorted(times, key=lambda ident: times[ident])
    found: dict[_Ident, float] = {}
    start = 0
    for n in range(1, len(order) + 1):
        if n == len(order) or times[order[n]] - times[order[n - 1]] > gap:
            members = order[start:n]
            best = sorted((fused[ident] for ident in members), reverse=True)[:EPISODE_BEST]
            score = sum(best) / EPISODE_BEST
            for ident in members:
                found[ident] = score
            start = n
    return found


def fuse(
    keyword: Sequence[MemoryEntry],
    semantic: Sequence[MemoryEntry],
    *,
    top_k: int,
    now: float,
    weights: HybridWeights,
    query: str | None = None,
    linked: bool = False,
    importance: bool = False,
) -> list[MemoryEntry]:
    """The best `top_k` entries by weighted mean score; ties go to the newer entry.

    `keyword` and `semantic` are the candidate lists of each search, best first,
    with their scores in [0, 1] (`axon.memory.retrieval.scores`); `query` (when
    given) feeds the `mention` and `when` signals. `linked` says the memory is
    `link: sequence`: the `neighbour`, `episode` and `when` signals then join (see
    the module docstring) and semantic weighs `weights.linked_semantic`; unless
    `weights.learned` is 0, the learned ranker then orders them (`_learned_best`).
    `importance` weighs each candidate's score by its importance
    (`scores.importance_factor`) before the cut, as `MemoryBackend.retrieve` asks.
    """
    entries, parts_of, pool = _signals_of(keyword, semantic, now, weights, query, linked)
    factors = {
        ident: importance_factor(entry.metadata) if importance else 1.0
        for ident, entry in entries.items()
    }
    timed = _in_window(entries, query, now, weights.time)
    if pool is None or weights.learned <= 0:
        return _best(entries, parts_of, top_k, factors, timed, weights.time)
    return _learned_best(entries, parts_of, pool, weights, top_k, factors, timed)


def _in_window(
    entries: Mapping[_Ident, MemoryEntry], query: str | None, now: float, weight: float
) -> dict[_Ident, float] | None:
    """How near each candidate was written to the window of time the query names
    (`when.query_window`, `Window.nearness`); None when it names none (or `time`
    weighs 0): no `time` signal."""
    window = query_window(query, now) if query and weight > 0 else None
    if window is None:
        return None
    return {ident: window.nearness(entry.timestamp) for ident, entry in entries.items()}


def ranker_features(
    keyword: Sequence[MemoryEntry],
    semantic: Sequence[MemoryEntry],
    *,
    now: float,
    weights: HybridWeights,
    query: str | None = None,
) -> list[tuple[MemoryEntry, list[float]]]:
    """Every candidate of a linked recall, best first by the hand-weighted score (as with
    `learned=0`), with its learned-ranker features (`ranker.FEATURES`).

    What `benchmarks/locomo_ranker.py` trains and evaluates on: the very values
    `fuse` gives the ranker.
    """
    entries, parts_of, pool = _signals_of(keyword, semantic, now, weights, query, True)
    if pool is None:
        return []
    features = _ranker_features(parts_of, entries, pool, weights)
    return [
        (entry, features[(entry.scope, entry.key)])
        for entry in _best(entries, parts_of, len(entries), {})
    ]


def _best(
    entries: Mapping[_Ident, MemoryEntry],
    parts_of: Mapping[_Ident, dict[str, float]],
    top_k: int,
    factors: Mapping[_Ident, float],
    timed: Mapping[_Ident, float] | None = None,
    time_weight: float = 0.0,
) -> list[MemoryEntry]:
    """The `top_k` best entries by the sum of their signals (lifted by `time` when
    `timed` says which are in the query's window) times their importance factor,
    ties to the newer entry."""
    scored: dict[_Ident, tuple[float, dict[str, float]]] = {}
    for ident, signals in parts_of.items():
        score = clip(sum(signals.values()))
        if timed is not None:
            score, signals = time_lift(score, signals, timed[ident], time_weight, "")
        scored[ident] = (score, signals)
    fused = [
        (clip(score * factors.get(ident, 1.0)), entries[ident].timestamp, ident)
        for ident, (score, _) in scored.items()
    ]
    fused.sort(key=lambda item: (-item[0], -item[1]))
    return [
        weighed(entries[ident], factors.get(ident, 1.0), *scored[ident])
        for _, _, ident in fused[:top_k]
    ]


def _signals_of(
    keyword: Sequence[MemoryEntry],
    semantic: Sequence[MemoryEntry],
    now: float,
    weights: HybridWeights,
    query: str | None,
    linked: bool,
) -> tuple[dict[_Ident, MemoryEntry], dict[_Ident, dict[str, float]], _Pool | None]:
    """The candidates, their hand-weighted signals, and (linked only) what the ranker reads."""
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
    words = frozenset(tokenize(query)) if query else frozenset()
    query_words = words if weights.mention else frozenset()
    base = {
        "keyword": max(weights.keyword, 0.0),
        "semantic": max(weights.linked_semantic if linked else weights.semantic, 0.0),
        "recency": max(weights.recency, 0.0),
        "importance": max(weights.importance, 0.0),
    }
    parts_of: dict[_Ident, dict[str, float]] = {}
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
        parts_of[ident] = {
            name: (used[name] * value / total if total > 0 else 0.0)
            for name, value in parts.items()
        }
    if not linked or not entries:
        return entries, parts_of, None
    when = asks_when(words)
    own, near, episode = _linked_signals(parts_of, entries, weights, when)
    counts = ranker.asks_count(query) if query else False
    pool = _Pool(keyword, semantic, kw, sem, own, near, episode, when, counts)
    return entries, parts_of, pool


def _linked_signals(
    parts_of: dict[_Ident, dict[str, float]],
    entries: Mapping[_Ident, MemoryEntry],
    weights: HybridWeights,
    when: bool,
) -> tuple[dict[_Ident, float], dict[_Ident, float], dict[_Ident, float]]:
    """Add `neighbour`, `episode` and `when` to each candidate's signals, rescaled to [0, 1].

    Every signal of every candidate is divided by the same sum of weights, so the
    order is that of `own + neighbour * best neighbour + episode * episode score
    (+ when * relative time)`. Returns each candidate's own score, best
    neighbour and episode score (empty when that weight is 0), for the ranker.
    """
    own = {ident: sum(parts.values()) for ident, parts in parts_of.items()}
    times = {ident: entry.timestamp for ident, entry in entries.items()}
    w_neighbour = max(weights.neighbour, 0.0)
    w_episode = max(weights.episode, 0.0)
    w_when = max(weights.when, 0.0) if when else 0.0
    near = _nearest_neighbours(own, times, weights.neighbour_seconds) if w_neighbour else {}
    episode = _episodes(own, times, weights.episode_gap_seconds) if w_episode else {}
    total = 1.0 + w_neighbour + w_episode + w_when
    for ident, parts in parts_of.items():
        for name in parts:
            parts[name] /= total
        if w_neighbour:
            parts["neighbour"] = w_neighbour * near[ident] / total
        if w_episode:
            parts["episode"] = w_episode * episode[ident] / total
        if w_when:
            held = holds_relative_time(value_text(entries[ident].value))
            parts["when"] = w_when / total if held else 0.0
    return own, near, episode


@attrs.frozen
class _Pool:
    """What the learned ranker reads of a linked recall's candidates besides their signals."""

    keyword: Sequence[MemoryEntry]
    semantic: Sequence[MemoryEntry]
    kw: Mapping[_Ident, float]
    sem: Mapping[_Ident, float]
    own: Mapping[_Ident, float]
    near: Mapping[_Ident, float]
    episode: Mapping[_Ident, float]
    when: bool
    counts: bool
    """The question asks "how many / much / long / often" (`ranker.asks_count`)."""


def _ranker_features(
    parts_of: Mapping[_Ident, dict[str, float]],
    entries: Mapping[_Ident, MemoryEntry],
    pool: _Pool,
    weights: HybridWeights,
) -> dict[_Ident, list[float]]:
    """Each candidate's learned-ranker features (`ranker.feature_values`), read from its
    hand-weighted signals in `parts_of` and the candidates around it."""
    times = {ident: entry.timestamp for ident, entry in entries.items()}
    window = weights.neighbour_seconds
    near_kw = _nearest_neighbours({i: pool.kw.get(i, 0.0) for i in entries}, times, window)
    near_sem = _nearest_neighbours({i: pool.sem.get(i, 0.0) for i in entries}, times, window)
    known = _known_names(entries.values())
    found = {}
    for ident, parts in parts_of.items():
        text = value_text(entries[ident].value)
        relative = holds_relative_time(text)
        found[ident] = ranker.feature_values(
            fused=clip(sum(parts.values())),
            own=pool.own[ident],
            keyword=pool.kw.get(ident, 0.0),
            semantic=pool.sem.get(ident, 0.0),
            mention=parts.get("mention", 0.0) > 0.0,
            neighbour=pool.near.get(ident, 0.0),
            episode=pool.episode.get(ident, 0.0),
            when=pool.when and relative,
            neighbour_keyword=near_kw[ident],
            neighbour_semantic=near_sem[ident],
            text=text,
            relative_time=relative,
            known_names=known,
            asks_how_many=pool.counts,
        )
    return found


def _known_names(entries: Iterable[MemoryEntry]) -> frozenset[str]:
    """The words of the candidates' short metadata values (in a conversation, its
    speakers): names every turn may say, which the ranker's `names` leaves out."""
    known: set[str] = set()
    for entry in entries:
        for value in _metadata_names(entry.metadata):
            words = _name_words(value)
            if words is not None:
                known |= words
    return frozenset(known)


def _learned_best(
    entries: Mapping[_Ident, MemoryEntry],
    parts_of: Mapping[_Ident, dict[str, float]],
    pool: _Pool,
    weights: HybridWeights,
    top_k: int,
    factors: Mapping[_Ident, float],
    timed: Mapping[_Ident, float] | None = None,
) -> list[MemoryEntry]:
    """The `top_k` best by `(1 - learned) * hand + learned * ranker` (lifted by `time`
    when `timed` says which are in the query's window, `scores.time_lift`; times each
    one's importance factor), ties to the newer entry.

    Each result's signals are `(1 - learned) * its hand-weighted signals + learned *
    the ranker's shares` (`ranker.LinearRanker.explain`; a share named like a signal,
    `keyword`, `episode`, ..., is added to it). Both sides add up to a score in
    [0, 1], so the blend does too (`learned` is clipped to 1). Only the results'
    shares are computed: ranking needs the scores alone.
    """
    share = min(weights.learned, 1.0)
    model = ranker.default_ranker()
    features = _ranker_features(parts_of, entries, pool, weights)
    idents = list(features)
    learned = model.scores([features[ident] for ident in idents])
    blended = {
        ident: clip((1.0 - share) * sum(parts_of[ident].values()) + share * learned[n])
        for n, ident in enumerate(idents)
    }
    unlifted = dict(blended)
    if timed is not None:
        for ident, score in unlifted.items():
            blended[ident] = time_lift(score, {}, timed[ident], weights.time, "")[0]
    ranked = sorted(
        (
            (clip(blended[ident] * factors.get(ident, 1.0)), entries[ident].timestamp, ident)
            for ident in idents
        ),
        key=lambda item: (-item[0], -item[1]),
    )
    results = []
    for _, _, ident in ranked[:top_k]:
        signals = {name: (1.0 - share) * value for name, value in parts_of[ident].items()}
        for name, value in model.explain(features[ident]).items():
            signals[name] = signals.get(name, 0.0) + share * value
        if timed is not None:
            signals = time_lift(unlifted[ident], signals, timed[ident], weights.time, "")[1]
        results.append(weighed(entries[ident], factors.get(ident, 1.0), blended[ident], signals))
    return results
