"""The backend contract as a pytest suite any backend package can run (`MemoryBackend`).

Each test states one promise of `MemoryBackend`. A backend package gets all of them
with a test file that star-imports this module and defines a `backend` fixture
yielding a fresh, empty backend built on the `backend_env` fixture's clock and
embedder (docs/backends.md, "Testing your backend"). AXON's own
tests/memory/test_conformance.py runs it over every built-in backend. Time is
driven with the `clock` fixture (a `FakeClock`): a backend must read the time
only from the clock it is given, and embed with the given embedder.

Needs pytest and pytest-asyncio (`asyncio_mode = "auto"`): `axon-memory[testing]`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import MAX_VALUE_BYTES, MemoryEntry, NewEntry
from axon.memory.lifetimes import OWNED_MARKER, OwnedScope, Owner, parse_owned
from axon.memory.registry import registry
from axon.memory.retrieval.exact import seed_score
from axon.testing import BackendEnv, FakeClock, in_memory_reference


@pytest.fixture
def clock() -> FakeClock:
    """The clock of the backend under test; tests move it with `clock.advance(seconds)`."""
    return FakeClock()


@pytest.fixture
def backend_env(tmp_path: Path, clock: FakeClock) -> BackendEnv:
    """What a `backend` fixture builds its backend from: a temporary directory, the
    test's `clock` and a fresh `HashingEmbedder` (the suite compares scores with it)."""
    return BackendEnv(tmp_path, clock, HashingEmbedder())


def keys(entries: list[MemoryEntry]) -> list[str]:
    return [entry.key for entry in entries]


def exact_mode(backend: MemoryBackend) -> str:
    if "exact" not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no exact retrieval")
    return "exact"


async def snapshot(backend: MemoryBackend) -> list[tuple[Any, ...]]:
    entries = await backend.list_entries()
    return sorted((e.scope or "", e.key, repr(e.value)) for e in entries)


# ---------------------------------------------------------------------- identity


def test_backend_declares_its_identity(backend: MemoryBackend) -> None:
    info = registry.lookup(backend.name)
    assert info is not None and info.name == backend.name
    assert backend.default_mode in backend.capabilities.retrieval
    assert info.resolved_capabilities().retrieval <= backend.capabilities.retrieval


# ---------------------------------------------------------------------- store / retrieve / clear


async def test_store_returns_the_entry(backend: MemoryBackend, clock: FakeClock) -> None:
    entry = await backend.store("contract_type", "NDA", {"source": "Extract"})
    assert entry.key == "contract_type"
    assert entry.value == "NDA"
    assert entry.metadata == {"source": "Extract"}
    assert entry.timestamp == clock.now
    assert entry.expires_at is None


async def test_seed_example_exact(backend: MemoryBackend, clock: FakeClock) -> None:
    mode = exact_mode(backend)
    await backend.store("contract_type", "NDA")
    clock.advance(1)
    await backend.store("contract_date", "2024-01-15")
    clock.advance(1)
    await backend.store("parties", "Acme Corp, Beta LLC")
    results = await backend.retrieve("contract", top_k=2, mode=mode)
    assert [(e.key, e.score) for e in results] == [("contract_date", 0.7), ("contract_type", 0.7)]
    results = await backend.retrieve("CONTRACT_TYPE", mode=mode)
    assert [(e.key, e.score) for e in results] == [("contract_type", 1.0)]
    results = await backend.retrieve("Contract_", mode=mode)
    assert [(e.key, e.score) for e in results] == [("contract_date", 0.7), ("contract_type", 0.7)]
    results = await backend.retrieve("acme", mode=mode)
    assert [(e.key, e.score, e.value) for e in results] == [("parties", 0.4, "Acme Corp, Beta LLC")]
    assert await backend.retrieve("nothing like it", mode=mode) == []


