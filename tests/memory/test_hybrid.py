"""Hybrid fusion (unit) and semantic/hybrid recall through every backend: signals, model changes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import MemoryEntry, NewEntry
from axon.memory.retrieval import ranker
from axon.memory.retrieval.hybrid import HybridWeights, fuse, mentioned, ranker_features
from axon.memory.retrieval.text import tokenize

NOW = 1_700_000_000.0


def entry(key: str, score: float, *, ts: float = NOW, **metadata: object) -> MemoryEntry:
    return MemoryEntry(key=key, value=key, metadata=dict(metadata), score=score, timestamp=ts)


def keys(entries: Sequence[MemoryEntry]) -> list[str]:
    return [e.key for e in entries]


# ---------------------------------------------------------------------- fuse


def test_signals_are_absolute_weighted_and_add_up_to_the_score() -> None:
    keyword = [entry("a", 0.8), entry("b", 0.2)]
    semantic = [entry("b", 0.9), entry("c", 0.7), entry("a", 0.5)]
    weights = HybridWeights(keyword=0.6, semantic=0.4, mention=0.0)
    fused = fuse(keyword, semantic, top_k=10, now=NOW, weights=weights)
    by_key = {e.key: e for e in fused}
    assert by_key["a"].signals == pytest.approx({"keyword": 0.48, "semantic": 0.2})
    assert by_key["b"].signals == pytest.approx({"keyword": 0.12, "semantic": 0.36})
    assert by_key["c"].signals == pytest.approx({"keyword": 0.0, "semantic": 0.28})
    for e in fused:
        assert e.signals is not None
        assert e.score == pytest.approx(sum(e.signals.values()))
        assert 0.0 <= e.score <= 1.0
    assert keys(fused) == ["a", "b", "c"]


def test_a_score_does_not_depend_on_the_other_candidates() -> None:
    """No pool scaling: the weakest candidate keeps its own score (issue 10 item 4)."""
    weights = HybridWeights(keyword=0.6, semantic=0.4, mention=0.0)
    pool = [entry("x", 0.819), entry("y", 0.790), entry("z", 0.787)]
    alone = fuse([], [entry("z", 0.787)], top_k=3, now=NOW, weights=weights)
    together = {e.key: e.score for e in fuse([], pool, top_k=3, now=NOW, weights=weights)}
    assert together["z"] == pytest.approx(alone[0].score) == pytest.approx(0.4 * 0.787)
    assert together["z"] > 0.0
    strong = [entry("k", 0.9), entry("z", 0.1)]
    weak = [entry("z", 0.1)]
    a = {e.key: e.score for e in fuse(strong, [], top_k=3, now=NOW, weights=weights)}
    b = {e.key: e.score for e in fuse(weak, [], top_k=3, now=NOW, weights=weights)}
    assert a["z"] == pytest.approx(b["z"]) == pytest.approx(0.06)


def test_an_entry_found_by_one_search_only_gets_zero_from_the_other() -> None:
    fused = fuse([entry("kw", 3.0)], [entry("sem", 0.8)], top_k=5, now=NOW, weights=HybridWeights())
    signals = {e.key: e.signals for e in fused}
    assert signals["kw"] is not None and signals["kw"]["semantic"] == 0.0
    assert signals["sem"] is not None and signals["sem"]["keyword"] == 0.0


def test_weights_decide_between_the_signals() -> None:
    keyword = [entry("lexical", 0.5), entry("meaning", 0.1)]
    semantic = [entry("meaning", 0.9), entry("lexical", 0.1)]
    lean_kw = fuse(keyword, semantic, top_k=2, now=NOW, weights=HybridWeights(0.8, 0.2))
    lean_sem = fuse(keyword, semantic, top_k=2, now=NOW, weights=HybridWeights(0.2, 0.8))
    assert keys(lean_kw) == ["lexical", "meaning"]
    assert keys(lean_sem) == ["meaning", "lexical"]


def test_top_k_cuts_and_ties_go_to_the_newer_entry() -> None:
    semantic = [entry("old", 0.5, ts=NOW - 10), entry("new", 0.5, ts=NOW), entry("low", 0.1)]
    fused = fuse([], semantic, top_k=2, now=NOW, weights=HybridWeights())
    assert keys(fused) == ["new", "old"]  # equal scores: newer first
    assert fuse([], [], top_k=3, now=NOW, weights=HybridWeights()) == []


def test_mention_favours_entries_whose_metadata_the_query_names() -> None:
    semantic = [
        entry("told-to-caroline", 0.80, speaker="Melanie"),
        entry("said-by-caroline", 0.79, speaker="Caroline"),
        entry("unrelated", 0.10, speaker="Caroline"),
    ]
    weights = HybridWeights(keyword=0.6, semantic=0.4, mention=0.2)
    fused = fuse([], semantic, top_k=2, now=NOW, weights=weights, query="What did Caroline say?")
    assert keys(fused) == ["said-by-caroline", "told-to-caroline"]
    top = fused[0]
    # A named entry's mention joins the weighted mean: (0.4 * 0.79 + 0.2) / 1.2.
    assert top.signals is not None and top.signals["mention"] == pytest.approx(0.2 / 1.2)
    assert top.score == pytest.approx(sum(top.signals.values()))
    assert top.score == pytest.approx((0.4 * 0.79 + 0.2) / 1.2)
    second = fused[1]  # nobody named: not marked down, its mean is over the text signals
    assert second.signals is not None and second.signals["mention"] == 0.0
    assert second.score == pytest.approx(0.4 * 0.80)
    # Without the query (or with the weight off) there is no mention signal at all.
    plain = fuse([], semantic, top_k=2, now=NOW, weights=weights)
    assert keys(plain) == ["told-to-caroline", "said-by-caroline"]
    assert plain[0].signals is not None and "mention" not in plain[0].signals


def test_what_counts_as_a_mention() -> None:
    words = frozenset(tokenize("what did Ada Lovelace write about Python"))
    assert mentioned({"author": "Ada Lovelace"}, words)
    assert mentioned({"tags": ["rust", "python"]}, words)
    assert not mentioned({"scope": "python"}, words)  # the memory's own name never counts
    assert not mentioned({"author": "Ada King"}, words)  # every word must be named
    assert not mentioned({"note": "what did ada write about python today"}, words)  # too long
    assert not mentioned({"count": 3, "flag": True}, words)


def test_recency_and_importance_when_weighted() -> None:
    day = 86400.0
    semantic = [entry("old", 0.9, ts=NOW - 60 * day), entry("new", 0.9, ts=NOW)]
    weights = HybridWeights(keyword=0, semantic=0.5, recency=0.5, recency_half_life=30 * day)
    fused = {e.key: e for e in fuse([], semantic, top_k=2, now=NOW, weights=weights)}
    assert fused["new"].signals is not None and fused["old"].signals is not None
    assert fused["new"].signals["recency"] == pytest.approx(0.5)
    assert fused["old"].signals["recency"] == pytest.approx(0.125)  # two half-lives
    assert fused["new"].score == pytest.approx(0.5 * 0.9 + 0.5)
    ranked = fuse(
        [],
        [entry("minor", 0.9, importance=0.1), entry("major", 0.9, importance=0.9)],
        top_k=2,
        now=NOW,
        weights=HybridWeights(keyword=0, semantic=0.1, importance=1.0),
    )
    assert keys(ranked) == ["major", "minor"]


# ---------------------------------------------------------------------- linked memories

LINKED_NEW = {"neighbour", "episode", "when"}

HAND = HybridWeights(learned=0.0)
"""The hand-weighted linked signals alone: the tests of each signal use these (the learned
ranker reads them as features; its own tests are below)."""


def _explained(fused: Sequence[MemoryEntry]) -> None:
    for e in fused:
        assert e.signals is not None
        assert e.score == pytest.approx(sum(e.signals.values()))
        assert 0.0 <= e.score <= 1.0


def test_a_linked_memory_lifts_the_entry_next_to_a_strong_match() -> None:
    """ "Yes, every Sunday" answers the question remembered a minute before it."""
    keyword = [entry("question", 0.8, ts=NOW)]
    semantic = [entry("far", 0.40, ts=NOW + 86400), entry("answer", 0.36, ts=NOW + 60)]
    weights = HAND
    unlinked = fuse(keyword, semantic, top_k=3, now=NOW, weights=weights)
    linked = fuse(keyword, semantic, top_k=3, now=NOW, weights=weights, linked=True)
    assert keys(unlinked) == ["question", "far", "answer"]
    assert keys(linked) == ["question", "answer", "far"]
    assert all(LINKED_NEW.isdisjoint(e.signals or {}) for e in unlinked)
    _explained(linked)
    by_key = {e.key: e for e in linked}
    answer, far = by_key["answer"].signals, by_key["far"].signals
    assert answer is not None and far is not None
    own = (0.8 * 0.8) / (0.8 + 0.4)  # the question's fused score, its own signals only
    total = 1 + weights.neighbour + weights.episode
    assert answer["neighbour"] == pytest.approx(weights.neighbour * own / total)
    assert far["neighbour"] == 0.0  # a day away: not a neighbour
    assert "when" not in answer  # the question does not ask when


def test_entries_stored_at_one_time_are_not_neighbours() -> None:
    """A batch stored at once has no order: no entry of it is lifted by another."""
    keyword = [entry("a", 0.8)]
    semantic = [entry("b", 0.3), entry("c", 0.35)]
    linked = fuse(keyword, semantic, top_k=3, now=NOW, weights=HAND, linked=True)
    assert keys(linked) == ["a", "c", "b"]
    assert all(e.signals is not None and e.signals["neighbour"] == 0.0 for e in linked)
    _explained(linked)


def test_the_episode_that_matches_as_a_whole_moves_up_together() -> None:
    hour = 3600.0
    day = 86400.0
    # Episode one (three entries a minute apart, an hour after the gap) matches well.
    keyword = [entry("one-a", 0.7, ts=NOW), entry("one-b", 0.6, ts=NOW + 1200)]
    semantic = [
        entry("one-c", 0.30, ts=NOW + 2400),
        entry("two-a", 0.34, ts=NOW + day),
        entry("two-b", 0.05, ts=NOW + day + 2 * hour),
    ]
    weights = HybridWeights(neighbour=0.0, learned=0.0)
    linked = fuse(keyword, semantic, top_k=5, now=NOW, weights=weights, linked=True)
    unlinked = fuse(keyword, semantic, top_k=5, now=NOW, weights=weights)
    assert keys(unlinked).index("two-a") < keys(unlinked).index("one-c")
    assert keys(linked).index("one-c") < keys(linked).index("two-a")
    _explained(linked)
    episode = {e.key: (e.signals or {})["episode"] for e in linked}
    assert episode["one-a"] == episode["one-b"] == episode["one-c"] > episode["two-a"]
    assert episode["two-a"] != episode["two-b"]  # two hours apart: a new episode


def test_a_when_question_favours_a_relative_time_in_a_linked_memory() -> None:
    def said(key: str, text: str, score: float, ts: float) -> MemoryEntry:
        return MemoryEntry(key=key, value=text, score=score, timestamp=ts)

    semantic = [
        said("plain", "Caroline: I moved to Boston with my family.", 0.50, NOW),
        said("dated", "Caroline: We moved here last week, finally!", 0.47, NOW + 86400),
    ]
    weights = HAND
    asked = "When did Caroline move to Boston?"
    linked = fuse([], semantic, top_k=2, now=NOW, weights=weights, query=asked, linked=True)
    assert keys(linked) == ["dated", "plain"]
    assert linked[0].signals is not None and linked[0].signals["when"] > 0.0
    assert linked[1].signals is not None and linked[1].signals["when"] == 0.0
    _explained(linked)
    other = fuse([], semantic, top_k=2, now=NOW, weights=weights, query="Where did she move?",
                 linked=True)
    assert keys(other) == ["plain", "dated"] and "when" not in (other[0].signals or {})
    unlinked = fuse([], semantic, top_k=2, now=NOW, weights=weights, query=asked)
    assert keys(unlinked) == ["plain", "dated"]


def test_a_when_questions_signals_add_up_to_at_most_one() -> None:
    """`when` joins the divisor: `1 + neighbour + episode + when`. Three perfect matches a
    minute apart, each saying a relative time, max every signal; their shares then add up
    to exactly 1, the score (without `when` in the divisor they added up to 1.04)."""

    def said(key: str, ts: float) -> MemoryEntry:
        return MemoryEntry(key=key, value=f"{key}: we moved last week", score=1.0, timestamp=ts)

    turns = [said(f"t{n}", NOW + 60 * n) for n in range(3)]
    weights = HAND
    linked = fuse(turns, turns, top_k=3, now=NOW, weights=weights,
                  query="When did they move?", linked=True)
    total = 1 + weights.neighbour + weights.episode + weights.when
    for e in linked:
        assert e.signals is not None
        assert e.signals["when"] == pytest.approx(weights.when / total)
        assert e.signals["neighbour"] == pytest.approx(weights.neighbour / total)
        assert e.signals["episode"] == pytest.approx(weights.episode / total)
        assert e.signals["keyword"] + e.signals["semantic"] == pytest.approx(1 / total)
        assert sum(e.signals.values()) == pytest.approx(e.score) == pytest.approx(1.0)


def test_semantic_weighs_more_in_an_unlinked_memory() -> None:
    """Independent notes: meaning decides between near-misses (benchmarks/notes.py)."""
    keyword = [entry("same-name", 0.5), entry("answer", 0.3)]
    semantic = [entry("answer", 0.6), entry("same-name", 0.3)]
    weights = HAND
    assert weights.semantic > weights.linked_semantic
    unlinked = fuse(keyword, semantic, top_k=2, now=NOW, weights=weights)
    linked = fuse(keyword, semantic, top_k=2, now=NOW, weights=weights, linked=True)
    assert keys(unlinked) == ["answer", "same-name"]
    assert keys(linked) == ["same-name", "answer"]


# ---------------------------------------------------------------------- the learned ranker


def _question_and_answer() -> tuple[list[MemoryEntry], list[MemoryEntry]]:
    keyword = [entry("question", 0.5, ts=NOW)]
    semantic = [entry("far", 0.40, ts=NOW + 86400), entry("answer", 0.45, ts=NOW + 60)]
    return keyword, semantic


def test_a_linked_memory_is_ranked_by_the_learned_ranker() -> None:
    """The default linked ranking is the shipped model's; `learned=0` is the hand one."""
    keyword, semantic = _question_and_answer()
    learned = fuse(keyword, semantic, top_k=3, now=NOW, weights=HybridWeights(), linked=True)
    hand = fuse(keyword, semantic, top_k=3, now=NOW, weights=HAND, linked=True)
    assert keys(hand) == ["question", "answer", "far"]
    assert keys(learned) == ["answer", "question", "far"]  # its neighbour's keyword match
    _explained(learned)
    model = ranker.default_ranker()
    low, high = model.low, model.high
    rows = ranker_features(keyword, semantic, now=NOW, weights=HybridWeights())
    for e, values in rows:
        z = sum(w * x for w, x in zip(model.weights, values, strict=True))
        by_key = {r.key: r for r in learned}
        assert by_key[e.key].score == pytest.approx((z - low) / (high - low))
        signals = by_key[e.key].signals or {}
        assert set(signals) == set(ranker.FEATURES)
        assert all(share >= 0.0 for share in signals.values())
    ranker_only = set(ranker.FEATURES) - LINKED_NEW - {"keyword", "semantic", "mention"}
    assert all(ranker_only.isdisjoint(e.signals or {}) for e in hand)


