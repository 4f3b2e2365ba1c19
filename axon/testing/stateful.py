"""Every backend against a plain model, over random operation sequences (Hypothesis stateful).

The model is a dict `(scope, key) -> MemoryEntry` (insertion ordered, overwrite
keeps the position: the seed's dict) with the seed's linear-scan scoring. After
each step the backend must agree with it: identical `exact` results (entries,
scores and order), `get`, `count` and listings per scope (newest first, equal
timestamps in first-store order, as exact recall breaks ties); and no operation on one
scope may make another scope return or lose anything (isolation). Entries carry tags
from a small pool, and every recall is generated with a scope (or none), a metadata
filter (or none) and a retrieval mode together: whatever comes back must be live, of
that scope, match that filter and, for keyword retrieval, share a word with the query.
Some scopes are namespaced (`axon.memory.namespaces`): the same checks keep namespaces
apart, `erase` of a namespace must delete it and those below it only, and a paging
cursor of one scope is refused in another.

Where the contract lets backends differ, the model accepts a range: a backend may
sweep expired entries on its own at any time (docs/language.md), so `purge_expired`
returns at most what had expired.

`run_stateful(factory)` runs the machine on the backends a factory makes (one,
cleared between examples); `stateful_test(factory)` wraps that as a pytest test.
Needs hypothesis (`axon-memory[testing]`).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import MemoryEntry, NewEntry, matches_filters, value_text
from axon.memory.namespaces import Namespace
from axon.memory.retrieval.exact import seed_score
from axon.memory.retrieval.text import index_terms, search_terms
from axon.memory.versions import Version
from axon.testing import BackendEnv, BackendFactory, FakeClock

NAMESPACES = ["n", "n/m", "nX"]
"""Namespaces the machine writes in besides the root: a parent, its child, and a sibling
whose label starts with the parent's (its scopes share the parent's characters)."""
SCOPES = ["A", "B", *(Namespace.of(space).scope("A") for space in NAMESPACES)]
"""The root's scopes "A" and "B", and "A" in each namespace (`Namespace.scope`)."""
ALPHABET = "abAB _İé1"

scopes = st.sampled_from(SCOPES)
KEYS = ["a", "ab", "Ab", "b_a", "İx", "note 1", "é", "bab"]
key_text = st.one_of(
    st.sampled_from(KEYS),  # a small pool, so overwrites and ties are common
    st.text(alphabet=ALPHABET, min_size=1, max_size=5),
)
values = st.one_of(
    st.text(alphabet=ALPHABET, max_size=10),
    st.integers(-9, 99),
    st.lists(st.text(alphabet=ALPHABET, max_size=4), max_size=2),
    st.dictionaries(st.sampled_from(["x", "y"]), st.text(alphabet=ALPHABET, max_size=4)),
)
ttls = st.sampled_from([None, None, 5.0, 30.0])
tag_sets = st.sampled_from([None, ["red"], ["blue"], ["red", "blue"], "red"])
filter_sets = st.sampled_from(
    [None, None, {"tags": ["red"]}, {"tags": ["blue", "green"]}, {"tags": "blue"}, {"n": 1}]
)


def _metadata(scope: str, tags: Any) -> dict[str, Any]:
    return {"scope": scope} if tags is None else {"scope": scope, "tags": tags}

queries = st.one_of(
    st.sampled_from(["a", "b", "A", "", "x"]),  # match many entries: ties decide the order
    st.text(alphabet=ALPHABET, max_size=5),
    key_text,
)

START = 1_700_000_000.0
HISTORY_KEEP = 2
"""The `keep` of the versions the machine records."""