async def test_exact_scores_match_seed_scoring(backend: MemoryBackend, clock: FakeClock) -> None:
    mode = exact_mode(backend)
    values: dict[str, Any] = {
        "Risk": "low",
        "risk_score": 0.35,
        "summary": {"finding": "Risk is low", "parties": ["Acme"]},
        "notes": ["no risk here"],
        "count": 3,
    }
    for key, value in values.items():
        await backend.store(key, value)
        clock.advance(1)
    for query in ["risk", "RISK", "acme", "0.3", "3", "", "no", "missing"]:
        got = await backend.retrieve(query, top_k=10, mode=mode)
        want = sorted(
            (
                (seed_score(query.lower(), key, value), i, key)
                for i, (key, value) in enumerate(values.items())
                if seed_score(query.lower(), key, value) > 0
            ),
            key=lambda t: (-t[0], -t[1]),
        )
        assert [(e.key, e.score) for e in got] == [(k, s) for s, _, k in want], query


async def test_exact_ties_keep_first_store_order(backend: MemoryBackend) -> None:
    mode = exact_mode(backend)
    for key in ["note_b", "note_a", "note_c"]:
        await backend.store(key, "same instant")
    await backend.store("note_b", "overwritten, keeps its place")
    assert keys(await backend.retrieve("note", mode=mode)) == ["note_b", "note_a", "note_c"]


async def test_overwrite_replaces(backend: MemoryBackend, clock: FakeClock) -> None:
    await backend.store("k", "first version")
    clock.advance(5)
    await backend.store("k", "second version", {"v": 2})
    assert await backend.count() == 1
    entry = await backend.get("k")
    assert entry is not None
    assert (entry.value, entry.metadata, entry.timestamp) == ("second version", {"v": 2}, clock.now)
    if "exact" in backend.capabilities.retrieval:
        assert await backend.retrieve("first", mode="exact") == []
        assert keys(await backend.retrieve("second", mode="exact")) == ["k"]
    if "keyword" in backend.capabilities.retrieval:
        assert await backend.retrieve("first", mode="keyword") == []


async def test_clear_returns_counts(backend: MemoryBackend) -> None:
    await backend.store("a", 1, {"scope": "S"})
    await backend.store("b", 2, {"scope": "S"})
    await backend.store("c", 3, {"scope": "T"})
    await backend.store("d", 4)
    assert await backend.clear("S") == 2
    assert await backend.clear("S") == 0
    assert await backend.count() == 2
    assert await backend.clear() == 2
    assert await backend.count() == 0


# ---------------------------------------------------------------------- scopes


async def test_scopes_are_isolated(backend: MemoryBackend) -> None:
    await backend.store("research_summary", "Quantum knowledge", {"scope": "ResearchKnowledge"})
    await backend.store("legal_precedent", "Smith v. Jones knowledge", {"scope": "LegalKnowledge"})
    await backend.store("shared", "in research", {"scope": "ResearchKnowledge"})
    await backend.store("shared", "in legal", {"scope": "LegalKnowledge"})
    for mode in sorted(backend.capabilities.retrieval):
        for query in ["quantum", "knowledge", "shared", "smith"]:
            results = await backend.retrieve(query, 10, "ResearchKnowledge", mode=mode)
            assert all(e.metadata["scope"] == "ResearchKnowledge" for e in results), mode
    research = await backend.get("shared", "ResearchKnowledge")
    legal = await backend.get("shared", "LegalKnowledge")
    assert research is not None and research.value == "in research"
    assert legal is not None and legal.value == "in legal"
    assert await backend.get("shared") is None
    assert await backend.count("ResearchKnowledge") == 2
    assert await backend.count("Nowhere") == 0
    assert await backend.retrieve("knowledge", scope="Nowhere") == []