def test_the_ranker_reads_each_candidates_text_and_neighbours() -> None:
    def said(key: str, text: str, score: float, ts: float) -> MemoryEntry:
        return MemoryEntry(key=key, value=text, score=score, timestamp=ts)

    keyword = [
        said("asks", "[8 May, 2023] Mel: Did you go to the lake last week?", 0.6, NOW),
        said("wow", "[8 May, 2023] Caroline: Wow!", 0.2, NOW + 60),
    ]
    semantic = [said("wow", "[8 May, 2023] Caroline: Wow!", 0.3, NOW + 60)]
    rows = ranker_features(keyword, semantic, now=NOW, weights=HybridWeights(), query="lake")
    values = {e.key: dict(zip(ranker.FEATURES, row, strict=True)) for e, row in rows}
    asks, wow = values["asks"], values["wow"]
    assert asks["asks"] == 1.0 and asks["relative_time"] == 1.0 and asks["short"] == 0.0
    assert wow["short"] == 1.0 and wow["asks"] == 0.0  # the date and speaker are not said
    assert wow["length"] == pytest.approx(1 / ranker.LONG_WORDS)
    assert wow["neighbour_keyword"] == 0.6 and asks["neighbour_semantic"] == 0.3
    assert wow["semantic"] == 0.3 and wow["keyword"] == 0.2


