"""The SQLite backend on real files: layout, types, scopes, retrieval, decay, schema versions."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axon.errors import AxonMemoryError
from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.backends.sqlite import (
    PURGE_BATCH,
    PURGE_INTERVAL,
    SQLiteBackend,
    VectorDBBackend,
    fts_match_expression,
)
from axon.memory.backends.sqlite_schema import SCHEMA_VERSION, migrate
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import NewEntry
from axon.memory.registry import registry
from axon.memory.retrieval.exact import seed_score
from axon.memory.retrieval.text import tokenize
from tests.memory.conftest import FakeClock

A = {"scope": "A"}
B = {"scope": "B"}


def _open(path: Path, clock: FakeClock | None = None, **kwargs: Any) -> SQLiteBackend:
    return SQLiteBackend(memory_dir=path, clock=clock or FakeClock(), **kwargs)


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path / "memory.db")


# ---------------------------------------------------------------------- where the file is


async def test_registry_names_and_capabilities(tmp_path: Path) -> None:
    for name, cls, mode in (
        ("sqlite", SQLiteBackend, "exact"),
        ("vector_db", VectorDBBackend, "semantic"),
    ):
        backend = registry.create(name, memory_dir=tmp_path / name)
        try:
            assert type(backend) is cls and backend.default_mode == mode
            assert backend.capabilities.persistent
            assert backend.capabilities == registry.lookup(name).resolved_capabilities()  # type: ignore[union-attr]
        finally:
            await backend.close()


async def test_file_locations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AXON_MEMORY_DIR", raising=False)
    cases: list[tuple[dict[str, Any], Path]] = [
        ({}, tmp_path / ".axon" / "memory.db"),
        ({"memory_dir": tmp_path / "m"}, tmp_path / "m" / "memory.db"),
        ({"location": "kb.db"}, tmp_path / "kb.db"),
        ({"location": "kb.db", "memory_dir": tmp_path / "d"}, tmp_path / "d" / "kb.db"),
        (
            {"location": str(tmp_path / "abs" / "x.db"), "memory_dir": "ignored"},
            tmp_path / "abs" / "x.db",
        ),
    ]
    for kwargs, expected in cases:
        backend = SQLiteBackend(**kwargs)
        await backend.store("k", "v")
        await backend.close()
        assert backend.path == expected and expected.is_file(), kwargs

    monkeypatch.setenv("AXON_MEMORY_DIR", str(tmp_path / "env"))
    backend = SQLiteBackend()
    await backend.close()
    assert backend.path == tmp_path / "env" / "memory.db"
    monkeypatch.setenv("KB_FILE", str(tmp_path / "from_env.db"))
    backend = SQLiteBackend(location="env:KB_FILE")
    await backend.close()
    assert backend.path == tmp_path / "from_env.db"
    with pytest.raises(AxonMemoryError, match="NOPE_UNSET"):
        SQLiteBackend(location="env:NOPE_UNSET")


async def test_wal_mode_and_schema_version(tmp_path: Path) -> None:
    backend = _open(tmp_path)
    await backend.close()
    conn = _raw(tmp_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


async def test_newer_schema_is_refused_clearly(tmp_path: Path) -> None:
    backend = _open(tmp_path)
    await backend.close()
    conn = _raw(tmp_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(AxonMemoryError, match="newer than this AXON"):
        _open(tmp_path)


async def test_older_schema_is_migrated_and_its_rows_searchable(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "memory.db", isolation_level=None)
    migrate(conn, path="test", target=1)
    conn.execute(
        "INSERT INTO entries (scope, key, value_json, text, timestamp) "
        "VALUES ('A', 'old', '\"ancient scrolls\"', 'ancient scrolls', 1.0)"
    )
    conn.close()
    backend = _open(tmp_path, embedder=HashingEmbedder())
    try:
        found = await backend.retrieve("scrolls", 5, "A", mode="keyword")
        assert [e.value for e in found] == ["ancient scrolls"]
        assert [e.key for e in await backend.retrieve("scroll", 5, "A", mode="semantic")] == ["old"]
    finally:
        await backend.close()


async def test_not_a_database_is_a_memory_error(tmp_path: Path) -> None:
    (tmp_path / "memory.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(AxonMemoryError):
        _open(tmp_path)


# ---------------------------------------------------------------------- values and scopes

VALUES: list[Any] = [
    {"a": 1, "b": [1, 2.5, None, True], "c": {"d": "é"}},
    [1, "two", 3.0],
    7,
    7.0,
    -0.0,
    2**70,
    True,
    False,
    None,
    "",
    "naïve 😀 text",
]


async def test_values_round_trip_with_their_types(tmp_path: Path) -> None:
    backend = _open(tmp_path)
    for i, value in enumerate(VALUES):
        await backend.store(f"k{i}", value, A)
    await backend.close()
    backend = _open(tmp_path)
    try:
        for i, value in enumerate(VALUES):
            entry = await backend.get(f"k{i}", "A")
            assert entry is not None
            assert entry.value == value and type(entry.value) is type(value)
            assert entry.metadata == A
    finally:
        await backend.close()


async def test_scopes_are_isolated_in_one_file(tmp_path: Path) -> None:
    backend = _open(tmp_path)
    try:
        await backend.store("k", "from A", {"scope": "A"})
        await backend.store("k", "from B", {"scope": "B"})
        await backend.store("k", "unscoped")
        await backend.store("k", "empty scope", {"scope": ""})
        assert await backend.count() == 4
        for scope, value in (
            ("A", "from A"),
            ("B", "from B"),
            (None, "unscoped"),
            ("", "empty scope"),
        ):
            entry = await backend.get("k", scope)
            assert entry is not None and entry.value == value
        for mode in ("exact", "keyword", "semantic"):
            backend.embedder = HashingEmbedder()
            found = await backend.retrieve("from", 10, "B", mode=mode)
            assert {e.value for e in found} <= {"from B"}, mode
        assert await backend.clear("A") == 1
        assert await backend.get("k", "A") is None
        assert await backend.count() == 3
        assert await backend.delete("k", None)
        assert not await backend.delete("k", None)
        assert (await backend.get("k", "")) is not None
        # As in the seed, a falsy scope in recall searches every scope.
        assert len(await backend.retrieve("k", 10, "", mode="exact")) == 2
    finally:
        await backend.close()


async def test_replacing_a_key_updates_every_index(tmp_path: Path) -> None:
    backend = _open(tmp_path, embedder=HashingEmbedder())
    try:
        await backend.store("fruit", "apples and pears", A)
        assert len(await backend.retrieve("apples", 5, "A", mode="semantic")) == 1
        await backend.store("fruit", "bananas", A)
        assert await backend.count("A") == 1
        assert await backend.retrieve("apples", 5, "A", mode="keyword") == []
        assert [e.value for e in await backend.retrieve("bananas", 5, "A", mode="keyword")] == [
            "bananas"
        ]
        assert [e.value for e in await backend.retrieve("bananas", 5, "A", mode="semantic")] == [
            "bananas"
        ]
    finally:
        await backend.close()


async def test_batch_is_all_or_nothing(tmp_path: Path) -> None:
    backend = _open(tmp_path)
    try:
        with pytest.raises(AxonMemoryError):
            await backend.store_many([NewEntry("ok", "fine", A), NewEntry("bad", {1, 2}, A)])
        assert await backend.count() == 0
    finally:
        await backend.close()


# ---------------------------------------------------------------------- exact


def _reference_exact(
    items: list[tuple[str, Any]], query: str, top_k: int
) -> list[tuple[str, float]]:
    """The seed's linear scan (later writes are newer; ties keep insertion order)."""
    latest: dict[str, tuple[int, Any]] = {}
    for t, (key, value) in enumerate(items):
        first = latest.get(key, (t, None))[0]
        latest[key] = (first, value)
    scored = []
    for key, (_, value) in latest.items():
        when = max(t for t, (k, _) in enumerate(items) if k == key)
        score = seed_score(query.lower(), key, value)
        if score > 0:
            scored.append((score, when, key))
    scored.sort(key=lambda s: (-s[0], -s[1]))
    return [(key, score) for score, _, key in scored[:top_k]]


