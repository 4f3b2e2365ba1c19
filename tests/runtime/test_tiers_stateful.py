"""A tiered memory of typed, associated records against a plain model (Hypothesis stateful).

The runtime-level companion of tests/memory/test_stateful.py (which drives the
backends themselves): here a `Session` drives a memory `tiers: [session,
persistent]` on a real persistent backend (SQLite; PostgreSQL too when the test
server is there) through the Python handle, and after every step it must agree
with the model on what tier each key is in (write order, `persist_if` policy,
promotion after `promote_after` recalls, no demotion out of the persistent tier),
on expiry per record type (seed 002's defaults, or `expires_in`), on associations
(both ways, one level deep from `get`, removed with either side) and on the
counters of `stats()`.
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import attrs
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

import axon
from axon.memory.entry import RECORD_TYPES
from axon.memory.retrieval.exact import seed_score
from axon.runtime.tiers import COUNTERS
from axon.testing import FakeClock
from tests.memory.conftest import pg_dsn_or_skip, pg_test_schema

DAY = 86400.0
PROMOTE_AFTER = 2
TIERS = ("session", "persistent")
KEYS = ["a", "ab", "b", "ba", "c"]
START = 1_700_000_000.0


NAMES = itertools.count()
"""A fresh memory name per example: on a shared server no example sees another's counters."""


def memory_source(name: str, backend: str) -> str:
    return (
        f"memory {name} {{\n  tiers: [session, persistent]\n  store: session\n"
        f"  backend: {backend}\n  retrieval: exact\n"
        f"  promote_after: {PROMOTE_AFTER}\n  demote_after: 20d\n"
        "  persist_if: { importance: high, type: [long_term] }\n}\n"
    )


@attrs.define
class Rec:
    value: str
    tier: str
    written: float
    expires_at: float | None
    related: list[str] = attrs.field(factory=list)
    created: float | None = None
    """The first write (None: `written`); kept by a remember of a live key, whichever
    tier the new write goes to."""


class Model:
    """What the tiered memory should hold: key -> record, and the runtime's bookkeeping."""

    def __init__(self, now: float) -> None:
        self.recs: dict[str, Rec] = {}
        self.recalls: dict[str, int] = {}
        self.used: dict[str, float] = {}
        self.stats = {tier: dict.fromkeys(COUNTERS, 0) for tier in TIERS}

    def live(self, key: str, now: float) -> Rec | None:
        rec = self.recs.get(key)
        if rec is None or (rec.expires_at is not None and now >= rec.expires_at):
            return None
        return rec

    def alive(self, now: float) -> dict[str, Rec]:
        return {k: r for k in self.recs if (r := self.live(k, now)) is not None}

    def maintain(self, now: float) -> None:
        """The idle check before an operation: `demote_after` never moves a persistent
        entry (the session tier below it ends with the session), and a [session,
        persistent] memory has no other tier to demote from, so nothing moves."""
        del now