def test_the_ranker_reads_names_and_numbers_said() -> None:
    """`names` counts proper names said, not a speaker's and not a sentence's first word;
    `number_asked` is a number said when the question asks "how many"."""

    def turn(key: str, speaker: str, text: str, ts: float) -> MemoryEntry:
        return MemoryEntry(
            key=key, value=f"[8 May, 2023] {speaker}: {text}", score=0.5, timestamp=ts,
            metadata={"speaker": speaker},
        )

    keyword = [
        turn("cities", "John", "I was in Chicago, then Seattle with Kyle! I'm tired.", NOW),
        turn("speakers", "Tim", "Thanks, John. Chicago is great. Really.", NOW + 3600),
        turn("plain", "John", "Sounds fun, see you there next week.", NOW + 7200),
        turn("kids", "Tim", "We have two kids now.", NOW + 10800),
    ]
    for query, counts in (("How many cities did John visit?", 1.0), ("Where did John go?", 0.0)):
        rows = ranker_features(keyword, [], now=NOW, weights=HybridWeights(), query=query)
        values = {e.key: dict(zip(ranker.FEATURES, row, strict=True)) for e, row in rows}
        assert values["cities"]["names"] == 1.0  # Chicago, Seattle, Kyle
        assert values["speakers"]["names"] == 0.0  # "John" speaks; "Chicago" begins a sentence
        assert values["plain"]["names"] == 0.0 and values["plain"]["number"] == 0.0
        assert values["kids"]["number"] == 1.0 and values["kids"]["number_asked"] == counts
        assert values["cities"]["number"] == 0.0
    assert ranker.said_names("[1 May] Ana: We met José in Zürich. Zürich was cold.") == (
        "josé", "zürich")
    assert ranker.asks_count("how long did it take") and not ranker.asks_count("how did it go")


