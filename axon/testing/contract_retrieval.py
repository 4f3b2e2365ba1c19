"""The backend contract, retrieval: filters in every mode, importance before the cut,
linked keyword, semantic modes, scores equal to the in-memory backend's and the
relevance floor (`min_score`, `below_floor`) alike everywhere (part of `conformance`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import MemoryEntry, NewEntry
from axon.testing import BackendEnv, FakeClock, in_memory_reference
from axon.testing.contract_helpers import keys

# ---------------------------------------------------------------------- filters and modes


async def test_filters_apply_in_every_mode(backend: MemoryBackend) -> None:
    await backend.store("a", "quarterly finance report", {"scope": "S", "tags": ["finance"]})
    await backend.store("b", "quarterly travel report", {"scope": "S", "tags": ["travel"]})
    await backend.store("c", "quarterly finance notes", {"scope": "S", "tags": ["finance", "x"]})
    await backend.store("d", "quarterly untagged report", {"scope": "S"})
    for mode in sorted(backend.capabilities.retrieval):
        found = await backend.retrieve(
            "quarterly report", 10, "S", mode=mode, filters={"tags": ["finance"]}
        )
        if mode == "exact":
            assert found == []  # "quarterly report" is a substring of none
            found = await backend.retrieve(
                "quarterly", 10, "S", mode=mode, filters={"tags": ["finance"]}
            )
        assert sorted(keys(found)) == ["a", "c"], mode


async def test_a_filter_value_no_metadata_can_hold_matches_nothing(
    backend: MemoryBackend,
) -> None:
    """NaN or an infinity as a filter value (only Python can pass one; stored metadata
    never holds one) matches nothing on every backend, in every mode and in listings:
    PostgreSQL raised a raw ValueError encoding NaN as JSON for its query."""
    await backend.store("a", "quarterly report", {"scope": "S", "n": 1, "tags": ["x"]})
    for wanted in [float("nan"), float("inf"), float("-inf"), [float("nan")], [1e999, "x"]]:
        filters = {"n": wanted}
        assert await backend.list_matching("S", filters) == [], wanted
        for mode in sorted(backend.capabilities.retrieval):
            found = await backend.retrieve("quarterly", 10, "S", mode=mode, filters=filters)
            assert found == [], (mode, wanted)
    assert keys(await backend.list_matching("S", {"n": [float("nan"), 1]})) == ["a"]


async def test_importance_ranks_before_the_top_k_cut(backend: MemoryBackend) -> None:
    """A critical entry that outscores others once weighed is found by `top_k: 1` too:
    every `top_k` cuts one ranking (`scores.IMPORTANCE_POOL`), in every weighed mode."""
    await backend.store("plain", "the quarterly report is due", {"scope": "S", "importance": 0.25})
    await backend.store(
        "important", "quarterly report draft, due soon", {"scope": "S", "importance": 1.0}
    )
    for i in range(8):
        await backend.store(f"o{i}", f"unrelated note {i}", {"scope": "S"})
    for mode in sorted(backend.capabilities.retrieval - {"exact"}):
        two = await backend.retrieve("the quarterly report is due", 2, "S", mode=mode)
        one = await backend.retrieve("the quarterly report is due", 1, "S", mode=mode)
        assert [(e.key, e.score) for e in one] == [(e.key, e.score) for e in two[:1]], mode


async def test_comparison_filters_apply_in_every_mode(backend: MemoryBackend) -> None:
    """`{"importance": {"gte": x, "default": d}}` (recall's `min_importance`) keeps the
    same entries on every backend and in every mode, also when most entries fail it
    (the backend must look past its first `top_k` candidates)."""
    for i in range(40):
        meta: dict[str, Any] = {"scope": "S", "importance": i / 100}  # 0.00 .. 0.39
        await backend.store(f"low{i}", f"quarterly report {i}", meta)
    await backend.store("high", "quarterly report high", {"scope": "S", "importance": 0.9})
    await backend.store("edge", "quarterly report edge", {"scope": "S", "importance": 0.75})
    await backend.store("plain", "quarterly report plain", {"scope": "S"})
    await backend.store("text", "quarterly report text", {"scope": "S", "importance": "high"})
    await backend.store("flag", "quarterly report flag", {"scope": "S", "importance": True})
    cases: list[tuple[dict[str, Any], list[str]]] = [
        ({"importance": {"gte": 0.75}}, ["edge", "high"]),
        ({"importance": {"gt": 0.75}}, ["high"]),
        ({"importance": {"gte": 0.5, "default": 0.5}}, ["edge", "high", "plain"]),
        ({"importance": {"gte": 0.3, "lt": 0.32}}, ["low30", "low31"]),
        ({"importance": {"lte": 0.01}}, ["low0", "low1"]),
        ({"importance": {"gte": 0.75}, "scope": "S"}, ["edge", "high"]),
        ({"importance": {"near": 0.5}}, []),  # an unknown operator matches nothing
    ]
    for mode in sorted(backend.capabilities.retrieval):
        for filters, wanted in cases:
            found = await backend.retrieve("quarterly report", 50, "S", mode=mode, filters=filters)
            assert sorted(keys(found)) == wanted, (mode, filters)
        few = await backend.retrieve(
            "quarterly report", 1, "S", mode=mode, filters={"importance": {"gte": 0.75}}
        )
        assert len(few) == 1 and few[0].key in ("edge", "high"), mode


async def test_linked_keyword_reads_each_entry_with_the_one_stored_before(
    backend: MemoryBackend,
) -> None:
    """In a linked memory an answer is found by the words of the question stored before it."""
    if "keyword" not in backend.capabilities.retrieval:
        pytest.skip("no keyword retrieval")
    await backend.store("q", "Do you still go hiking on Sundays?", {"scope": "A"})
    await backend.store("a", "Yes, every week with my sister.", {"scope": "A"})
    await backend.store("other", "Hiking boots are on sale.", {"scope": "B"})
    await backend.store("b", "Lunch was served at noon.", {"scope": "B"})
    found = await backend.retrieve("hiking with my sister", 10, "A", mode="keyword", linked=True)
    assert keys(found) == ["a", "q"]
    # the context belongs to the scope: "b" follows "other" only in B
    linked = await backend.retrieve("boots", 10, "B", mode="keyword", linked=True)
    assert keys(linked) == ["other", "b"]
    assert keys(await backend.retrieve("boots", 10, "A", mode="keyword", linked=True)) == []
    assert keys(await backend.retrieve("boots", 10, "B", mode="keyword")) == ["other"]
    # the context is fixed when a key is first stored, and exact never looks at it
    await backend.store("a", "Yes, every week.", {"scope": "A"})
    assert "a" in keys(await backend.retrieve("sundays", 10, "A", mode="keyword", linked=True))
    assert keys(await backend.retrieve("hiking", 10, "A", mode="exact")) == ["q"]


async def test_words_of_any_length_are_stored_and_found(backend: MemoryBackend) -> None:
    """A word of thousands of 'y's (Porter's consonant rule for 'y' looks at the letter
    before, once recursively: a RecursionError) is stored, indexed and found, in every
    mode, and recalled without error. (Whether keyword recall matches such a word
    itself is the backend's: PostgreSQL indexes words of up to 512 characters.)"""
    word = "y" * 1500
    await backend.store("w", word, {"scope": "S"})
    await backend.store("h", f"hello {word}", {"scope": "S"})
    await backend.store("ay", "ay" * 800, {"scope": "S"})
    assert await backend.count("S") == 3
    for mode in sorted(backend.capabilities.retrieval):
        await backend.retrieve(word, 10, "S", mode=mode)
        await backend.retrieve("ay" * 800, 10, "S", mode=mode)
    if "exact" in backend.capabilities.retrieval:
        assert sorted(keys(await backend.retrieve(word, 10, "S", mode="exact"))) == ["h", "w"]
    if "keyword" in backend.capabilities.retrieval:
        assert keys(await backend.retrieve("hello", 10, "S", mode="keyword")) == ["h"]


async def test_keyword_ranks_more_query_terms_first(backend: MemoryBackend) -> None:
    if "keyword" not in backend.capabilities.retrieval:
        pytest.skip("no keyword retrieval")
    await backend.store("one", "The indemnification clause was discussed at length.")
    await backend.store("two", "Indemnification and liability caps were negotiated.")
    await backend.store("three", "Lunch was served at noon.")
    await backend.store("four", "Liability insurance is required.")
    found = await backend.retrieve("indemnification liability", 10, mode="keyword")
    assert keys(found)[0] == "two"
    # "three" has neither word: unlinked, it is not found through its context ("two")
    assert set(keys(found)) == {"one", "two", "four"}
    assert all(e.score > 0 for e in found)
    assert [e.score for e in found] == sorted((e.score for e in found), reverse=True)


TOPICS = {
    "cats": "the cat sat on the mat and purred at the cat next door",
    "markets": "stock market prices fell sharply as markets reacted to rates",
    "quantum": "quantum computing research trends and quantum error correction",
    "cooking": "a recipe for tomato soup with basil and garlic",
}


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
async def test_semantic_modes_find_the_related_entry(backend: MemoryBackend, mode: str) -> None:
    if mode not in backend.capabilities.retrieval:
        pytest.skip(f"no {mode} retrieval")
    for key, text in TOPICS.items():
        await backend.store(key, text, {"scope": "S"})
    found = await backend.retrieve("quantum computing trends", 3, "S", mode=mode)
    assert found and found[0].key == "quantum"
    assert len(found) <= 3
    assert [e.score for e in found] == sorted((e.score for e in found), reverse=True)
    if mode == "hybrid":
        assert all(e.signals is not None for e in found)
        assert found[0].signals is not None and set(found[0].signals) >= {"keyword", "semantic"}
    await backend.store("quantum", "tomato soup with garlic", {"scope": "S"})  # text changed
    found = await backend.retrieve("tomato soup garlic", 2, "S", mode=mode)
    assert found[0].key in {"quantum", "cooking"}
    assert "quantum" in keys(found)


# ---------------------------------------------------------------------- comparable scores

SCORE_SCOPES: dict[str, list[str]] = {
    # Several scopes of different sizes and vocabularies in one store: whole-store
    # statistics would score the same entry differently from per-scope ones.
    "Notes": [
        "Globex invoice paid in March",
        "Initech renewed their support contract",
        "Board meeting moved to the 14th",
        "The Globex invoice is overdue again",
        "Lunch with the Initech team about the contract renewal",
    ],
    "Log": [f"invoice number {i} sent to a customer" for i in range(30)]
    + ["contract signed with Globex", "painting the office walls"],
    "Tiny": ["paint and paintings", "the meeting about paint"],
}
SCORE_QUERIES = (
    "was the Globex invoice paid",
    "contract renewal",
    "painting",
    "meeting",
    "invoice zebra",  # a word no memory holds lowers every score
)


def _needs(backend: MemoryBackend, mode: str) -> None:
    if mode not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no {mode} retrieval")


async def _fill(backend: MemoryBackend, clock: FakeClock) -> None:
    for scope, texts in SCORE_SCOPES.items():
        for i, text in enumerate(texts):
            await backend.store(f"{scope.lower()}-{i}", text, {"scope": scope})
            clock.advance(1)


def _scored(entries: list[MemoryEntry]) -> dict[tuple[str | None, str], float]:
    return {(e.scope, e.key): e.score for e in entries}


@pytest.mark.parametrize("mode", ["keyword", "linked", "semantic", "hybrid", "linked-hybrid"])
async def test_scores_equal_those_of_the_in_memory_backend(
    backend: MemoryBackend, clock: FakeClock, mode: str, tmp_path: Path
) -> None:
    """Same mode, same entries, same scores (within 1e-6) on every backend (docs/backends.md,
    "Scores")."""
    kind = {"linked": "keyword", "linked-hybrid": "hybrid"}.get(mode, mode)
    _needs(backend, kind)
    reference_clock = FakeClock()
    embedder = backend.embedder
    assert isinstance(embedder, HashingEmbedder)
    reference = in_memory_reference(BackendEnv(tmp_path, reference_clock, embedder))
    await _fill(backend, clock)
    await _fill(reference, reference_clock)
    for scope in (*SCORE_SCOPES, None):
        for query in SCORE_QUERIES:
            linked = mode.startswith("linked")
            got = await backend.retrieve(query, 40, scope, mode=kind, linked=linked)
            want = await reference.retrieve(query, 40, scope, mode=kind, linked=linked)
            assert _scored(got) == pytest.approx(_scored(want), abs=1e-6), (scope, query)
            assert all(0.0 <= e.score <= 1.0 for e in got)
            scores = [e.score for e in got]
            assert scores == sorted(scores, reverse=True)
    await reference.close()


async def test_a_keyword_threshold_means_the_same_in_every_scope_and_backend(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """Every query word once in an entry of average length scores 1 / (1 + k1) ≈ 0.45."""
    _needs(backend, "keyword")
    await backend.store("a", "red apples", {"scope": "S"})
    await backend.store("b", "green pears", {"scope": "S"})
    await backend.store_many(
        [NewEntry(f"x{i}", f"red apples number {i}", {"scope": "Big"}) for i in range(50)]
    )
    [both] = await backend.retrieve("red apples", 1, "S", mode="keyword")
    assert both.key == "a" and both.score == pytest.approx(1 / 2.2, abs=1e-6)
    found = await backend.retrieve("red pears", 5, "S", mode="keyword")
    assert all(0.1 < e.score < 0.3 for e in found)  # half the query's words
    assert [e.key for e in found if e.score >= 0.3] == []


async def _agree_with_reference(
    backend: MemoryBackend,
    clock: FakeClock,
    entries: list[NewEntry],
    queries: list[str],
    modes: tuple[str, ...] = ("keyword", "hybrid"),
) -> None:
    """Store `entries` in `backend` and in the in-memory reference (a shared clock:
    the same timestamps), then check each query finds the same keys, in the same
    order, with the same scores (within 1e-6), in each of `modes` the backend has."""
    embedder = backend.embedder
    assert isinstance(embedder, HashingEmbedder)
    reference = in_memory_reference(BackendEnv(Path(), clock, embedder))
    try:
        for entry in entries:
            await backend.store_many([entry])
            await reference.store_many([entry])
            clock.advance(1)
        for mode in modes:
            if mode not in backend.capabilities.retrieval:
                continue
            for query in queries:
                got = await backend.retrieve(query, 10, mode=mode)
                want = await reference.retrieve(query, 10, mode=mode)
                where = f"{mode} {query[:30]!r}... ({len(query)} characters)"
                assert [e.key for e in got] == [e.key for e in want], where
                assert [e.score for e in got] == pytest.approx(
                    [e.score for e in want], abs=1e-6
                ), where
    finally:
        await reference.close()


async def test_a_word_of_any_length_is_found_as_on_the_reference(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """A word longer than a store's index takes (PostgreSQL's GIN: 512 characters) is
    found and scored as any other: a query of it alone found nothing there."""
    long_words = ["q" * 512, "q" * 513, "r" * 2000]
    entries = [NewEntry(f"w{len(w)}", f"{w} tail") for w in long_words]
    entries += [NewEntry("both", f"{long_words[1]} {long_words[2]}"), NewEntry("o", "other tail")]
    queries = [*long_words, f"{long_words[1]} tail", f"{long_words[2]} other"]
    await _agree_with_reference(backend, clock, entries, queries)


async def test_a_query_of_many_words_is_cut_at_the_same_word_everywhere(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """A keyword query of more than `text.MAX_QUERY_TERMS` (64) distinct terms searches
    its first 64 on every backend (`text.search_words`): same order and scores as the
    reference, and an entry holding only later words is not found. SQLite and
    PostgreSQL cut such queries, in_memory and Chroma did not."""
    words = [f"word{i}x" for i in range(100)]
    entries = [
        NewEntry(f"e{i}", " ".join(words[i : i + 3] + words[i * 7 % 100 : i * 7 % 100 + 2]))
        for i in range(0, 100, 4)
    ]
    entries.append(NewEntry("late", " ".join(words[70:75])))
    queries = [" ".join(words), " ".join(reversed(words)), " ".join(words[:70])]
    await _agree_with_reference(backend, clock, entries, queries, modes=("keyword",))
    found = await backend.retrieve(" ".join(words), 40, mode="keyword")
    assert found and "late" not in [e.key for e in found]


async def test_words_python_and_fts5_split_differently_are_found_as_on_the_reference(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """Every backend finds what the shared tokenizer finds (`retrieval.text.tokenize`),
    whatever a store's own tokenizer makes of it: Python lower-cases "İ" to "i" and a
    combining dot (SQLite's FTS5 kept one word), a combining mark inside a word splits
    it, Unicode 6.1 (FTS5's tables) lacks newer letters. SQLite found none of these."""
    nfd = "re\u0301sume\u0301 draft"  # "résumé" decomposed: the marks split the word
    entries = [
        NewEntry("tr", "İstanbul is a city"),
        NewEntry("de", "Die Straße ist lang"),
        NewEntry("lig", "ﬁnance report"),
        NewEntry("gr", "ΣΊΣΥΦΟΣ myth"),
        NewEntry("nfd", nfd),
        NewEntry("new", "\u037fota letter"),  # U+037F, Greek capital yot (Unicode 7.0)
        NewEntry("ascii", "istanbul resume finance city"),
    ]
    queries = [
        "İstanbul",
        "stanbul",
        "i̇stanbul",
        "Straße",
        "strasse",
        "ﬁnance",
        "finance",
        "σίσυφος",
        "ΣΊΣΥΦΟΣ",
        nfd,
        "sume",
        "re",
        "\u037fota",
        "\u03f3ota",
        "city stanbul report",
    ]
    await _agree_with_reference(backend, clock, entries, queries)


async def test_semantic_recall_leaves_out_entries_without_a_word(backend: MemoryBackend) -> None:
    """An entry with no letter or digit ("", spaces, "!!!") has no meaning to be recalled
    by: semantic and hybrid recall never return it, and still fill `top_k` with the
    entries that have one; exact recall finds it by what it holds."""
    _needs(backend, "semantic")
    embedder = backend.embedder
    assert isinstance(embedder, HashingEmbedder)
    wordless = embedder.embed_passages(["!!!"])[0]
    # A query the wordless entries are near (the hashing model gives them all one
    # vector), so that without the rule they would be found, here above the words.
    query = max(
        ("the cat sat", "a quiet evening", "blue sky", "old boats", "fresh bread"),
        key=lambda q: float(embedder.embed_query(q) @ wordless),
    )
    assert float(embedder.embed_query(query) @ wordless) > 0.0
    for i, text in enumerate(["", "   ", "!!!", "?!", "...", "--", "***", "!!", "#"] * 3):
        await backend.store(f"none{i}", text, {"scope": "S"})
    await backend.store("same", query, {"scope": "S"})
    await backend.store("near", f"{query} today", {"scope": "S"})
    for mode in ("semantic", "hybrid"):
        if mode not in backend.capabilities.retrieval:
            continue
        found = await backend.retrieve(query, 2, "S", mode=mode)
        assert sorted(keys(found)) == ["near", "same"], mode
        many = await backend.retrieve(query, 30, "S", mode=mode)
        assert not [k for k in keys(many) if k.startswith("none")], mode
    if "exact" in backend.capabilities.retrieval:
        assert "none2" in keys(await backend.retrieve("!!!", 30, "S", mode="exact"))


# ---------------------------------------------------------------------- the relevance floor

FLOOR_QUERIES = ("was the Globex invoice paid", "contract renewal", "painting", "zebra stripes")


def _relevance(
    keyword: list[MemoryEntry], semantic: list[MemoryEntry], mode: str
) -> dict[tuple[str | None, str], float]:
    """What `min_score` is compared with: the score, or in hybrid max(keyword, semantic)."""
    if mode == "keyword":
        return _scored(keyword)
    if mode == "semantic":
        return _scored(semantic)
    found = _scored(keyword)
    for ident, score in _scored(semantic).items():
        found[ident] = max(found.get(ident, 0.0), score)
    return found


def _ranked_keys(entries: list[MemoryEntry]) -> tuple[list[str], int]:
    """The keys of the entries that score above 0, in order, and how many score 0 (those
    tie: which of them fill the last places may differ between backends)."""
    return keys([e for e in entries if e.score > 1e-6]), sum(e.score <= 1e-6 for e in entries)


@pytest.mark.parametrize("mode", ["exact", "keyword", "semantic", "hybrid"])
async def test_min_score_keeps_what_reaches_it_alike_on_every_backend(
    backend: MemoryBackend, clock: FakeClock, mode: str, tmp_path: Path
) -> None:
    """A result is kept when its relevance (the score; in hybrid the larger of its keyword
    and semantic scores) is at least `min_score`; `below_floor` counts how many of the
    `top_k` nearest the floor left out; keys, scores and counts equal the reference's."""
    _needs(backend, mode)
    reference_clock = FakeClock()
    embedder = backend.embedder
    assert isinstance(embedder, HashingEmbedder)
    reference = in_memory_reference(BackendEnv(tmp_path, reference_clock, embedder))
    await _fill(backend, clock)
    await _fill(reference, reference_clock)
    try:
        for query in FLOOR_QUERIES:
            q = "invoice" if mode == "exact" else query
            everything = await backend.retrieve_counted(q, 40, "Notes", mode=mode, min_score=0)
            for floor in (None, 0, 0.2, 0.45, 0.9):
                got = await backend.retrieve_counted(q, 3, "Notes", mode=mode, min_score=floor)
                want = await reference.retrieve_counted(
                    q, 3, "Notes", mode=mode, min_score=floor
                )
                where = (mode, q, floor)
                assert _ranked_keys(got.entries) == _ranked_keys(want.entries), where
                assert [e.score for e in got.entries] == pytest.approx(
                    [e.score for e in want.entries], abs=1e-6
                ), where
                assert got.below_floor == want.below_floor, where
                assert len(got.entries) + got.below_floor == min(3, len(everything.entries))
                if mode in ("exact", "keyword", "semantic"):
                    scores = [e.score for e in got.entries]
                    assert all(score >= (floor or 1e-9) - 1e-6 for score in scores), where
                if floor == 0:
                    head = everything.entries[:3]
                    assert _ranked_keys(got.entries) == _ranked_keys(head), where
    finally:
        await reference.close()


async def test_hybrid_min_score_compares_the_larger_of_keyword_and_semantic(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    _needs(backend, "hybrid")
    await _fill(backend, clock)
    for query in FLOOR_QUERIES:
        keyword = await backend.retrieve(query, 40, "Notes", mode="keyword")
        semantic = await backend.retrieve(query, 40, "Notes", mode="semantic")
        relevance = _relevance(keyword, semantic, "hybrid")
        for floor in (0.1, 0.3, 0.5):
            found = await backend.retrieve(query, 40, "Notes", mode="hybrid", min_score=floor)
            wanted = {ident for ident, score in relevance.items() if score >= floor - 1e-6}
            assert {(e.scope, e.key) for e in found} == wanted, (query, floor)


async def test_min_score_zero_returns_the_nearest_scored_zero_below_the_model_floor(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """Semantic entries below the model's floor are no match by default (an empty list
    and `below_floor` > 0); `min_score: 0` returns the `top_k` nearest, those scored 0."""
    _needs(backend, "semantic")
    embedder = backend.embedder
    assert isinstance(embedder, HashingEmbedder)
    for key, text in TOPICS.items():
        await backend.store(key, text, {"scope": "S"})
    vectors = embedder.embed_passages(list(TOPICS.values()))
    # A query no topic is near (every cosine at most 0, the hashing model's floor).
    query = next(
        q for q in ("zebra stripes", "violin lessons", "a lighthouse", "my knitting")
        if float((vectors @ embedder.embed_query(q)).max()) <= 0.0
    )
    for mode in ("semantic", "hybrid"):
        if mode not in backend.capabilities.retrieval:
            continue
        missed = await backend.retrieve_counted(query, 3, "S", mode=mode)
        assert missed.entries == [] and missed.below_floor == 3, mode
        nearest = await backend.retrieve_counted(query, 3, "S", mode=mode, min_score=0)
        assert len(nearest.entries) == 3 and nearest.below_floor == 0, mode
        assert all(e.score == 0.0 for e in nearest.entries), mode


async def test_a_min_score_outside_0_to_1_is_refused(backend: MemoryBackend) -> None:
    await backend.store("a", "quarterly report", {"scope": "S"})
    for wrong in (-0.1, 1.5, float("nan"), True):
        with pytest.raises(AxonMemoryError, match="min_score must be a number from 0 to 1"):
            await backend.retrieve("report", 5, "S", min_score=wrong)


__all__ = sorted(name for name in dict(globals()) if name.startswith("test_"))