class TieredMachine(RuleBasedStateMachine):
    backend: str = "sqlite"

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(START)
        self.tmp = tempfile.TemporaryDirectory()
        self.session: axon.Session | None = None
        self.model = Model(START)

    @initialize()
    def open(self) -> None:
        self.session = axon.Session(memory_dir=Path(self.tmp.name), clock=self.clock)
        name = f"M{next(NAMES)}"
        self.session.execute(memory_source(name, self.backend))
        self.notes = self.session.memory(name)
        self.model = Model(self.clock.now)

    def teardown(self) -> None:
        if self.session is not None:
            for entry in self.notes.list():  # rows on a shared server: leave none behind
                self.notes.delete(entry.key)
            self.session.close()
        self.tmp.cleanup()

    @property
    def now(self) -> float:
        return self.clock.now

    @rule(
        key=st.sampled_from(KEYS),
        value=st.sampled_from(["a", "b", "ab", "xa", "c c"]),
        tier=st.sampled_from([None, None, "session", "persistent"]),
        kind=st.sampled_from([None, None, *RECORD_TYPES]),
        importance=st.sampled_from([None, None, "high", "low"]),
        expires_in=st.sampled_from([None, None, None, 3600.0]),
        related=st.sampled_from([None, None, None, None, ["a"], ["b", "c"]]),
    )
    def remember(
        self, key: str, value: str, tier: str | None, kind: str | None,
        importance: str | None, expires_in: float | None, related: list[str] | None,
    ) -> None:
        m = self.model
        m.maintain(self.now)
        given = [k for k in related or []]
        if key in given or any(m.live(k, self.now) is None for k in given):
            with pytest.raises(ValueError):
                self.notes.remember(value, key=key, tier=tier, type=kind,
                                    importance=importance, expires_in=expires_in,
                                    related=related)
            return
        self.notes.remember(value, key=key, tier=tier, type=kind, importance=importance,
                            expires_in=expires_in, related=related)
        if tier is None:
            tier = "persistent" if importance == "high" or kind == "long_term" else "session"
        if expires_in is not None:
            expires_at: float | None = self.now + expires_in
        elif kind is not None:
            expires_at = self.now + RECORD_TYPES[kind]
        else:
            expires_at = None
        old = m.live(key, self.now)
        links = list(dict.fromkeys([*(old.related if old else []), *given]))
        for other in given:
            rec = m.recs[other]
            if key not in rec.related:
                rec.related.append(key)
        created = (old.created or old.written) if old is not None else None
        m.recs[key] = Rec(value, tier, self.now, expires_at, links, created)
        m.recalls.pop(key, None)
        m.used[key] = self.now
        m.stats[tier]["stores"] += 1

    @rule(query=st.sampled_from([*KEYS, "x", "c c"]), top_k=st.integers(1, 4),
          tiers=st.sampled_from([None, None, ["session"], ["persistent"]]))
    def recall(self, query: str, top_k: int, tiers: list[str] | None) -> None:
        m = self.model
        m.maintain(self.now)
        results = self.notes.recall(query, top_k=top_k, tiers=tiers)
        searched = tiers or list(TIERS)
        alive = m.alive(self.now)
        matches = {
            k: seed_score(query.lower(), k, r.value)
            for k, r in alive.items() if r.tier in searched
        }
        matches = {k: s for k, s in matches.items() if s > 0}
        assert len(results) == min(top_k, len(matches))
        for r in results:
            assert r.key in matches and r.score == matches[r.key]
            assert r.tier == alive[r.key].tier
        order = [(-r.score, TIERS.index(str(r.tier))) for r in results]
        assert order == sorted(order)  # by score, ties: the faster tier first
        best = sorted(matches.values(), reverse=True)[: len(results)]
        assert [r.score for r in results] == best
        for tier in searched:
            m.stats[tier]["recalls"] += 1
        for r in results:
            m.used[r.key] = self.now
            count = m.recalls.get(r.key, 0) + 1
            m.recalls[r.key] = count
            rec = alive[r.key]
            if count >= PROMOTE_AFTER and rec.tier == "session":
                rec.tier = "persistent"
                m.stats["session"]["promotions"] += 1
                m.recalls.pop(r.key, None)

    @rule(key=st.sampled_from(KEYS))
    def get(self, key: str) -> None:
        m = self.model
        m.maintain(self.now)
        got = self.notes.get(key)
        want = m.live(key, self.now)
        if want is None:
            assert got is None
            return
        m.used[key] = self.now
        assert got is not None
        assert (got.value, got.tier, got.created_at, got.updated_at, got.expires_at) == (
            want.value, want.tier, want.created or want.written, want.written, want.expires_at,
        )
        assert got.metadata.get("related", []) == want.related
        assert [e.key for e in got.associated] == [
            k for k in want.related if m.live(k, self.now) is not None
        ]

    @rule(key=st.sampled_from(KEYS))
    def delete(self, key: str) -> None:
        m = self.model
        m.maintain(self.now)
        removed = self.notes.delete(key)
        want = m.live(key, self.now)
        assert removed is (want is not None)
        if want is None:
            return
        del m.recs[key]
        m.recalls.pop(key, None)
        m.used.pop(key, None)
        m.stats[want.tier]["forgets"] += 1
        for other in want.related:
            rec = m.live(other, self.now)
            if rec is not None and key in rec.related:
                rec.related.remove(key)

    @rule(a=st.sampled_from(KEYS), b=st.sampled_from(KEYS))
    def associate(self, a: str, b: str) -> None:
        m = self.model
        ra, rb = m.live(a, self.now), m.live(b, self.now)
        if a == b or ra is None or rb is None:
            with pytest.raises(ValueError):
                self.notes.associate(a, b)
            return
        self.notes.associate(a, b)
        if b not in ra.related:
            ra.related.append(b)
        if a not in rb.related:
            rb.related.append(a)

    @rule(seconds=st.sampled_from([1.0, 120.0, 3 * DAY, 12 * DAY, 25 * DAY, 100 * DAY]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @invariant()
    def tiers_counts_and_stats_agree(self) -> None:
        if self.session is None:
            return
        m = self.model
        m.maintain(self.now)  # list() runs the idle check first
        listed = {e.key: e.tier for e in self.notes.list()}
        assert listed == {k: r.tier for k, r in m.alive(self.now).items()}
        assert self.notes.count() == len(listed)
        stats = self.notes.stats()
        assert stats == m.stats


def _run(backend: str) -> None:
    machine = type(f"Tiered{backend}Machine", (TieredMachine,), {"backend": backend})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=60,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_a_tiered_sqlite_memory_agrees_with_the_model() -> None:
    _run("sqlite")


def test_a_tiered_postgres_memory_agrees_with_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg_dsn_or_skip()
    monkeypatch.setenv("AXON_PG_SCHEMA", pg_test_schema(tmp_path))
    _run("pgvector")
