"""The backend contract, entries: identity, store and retrieve, scopes, owned lifetimes,
expiry, batches, bad input, get / delete / list / count (part of `conformance`).
"""

from __future__ import annotations

import asyncio
import collections
import enum
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import (
    MAX_INT_DIGITS,
    MAX_NESTING_DEPTH,
    MAX_VALUE_BYTES,
    Ago,
    NewEntry,
    updated_window,
)
from axon.memory.lifetimes import OWNED_MARKER, OwnedScope, Owner, parse_owned
from axon.memory.registry import registry
from axon.memory.retrieval.exact import seed_score
from axon.testing import BackendEnv, FakeClock, in_memory_reference
from axon.testing.contract_helpers import exact_mode, keys, snapshot


def _nested(depth: int) -> list[Any]:
    """A list holding a list ... `depth` lists deep in all (`[[[]]]` is 3)."""
    root: list[Any] = []
    inner = root
    for _ in range(depth - 1):
        inner.append([])
        inner = inner[0]
    return root


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


async def test_stored_again_keeps_created_at_and_moves_updated_at(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """`created_at` is an entry's first write, `updated_at` (`timestamp`) its last: a
    store of a live key keeps the first, through `store`, `store_many` and `write_links`
    alike (the entry `write_links` returns says so); every read (get, list, page,
    recall) gives both; newest first is by the last."""
    first = clock.now
    stored = await backend.store("a", "one", {"scope": "S"})
    assert (stored.created_at, stored.updated_at, stored.timestamp) == (first, first, first)
    clock.advance(5)
    await backend.store("b", "two", {"scope": "S"})
    clock.advance(5)
    await backend.store("a", "one again", {"scope": "S"})
    entry = await backend.get("a", "S")
    assert entry is not None
    assert (entry.value, entry.created_at, entry.updated_at) == ("one again", first, clock.now)
    assert [e.key for e in await backend.list_entries("S")] == ["a", "b"]
    [listed] = [e for e in await backend.list_entries("S") if e.key == "a"]
    assert (listed.created_at, listed.updated_at) == (first, clock.now)
    page = await backend.list_page("S", limit=1)
    assert [(e.key, e.created_at) for e in page.entries] == [("a", first)]
    [found] = await backend.retrieve("again", 1, "S", mode=backend.default_mode)
    assert (found.key, found.created_at, found.updated_at) == ("a", first, clock.now)
    clock.advance(5)
    [batched] = await backend.store_many([NewEntry("a", "three", {"scope": "S"})])
    linked = await backend.write_links("S", store=NewEntry("b", "two again", {"scope": "S"}))
    assert linked.stored is not None and linked.stored.created_at == first + 5
    for key, created in (("a", first), ("b", first + 5)):
        entry = await backend.get(key, "S")
        assert entry is not None and (entry.created_at, entry.updated_at) == (created, clock.now)
    assert batched.updated_at == clock.now


async def test_created_at_restarts_after_expiry_and_can_be_given(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """A key stored again after its entry expired is a first write; a `NewEntry` that
    gives `created_at` (an import's) is stored with it, new or replacing a live entry."""
    await backend.store("gone", "old", {"scope": "S"}, expires_at=clock.now + 1)
    clock.advance(2)
    again = await backend.store("gone", "new", {"scope": "S"})
    assert again.created_at == clock.now
    entry = await backend.get("gone", "S")
    assert entry is not None and entry.created_at == clock.now
    given = [
        NewEntry("x", 1, {"scope": "S"}, timestamp=clock.now - 10, created_at=clock.now - 100),
        NewEntry("gone", 2, {"scope": "S"}, created_at=clock.now - 50),
    ]
    await backend.store_many(given)
    x = await backend.get("x", "S")
    assert x is not None and (x.created_at, x.updated_at) == (clock.now - 100, clock.now - 10)
    gone = await backend.get("gone", "S")
    assert gone is not None and (gone.created_at, gone.updated_at) == (clock.now - 50, clock.now)
    with pytest.raises(AxonMemoryError, match="created_at must be a finite number"):
        await backend.store_many([NewEntry("y", 1, {"scope": "S"}, created_at=math.inf)])


async def test_update_changes_what_it_is_given_in_place(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """`update(key, scope, change)`: the live entry in, its replacement written as a
    store would, `created_at` and context kept, `updated_at` now; None when there is no
    live entry (nothing written)."""
    first = clock.now
    await backend.store("a", "one", {"scope": "S", "n": 1}, expires_at=first + 100)
    clock.advance(5)
    await backend.store("b", "two", {"scope": "S"})
    clock.advance(5)
    seen: list[Any] = []

    def change(old: Any) -> NewEntry:
        seen.append((old.value, old.metadata, old.expires_at))
        return NewEntry(old.key, "one, changed", old.metadata, old.expires_at)

    done = await backend.update("a", "S", change)
    assert seen == [("one", {"scope": "S", "n": 1}, first + 100)]
    assert done is not None
    assert (done.value, done.created_at, done.updated_at) == ("one, changed", first, clock.now)
    entry = await backend.get("a", "S")
    assert entry is not None
    assert (entry.value, entry.metadata, entry.expires_at) == (
        "one, changed", {"scope": "S", "n": 1}, first + 100
    )
    assert (entry.created_at, entry.updated_at) == (first, clock.now)
    assert [e.key for e in await backend.list_entries("S")] == ["a", "b"]  # newest: updated
    if "exact" in backend.capabilities.retrieval:
        assert keys(await backend.retrieve("changed", mode="exact")) == ["a"]
    assert await backend.update("missing", "S", change) is None
    assert await backend.update("a", "T", change) is None  # another scope
    clock.advance(200)
    assert await backend.update("a", "S", change) is None  # expired
    assert len(seen) == 1


async def test_update_that_fails_writes_nothing(backend: MemoryBackend) -> None:
    await backend.store("a", "one", {"scope": "S"})

    def refuse(old: Any) -> NewEntry:
        raise AxonMemoryError("no", memory="S", key="a")

    with pytest.raises(AxonMemoryError, match="no"):
        await backend.update("a", "S", refuse)
    with pytest.raises(AxonMemoryError, match="S"):
        await backend.update("a", "S", lambda old: NewEntry("a", {1, 2}, old.metadata))
    huge = "x" * (MAX_VALUE_BYTES + 1)
    with pytest.raises(AxonMemoryError):
        await backend.update("a", "S", lambda old: NewEntry("a", huge, old.metadata))
    entry = await backend.get("a", "S")
    assert entry is not None and entry.value == "one"


async def test_updates_are_not_lost(backend: MemoryBackend) -> None:
    """Each update reads what the one before wrote (a counter counts every one)."""
    await backend.store("n", 0, {"scope": "S"})

    def bump(old: Any) -> NewEntry:
        return NewEntry("n", old.value + 1, old.metadata)

    await asyncio.gather(*(backend.update("n", "S", bump) for _ in range(20)))
    entry = await backend.get("n", "S")
    assert entry is not None and entry.value == 20


async def test_the_updated_window_keeps_entries_last_written_in_it(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """`{UPDATED_WINDOW: (since, until)}` in the filters (`updated_window`) keeps the
    entries whose `updated_at` is in `[since, until)`, in list_matching and in every
    retrieval mode, with metadata filters beside it; a store again moves an entry in."""
    start = clock.now
    for i in range(6):  # k0 at start, k1 at start + 10, ...
        await backend.store(f"k{i}", f"apple note {i}", {"scope": "S", "g": i % 2})
        clock.advance(10)
    window = updated_window(start + 10, start + 40)  # k1, k2, k3
    listed = await backend.list_matching("S", window)
    assert [e.key for e in listed] == ["k3", "k2", "k1"]
    both = {**window, "g": 1}
    assert [e.key for e in await backend.list_matching("S", both)] == ["k3", "k1"]
    assert [e.key for e in await backend.list_matching("S", updated_window(start + 40, None))] == [
        "k5", "k4"
    ]
    assert [e.key for e in await backend.list_matching("S", updated_window(None, start + 10))] == [
        "k0"
    ]
    for mode in sorted(backend.capabilities.retrieval):
        found = await backend.retrieve("apple note", 10, "S", mode=mode, filters=window,
                                       min_score=0)
        assert sorted(e.key for e in found) == ["k1", "k2", "k3"], mode
        found = await backend.retrieve("apple note", 10, "S", mode=mode, filters=both,
                                       min_score=0)
        assert sorted(e.key for e in found) == ["k1", "k3"], mode
    await backend.store("k0", "apple note again", {"scope": "S", "g": 0})  # now: outside
    assert [e.key for e in await backend.list_matching("S", window)] == ["k3", "k2", "k1"]
    later = updated_window(clock.now, None)
    assert [e.key for e in await backend.list_matching("S", later)] == ["k0"]
    recent = updated_window(Ago(25), None)  # 25 s before the backend's now: k4, k5, k0
    assert [e.key for e in await backend.list_matching("S", recent)] == ["k0", "k5", "k4"]
    found = await backend.retrieve("apple", 10, "S", filters=recent, min_score=0)
    assert sorted(e.key for e in found) == ["k0", "k4", "k5"]


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
        NewEntry("k", _nested(MAX_NESTING_DEPTH + 1)),
        NewEntry("k", "fine", {"deep": _nested(5000)}),
    ],
    ids=["empty-key", "object", "set", "nan", "inf", "huge", "bad-metadata", "deep", "deep-meta"],
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


async def test_nesting_past_the_limit_is_refused_naming_memory_and_key(
    backend: MemoryBackend,
) -> None:
    """Data nested deeper than `MAX_NESTING_DEPTH` lists or dicts is a clear error (it was
    a RecursionError at 5,000 levels); the limit itself is stored and read back."""
    with pytest.raises(AxonMemoryError, match="nested too deeply") as info:
        await backend.store("deep", _nested(5000), {"scope": "Notes"})
    assert info.value.memory == "Notes" and info.value.key == "deep"
    with pytest.raises(AxonMemoryError, match=r"metadata\['x'\] is nested too deeply"):
        await backend.store("deep", "v", {"scope": "Notes", "x": {"a": _nested(5000)}})
    await backend.store("edge", _nested(MAX_NESTING_DEPTH - 1), {"scope": "Notes"})
    entry = await backend.get("edge", "Notes")
    assert entry is not None and entry.value == _nested(MAX_NESTING_DEPTH - 1)
    assert await backend.count() == 1


async def test_an_int_of_more_than_4300_digits_is_refused_naming_memory_and_key(
    backend: MemoryBackend,
) -> None:
    """An int JSON cannot write (more than `MAX_INT_DIGITS` digits: Python's limit on int
    to text) is a clear error, not a raw ValueError; the limit itself round-trips."""
    huge = 10**MAX_INT_DIGITS
    with pytest.raises(AxonMemoryError, match="int of more than 4,300 digits") as info:
        await backend.store("big", [huge], {"scope": "Notes"})
    assert info.value.memory == "Notes" and info.value.key == "big"
    with pytest.raises(AxonMemoryError, match=r"metadata\['n'\] is an int of more"):
        await backend.store("big", "v", {"scope": "Notes", "n": -huge})
    await backend.store("edge", huge - 1, {"scope": "Notes", "n": 1 - huge})
    entry = await backend.get("edge", "Notes")
    assert entry is not None and entry.value == huge - 1 and entry.metadata["n"] == 1 - huge
    assert await backend.count() == 1


class _Level(enum.IntEnum):
    HIGH = 3


class _Color(str, enum.Enum):  # noqa: UP042 (the mixin, not StrEnum: what is tested)
    RED = "red"


class _Float(float):
    """A float subclass, as numpy.float64 is."""


async def test_subclasses_of_json_types_are_stored_as_plain_json(backend: MemoryBackend) -> None:
    """IntEnum, str Enum, float subclasses, defaultdict and OrderedDict come back as plain
    int, str, float and dict (as JSON would give them), values and metadata alike; the
    caller's containers are copied, so changing them after `store` changes nothing."""
    given: dict[str, Any] = {
        "intenum": _Level.HIGH,
        "strenum": _Color.RED,
        "float": _Float(0.5),
        "ddict": collections.defaultdict(list, {"a": [_Level.HIGH]}),
        "odict": collections.OrderedDict([("b", 1), ("a", _Color.RED)]),
    }
    want: dict[str, Any] = {
        "intenum": 3, "strenum": "red", "float": 0.5, "ddict": {"a": [3]},
        "odict": {"b": 1, "a": "red"},
    }  # fmt: skip
    for key, value in given.items():
        await backend.store(key, value, {"scope": "S", "level": _Level.HIGH, "x": [_Float(1.5)]})
    for key, value in want.items():
        for entry in (await backend.get(key, "S"), *(await backend.list_entries("S"))):
            if entry is None or entry.key != key:
                continue
            assert _plain_types(entry.value) and entry.value == value, key
            assert _plain_types(entry.metadata)
            assert entry.metadata == {"scope": "S", "level": 3, "x": [1.5]}
    mutable: dict[str, Any] = {"list": [1, 2]}
    meta: dict[str, Any] = {"scope": "S", "extra": [1]}
    await backend.store("mutable", mutable, meta)
    mutable["list"].append(3)
    mutable["new"] = 4
    meta["extra"].append(2)
    meta["more"] = True
    entry = await backend.get("mutable", "S")
    assert entry is not None and entry.value == {"list": [1, 2]}
    assert entry.metadata == {"scope": "S", "extra": [1]}


def _plain_types(value: Any) -> bool:
    """Built of exactly str, int, float, bool, None, list and dict, all the way down."""
    if isinstance(value, list) and type(value) is list:
        return all(_plain_types(item) for item in value)
    if isinstance(value, dict) and type(value) is dict:
        return all(type(k) is str and _plain_types(v) for k, v in value.items())
    return value is None or type(value) in (str, int, float, bool)




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


async def test_a_key_holding_nul_is_refused_and_names_nothing(backend: MemoryBackend) -> None:
    """A key with a NUL is refused at the write with the memory and key named, and
    reading or deleting it finds nothing: never the store's own error (PostgreSQL's
    "text fields cannot contain NUL" named neither, and its get/delete raised)."""
    await backend.store("k", "kept", {"scope": "Notes"})
    with pytest.raises(AxonMemoryError, match="must not contain NUL characters") as info:
        await backend.store("k\x00x", "value", {"scope": "Notes"})
    assert info.value.memory == "Notes" and info.value.key == "k\x00x"
    assert await backend.get("k\x00x", "Notes") is None
    assert await backend.get("k\x00x") is None
    assert await backend.delete("k\x00x", "Notes") is False
    assert await backend.delete("k\x00x") is False
    assert [e.key for e in await backend.list_entries()] == ["k"]


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


ODD_QUERIES = ['"', "NEAR(", "*", "AND", "a\x00b", "a\udfffb", "'; DROP TABLE x; --", "x" * 100_000]
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


async def test_timestamps_and_expiry_come_back_bit_exact(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """A stored entry's timestamp and expiry are the floats written, to the last bit
    (an export then import through any backend keeps them): Chroma handed floats back
    rounded (1796189741.1539767 as 1796189741.153977)."""
    stamps = [1796189741.1539767, clock.now + 0.1 + 2**-30, 1e9 + 1 / 3]
    items = [
        NewEntry(
            f"t{i}",
            "v",
            {"scope": "S"},
            expires_at=max(stamp, clock.now) + 86_400.123456789,
            timestamp=stamp,
        )
        for i, stamp in enumerate(stamps)
    ]
    await backend.store_many(items)
    for item in items:
        got = await backend.get(item.key, "S")
        assert got is not None
        assert (got.timestamp.hex(), got.expires_at and got.expires_at.hex()) == (
            float(item.timestamp or 0).hex(),
            float(item.expires_at or 0).hex(),
        )
    listed = {e.key: (e.timestamp, e.expires_at) for e in await backend.list_entries("S")}
    assert listed == {item.key: (item.timestamp, item.expires_at) for item in items}


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


__all__ = sorted(name for name in dict(globals()) if name.startswith("test_"))