async def test_unscoped_retrieve_searches_every_scope(backend: MemoryBackend) -> None:
    mode = exact_mode(backend)
    await backend.store("research_summary", "Quantum knowledge", {"scope": "ResearchKnowledge"})
    await backend.store("legal_precedent", "Smith knowledge", {"scope": "LegalKnowledge"})
    await backend.store("plain", "no scope knowledge")
    found = await backend.retrieve("knowledge", scope=None, mode=mode)
    assert sorted(keys(found)) == ["legal_precedent", "plain", "research_summary"]
    assert keys(await backend.retrieve("quantum", scope="ResearchKnowledge", mode=mode)) == [
        "research_summary"
    ]


# ---------------------------------------------------------------------- owned lifetimes

OWNER_A = Owner("host-a", 101, "boot-1", "aaaa")
OWNER_B = Owner("host-a", 102, "boot-2", "bbbb")


async def test_scopes_lists_exactly_the_scopes_with_a_prefix(backend: MemoryBackend) -> None:
    """`scopes(prefix)` finds owned scopes for the sweep; nothing else, none missing."""
    owned = [
        OWNER_A.scope("session", "Notes"),
        OWNER_A.scope("ephemeral", "Notes"),
        OWNER_B.scope("session", "Notes"),
        OWNER_B.scope("session", "odd|name"),
    ]
    for scope in owned:
        await backend.store("k", "owned text", {"scope": scope})
    for other in ["Notes", "~axon", "~axom|x", "~axo", "zzz", ""]:
        await backend.store("k", "other text", {"scope": other})
    await backend.store("k", "unscoped text")
    assert await backend.scopes(OWNED_MARKER) == sorted(owned)
    assert await backend.scopes(OWNER_A.prefix) == sorted(owned[:2])
    assert await backend.scopes(OWNER_B.prefix + "session|") == sorted(owned[2:])
    assert await backend.scopes("nothing-here") == []
    await backend.clear(scope=owned[0])
    assert await backend.scopes(OWNER_A.prefix) == [owned[1]]
    assert [parse_owned(s) for s in await backend.scopes(OWNER_B.prefix)] == [
        OwnedScope(OWNER_B, "session", "Notes"),
        OwnedScope(OWNER_B, "session", "odd|name"),
    ]


async def test_owned_scopes_are_isolated_from_the_memory_name(backend: MemoryBackend) -> None:
    """A session memory `Notes` and a persistent `Notes` never see or clear each other."""
    session_scope = OWNER_A.scope("session", "Notes")
    await backend.store("shared", "persistent budget note", {"scope": "Notes"})
    await backend.store("shared", "session budget note", {"scope": session_scope})
    await backend.store("mine", "session budget only", {"scope": OWNER_B.scope("session", "Notes")})
    for mode in sorted(backend.capabilities.retrieval):
        found = await backend.retrieve("budget note", 10, "Notes", mode=mode)
        assert [e.value for e in found] == ["persistent budget note"], mode
        found = await backend.retrieve("budget note", 10, session_scope, mode=mode)
        assert [e.value for e in found] == ["session budget note"], mode
    assert await backend.clear(scope=session_scope) == 1
    assert await backend.count("Notes") == 1
    assert await backend.count(OWNER_B.scope("session", "Notes")) == 1


async def test_purges_are_reported_per_scope(backend: MemoryBackend, clock: FakeClock) -> None:
    """Every purge that removes rows reaches the purge listener (the `memory_expire` events)."""
    reports: list[tuple[int, Mapping[str | None, int] | None]] = []
    backend.set_purge_listener(lambda count, by_scope: reports.append((count, by_scope)))
    await backend.store("a", "x", {"scope": "S"}, expires_at=clock.now + 5)
    await backend.store("b", "x", {"scope": "S"}, expires_at=clock.now + 5)
    await backend.store("c", "x", {"scope": "T"}, expires_at=clock.now + 5)
    await backend.store("d", "x", {"scope": "T"})
    reports.clear()  # a backend may purge on its own while storing: nothing expired yet
    assert await backend.purge_expired() == 0
    assert reports == []
    clock.advance(6)
    assert await backend.purge_expired() == 3
    assert reports == [(3, {"S": 2, "T": 1})]


# ---------------------------------------------------------------------- expiry