def test_learned_blends_the_ranker_with_the_hand_weighted_score() -> None:
    keyword, semantic = _question_and_answer()
    both = fuse(keyword, semantic, top_k=3, now=NOW, weights=HybridWeights(learned=0.5),
                linked=True)
    learned = {e.key: e.score for e in fuse(keyword, semantic, top_k=3, now=NOW,
                                            weights=HybridWeights(), linked=True)}
    hand = {e.key: e.score for e in fuse(keyword, semantic, top_k=3, now=NOW, weights=HAND,
                                         linked=True)}
    _explained(both)
    for e in both:
        assert e.score == pytest.approx(0.5 * learned[e.key] + 0.5 * hand[e.key])


def test_unlinked_results_do_not_depend_on_the_ranker() -> None:
    """A memory of independent notes never gets the ranker: identical with it on or off."""
    keyword = [entry("same-name", 0.5, ts=NOW), entry("answer", 0.3, ts=NOW + 60)]
    semantic = [entry("answer", 0.6, ts=NOW + 60), entry("same-name", 0.3, ts=NOW)]
    for query in ("When did Caroline call?", "what did she say"):
        on = fuse(keyword, semantic, top_k=2, now=NOW, weights=HybridWeights(), query=query)
        off = fuse(keyword, semantic, top_k=2, now=NOW, weights=HAND, query=query)
        assert [(e.key, e.score, e.signals) for e in on] == [
            (e.key, e.score, e.signals) for e in off
        ]
        assert all("neighbour_keyword" not in (e.signals or {}) for e in on)