class Model:
    """The seed's dict, keyed by `(scope, key)`, with expiry."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str | None, str], MemoryEntry] = {}
        self.restored: set[tuple[str | None, str]] = set()
        """Keys stored again after they expired: swept or not, so either position is right."""

    def put(self, scope: str, entry: MemoryEntry, now: float) -> None:
        """Store as the seed's dict does; an expired entry may be swept already, so a
        new value for its key takes a new position (the contract lets backends sweep
        at any time)."""
        ident = (scope, entry.key)
        old = self.entries.get(ident)
        if old is not None and old.is_expired(now):
            del self.entries[ident]
            self.restored.add(ident)
        self.entries[ident] = entry

    def live(self, now: float, scope: str | None = None) -> list[MemoryEntry]:
        return [
            e
            for (s, _), e in self.entries.items()
            if not e.is_expired(now) and (scope is None or s == scope)
        ]

    def exact(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        now: float,
        filters: dict[str, Any] | None = None,
    ) -> list[Any]:
        q = query.lower()
        found = [
            (seed_score(q, e.key, e.value), e)
            for e in self.live(now)
            if (not scope or e.metadata.get("scope") == scope)
            and matches_filters(e.metadata, filters)
        ]
        found = [(s, e) for s, e in found if s > 0]
        found.sort(key=lambda pair: (-pair[0], -pair[1].timestamp))
        return [(e.scope, e.key, s, e.timestamp) for s, e in found[:top_k]]


class BackendMachine(RuleBasedStateMachine):
    """Drives one backend (shared across examples, emptied at the start of each)."""

    backend: MemoryBackend
    clock: FakeClock
    loop: asyncio.AbstractEventLoop

    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.steps = 0
        self.versions: dict[tuple[str | None, str], list[Any]] = {}
        """Each key's recorded versions' values, newest first, as `HISTORY_KEEP` trims them."""

    def run(self, awaitable: Any) -> Any:
        return self.loop.run_until_complete(awaitable)

    @initialize()
    def empty(self) -> None:
        self.clock.now = START
        self.run(self.backend.clear())
        assert self.run(self.backend.count()) == 0

    @rule(key=key_text, value=values, scope=scopes, ttl=ttls, tags=tag_sets)
    def store(self, key: str, value: Any, scope: str, ttl: float | None, tags: Any) -> None:
        expires_at = None if ttl is None else self.clock.now + ttl
        entry = self.run(
            self.backend.store(key, value, _metadata(scope, tags), expires_at=expires_at)
        )
        assert (entry.key, entry.value, entry.timestamp) == (key, value, self.clock.now)
        self.model.put(scope, entry, self.clock.now)

    @rule(data=st.data(), scope=scopes, value=values)
    def overwrite(self, data: st.DataObject, scope: str, value: Any) -> None:
        known = sorted(k for s, k in self.model.entries if s == scope)
        key = data.draw(st.sampled_from(known) if known else key_text)
        entry = self.run(self.backend.store(key, value, {"scope": scope, "n": 1}))
        self.model.put(scope, entry, self.clock.now)

    @rule(
        items=st.lists(st.tuples(key_text, values, tag_sets), min_size=1, max_size=4),
        scope=scopes,
    )
    def store_many(self, items: list[tuple[str, Any, Any]], scope: str) -> None:
        batch = [NewEntry(key, value, _metadata(scope, tags)) for key, value, tags in items]
        for entry in self.run(self.backend.store_many(batch)):
            self.model.put(scope, entry, self.clock.now)

    @rule(scope=scopes, key=key_text)
    def store_bad(self, scope: str, key: str) -> None:
        batch = [NewEntry(key, "fine", {"scope": scope}), NewEntry(key + "x", {1, 2})]
        with pytest.raises(ValueError):
            self.run(self.backend.store_many(batch))

    @rule(
        query=queries,
        top_k=st.integers(1, 6),
        scope=st.sampled_from([None, *SCOPES]),
        filters=filter_sets,
    )
    def retrieve_exact(
        self, query: str, top_k: int, scope: str | None, filters: dict[str, Any] | None
    ) -> None:
        if "exact" not in self.backend.capabilities.retrieval:
            return
        got = self.run(self.backend.retrieve(query, top_k, scope, mode="exact", filters=filters))
        got_rows = [(e.scope, e.key, e.score, e.timestamp) for e in got]
        everything = self.model.exact(query, 10_000, scope, self.clock.now, filters)
        want = everything[:top_k]
        assert [(r[2], r[3]) for r in got_rows] == [(r[2], r[3]) for r in want]
        for score, timestamp in dict.fromkeys((r[2], r[3]) for r in want):
            tied = [(r[0], r[1]) for r in everything if (r[2], r[3]) == (score, timestamp)]
            got_tied = [(r[0], r[1]) for r in got_rows if (r[2], r[3]) == (score, timestamp)]
            if any(ident in self.model.restored for ident in tied):
                # a key stored again after it expired sits where the backend put it
                assert set(got_tied) <= set(tied)
            else:
                assert got_tied == tied[: len(got_tied)]

    @rule(
        query=queries,
        scope=st.sampled_from([None, *SCOPES]),
        mode=st.sampled_from(["keyword", "semantic", "hybrid"]),
        filters=filter_sets,
    )
    def retrieve_other(
        self, query: str, scope: str | None, mode: str, filters: dict[str, Any] | None
    ) -> None:
        if mode not in self.backend.capabilities.retrieval:
            return
        self.check_recall(query, 5, scope, mode, filters)

    @rule(key=key_text, scope=scopes)
    def get(self, key: str, scope: str) -> None:
        got = self.run(self.backend.get(key, scope))
        want = self.model.entries.get((scope, key))
        if want is None or want.is_expired(self.clock.now):
            assert got is None
        else:
            assert got is not None
            assert (got.key, got.value, got.metadata, got.timestamp, got.expires_at) == (
                want.key,
                want.value,
                want.metadata,
                want.timestamp,
                want.expires_at,
            )

    @rule(data=st.data(), scope=scopes)
    def delete(self, data: st.DataObject, scope: str) -> None:
        known = sorted(k for s, k in self.model.entries if s == scope)
        key = data.draw(st.sampled_from(known) if known else key_text)
        removed = self.run(self.backend.delete(key, scope))
        want = self.model.entries.pop((scope, key), None)
        if want is None:
            assert removed is False
        elif not want.is_expired(self.clock.now):
            assert removed is True

    @rule(scope=scopes)
    def clear_scope(self, scope: str) -> None:
        visible = len(self.model.live(self.clock.now, scope))
        removed = self.run(self.backend.clear(scope))
        total = sum(1 for s, _ in self.model.entries if s == scope)
        assert visible <= removed <= total
        for ident in [i for i in self.model.entries if i[0] == scope]:
            del self.model.entries[ident]
        for ident in [i for i in self.versions if i[0] == scope]:
            del self.versions[ident]

    @rule()
    def clear_all(self) -> None:
        visible = len(self.model.live(self.clock.now))
        removed = self.run(self.backend.clear())
        assert visible <= removed <= len(self.model.entries)
        self.model.entries.clear()
        self.versions.clear()

    @rule(key=st.sampled_from(KEYS), value=values, scope=scopes)
    def record_version(self, key: str, value: Any, scope: str) -> None:
        """History (`record_versions`) keeps to its scope and key, trimmed to the newest
        `HISTORY_KEEP + 1`; `history_agrees` reads it back."""
        if not self.backend.capabilities.history:
            return
        version = Version(key, "update", value, {"scope": scope}, self.clock.now)
        self.run(self.backend.record_versions(scope, [version], HISTORY_KEEP))
        kept = self.versions.setdefault((scope, key), [])
        kept.insert(0, value)
        del kept[HISTORY_KEEP + 1 :]

    @rule(key=st.sampled_from(KEYS), scope=scopes)
    def history_agrees(self, key: str, scope: str) -> None:
        if not self.backend.capabilities.history:
            return
        got = self.run(self.backend.history(key, scope))
        assert [v.value for v in got] == self.versions.get((scope, key), []), (scope, key)

    @rule(space=st.sampled_from(NAMESPACES))
    def erase_namespace(self, space: str) -> None:
        """`erase` of a namespace deletes it and those below it, nothing else (every scope
        holds an entry first, so a prefix that reaches too far is seen at once)."""
        for scope in SCOPES:
            self.store("probe", "probe", scope, None, ["red"])
            self.record_version("a", "probe", scope)  # versions too: erased with their scope
        prefix = Namespace.of(space).scope_prefix
        erased = self.run(self.backend.erase(prefix))
        assert all(scope.startswith(prefix) for scope in erased)
        under = {s for s, _ in self.model.entries if s is not None and s.startswith(prefix)}
        for scope in under:
            if self.model.live(self.clock.now, scope):
                assert erased.get(scope) == len(self.model.live(self.clock.now, scope))
        for ident in [i for i in self.model.entries if i[0] in under]:
            del self.model.entries[ident]
        for ident in [i for i in self.versions if i[0] is not None and i[0].startswith(prefix)]:
            del self.versions[ident]
        for scope in SCOPES:
            self.history_agrees("a", scope)

    @rule(first=scopes, second=scopes)
    def cursor_keeps_to_its_scope(self, first: str, second: str) -> None:
        """A paging cursor of one scope (so of one namespace) is refused in another."""
        page = self.run(self.backend.list_page(first, limit=1))
        if page.cursor is None or first == second:
            return
        try:
            self.run(self.backend.list_page(second, limit=1, after=page.cursor))
        except AxonMemoryError:
            return
        raise AssertionError(f"a cursor of {first!r} was accepted in {second!r}")

    @rule(seconds=st.sampled_from([0.0, 1.0, 1.0, 4.0, 10.0, 40.0]))
    def advance_clock(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule()
    def purge_expired(self) -> None:
        now = self.clock.now
        expired = [i for i, e in self.model.entries.items() if e.is_expired(now)]
        purged = self.run(self.backend.purge_expired())
        assert 0 <= purged <= len(expired)
        for ident in expired:
            del self.model.entries[ident]

    def check_recall(
        self, query: str, top_k: int, scope: str | None, mode: str, filters: Any
    ) -> list[MemoryEntry]:
        """Recall and check what every recall must satisfy; returns the results."""
        got: list[MemoryEntry] = self.run(
            self.backend.retrieve(query, top_k, scope, mode=mode, filters=filters)
        )
        live = {(e.scope, e.key): e for e in self.model.live(self.clock.now, scope)}
        wanted = set(search_terms(query))
        for entry in got:
            if scope is not None:
                assert entry.scope == scope
            assert (entry.scope, entry.key) in live
            assert entry.value == live[(entry.scope, entry.key)].value
            assert matches_filters(entry.metadata, filters)
            if mode == "keyword":  # entries are independent: found by their own words only
                own = set(index_terms(f"{entry.key} {value_text(entry.value)}"))
                assert own & wanted, (query, entry.key, entry.value)
        return got

    @invariant()
    def recalls_keep_to_scope_and_filter(self) -> None:
        """A broad query with a filter: scope and filter hold (isolation).

        One mode per step, in turn, so that every mode is checked often at a quarter
        of the cost."""
        modes = sorted(self.backend.capabilities.retrieval)
        self.steps += 1
        mode = modes[self.steps % len(modes)]
        checked = [("A", {"tags": ["red"]}), ("B", {"n": 1})]
        checked += [(scope, {"tags": ["red"]}) for scope in SCOPES[2:]]
        for scope, filters in checked:
            self.check_recall("a b ab x é", 8, scope, mode, filters)

    @invariant()
    def counts_and_listings_agree(self) -> None:
        now = self.clock.now
        for scope in SCOPES:
            assert self.run(self.backend.count(scope)) == len(self.model.live(now, scope))
            listed = self.run(self.backend.list_entries(scope))
            assert all(entry.scope == scope for entry in listed)
            # newest first; equal timestamps in first-store order (the seed dict's order)
            want = sorted(self.model.live(now, scope), key=lambda e: -e.timestamp)
            assert [e.timestamp for e in listed] == [e.timestamp for e in want]
            for timestamp in {e.timestamp for e in want}:
                got_keys = [e.key for e in listed if e.timestamp == timestamp]
                want_keys = [e.key for e in want if e.timestamp == timestamp]
                if any((scope, key) in self.model.restored for key in want_keys):
                    got_keys, want_keys = sorted(got_keys), sorted(want_keys)
                assert got_keys == want_keys
        assert self.run(self.backend.count()) == len(self.model.live(now))


DEFAULT_MAX_EXAMPLES = 50
"""Examples per run unless `max_examples` or `AXON_TESTING_MAX_EXAMPLES` says otherwise."""


def run_stateful(
    factory: BackendFactory,
    *,
    max_examples: int | None = None,
    step_count: int = 30,
    name: str | None = None,
) -> None:
    """Check the backend `factory` makes against the model over random operation sequences.

    `max_examples` defaults to `AXON_TESTING_MAX_EXAMPLES` when set (a quick run in
    CI of a plugin, say), else `DEFAULT_MAX_EXAMPLES`. The backend gets a temporary
    directory, a `FakeClock` and a `HashingEmbedder`, and is closed at the end.
    """
    if max_examples is None:
        max_examples = int(os.environ.get("AXON_TESTING_MAX_EXAMPLES", DEFAULT_MAX_EXAMPLES))
    label = name or getattr(factory, "__name__", "Backend")
    loop = asyncio.new_event_loop()
    clock = FakeClock(START)
    with tempfile.TemporaryDirectory() as tmp:
        backend = factory(BackendEnv(Path(tmp), clock, HashingEmbedder()))
        machine = type(
            f"{label}Machine",
            (BackendMachine,),
            {"backend": backend, "clock": clock, "loop": loop},
        )
        try:
            run_state_machine_as_test(
                machine,
                settings=settings(
                    max_examples=max_examples,
                    stateful_step_count=step_count,
                    deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                ),
            )
        finally:
            loop.run_until_complete(backend.close())
            loop.close()


def stateful_test(factory: BackendFactory, **options: Any) -> Callable[[], None]:
    """A pytest test (assign it to a `test_...` name) that runs `run_stateful(factory, ...)`."""

    def test_backend_agrees_with_the_model() -> None:
        run_stateful(factory, **options)

    return test_backend_agrees_with_the_model