async def test_expired_entries_are_invisible(backend: MemoryBackend, clock: FakeClock) -> None:
    start = clock.now
    await backend.store("short", "lived text", {"scope": "S"}, expires_at=start + 10)
    await backend.store("long", "lived text", {"scope": "S"}, expires_at=start + 100)
    await backend.store("forever", "lived text", {"scope": "S"})
    clock.advance(9.999)
    assert await backend.count("S") == 3
    clock.now = start + 10  # invisible from t + d on, not after
    assert await backend.get("short", "S") is None
    assert await backend.count("S") == 2
    assert "short" not in keys(await backend.list_entries("S"))
    for mode in sorted(backend.capabilities.retrieval):
        found = await backend.retrieve("lived", 10, "S", mode=mode)
        assert "short" not in keys(found), mode
    if "exact" in backend.capabilities.retrieval:
        assert await backend.retrieve("short", 10, "S", mode="exact") == []


async def test_purge_expired_counts(backend: MemoryBackend, clock: FakeClock) -> None:
    await backend.store("a", "x", expires_at=clock.now + 5)
    await backend.store("b", "x", {"scope": "S"}, expires_at=clock.now + 5)
    await backend.store("c", "x", expires_at=clock.now + 50)
    await backend.store("d", "x")
    await backend.store("e", "x", expires_at=clock.now + 5)
    await backend.store("e", "x, now forever")  # replaced: no longer expires
    assert await backend.purge_expired() == 0
    clock.advance(6)
    assert await backend.purge_expired() == 2
    assert await backend.purge_expired() == 0
    assert sorted(keys(await backend.list_entries())) == ["c", "d", "e"]
    clock.advance(100)
    assert await backend.purge_expired() == 1
    assert await backend.count() == 2


# ---------------------------------------------------------------------- batch


async def test_store_many(backend: MemoryBackend, clock: FakeClock) -> None:
    stored = await backend.store_many(
        [
            NewEntry("a", "alpha", {"scope": "S"}),
            NewEntry("b", "beta", {"scope": "S"}, expires_at=clock.now + 60),
            NewEntry("a", "alpha again", {"scope": "T"}),
        ]
    )
    assert [(e.key, e.scope) for e in stored] == [("a", "S"), ("b", "S"), ("a", "T")]
    assert await backend.count("S") == 2
    assert await backend.count("T") == 1
    entry = await backend.get("b", "S")
    assert entry is not None and entry.expires_at == clock.now + 60


@pytest.mark.parametrize(
    "bad",
    [
        NewEntry("", "empty key"),
        NewEntry("k", object()),
        NewEntry("k", {1, 2}),
        NewEntry("k", math.nan),
        NewEntry("k", {"nested": [1, math.inf]}),
        NewEntry("k", "x" * (MAX_VALUE_BYTES + 1)),
        NewEntry("k", "fine", {"bad": object()}),
    ],
    ids=["empty-key", "object", "set", "nan", "inf", "huge", "bad-metadata"],
)
async def test_a_bad_item_stores_nothing(backend: MemoryBackend, bad: NewEntry) -> None:
    await backend.store("existing", "kept", {"scope": "S"})
    before = await snapshot(backend)
    with pytest.raises(AxonMemoryError):
        await backend.store_many(
            [NewEntry("good1", "fine", {"scope": "S"}), bad, NewEntry("existing", "changed")]
        )
    assert await snapshot(backend) == before
    with pytest.raises(AxonMemoryError):
        await backend.store(bad.key, bad.value, dict(bad.metadata or {}))
    assert await snapshot(backend) == before


# ---------------------------------------------------------------------- bad input