def test_shipped_weights_must_name_the_rankers_features() -> None:
    with pytest.raises(ValueError, match="expected"):
        ranker.ranker_from_json('{"features": ["keyword"], "weights": [1.0]}')
    assert ranker.default_ranker().features == ranker.FEATURES


# ---------------------------------------------------------------------- through backends


def _semantic_capable(backend: MemoryBackend) -> None:
    if "hybrid" not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no hybrid retrieval")


FACTS = [
    ("tea", "Caroline: I drink green tea every morning before work."),
    ("bike", "Melanie: My bicycle got a flat tyre on the way to the lake."),
    ("paint", "Melanie: I painted a sunrise over the lake last year."),
    ("code", "Caroline: I spent the weekend refactoring the billing service."),
]


async def _store_facts(backend: MemoryBackend) -> None:
    await backend.store_many(
        [NewEntry(k, v, {"scope": "chat", "speaker": v.split(":")[0]}) for k, v in FACTS]
    )


async def test_hybrid_results_explain_their_scores(backend: MemoryBackend) -> None:
    _semantic_capable(backend)
    await _store_facts(backend)
    results = await backend.retrieve(
        "What did Melanie paint at the lake?", top_k=3, scope="chat", mode="hybrid"
    )
    assert results and results[0].key == "paint"
    for result in results:
        assert result.signals is not None
        assert set(result.signals) >= {"keyword", "semantic"}
        assert result.score == pytest.approx(sum(result.signals.values()))
    assert results[0].signals is not None and results[0].signals["mention"] > 0


