"""The in-memory backend against the seed's linear scan, and the BM25 index against a formula.

`SeedScan` is the seed `000` retrieve loop copied verbatim (over a dict keyed by
`(scope, key)`, plus expiry); every `exact` recall of `InMemoryBackend` must return
the same entries, scores and order, whatever the operations before it.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.entry import MemoryEntry, NewEntry, matches_filters
from axon.memory.retrieval import exact
from axon.memory.retrieval.bm25 import BM25Index
from axon.memory.retrieval.exact import SubstringIndex, grams_of, seed_score
from axon.memory.retrieval.text import tokenize
from tests.memory.conftest import FakeClock


class SeedScan:
    """The seed's `InMemoryBackend.retrieve`, line for line, over `(scope, key)` identities."""

    def __init__(self) -> None:
        self.store: dict[tuple[str | None, str], MemoryEntry] = {}

    def put(self, entry: MemoryEntry) -> None:
        self.store[(entry.scope, entry.key)] = entry

    def retrieve(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        now: float,
        filters: Mapping[str, Any] | None = None,
    ) -> list[MemoryEntry]:
        candidates: list[MemoryEntry] = []
        query_lower = query.lower()
        for entry in self.store.values():
            if entry.is_expired(now) or not matches_filters(entry.metadata, filters):
                continue
            if scope and entry.metadata.get("scope") != scope:
                continue
            score = 0.0
            if entry.key.lower() == query_lower:
                score = 1.0
            elif query_lower in entry.key.lower():
                score = 0.7
            elif query_lower in str(entry.value).lower():
                score = 0.4
            if score > 0:
                candidates.append(entry.with_score(score))
        candidates.sort(key=lambda e: (-e.score, -e.timestamp))
        return candidates[:top_k]


def summary(entries: list[MemoryEntry]) -> list[tuple[str | None, str, float, float]]:
    return [(e.scope, e.key, e.score, e.timestamp) for e in entries]


def test_seed_score_is_the_seed_table() -> None:
    assert seed_score("contract_type", "Contract_Type", "x") == 1.0
    assert seed_score("contract", "contract_type", "x") == 0.7
    assert seed_score("nda", "kind", "Non-Disclosure (NDA)") == 0.4
    assert seed_score("nda", "kind", {"name": "NDA"}) == 0.4  # str(value), as the seed
    assert seed_score("zzz", "kind", "NDA") == 0.0
    assert seed_score("", "kind", "NDA") == 0.7


def test_grams_of_short_and_long_texts() -> None:
    assert grams_of("") == set()
    assert grams_of("ab") == {"ab"}
    assert grams_of("abcd") == {"abc", "bcd"}


# ---------------------------------------------------------------------- Hypothesis

ALPHABET = "abcAB_ .İßé1"  # "İ".lower() is two characters; "ß" has no lower change
texts = st.text(alphabet=ALPHABET, max_size=8)
keys = st.text(alphabet=ALPHABET, min_size=1, max_size=6)
values = st.one_of(
    texts,
    st.integers(-50, 50),
    st.lists(texts, max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), texts, max_size=2),
)
scopes = st.sampled_from([None, "A", "B"])

operations = st.lists(
    st.one_of(
        st.tuples(st.just("store"), keys, values, scopes, st.sampled_from([None, 5.0, 50.0])),
        st.tuples(
            st.just("batch"), st.lists(st.tuples(keys, values), min_size=1, max_size=4), scopes
        ),
        st.tuples(st.just("delete"), keys, scopes),
        st.tuples(st.just("clear"), scopes),
        st.tuples(st.just("tick"), st.sampled_from([0.0, 1.0, 10.0, -3.0])),
        st.tuples(
            st.just("recall"),
            texts,
            st.integers(1, 6),
            st.sampled_from([None, "", "A", "B", "C"]),
        ),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_exact_recall_equals_the_seed_linear_scan(ops: list[tuple[Any, ...]]) -> None:
    clock = FakeClock()
    backend = InMemoryBackend(clock=clock)
    model = SeedScan()

    async def run() -> None:
        for op in ops:
            match op:
                case ("store", key, value, scope, ttl):
                    metadata = {"scope": scope} if scope else {}
                    expires_at = clock.now + ttl if ttl is not None else None
                    model.put(await backend.store(key, value, metadata, expires_at=expires_at))
                case ("batch", items, scope):
                    metadata = {"scope": scope} if scope else {}
                    stored = await backend.store_many(
                        [NewEntry(key, value, metadata) for key, value in items]
                    )
                    for entry in stored:
                        model.put(entry)
                case ("delete", key, scope):
                    await backend.delete(key, scope)
                    model.store.pop((scope, key), None)
                case ("clear", scope):
                    await backend.clear(scope)
                    for ident in [i for i in model.store if scope is None or i[0] == scope]:
                        del model.store[ident]
                case ("tick", seconds):
                    clock.advance(seconds)
                case ("recall", query, top_k, scope):
                    got = await backend.retrieve(query, top_k, scope)
                    want = model.retrieve(query, top_k, scope, clock.now)
                    assert summary(got) == summary(want), (query, top_k, scope)

    asyncio.run(run())


# ---------------------------------------------------------------------- bigger, seeded

WORDS = [
    "contract", "party", "liability", "indemnification", "risk", "clause", "term", "notice",
    "payment", "delivery", "warranty", "breach", "damages", "court", "law", "agreement",
    "confidential", "the", "a", "of",
]  # fmt: skip


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))