async def test_bad_values_name_memory_and_key(backend: MemoryBackend) -> None:
    with pytest.raises(AxonMemoryError) as info:
        await backend.store("the_key", object(), {"scope": "Notes"})
    assert info.value.memory == "Notes" and info.value.key == "the_key"
    assert "object" in str(info.value) and "'Notes'" in str(info.value)
    with pytest.raises(AxonMemoryError) as info:
        await backend.store("big", "x" * (MAX_VALUE_BYTES + 10), {"scope": "Notes"})
    assert info.value.key == "big" and "too large" in str(info.value)
    with pytest.raises(ValueError, match="Memory key must not be empty"):
        await backend.store("", "value", {"scope": "Notes"})
    assert await backend.count() == 0


async def test_a_key_that_is_not_valid_unicode_is_refused_and_names_nothing(
    backend: MemoryBackend,
) -> None:
    """A key with an unpaired surrogate cannot be stored (the error names the memory),
    so reading or deleting it finds nothing: never an encoding error from the store."""
    bad = "k\udfff"
    with pytest.raises(AxonMemoryError, match="unpaired surrogate") as info:
        await backend.store(bad, "value", {"scope": "Notes"})
    assert info.value.memory == "Notes"
    assert await backend.get(bad, "Notes") is None
    assert await backend.delete(bad, "Notes") is False
    assert await backend.count() == 0


@pytest.mark.parametrize("top_k", [0, -1, True, 2.5, "3"])
async def test_bad_top_k(backend: MemoryBackend, top_k: Any) -> None:
    await backend.store("k", "v", {"scope": "Notes"})
    with pytest.raises(AxonMemoryError) as info:
        await backend.retrieve("k", top_k=top_k, scope="Notes")
    assert info.value.memory == "Notes"
    assert await backend.count() == 1


async def test_unsupported_mode_is_an_error(backend: MemoryBackend) -> None:
    with pytest.raises(AxonMemoryError):
        await backend.retrieve("q", mode="telepathy")


ODD_QUERIES = [
    '"', "NEAR(", "*", "AND", "a\x00b", "a\udfffb", "'; DROP TABLE x; --", "x" * 100_000
]
"""Query-language syntax of the stores (FTS5, tsquery, SQL, LIKE) and sizes that strain them."""


async def test_odd_queries_are_plain_text(backend: MemoryBackend, clock: FakeClock) -> None:
    """Syntax in a query is text: each odd query finds what it finds on the reference
    backend (in-memory; `exact` with the same scores, other modes the same entries),
    and words beside it still find their entry, in every mode."""
    reference = in_memory_reference(BackendEnv(Path(), clock, HashingEmbedder()))
    entries = [
        NewEntry("syntax", "quotes \" and ' and NEAR( and * AND OR"),
        NewEntry("report", "quarterly revenue grew"),
    ]
    await backend.store_many(entries)
    await reference.store_many(entries)
    try:
        for mode in sorted(backend.capabilities.retrieval):
            for odd in ODD_QUERIES:
                # "AND" alone is a query of stop words only: its own test, below.
                alone = () if odd == "AND" else (odd,)
                for query in (*alone, f"revenue {odd}", f"{odd} revenue"):
                    found = await backend.retrieve(query, mode=mode)
                    expected = await reference.retrieve(query, mode=mode)
                    where = f"{mode} {query[:40]!r}"
                    if mode == "exact":
                        assert [(e.key, e.score) for e in found] == [
                            (e.key, e.score) for e in expected
                        ], where
                    else:
                        assert sorted(keys(found)) == sorted(keys(expected)), where
                    if query != odd and mode != "exact":
                        assert "report" in keys(found), where
            # The odd texts are stored values too: an exact query finds them as substrings.
            if mode == "exact":
                for odd in ('"', "NEAR(", "*", "AND"):
                    assert keys(await backend.retrieve(odd, mode=mode)) == ["syntax"], odd
    finally:
        await reference.close()