PIECES = st.sampled_from(
    ["a", "A", "İ", "i̇", "K", "k", "ß", "SS", "é", "É", "x", "_", "%", "\\", " ", "\u212a"]
)


def _pieces(min_size: int, max_size: int) -> st.SearchStrategy[str]:
    return st.lists(PIECES, min_size=min_size, max_size=max_size).map("".join)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    items=st.lists(st.tuples(_pieces(1, 4), _pieces(0, 6)), max_size=12),
    query=_pieces(0, 3),
    top_k=st.integers(1, 6),
)
async def test_exact_matches_the_seed_linear_scan(
    tmp_path_factory: pytest.TempPathFactory, items: list[tuple[str, str]], query: str, top_k: int
) -> None:
    clock = FakeClock()
    backend = _open(tmp_path_factory.mktemp("exact"), clock)
    try:
        for key, value in items:
            clock.advance(1.0)
            await backend.store(key, value, A)
        found = await backend.retrieve(query, top_k, "A", mode="exact")
        assert [(e.key, e.score) for e in found] == _reference_exact(items, query, top_k)
    finally:
        await backend.close()


SUBSTRING_PIECES = st.sampled_from(
    ["ab", "AB", "c", "İ", "i̇", "ß", "SS", "é", "É", "_", "%", "\\", " ", "\u212a", "\x00", "x"]
)


