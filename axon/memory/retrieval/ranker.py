"""Learned ranker of linked hybrid recall: a candidate's features in, score and shares out.

A linear model over features in [0, 1] (`FEATURES`), trained on LoCoMo dev only
by `benchmarks/locomo_ranker.py` (a softmax over each question's candidate pool
towards its evidence turns) and shipped as `ranker_weights.json` beside this
module, read on the first linked hybrid recall. It reorders the candidates the
hand-weighted fusion of `axon.memory.retrieval.hybrid` already has, reading
nothing but their fields, their scores and those of the candidates around them,
so every backend ranks alike. Measured by leave-one-conversation-out
cross-validation (docs/performance.md) before it was adopted.

The features (each in [0, 1]):

- `fused`: the hand-weighted hybrid score of the entry (every `HybridWeights`
  knob acts through it); `own`: the entry's own signals before the linked ones;
  `keyword`, `semantic`, `mention`, `neighbour`, `episode`, `when`: the signals of
  `hybrid` as raw values (`neighbour` the best own score of the nearest candidates,
  `episode` the episode's score, `when` a relative time for a "when" question);
- `neighbour_keyword`, `neighbour_semantic`: the best keyword and semantic score of
  the nearest candidates remembered before and after the entry;
- `length` (words of what was said, up to 40), `short` (under 6 words), `asks`
  (holds a "?"), `relative_time` (holds a relative time, whatever the question);
- `names`: proper names said (`said_names`: capitalised words that do not begin a
  sentence, other than "I" and the short metadata values of the pool's candidates,
  which in a conversation are its speakers), over 3, at most 1. A turn naming a
  city, a person or a title is what "which cities ...", "what are the names of ..."
  questions are answered from, and such answers are spread over many turns;
- `number` (says a number, `holds_number`) and `number_asked` (says one, and the
  question asks "how many / much / long / often", `asks_count`).

The score is the model's linear score rescaled to [0, 1] by its own bounds:
with `z = sum(w * x)`, `low = sum(min(w, 0))` and `high = sum(max(w, 0))` (what `z`
is with every feature at its worst and at its best), `score = (z - low) / (high -
low)`. So the order is the model's, and the score is a sum of shares that are
never negative: a feature with a positive weight contributes `w * x / (high -
low)`, one with a negative weight `-w * (1 - x) / (high - low)` (it is earned by
not having the feature: "not short"). These shares are a result's `signals`
(at the default `HybridWeights.learned` of 1; below it they are blended with
the hand-weighted signals, see `hybrid`).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Sequence
from importlib import resources

import attrs

from axon.memory.retrieval.text import tokenize

WEIGHTS_FILE = "ranker_weights.json"
"""The trained weights, package data of `axon.memory.retrieval`."""

FEATURES: tuple[str, ...] = (
    "fused",
    "own",
    "keyword",
    "semantic",
    "mention",
    "neighbour",
    "episode",
    "when",
    "neighbour_keyword",
    "neighbour_semantic",
    "length",
    "short",
    "asks",
    "relative_time",
    "names",
    "number",
    "number_asked",
)
"""The ranker's inputs, in the order of its weights (see the module docstring). The
candidate's places in the keyword and semantic lists (`keyword_rank`, `semantic_rank`,
their top 5, found by both) were features until issue 30: their gain vanished across
folds (`benchmarks/locomo_cv.py --ranker`, docs/performance.md "Time in the query;
generalisation first"), so they went and the ranker was retrained without them."""

LONG_WORDS = 40
"""`length` is the words said over this, at most 1."""

SHORT_WORDS = 6
"""Fewer words said than this is `short` ("Wow!", "Thanks!"): rarely what a question asks."""

NAMES_FULL = 3
"""`names` is the proper names said over this, at most 1."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_NUMBER = re.compile(
    r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|once|twice|first|second|third)\b",
    re.IGNORECASE,
)
"""A number said in digits or words (what "how many" and "how long" are answered with)."""

_COUNT_WORDS = frozenset({"many", "much", "long", "often"})

_PREFIX = re.compile(r"^(?:\[[^\]\n]{0,80}\]\s*)?(?:[^\s:][^:\n]{0,40}?:\s+)?")
"""A leading "[date]" and "Speaker:" of a conversation turn: not what was said."""


def said(text: str) -> str:
    """`text` without a leading "[date]" and "Speaker: " (a conversation turn's frame)."""
    found = _PREFIX.match(text)
    return text[found.end() :] if found else text


@functools.lru_cache(maxsize=65536)
def said_features(text: str) -> tuple[int, bool]:
    """How many words `said(text)` holds and whether it asks ("?"); cached, since the same
    entries come back query after query."""
    spoken = said(text)
    return len(tokenize(spoken)), "?" in spoken


@functools.lru_cache(maxsize=65536)
def said_names(text: str) -> tuple[str, ...]:
    """The capitalised words of `said(text)` that do not begin a sentence, lower-cased,
    without "I" ("I", "I'm"): the proper names said. Cached like `said_features`."""
    names = []
    for sentence in _SENTENCE_END.split(said(text)):
        for word in _WORD.findall(sentence)[1:]:
            if word[0].isupper() and not (word == "I" or word.startswith(("I'", "I’"))):
                names.append(word.lower())
    return tuple(names)


@functools.lru_cache(maxsize=65536)
def holds_number(text: str) -> bool:
    """Whether `said(text)` says a number, in digits or words (`_NUMBER`)."""
    return _NUMBER.search(said(text)) is not None


def asks_count(query: str) -> bool:
    """Whether a question asks "how many", "how much", "how long" or "how often"."""
    words = tokenize(query)
    return any(a == "how" and b in _COUNT_WORDS for a, b in itertools.pairwise(words))


def names_feature(text: str, known: frozenset[str]) -> float:
    """`names`: the proper names said that are not in `known` (the pool's metadata
    words), over `NAMES_FULL`, at most 1."""
    count = sum(1 for name in said_names(text) if name not in known)
    return min(1.0, count / NAMES_FULL)


@attrs.frozen
class LinearRanker:
    """Weights over `features`: `scores` ranks a pool, `explain` gives one candidate's shares.

    `low` and `high` are the lowest and highest linear score any candidate can get
    (every feature in [0, 1]); see the module docstring.
    """

    features: tuple[str, ...]
    weights: tuple[float, ...]
    low: float = attrs.field(init=False)
    high: float = attrs.field(init=False)

    @low.default
    def _low(self) -> float:
        return sum(min(w, 0.0) for w in self.weights)

    @high.default
    def _high(self) -> float:
        return sum(max(w, 0.0) for w in self.weights)

    def scores(self, rows: Sequence[Sequence[float]]) -> list[float]:
        """Each candidate's score in [0, 1], `(z - low) / (high - low)`, for a whole pool."""
        import numpy as np

        width = self.high - self.low
        if not rows or width <= 0:
            return [0.0] * len(rows)
        z = np.asarray(rows, dtype=np.float64) @ np.asarray(self.weights, dtype=np.float64)
        return [float(v) for v in np.clip((z - self.low) / width, 0.0, 1.0)]

    def explain(self, values: Sequence[float]) -> dict[str, float]:
        """Each feature's share of the score, shares in [0, 1] adding up to the score."""
        width = self.high - self.low
        if width <= 0:
            return {name: 0.0 for name in self.features}
        return {
            name: (w * x if w >= 0 else -w * (1.0 - x)) / width
            for name, w, x in zip(self.features, self.weights, values, strict=True)
        }


@functools.cache
def default_ranker() -> LinearRanker:
    """The shipped ranker (`WEIGHTS_FILE`), read once on first use."""
    text = resources.files("axon.memory.retrieval").joinpath(WEIGHTS_FILE).read_text("utf-8")
    return ranker_from_json(text)


def ranker_from_json(text: str) -> LinearRanker:
    """A ranker from `{"features": [...], "weights": [...]}`; its features must be `FEATURES`."""
    data = json.loads(text)
    features = tuple(str(name) for name in data["features"])
    if features != FEATURES:
        raise ValueError(f"ranker weights are for features {features}, expected {FEATURES}")
    weights = tuple(float(w) for w in data["weights"])
    if len(weights) != len(features):
        raise ValueError(f"{len(weights)} ranker weights for {len(features)} features")
    return LinearRanker(features, weights)


def feature_values(
    *,
    fused: float,
    own: float,
    keyword: float,
    semantic: float,
    mention: bool,
    neighbour: float,
    episode: float,
    when: bool,
    neighbour_keyword: float,
    neighbour_semantic: float,
    text: str,
    relative_time: bool,
    known_names: frozenset[str],
    asks_how_many: bool,
) -> list[float]:
    """One candidate's features, in `FEATURES` order (`known_names`: the pool's metadata
    words, which `names` leaves out)."""
    length, asks = said_features(text)
    number = holds_number(text)
    # In `FEATURES` order.
    return [
        fused,
        min(1.0, own),
        keyword,
        semantic,
        1.0 if mention else 0.0,
        min(1.0, neighbour),
        min(1.0, episode),
        1.0 if when else 0.0,
        neighbour_keyword,
        neighbour_semantic,
        min(1.0, length / LONG_WORDS),
        1.0 if length < SHORT_WORDS else 0.0,
        1.0 if asks else 0.0,
        1.0 if relative_time else 0.0,
        names_feature(text, known_names),
        1.0 if number else 0.0,
        1.0 if number and asks_how_many else 0.0,
    ]