async def test_text_after_a_nul_is_found_as_on_the_reference(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """A value holding NUL ("alpha\\x00beta") is found by what follows the NUL too, with
    the reference's scores in every mode: stores whose string functions stop at a NUL
    must not lose the rest of the text (nor score it 0)."""
    reference = in_memory_reference(BackendEnv(Path(), clock, HashingEmbedder()))
    entries = [NewEntry("nul", "alpha\x00beta"), NewEntry("other", "a b gamma")]
    await backend.store_many(entries)
    await reference.store_many(entries)
    try:
        for mode in sorted(backend.capabilities.retrieval):
            for query in ("beta", "ta", "alpha", "a\x00b", "a b", "gamma"):
                found = await backend.retrieve(query, mode=mode)
                expected = await reference.retrieve(query, mode=mode)
                assert [(e.key, round(e.score, 4)) for e in found] == [
                    (e.key, round(e.score, 4)) for e in expected
                ], f"{mode} {query!r}"
    finally:
        await reference.close()


async def test_a_query_of_stop_words_only_matches_those_words(
    backend: MemoryBackend,
) -> None:
    """Stop words are dropped from a query unless nothing else is left: then they are
    the query (`retrieval.text.query_terms`), on every backend."""
    await backend.store_many(
        [NewEntry("hat", "the cat and the hat"), NewEntry("report", "quarterly revenue grew")]
    )
    for mode in sorted({"keyword", "hybrid"} & backend.capabilities.retrieval):
        for query in ("and", "AND", "the", "and the"):
            assert keys(await backend.retrieve(query, mode=mode))[:1] == ["hat"], (mode, query)
    assert keys(await backend.retrieve("AND revenue", mode="keyword")) == ["report"]


async def test_closed_backend_refuses_work(backend: MemoryBackend) -> None:
    await backend.store("k", "v")
    await backend.close()
    await backend.close()  # idempotent
    with pytest.raises(AxonMemoryError, match="closed"):
        await backend.store("k2", "v")
    with pytest.raises(AxonMemoryError, match="closed"):
        await backend.retrieve("k")
    with pytest.raises(AxonMemoryError, match="closed"):
        await backend.count()


# ---------------------------------------------------------------------- get / delete / list / count


async def test_get_delete_list_count(backend: MemoryBackend, clock: FakeClock) -> None:
    for i in range(5):
        await backend.store(f"k{i}", f"value {i}", {"scope": "S"})
        clock.advance(1)
    await backend.store("other", "x", {"scope": "T"})
    assert await backend.count() == 6
    assert await backend.count("S") == 5
    assert keys(await backend.list_entries("S")) == ["k4", "k3", "k2", "k1", "k0"]
    assert keys(await backend.list_entries("S", limit=2, offset=1)) == ["k3", "k2"]
    assert keys(await backend.list_entries()) == ["other", "k4", "k3", "k2", "k1", "k0"]
    entry = await backend.get("k2", "S")
    assert entry is not None and entry.value == "value 2"
    assert await backend.get("k2") is None  # scope is part of the identity
    assert await backend.delete("k2", "S") is True
    assert await backend.delete("k2", "S") is False
    assert await backend.get("k2", "S") is None
    assert await backend.count("S") == 4
    if "exact" in backend.capabilities.retrieval:
        assert await backend.retrieve("value 2", scope="S", mode="exact") == []


async def test_values_round_trip(backend: MemoryBackend) -> None:
    values: list[Any] = [
        "text",
        "",
        "ünïcödé ✓",
        0,
        -7,
        3.25,
        True,
        None,
        [1, "two", [3.0]],
        {"a": {"b": [1, 2]}, "c": None},
    ]
    for i, value in enumerate(values):
        await backend.store(f"k{i}", value, {"scope": "S", "tags": ["x"], "importance": 0.5})
    for i, value in enumerate(values):
        entry = await backend.get(f"k{i}", "S")
        assert entry is not None
        assert entry.value == value and type(entry.value) is type(value)
        assert entry.metadata == {"scope": "S", "tags": ["x"], "importance": 0.5}


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
            found = await backend.retrieve("quarterly report", 50, "S", mode=mode,
                                           filters=filters)
            assert sorted(keys(found)) == wanted, (mode, filters)
        few = await backend.retrieve("quarterly report", 1, "S", mode=mode,
                                     filters={"importance": {"gte": 0.75}})
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
    """LANGUAGE.md §6: same mode, same entries, same scores (within 1e-6) on every backend."""
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




# ---------------------------------------------------------------------- keyset paging (list_page)


async def _walk(
    backend: MemoryBackend, scope: str | None, limit: int, *, oldest_first: bool = False
) -> list[str]:
    found: list[str] = []
    cursor = None
    for _ in range(1000):  # a cursor that does not advance fails, rather than hangs
        page = await backend.list_page(scope, limit=limit, after=cursor, oldest_first=oldest_first)
        assert len(page.entries) <= limit
        found += keys(page.entries)
        if page.cursor is None:
            return found
        assert page.entries, "a page with a cursor has entries"
        cursor = page.cursor
    raise AssertionError(f"paging did not end: {found[:20]}...")


async def test_list_page_walks_the_listing_order_both_ways(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """Pages of every size give `list_entries`' order (newest first, ties in listing
    order) and, oldest first, the same runs of ties in the same order."""
    for batch in range(5):
        await backend.store_many(
            [NewEntry(f"b{batch}-{i}", f"text {i}", {"scope": "S"}) for i in range(7)]
        )
        await backend.store(f"solo{batch}", "alone", {"scope": "S"})
        clock.advance(1)
    await backend.store("elsewhere", "other scope", {"scope": "T"})
    await backend.store("soon", "expires", {"scope": "S"}, expires_at=clock.now + 1)
    clock.advance(2)
    listed = keys(await backend.list_entries("S"))
    assert len(listed) == 40 and "soon" not in listed
    by_time: dict[float, list[str]] = {}
    for entry in await backend.list_entries("S"):
        by_time.setdefault(entry.timestamp, []).append(entry.key)
    oldest = [key for stamp in sorted(by_time) for key in by_time[stamp]]
    for limit in (1, 3, 7, 8, 40, 100):
        assert await _walk(backend, "S", limit) == listed
        assert await _walk(backend, "S", limit, oldest_first=True) == oldest
    everything = await _walk(backend, None, 6)
    assert sorted(everything) == sorted([*listed, "elsewhere"])
    assert (await backend.list_page("nothing", limit=5)).entries == []


async def test_list_page_under_concurrent_writes_and_deletes(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """Writes and deletes between pages: no entry twice, none skipped that stayed."""
    await backend.store_many([NewEntry(f"tie{i}", i, {"scope": "S"}) for i in range(30)])
    clock.advance(1)
    for i in range(30):
        await backend.store(f"k{i}", i, {"scope": "S"})
        clock.advance(1 if i % 3 else 0)
    initial = keys(await backend.list_entries("S"))
    for oldest_first in (False, True):
        deleted: set[str] = set()
        seen: list[str] = []
        cursor = None
        step = 0
        while step < 100:  # a cursor that does not advance fails, rather than hangs
            page = await backend.list_page(
                "S", limit=4, after=cursor, oldest_first=oldest_first
            )
            seen += keys(page.entries)
            if page.cursor is None:
                break
            cursor = page.cursor
            step += 1
            # Delete one already seen and one not yet seen; add new entries, some
            # with the current timestamp (ties with what is being paged).
            victims = [seen[0], initial[(step * 7) % len(initial)]]
            for victim in victims:
                if victim not in deleted and await backend.delete(victim, "S"):
                    deleted.add(victim)
            await backend.store(f"new{oldest_first}{step}", step, {"scope": "S"})
            await backend.store_many(
                [NewEntry(f"tie-new{oldest_first}{step}", step, {"scope": "S"}, None, 1.0)]
            )
            clock.advance(1)
        assert step < 100, "paging did not end"
        assert len(seen) == len(set(seen)), "an entry came twice"
        stayed = [key for key in initial if key not in deleted]
        assert set(stayed) <= set(seen), set(stayed) - set(seen)
        for key in deleted:
            await backend.store(key, "back", {"scope": "S"})
        initial = keys(await backend.list_entries("S"))


async def test_list_page_refuses_a_foreign_cursor(backend: MemoryBackend) -> None:
    for i in range(3):
        await backend.store(f"k{i}", i, {"scope": "S"})
    page = await backend.list_page("S", limit=1)
    assert page.cursor is not None
    for bad in ("not a cursor", "", "x" * 500, 17):
        with pytest.raises(AxonMemoryError, match="not a cursor of this listing"):
            await backend.list_page("S", limit=1, after=bad)  # type: ignore[arg-type]
    with pytest.raises(AxonMemoryError, match="not a cursor of this listing"):
        await backend.list_page("S", limit=1, after=page.cursor, oldest_first=True)
    with pytest.raises(AxonMemoryError, match="limit must be a positive integer"):
        await backend.list_page("S", limit=0)


# ---------------------------------------------------------------------- stored vectors


async def test_read_vectors_gives_the_stored_vectors_of_current_texts(
    backend: MemoryBackend, backend_env: BackendEnv
) -> None:
    """`read_vectors` returns what the embedder made for each entry's current text;
    an entry stored again with a new text has none until it is embedded again."""
    if "semantic" not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no semantic retrieval")
    embedder = backend_env.embedder
    texts = {f"k{i}": f"note number {i} about {['rivers', 'stones', 'lamps'][i % 3]}"
             for i in range(12)}
    await backend.store_many([NewEntry(k, v, {"scope": "S"}) for k, v in texts.items()])
    await backend.store("other", "note number 1 about rivers", {"scope": "T"})
    assert await backend.read_vectors("S", list(texts), embedder.model_id) == {}
    assert await backend.ensure_vectors("S") == 12
    found = await backend.read_vectors("S", [*texts, "missing", "other"], embedder.model_id)
    assert set(found) == set(texts)
    expected = embedder.embed_passages(list(texts.values()))
    for i, key in enumerate(texts):
        assert found[key].dtype.name == "float32"
        assert found[key].tolist() == pytest.approx(expected[i].tolist(), abs=1e-6)
    assert await backend.read_vectors("S", list(texts), "another-model:64") == {}
    await backend.store("k0", "an entirely new text", {"scope": "S"})
    again = await backend.read_vectors("S", list(texts), embedder.model_id)
    assert set(again) == set(texts) - {"k0"}


class _CountingEmbedder(HashingEmbedder):
    """`HashingEmbedder` that counts the passages it embeds."""

    passages = 0

    def embed_passages(self, texts: Any) -> Any:
        self.passages += len(texts)
        return super().embed_passages(texts)


async def test_write_vectors_keeps_vectors_so_nothing_is_embedded_again(
    backend: MemoryBackend, backend_env: BackendEnv
) -> None:
    """Vectors written for stored entries are searched as if embedded here."""
    if "semantic" not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no semantic retrieval")
    counting = _CountingEmbedder(backend_env.embedder.dim)
    backend.embedder = counting
    texts = {f"k{i}": f"entry {i} about {['rivers', 'stones', 'lamps'][i % 3]}"
             for i in range(9)}
    await backend.store_many([NewEntry(k, v, {"scope": "S"}) for k, v in texts.items()])
    vectors = HashingEmbedder(counting.dim).embed_passages(list(texts.values()))
    written = await backend.write_vectors(
        "S", counting.model_id, [(key, vectors[i]) for i, key in enumerate(texts)]
        + [("no-such-key", vectors[0])],
    )
    assert written == 9
    found = await backend.retrieve("stones", 3, "S", mode="semantic")
    assert counting.passages == 0
    assert {e.key for e in found} <= set(texts) and len(found) == 3
    assert found[0].value.endswith("stones")


__all__ = [  # what `from axon.testing.conformance import *` takes: the fixtures and every test
    "backend_env",
    "clock",
    *sorted(name for name in dict(globals()) if name.startswith("test_")),
]