CHAT = [
    ("q", "Melanie: Do you still go hiking with your sister?"),
    ("a", "Caroline: Yes, every Sunday morning."),
    ("x", "Caroline: My sister bought new boots for the trip."),
]


async def test_linked_hybrid_reads_neighbours_on_every_backend(backend: MemoryBackend) -> None:
    """The same ranking on every backend: the neighbour signal comes from stored times."""
    _semantic_capable(backend)
    day = 86400.0
    times = {"q": NOW, "a": NOW + 60, "x": NOW + 3 * day}
    await backend.store_many(
        [NewEntry(k, v, {"scope": "talk"}, timestamp=times[k]) for k, v in CHAT]
    )
    question = "how often does Caroline go hiking with her sister"
    learned = await backend.retrieve(question, 3, "talk", mode="hybrid", linked=True)
    unlinked = await backend.retrieve(question, 3, "talk", mode="hybrid")
    backend.hybrid_weights = HAND
    linked = await backend.retrieve(question, 3, "talk", mode="hybrid", linked=True)
    assert keys(linked)[0] == "q"
    by_key = {e.key: e.signals or {} for e in linked}
    assert by_key["a"]["neighbour"] > 0.0 and by_key["x"]["neighbour"] == 0.0
    assert all(LINKED_NEW.isdisjoint(e.signals or {}) for e in unlinked)
    for e in [*linked, *learned]:
        assert e.score == pytest.approx(sum((e.signals or {}).values()))
    # The learned ranker reads only the candidates' fields: the same order everywhere, the
    # answer next to the question first ("Yes, every Sunday morning" says how often).
    assert keys(learned) == ["a", "q", "x"]
    assert all(set(ranker.FEATURES) <= set(e.signals or {}) for e in learned)


class CountingEmbedder(HashingEmbedder):
    """The hashing test embedder, counting how many passages it embedded."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.embedded = 0

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded += len(texts)
        return super().embed_passages(texts)


async def test_a_model_change_re_embeds_everything_and_never_mixes_vectors(
    backend: MemoryBackend,
) -> None:
    _semantic_capable(backend)
    first = CountingEmbedder(64)
    backend.embedder = first
    await _store_facts(backend)
    before = await backend.retrieve("green tea", top_k=2, scope="chat", mode="semantic")
    assert first.embedded == len(FACTS)
    assert before[0].key == "tea"
    await backend.retrieve("lake", top_k=2, scope="chat", mode="semantic")
    assert first.embedded == len(FACTS)  # vectors are kept, not recomputed

    second = CountingEmbedder(32)  # another model id, another dimension
    assert second.model_id != first.model_id
    backend.embedder = second
    after = await backend.retrieve("green tea", top_k=2, scope="chat", mode="semantic")
    assert second.embedded == len(FACTS)  # every entry re-embedded with the new model
    assert after[0].key == "tea"
    assert await backend.ensure_vectors("chat") == 0

    await backend.store("late", "Caroline: one more note about tea", {"scope": "chat"})
    assert await backend.ensure_vectors("chat") == 1
    assert first.embedded == len(FACTS)  # the old model is never asked again