def _substring_text(max_size: int) -> st.SearchStrategy[str]:
    return st.lists(SUBSTRING_PIECES, max_size=max_size).map("".join)


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["A", "B"]),
            _substring_text(3).filter(lambda key: bool(key) and "\x00" not in key),
            _substring_text(10),
            st.booleans(),  # delete it again afterwards
        ),
        max_size=14,
    ),
    needle=_substring_text(6) | st.sampled_from(["aba", "ABAB", "b%_", "İab", "ss", "\\x"]),
    top_k=st.integers(1, 6),
    scope=st.sampled_from(["A", None]),
    tagged=st.booleans(),
)
async def test_exact_through_the_trigram_index_is_the_in_memory_backend(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[str, str, str, bool]],
    needle: str,
    top_k: int,
    scope: str | None,
    tagged: bool,
) -> None:
    """Substring recall from `entries_substr` (schema 7) answers as the in-memory scan:
    short needles, case, non-ASCII folding, LIKE metacharacters, NUL, overwrites,
    deletes, scopes and filters."""
    clock = FakeClock()
    sqlite = _open(tmp_path_factory.mktemp("substr"), clock)
    memory = InMemoryBackend(clock=clock)
    try:
        for n, (name, key, value, drop) in enumerate(steps):
            clock.advance(1.0 if n % 3 else 0.0)
            for store in (sqlite, memory):
                await store.store(key, value, {"scope": name, "tag": n % 2})
            if drop and n % 4 == 0:
                for store in (sqlite, memory):
                    await store.delete(key, name)
        filters = {"tag": 1} if tagged else None
        got, want = [
            [
                (e.scope, e.key, e.score)
                for e in await store.retrieve(needle, top_k, scope, mode="exact", filters=filters)
            ]
            for store in (sqlite, memory)
        ]
        assert got == want
    finally:
        await sqlite.close()
        await memory.close()


async def test_exact_uses_the_trigram_index_for_a_rare_needle(tmp_path: Path) -> None:
    """A rare needle is answered from `entries_substr`; a common one by the recency scan."""
    backend = _open(tmp_path)
    try:
        await backend.store_many([NewEntry(f"k{i}", f"common words {i}", A) for i in range(50)])
        await backend.store("needle", "a Needle in a haystack", A)
        conn = _raw(tmp_path)
        conn.execute("INSERT INTO entries_substr (entries_substr) VALUES ('delete-all')")
        conn.commit()
        conn.close()
        # With the index emptied behind its back, the indexed path finds nothing...
        assert await backend.retrieve("needle in", 5, "A", mode="exact") == []
        # ...while a needle under three characters is still scanned.
        assert [e.key for e in await backend.retrieve("a n", 5, "A", mode="exact")] == []
        assert [e.key for e in await backend.retrieve("ne", 1, "A", mode="exact")] == ["needle"]
    finally:
        await backend.close()