@pytest.mark.parametrize("seed, small_limits", [(1, False), (2, True)])
async def test_large_mixed_workload_matches_linear_scan(
    seed: int, small_limits: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thousands of entries: long posting lists (the numpy pre-filter), short queries
    (the union and full walks), tombstones and rebuilds, ties and a clock that jumps
    back. `small_limits` shrinks the index's thresholds so every path is taken."""
    if small_limits:
        monkeypatch.setattr(exact, "_DIRECT_LIMIT", 64)
        monkeypatch.setattr(exact, "_UNION_LIMIT", 200)
        monkeypatch.setattr(exact, "_COMPACT_MIN_DEAD", 100)
    rng = random.Random(seed)
    clock = FakeClock()
    backend = InMemoryBackend(clock=clock)
    model = SeedScan()
    for round_ in range(12):
        batch = [
            NewEntry(
                f"{rng.choice(WORDS)}_{rng.randint(0, 3000)}",
                _sentence(rng) if rng.random() < 0.9 else {"n": rng.randint(0, 9)},
                {"scope": rng.choice(["A", "B"]), "tag": rng.choice(["x", "y"])},
            )
            for _ in range(600)
        ]
        for entry in await backend.store_many(batch):
            model.put(entry)
        for _ in range(50):  # single stores, some at equal timestamps
            key = f"{rng.choice(WORDS)}_{rng.randint(0, 3000)}"
            scope = rng.choice(["A", "B"])
            model.put(await backend.store(key, _sentence(rng), {"scope": scope, "tag": "x"}))
            clock.advance(rng.choice([0.0, 0.5]))
        for ident in rng.sample(sorted(model.store, key=str), 150):
            assert await backend.delete(ident[1], ident[0])
            del model.store[ident]
        clock.advance(-7.0 if round_ == 6 else 1.0)
    queries = [*WORDS, "", "a", "e", "q", "on", "zz", "ity", "contract_1", "party liab", "x y"]

    async def compare() -> None:
        for query in queries:
            for scope in (None, "A"):
                for top_k in (1, 5, 40):
                    got = await backend.retrieve(query, top_k, scope)
                    want = model.retrieve(query, top_k, scope, clock.now)
                    assert summary(got) == summary(want), (query, scope, top_k)
            got = await backend.retrieve(query, 7, "B", filters={"tag": "y"})
            want = model.retrieve(query, 7, "B", clock.now, {"tag": "y"})
            assert summary(got) == summary(want)

    await compare()
    for ident in rng.sample(sorted(model.store, key=str), len(model.store) * 4 // 5):
        assert await backend.delete(ident[1], ident[0])  # enough to rebuild the indexes
        del model.store[ident]
    await compare()


def test_substring_index_reuses_nothing_after_removal() -> None:
    index = SubstringIndex()
    index.add("k1", "alpha", "some text", 1.0, 0)
    index.add("k2", "beta", "other text", 2.0, 1)
    assert [h.ident for h in index.search("text", 5)] == ["k2", "k1"]
    assert index.remove("k2")
    assert not index.remove("k2")
    assert [h.ident for h in index.search("text", 5)] == ["k1"]
    assert index.search("beta", 5) == []
    index.add("k1", "alpha", "changed", 3.0, 0)
    assert index.search("text", 5) == []
    assert len(index) == 1


BATCH_TEXT = st.text(alphabet="abcAB_ .İßé1\U0001f600\x00", max_size=12)
BATCH_ITEMS = st.lists(
    st.tuples(st.sampled_from([f"k{i}" for i in range(12)]), BATCH_TEXT, BATCH_TEXT),
    min_size=1,
    max_size=30,
)


def _index_state(index: SubstringIndex) -> tuple[Any, ...]:
    grams = [
        ({g: list(p) for g, p in field.postings.items()}, field.short)
        for field in (index._keys, index._values)
    ]
    rows = (index._ident, index._key, index._text, list(index._ts), list(index._seq))
    runs = (list(index._run), list(index._run_start), list(index._prefmax))
    return (grams, rows, runs, index._equal, index._doc_of)


@settings(max_examples=150, deadline=None)
@given(batches=st.lists(BATCH_ITEMS, min_size=1, max_size=4), queries=st.lists(BATCH_TEXT))
def test_a_batch_indexes_exactly_as_documents_one_by_one(
    batches: list[list[tuple[str, str, str]]], queries: list[str]
) -> None:
    """`add_many`'s numpy path (every batch takes it here) builds the very posting lists,
    short-gram map and rows that `add` builds one document at a time."""
    batched, single = SubstringIndex(), SubstringIndex()
    first_stored: dict[str, int] = {}  # seq is an identity's first-store position, as in
    saved = exact._BATCH_MIN  # the backend: unique, so no two hits tie on everything
    exact._BATCH_MIN = 1
    try:
        for round_, batch in enumerate(batches):
            items = [
                (ident, key.lower(), text.lower(), float(round_ // 2),
                 first_stored.setdefault(ident, len(first_stored)))
                for ident, key, text in batch
            ]
            batched.add_many(items)
            seen: set[str] = set()
            for item in reversed(items):  # add_many's documented order, one by one
                if item[0] not in seen:
                    seen.add(item[0])
                    single.add(*item)
    finally:
        exact._BATCH_MIN = saved
    assert _index_state(batched) == _index_state(single)
    for query in queries:
        q = query.lower()
        assert batched.search(q, 5) == single.search(q, 5)


# ---------------------------------------------------------------------- BM25


def bm25_reference(docs: dict[str, list[str]], terms: list[str]) -> dict[str, float]:
    """Okapi BM25 (k1=1.2, b=0.75, Lucene idf) computed the slow, obvious way."""
    n = len(docs)
    avgdl = sum(len(tokens) for tokens in docs.values()) / n
    scores: dict[str, float] = {}
    for ident, tokens in docs.items():
        total = 0.0
        for term in dict.fromkeys(terms):
            tf = tokens.count(term)
            if not tf:
                continue
            df = sum(1 for other in docs.values() if term in other)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            total += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(tokens) / avgdl))
        if total > 0:
            scores[ident] = total
    return scores


def test_bm25_ranks_more_query_terms_first() -> None:
    index = BM25Index()
    index.add("one", tokenize("the contract names the parties"))
    index.add("two", tokenize("the contract limits liability for both parties"))
    index.add("three", tokenize("weather report for tuesday"))
    ranked = index.search(["contract", "liability"], 5)
    assert [ident for ident, _ in ranked] == ["two", "one"]
    assert all(score > 0 for _, score in ranked)


@pytest.mark.parametrize("n_docs", [40, 3000])  # sparse and dense scoring paths
def test_bm25_scores_match_the_formula(n_docs: int) -> None:
    rng = random.Random(n_docs)
    docs = {f"d{i}": [rng.choice(WORDS) for _ in range(rng.randint(1, 12))] for i in range(n_docs)}
    index = BM25Index()
    for ident, tokens in docs.items():
        index.add(ident, tokens)
    for ident in list(docs)[::3]:  # removals must update N, df and lengths
        index.remove(ident)
        del docs[ident]
    for terms in (["risk"], ["contract", "breach"], ["law", "court", "term"], ["absent"]):
        want = bm25_reference(docs, terms)
        got = dict(index.search(terms, len(docs) + 1))
        assert got.keys() == want.keys()
        for ident, score in want.items():
            assert got[ident] == pytest.approx(score, rel=1e-9)


def test_bm25_returns_ties_at_the_cut_and_honours_accept() -> None:
    index = BM25Index()
    for i in range(10):
        index.add(i, ["same", "words"])
    index.add("other", ["same"])
    found = index.search(["words"], 3)
    assert len(found) == 10  # all ten tie: the caller breaks ties
    accepted = index.search(["same"], 2, accept=lambda ident: ident == "other")
    assert [ident for ident, _ in accepted] == ["other"]


def test_bm25_survives_rebuilds() -> None:
    index = BM25Index()
    for i in range(3000):
        index.add(i, ["alpha", "beta"] if i % 2 else ["beta"])
    for i in range(2500):
        index.remove(i)
    assert len(index) == 500
    found = dict(index.search(["alpha"], 1000))
    assert set(found) == {i for i in range(2500, 3000) if i % 2}
    assert index.idf("alpha") == pytest.approx(math.log(1 + (500 - 250 + 0.5) / 250.5))


# ---------------------------------------------------------------------- backend specifics


async def test_expired_entries_do_not_count_anywhere() -> None:
    clock = FakeClock()
    backend = InMemoryBackend(clock=clock)
    await backend.store("old", "x", {"scope": "S"}, expires_at=clock.now + 1)
    await backend.store("gone", "x", {"scope": "S"}, expires_at=clock.now + 1)
    await backend.store("new", "x", {"scope": "S"})
    clock.advance(1)
    assert await backend.delete("gone", "S") is False  # already invisible, but removed
    assert await backend.clear("S") == 1  # only the visible one is reported
    assert await backend.purge_expired() == 0  # nothing left to purge


async def test_falsy_scope_in_recall_searches_everything_as_the_seed() -> None:
    backend = InMemoryBackend(clock=FakeClock())
    await backend.store("k", "text", {"scope": "A"})
    await backend.store("k", "text", {"scope": ""})
    assert len(await backend.retrieve("text", scope="")) == 2  # the seed's `if scope`
    assert await backend.count("") == 1  # management calls: "" is a scope like any other
    assert await backend.clear("") == 1
    assert await backend.count() == 1


class CountingEmbedder:
    """HashingEmbedder that counts what it embeds and can change its model id."""

    def __init__(self, model_id: str = "count:1") -> None:
        from axon.memory.embeddings.hashing import HashingEmbedder

        self.inner = HashingEmbedder()
        self.dim = self.inner.dim
        self.model_id = model_id
        self.embedded: list[str] = []

    def embed_passages(self, texts: Any) -> Any:
        self.embedded.extend(texts)
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


async def test_vectors_are_computed_once_and_redone_when_text_or_model_changes() -> None:
    embedder = CountingEmbedder()
    backend = InMemoryBackend(clock=FakeClock(), embedder=embedder)
    await backend.store("a", "apples and pears", {"scope": "S"})
    await backend.store("b", "trains and buses", {"scope": "S"})
    found = await backend.retrieve("apples", 1, "S", mode="semantic")
    assert [e.key for e in found] == ["a"]
    assert sorted(embedder.embedded) == ["apples and pears", "trains and buses"]
    await backend.retrieve("buses", 1, "S", mode="semantic")
    assert len(embedder.embedded) == 2  # nothing new to embed
    await backend.store("a", "buses only", {"scope": "S"})
    await backend.retrieve("buses", 1, "S", mode="semantic")
    assert embedder.embedded[2:] == ["buses only"]
    embedder.model_id = "count:2"
    await backend.retrieve("buses", 1, "S", mode="semantic")
    assert sorted(embedder.embedded[3:]) == ["buses only", "trains and buses"]


async def test_expiry_heap_does_not_grow_with_replaced_entries() -> None:
    clock = FakeClock()
    backend = InMemoryBackend(clock=clock)
    for i in range(5000):
        await backend.store("same", f"v{i}", {"scope": "S"}, expires_at=clock.now + 10 + i)
    assert len(backend._expiry) <= 2 * 1 + 1024 + 1
    clock.advance(20)
    assert await backend.purge_expired() == 0  # the live entry expires much later
    clock.advance(10_000)
    assert await backend.purge_expired() == 1


def test_list_reads_an_ordered_index_with_the_seeds_order() -> None:
    """`list_entries` walks each scope's ordered index (issue 15 item 7: no sort per call)
    and gives exactly what sorting every live entry by (newest, first stored) gives,
    through overwrites, equal timestamps, deletes, expiry and several scopes."""
    rng = random.Random(7)
    clock = FakeClock()
    backend = InMemoryBackend(clock=clock)
    model: dict[tuple[str, str], tuple[float, int, float | None]] = {}  # -> ts, seq, expiry
    first_seen: dict[tuple[str, str], int] = {}
    counter = 0

    async def scenario() -> None:
        nonlocal counter
        for _ in range(300):
            action = rng.random()
            scope, key = rng.choice(["a", "b", "c"]), f"k{rng.randrange(40)}"
            if action < 0.6:
                batch = [(scope, f"k{rng.randrange(40)}") for _ in range(rng.randrange(1, 6))]
                lifetime = rng.choice([None, 1.0, 5.0])
                expires = None if lifetime is None else clock() + lifetime
                await backend.store_many(
                    [NewEntry(k, f"v {k}", {"scope": s}, expires) for s, k in batch]
                )
                for ident in batch:
                    if ident not in first_seen:
                        first_seen[ident] = counter
                        counter += 1
                    model[ident] = (clock(), first_seen[ident], expires)
            elif action < 0.75:
                await backend.delete(key, scope)
                model.pop((scope, key), None)
                first_seen.pop((scope, key), None)
            else:
                clock.advance(rng.choice([0.0, 0.5, 2.0]))
            now = clock()
            for wanted in ("a", None):
                live = [
                    (ident, value)
                    for ident, value in model.items()
                    if (wanted is None or ident[0] == wanted)
                    and (value[2] is None or now < value[2])
                ]
                live.sort(key=lambda item: (-item[1][0], item[1][1]))
                expected = [ident for ident, _ in live]
                got = await backend.list_entries(wanted)
                assert [(e.scope, e.key) for e in got] == expected
                paged = await backend.list_entries(wanted, limit=3, offset=2)
                assert [(e.scope, e.key) for e in paged] == expected[2:5]

    asyncio.run(scenario())


def test_listing_the_newest_does_not_sort_the_memory() -> None:
    """The newest 10 of 50,000 entries are read from the ordered index: the listing looks
    at about 10 entries, not at all of them (a sort of all took 100-580 ms here; the
    speed itself is `benchmarks/list_filter.py`'s)."""

    class Counting(dict[str, Any]):
        """The scope's entries, counting every entry read through them."""

        reads = 0

        def __getitem__(self, key: str) -> Any:
            Counting.reads += 1
            return super().__getitem__(key)

        def values(self) -> Any:
            Counting.reads += len(self)
            return super().values()

        def items(self) -> Any:
            Counting.reads += len(self)
            return super().items()

        def __iter__(self) -> Any:
            Counting.reads += len(self)
            return super().__iter__()

    backend = InMemoryBackend()

    async def scenario() -> None:
        for start in range(0, 50_000, 5000):
            await backend.store_many(
                [NewEntry(f"k{i}", i, {"scope": "s"}) for i in range(start, start + 5000)]
            )
        state = backend._scopes["s"]
        state.entries = Counting(state.entries)
        Counting.reads = 0
        newest = await backend.list_entries("s", limit=10)
        assert [e.key for e in newest] == [f"k{i}" for i in range(45_000, 45_010)]
        assert Counting.reads <= 20, Counting.reads

    asyncio.run(scenario())


async def test_a_write_whose_indexing_fails_stores_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text analysis runs before the first change: if it raises (here injected for one
    text; a 1,500-'y' word used to raise RecursionError), the batch leaves no entry,
    neither visible nor half-indexed, and the backend keeps working."""
    from axon.memory.backends import in_memory

    real = in_memory.index_terms

    def failing(text: str) -> list[str]:
        if "poison" in text:
            raise RecursionError("injected")
        return real(text)

    backend = InMemoryBackend(clock=FakeClock())
    await backend.store("kept", "hello kept", {"scope": "S"})
    monkeypatch.setattr(in_memory, "index_terms", failing)
    with pytest.raises(RecursionError):
        await backend.store_many(
            [NewEntry("fresh", "hello fresh", {"scope": "S"}), NewEntry("bad", "hello poison")]
        )
    with pytest.raises(RecursionError):
        await backend.store("kept", "hello poison again", {"scope": "S"})
    monkeypatch.setattr(in_memory, "index_terms", real)
    assert [e.key for e in await backend.list_entries()] == ["kept"]
    assert (await backend.get("kept", "S")).value == "hello kept"  # type: ignore[union-attr]
    assert await backend.get("fresh", "S") is None
    for mode in ("exact", "keyword"):
        found = await backend.retrieve("hello", 10, "S", mode=mode)
        assert [(e.key, e.value) for e in found] == [("kept", "hello kept")], mode
    await backend.store("fresh", "hello fresh", {"scope": "S"})
    assert sorted(e.key for e in await backend.retrieve("hello", 10, "S", mode="keyword")) == [
        "fresh",
        "kept",
    ]