async def test_exact_ties_newest_first_then_insertion_order(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _open(tmp_path, clock)
    try:
        await backend.store("contract_type", "NDA", A)
        await backend.store("contract_party", "Acme", A)
        clock.advance(5)
        await backend.store("contract_date", "2024", A)
        found = await backend.retrieve("contract", 5, "A", mode="exact")
        assert [e.key for e in found] == ["contract_date", "contract_type", "contract_party"]
        assert {e.score for e in found} == {0.7}
    finally:
        await backend.close()


async def test_exact_with_like_metacharacters_and_very_long_needles(tmp_path: Path) -> None:
    backend = _open(tmp_path)
    long_text = "Ab" * 30_000
    try:
        await backend.store("pct", "100% sure", A)
        await backend.store("under_score", "a_b", A)
        await backend.store("slash", "c:\\dir", A)
        await backend.store("decoy", "100 percent, axb, c:dir", A)
        await backend.store("long", f"start {long_text} end", A)
        for query, key in (("0%", "pct"), ("a_b", "under_score"), (":\\d", "slash")):
            assert [e.key for e in await backend.retrieve(query, 5, "A", mode="exact")] == [key]
        found = await backend.retrieve(long_text.lower() + " END", 5, "A", mode="exact")
        assert [(e.key, e.score) for e in found] == [("long", 0.4)]
    finally:
        await backend.close()


# ---------------------------------------------------------------------- keyword


async def test_keyword_scores_are_bm25_of_the_scope_not_of_the_file(tmp_path: Path) -> None:
    """FTS5 only proposes candidates: scores are per-scope BM25 in [0, 1], like in memory.

    FTS5's own bm25 uses the statistics of the whole file (and clamps the idf of a
    term found in more than half the rows to 1e-6): "cat" scored 2e-06 here.
    """
    backend = _open(tmp_path)
    reference = InMemoryBackend(clock=FakeClock())
    texts = {
        "a": "the cat sat on the mat",
        "b": "cats and dogs and more cats",
        "c": "a dog barked at the mailman",
        "d": "nothing relevant here",
    }
    other = [NewEntry(f"o{i}", f"cat number {i} of many", {"scope": "O"}) for i in range(40)]
    try:
        for store in (backend, reference):
            await store.store_many(other)
            for key, text in texts.items():
                await store.store(key, text, A)
        found = await backend.retrieve("cat dog", 10, "A", mode="keyword")
        expected = await reference.retrieve("cat dog", 10, "A", mode="keyword")
        assert [(e.key, pytest.approx(e.score, abs=1e-9)) for e in found] == [
            (e.key, e.score) for e in expected
        ]
        assert all(0.0 < e.score < 1.0 for e in found)
        assert found[0].key == "b" and found[0].score > 0.3
        conn = _raw(tmp_path)
        raw = conn.execute(
            "SELECT -rank FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid "
            "WHERE entries_fts MATCH '\"cat\"' AND e.key = 'b'"
        ).fetchone()[0]
        conn.close()
        assert raw < 1e-5  # what the file's own statistics say
        # "d" is not found through "c" (stored just before it, it mentions a dog)...
        assert {e.key for e in found} == {"a", "b", "c"}
        # ...unless the memory is linked: then its context counts, at half weight
        linked = await backend.retrieve("cat dog", 10, "A", mode="keyword", linked=True)
        assert {e.key for e in linked} == {"a", "b", "c", "d"} and linked[-1].key == "d"
        assert all(e.score > 0 for e in found)
    finally:
        await backend.close()


async def test_keyword_ranks_past_other_scopes_and_filters(tmp_path: Path) -> None:
    backend = _open(tmp_path)
    try:
        await backend.store_many(
            [NewEntry(f"b{i}", "apples apples apples", {"scope": "B"}) for i in range(300)]
        )
        await backend.store("mine", "one apples pie recipe with a long text around it", A)
        await backend.store("tagged", "apples", {"scope": "A", "tags": ["fruit", "red"]})
        found = await backend.retrieve("apples", 5, "A", mode="keyword")
        assert [e.key for e in found] == ["tagged", "mine"]
        found = await backend.retrieve("apples", 5, "A", mode="keyword", filters={"tags": ["red"]})
        assert [e.key for e in found] == ["tagged"]
        assert len(await backend.retrieve("apples", 500, None, mode="keyword")) == 302
    finally:
        await backend.close()


# fmt: off
NASTY = [
    '"', '""', "'", "NEAR(", "NEAR(a b, 2)", "*", "a*", "AND", "OR", "NOT", "a AND b", "a OR",
    "-a", "^a", "a:b", "key:secret", "(", ")", "{a b}", "\x00", "a\x00b", "%", "_", "\\",
    "'; DROP TABLE entries; --", "\" OR 1=1 --", "a" * 100_000, "x " * 500_000, "😀", "\u0301",
    "İstanbul", "ǅ", "\ufeff", "+", "a+b", "col : x", "", "   ",
]
# fmt: on


@pytest.mark.parametrize("query", NASTY, ids=range(len(NASTY)))
async def test_user_text_never_becomes_query_syntax(tmp_path: Path, query: str) -> None:
    """Each query finds exactly what its words find on the in-memory reference: no FTS5
    operator, column filter or SQL in it changes the answer or leaves the scope."""
    backend = _open(tmp_path, embedder=HashingEmbedder())
    reference = InMemoryBackend(clock=FakeClock(), embedder=HashingEmbedder())
    stored = [NewEntry("k", "a b secret apples x", A), NewEntry("b", "a b secret apples x", B)]
    try:
        await backend.store_many(stored)
        await reference.store_many(stored)
        # The test embedder is slow on megabyte texts; the store's side is the same.
        modes = ["exact", "keyword"] + (["semantic", "hybrid"] if len(query) < 10_000 else [])
        for mode in modes:
            found = await backend.retrieve(query, 5, "A", mode=mode)
            expected = await reference.retrieve(query, 5, "A", mode=mode)
            assert [e.key for e in found] == [e.key for e in expected], mode
            assert all(e.scope == "A" for e in found), mode
            if mode == "exact":
                assert [e.score for e in found] == [e.score for e in expected]
        keyword = [e.key for e in await backend.retrieve(query, 5, "A", mode="keyword")]
        words = set(tokenize(query))
        # "key:secret" is the word "secret" (no column filter), '" OR 1=1 --' is no word
        # of the entry (no OR escaping the quotes): words decide, nothing else.
        assert keyword == (["k"] if words & {"a", "b", "secret", "apples", "x"} else []), words
        assert await backend.count() == 2
        assert _raw(tmp_path).execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        await backend.close()
        await reference.close()


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=80) | st.lists(st.sampled_from(NASTY[:30]), max_size=6).map(" ".join))
def test_match_expressions_are_always_valid_fts(query: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (key, text, tokenize='porter unicode61')")
    conn.execute("INSERT INTO t VALUES ('k', 'some words here')")
    match = fts_match_expression(query)
    if match is not None:
        conn.execute("SELECT rowid, rank FROM t WHERE t MATCH ? ORDER BY rank", (match,)).fetchall()
        assert match.count(" OR ") < 64


async def test_keyword_query_words_found_regardless_of_syntax(tmp_path: Path) -> None:
    backend = _open(tmp_path)
    try:
        await backend.store("k", "quarterly revenue grew", A)
        for query in ('"revenue', "revenue*", "NEAR(revenue", "-revenue", "revenue AND NOT x"):
            assert [e.key for e in await backend.retrieve(query, 5, "A", mode="keyword")] == ["k"]
    finally:
        await backend.close()


# ---------------------------------------------------------------------- decay


async def test_expired_rows_never_come_back_and_are_purged(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _open(tmp_path, clock, embedder=HashingEmbedder())
    try:
        await backend.store("short", "lived apples", A, expires_at=clock.now + 10)
        await backend.store("long", "lived apples", A)
        clock.advance(10)
        for mode in ("exact", "keyword", "semantic", "hybrid"):
            assert [e.key for e in await backend.retrieve("lived", 5, "A", mode=mode)] == ["long"]
        assert await backend.get("short", "A") is None
        assert [e.key for e in await backend.list_entries("A")] == ["long"]
        assert await backend.count("A") == 1
        assert await backend.purge_expired() == 1
        assert _raw(tmp_path).execute("SELECT count(*) FROM entries").fetchone()[0] == 1
    finally:
        await backend.close()


async def test_expired_rows_are_not_counted_by_clear_or_delete(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _open(tmp_path, clock)
    try:
        await backend.store("gone", "x", A, expires_at=clock.now + 1)
        await backend.store("gone_too", "x", A, expires_at=clock.now + 1)
        await backend.store("kept", "x", A)
        clock.advance(1)
        assert not await backend.delete("gone", "A")
        assert await backend.clear("A") == 1
        assert _raw(tmp_path).execute("SELECT count(*) FROM entries").fetchone()[0] == 0
    finally:
        await backend.close()


async def test_purge_on_open_and_while_in_use_in_batches(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _open(tmp_path, clock)
    n = PURGE_BATCH * 2 + 7
    await backend.store_many([NewEntry(f"k{i}", i, A, clock.now + 5) for i in range(n)])
    await backend.close()
    clock.advance(5)
    backend = _open(tmp_path, clock)  # purges on open
    assert _raw(tmp_path).execute("SELECT count(*) FROM entries").fetchone()[0] == 0
    try:
        await backend.store_many([NewEntry(f"j{i}", i, A, clock.now + 5) for i in range(20)])
        clock.advance(3600)  # the periodic sweep runs on the next operation
        assert await backend.count("A") == 0
        assert _raw(tmp_path).execute("SELECT count(*) FROM entries").fetchone()[0] == 0
        conn = _raw(tmp_path)
        conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('integrity-check')")
        conn.close()
    finally:
        await backend.close()


async def test_a_failing_automatic_sweep_does_not_fail_the_operation(tmp_path: Path) -> None:
    """The purge policy shared with PostgreSQL (`sql_common`): a sweep the backend starts
    by itself never fails the write or read that started it; `purge_expired` raises."""
    clock = FakeClock()
    backend = _open(tmp_path, clock)
    try:
        await backend.store_many([NewEntry(f"k{i}", i, A, clock.now + 5) for i in range(3)])
        conn = _raw(tmp_path)
        conn.execute(
            "CREATE TRIGGER refuse BEFORE DELETE ON entries "
            "BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END"
        )
        conn.commit()
        clock.advance(PURGE_INTERVAL + 1)
        await backend.store("later", "kept", A)  # sweeps, fails, and still stores
        assert await backend.count("A") == 1
        assert [e.key for e in await backend.list_entries("A")] == ["later"]
        with pytest.raises(AxonMemoryError, match="refused by trigger"):
            await backend.purge_expired()
        conn.execute("DROP TRIGGER refuse")
        conn.commit()
        conn.close()
        assert await backend.purge_expired() == 3
    finally:
        await backend.close()


# ---------------------------------------------------------------------- semantic


async def test_vectors_of_another_model_are_pending_not_mixed(tmp_path: Path) -> None:
    small, large = HashingEmbedder(32), HashingEmbedder(64)
    backend = _open(tmp_path, embedder=small)
    try:
        await backend.store_many(
            [NewEntry(f"k{i}", f"note number {i} apples", A) for i in range(5)]
        )
        assert await backend.ensure_vectors("A") == 5
        assert await backend.ensure_vectors("A") == 0
        backend.embedder = large
        assert len(await backend._pending_texts("A", large.model_id)) == 5
        found = await backend.retrieve("apples", 3, "A", mode="semantic")
        assert len(found) == 3
        conn = _raw(tmp_path)
        models = conn.execute("SELECT DISTINCT model, dim FROM vectors").fetchall()
        conn.close()
        assert models == [(large.model_id, 64)]
        backend.embedder = small  # back to the first model: re-embedded, not mixed
        assert len(await backend.retrieve("apples", 3, "A", mode="semantic")) == 3
    finally:
        await backend.close()


async def test_semantic_cache_sees_other_connections(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    first = _open(tmp_path, embedder=embedder)
    second = _open(tmp_path, embedder=embedder)
    try:
        await first.store("a", "red apples", A)
        assert [e.key for e in await first.retrieve("apples", 5, "A", mode="semantic")] == ["a"]
        await second.store("b", "green apples", A)
        await second.delete("a", "A")
        found = await first.retrieve("apples", 5, "A", mode="semantic")
        assert [e.key for e in found] == ["b"]
        await second.store("b", "a yellow submarine", A)
        found = await first.retrieve("yellow submarine", 5, "A", mode="semantic")
        assert [e.value for e in found] == ["a yellow submarine"]
    finally:
        await first.close()
        await second.close()


async def test_vector_db_defaults_to_semantic_and_filters(tmp_path: Path) -> None:
    backend = VectorDBBackend(memory_dir=tmp_path, clock=FakeClock(), embedder=HashingEmbedder())
    try:
        await backend.store("x", "apples are red", {"scope": "A", "kind": "fruit"})
        await backend.store("y", "apples pie", {"scope": "A", "kind": "food"})
        found = await backend.retrieve("apples", 5, "A", filters={"kind": "food"})
        assert [e.key for e in found] == ["y"]
        assert -1.0 <= found[0].score <= 1.0001
    finally:
        await backend.close()


def test_the_memory_directory_is_resolved_once_with_tilde_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime and the SQLite backend agree on the directory, `~` expanded in both."""
    from axon.memory.backend import resolve_memory_dir
    from axon.runtime.session import Session

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("AXON_MEMORY_DIR", raising=False)
    assert resolve_memory_dir("~/m") == tmp_path / "m"
    monkeypatch.setenv("AXON_MEMORY_DIR", "~/from_env")
    assert resolve_memory_dir(None) == tmp_path / "from_env"
    with Session() as session:
        assert session.memories.memory_dir == tmp_path / "from_env"
        session.execute('memory N { store: persistent }\nremember("x") -> N')
    assert (tmp_path / "from_env" / "memory.db").exists()


# ---------------------------------------------------------------------- non-ASCII full text


async def test_version_9_reindexes_non_ascii_rows_by_their_shared_stems(tmp_path: Path) -> None:
    """A version 8 file indexed "İstanbul" as FTS5 tokenizes it ("istanbul"), which the
    shared tokenizer's "stanbul" never matched: opening it reindexes such rows
    (`sqlite_fts`), the recall finds them, and rewrites and deletes leave no term
    behind (a row leaves an FTS5 index only with the values it went in with)."""
    from axon.memory.backends.sqlite_fts import fts_row

    backend = _open(tmp_path)
    await backend.store("tr", "İstanbul is a city")
    await backend.store("en", "plain words")
    await backend.close()
    conn = _raw(tmp_path)
    with conn:  # back to what version 8 wrote: the row indexed as written
        ident, key, text, context = conn.execute(
            "SELECT id, key, text, context FROM entries WHERE key = 'tr'"
        ).fetchone()
        stored = (ident, key, text, context)
        for table, linked in (("entries_fts", False), ("entries_fts_linked", True)):
            width = 4 if linked else 3
            columns = "key, text, context" if linked else "key, text"
            marks = "?, ?, ?" if linked else "?, ?"
            conn.execute(
                f"INSERT INTO {table} ({table}, rowid, {columns}) VALUES ('delete', ?, {marks})",
                fts_row(stored, linked)[:width],
            )
            conn.execute(
                f"INSERT INTO {table} (rowid, {columns}) VALUES (?, {marks})", stored[:width]
            )
        conn.execute("PRAGMA user_version = 8")
    assert ("istanbul",) in conn.execute("SELECT term FROM entries_fts_terms").fetchall()
    conn.close()
    backend = _open(tmp_path)
    try:
        assert [e.key for e in await backend.retrieve("stanbul", mode="keyword")] == ["tr"]
        assert [e.key for e in await backend.retrieve("İstanbul", mode="keyword")] == ["tr"]
        await backend.store("tr", "Ankara is a city")
        assert await backend.retrieve("stanbul", mode="keyword") == []
        assert await backend.delete("tr")
    finally:
        await backend.close()
    conn = _raw(tmp_path)
    terms = {term for (term,) in conn.execute("SELECT term FROM entries_fts_terms")}
    assert terms == {"plain", "word", "en"}
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()
