"""A tiered memory whose persistent tier several sessions share (docs/language.md, Tiered
memories): opening it changes nothing, demotion never hands a persistent entry to a tier
that ends with the session, and a key one session holds in a fast tier while another
wrote it to the persistent tier is read once, as the slower tier's copy, by every read."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

import axon
from axon.memory.entry import MemoryEntry
from axon.repl.console import Console
from axon.runtime.session import Session
from axon.testing import FakeClock
from tests.memory.conftest import pg_dsn_or_skip, pg_test_schema
from tests.repl.conftest import run_axon_repl

SHARED = """
memory T {
  tiers: [session, persistent]
  retrieval: keyword
  demote_after: 1s
}
"""
"""No `store:`: a write goes to the persistent tier, which the sessions share."""

PAIR = SHARED.replace("  demote_after: 1s\n", "  backend: BACKEND\n")
"""The same memory without demotion (the two-copies tests are about reads only), its
persistent tier on SQLite or PostgreSQL."""

THREE = """
memory A {
  tiers: [ephemeral, session, persistent]
  store: session
  retrieval: keyword
  demote_after: 1d
}
"""


def persisted(memory_dir: Path, name: str = "T") -> dict[str, str | None]:
    """Key -> tier of what a later session finds (its fast tiers start empty)."""
    with axon.Session(memory_dir=memory_dir, clock=FakeClock()) as later:
        later.execute(SHARED if name == "T" else THREE)
        return {e.key: e.tier for e in later.memory(name).list()}


def stored_in(session: Session, tier: str, name: str = "T") -> list[str]:
    """The keys physically in one tier (read past the tiered view)."""
    bound = session.memories[name].tiers[tier]
    entries = asyncio.run(bound.backend.list_entries(scope=bound.scope))
    return sorted(e.key for e in entries)


def write_five(memory_dir: Path, clock: FakeClock) -> None:
    with axon.Session(memory_dir=memory_dir, clock=clock) as first:
        first.execute(SHARED)
        for i in range(5):
            first.memory("T").remember(f"fact number {i}", key=f"k{i}")


# ---------------------------------------------------------------- item 4: demotion


def test_declaring_a_tiered_memory_in_a_new_session_loses_nothing(tmp_path: Path) -> None:
    """Binding demoted the five entries (idle by the new session's own count) into its
    session tier, and its close deleted them: 5 of 5 lost."""
    clock = FakeClock()
    write_five(tmp_path, clock)
    clock.advance(10)
    with axon.Session(memory_dir=tmp_path, clock=clock) as second:
        second.execute(SHARED)
        assert not [e for e in second.events if e["event_type"] == "memory_demote"]
    assert persisted(tmp_path) == {f"k{i}": "persistent" for i in range(5)}


def test_using_a_tiered_memory_never_demotes_a_persistent_entry(tmp_path: Path) -> None:
    """A persistent entry idle by this session's count may be in daily use by others: it
    stays where it is, whatever this session does with the memory."""
    clock = FakeClock()
    write_five(tmp_path, clock)
    clock.advance(10)
    with axon.Session(memory_dir=tmp_path, clock=clock) as second:
        second.execute(SHARED)
        notes = second.memory("T")
        assert notes.count() == 5
        assert [r.key for r in notes.recall("number 3")][:1] == ["k3"]
        clock.advance(3600)
        second.execute('recall("fact") from T')
        assert {e.key: e.tier for e in notes.list()} == {f"k{i}": "persistent" for i in range(5)}
        assert notes.stats()["persistent"]["demotions"] == 0
        assert stored_in(second, "session") == []
    assert persisted(tmp_path) == {f"k{i}": "persistent" for i in range(5)}


def test_the_repl_started_with_a_program_then_quit_loses_nothing(tmp_path: Path) -> None:
    clock = FakeClock(0.0)  # the first session wrote long ago: every entry looks idle
    write_five(tmp_path / "mem", clock)
    program = tmp_path / "program.axon"
    program.write_text(SHARED)
    result = run_axon_repl(
        [str(program), "--memory-dir", str(tmp_path / "mem")], ".quit\n", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert persisted(tmp_path / "mem") == {f"k{i}": "persistent" for i in range(5)}


def test_demotion_still_moves_an_idle_session_entry_to_the_ephemeral_tier(
    session: Session, clock: FakeClock
) -> None:
    """Between the tiers that live in this session, its own count of use is the whole
    story: an idle session entry moves to the ephemeral tier."""
    session.execute(THREE)
    notes = session.memory("A")
    notes.remember("kept warm", key="warm")  # store: session
    notes.remember("gone cold", key="cold")
    notes.remember("kept for good", key="durable", tier="persistent")
    clock.advance(0.6 * 86400)
    notes.get("warm")  # used: its idle time starts again
    clock.advance(0.6 * 86400)
    records = session.execute('recall("cold warm durable") from A')
    assert {r["key"]: r["tier"] for r in records[0]["results"]} == {
        "warm": "session", "cold": "ephemeral", "durable": "persistent",
    }
    moves = [e["data"] for e in session.events if e["event_type"] == "memory_demote"]
    assert [(m["key"], m["from"], m["to"]) for m in moves] == [("cold", "session", "ephemeral")]
    assert notes.stats()["session"]["demotions"] == 1
    assert notes.stats()["persistent"]["demotions"] == 0


# ---------------------------------------------------------------- item 7: one key, two tiers


@pytest.fixture(params=["sqlite", "pgvector"])
def backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The persistent tier's backend of the two-copies tests."""
    if request.param == "pgvector":
        pg_dsn_or_skip()
        monkeypatch.setenv("AXON_PG_SCHEMA", pg_test_schema(tmp_path))
    return str(request.param)


def two_copies(
    tmp_path: Path, clock: FakeClock, backend: str
) -> tuple[Session, Session]:
    """`mine` holds "dup" in its session tier; `other` (whose clock is behind) then
    writes "dup" to the persistent tier, which it cannot see is held in `mine`'s session
    tier: `mine` meets both copies, the slower one older than every other entry."""
    mine = axon.Session(memory_dir=tmp_path, clock=clock)
    other = axon.Session(memory_dir=tmp_path, clock=FakeClock(clock.now - 100))
    for s in (mine, other):
        s.execute(PAIR.replace("BACKEND", backend))
    mine.memory("T").remember("alpha note", key="a")
    clock.advance(1)
    mine.memory("T").remember("zebra stripes", key="dup", tier="session")
    other.memory("T").remember("yak wool", key="dup")
    clock.advance(1)
    mine.memory("T").remember("beta note", key="b", tier="session")
    assert stored_in(mine, "session") == ["b", "dup"]  # the state this section is about
    return mine, other


def the_copy(entries: list[MemoryEntry]) -> list[tuple[str, str | None, object]]:
    return [(e.key, e.tier, e.value) for e in entries if e.key == "dup"]


KEPT = [("dup", "persistent", "yak wool")]


def test_count_counts_a_key_in_two_tiers_once(tmp_path: Path, backend: str) -> None:
    mine, other = two_copies(tmp_path, FakeClock(), backend)
    with mine, other:
        assert mine.memory("T").count() == 3  # was 4
        assert stored_in(mine, "session") == ["b"]  # the reader deleted the faster copy


def test_page_returns_a_key_in_two_tiers_once(tmp_path: Path, backend: str) -> None:
    mine, other = two_copies(tmp_path, FakeClock(), backend)
    with mine, other:
        notes = mine.memory("T")
        for limit in (1, 2, 10):
            page = notes.page(limit=limit)
            keys = [e.key for e in page.entries]
            seen = list(page.entries)
            while page.next is not None:
                page = notes.page(limit=limit, after=page.next)
                keys += [e.key for e in page.entries]
                seen += page.entries
            assert keys == ["b", "a", "dup"], limit  # was b, dup, a, dup
            assert the_copy(seen) == KEPT


def test_list_and_get_return_the_slower_tiers_copy(tmp_path: Path, backend: str) -> None:
    mine, other = two_copies(tmp_path, FakeClock(), backend)
    with mine, other:
        notes = mine.memory("T")
        assert [e.key for e in notes.list()] == ["b", "a", "dup"]
        assert the_copy(notes.list()) == KEPT
        assert notes.delete("b")
        # Each tier's newest: the session copy (newer than "a") stood in for the other.
        assert [(e.key, e.tier) for e in notes.list(limit=1)] == [("a", "persistent")]
        got = notes.get("dup")
        assert got is not None and the_copy([got]) == KEPT


def test_the_repls_show_returns_the_slower_tiers_copy(tmp_path: Path, backend: str) -> None:
    mine, other = two_copies(tmp_path, FakeClock(), backend)
    with mine, other:
        assert mine.memory("T").delete("b")
        shown = mine.recent_entries("T", 1)
        assert [(e.key, e.metadata["tier"]) for e in shown] == [("a", "persistent")]


def test_recall_returns_the_slower_tiers_copy_even_when_only_the_faster_matches(
    tmp_path: Path, backend: str
) -> None:
    """The persistent tier's own top_k may miss its copy while the session copy matches:
    the faster copy must not stand in for it."""
    mine, other = two_copies(tmp_path, FakeClock(), backend)
    with mine, other:
        notes = mine.memory("T")
        assert [r.key for r in notes.recall("zebra")] == []  # was the session copy
        assert the_copy(notes.recall("yak")) == KEPT
        assert stored_in(mine, "session") == ["b"]


def test_clear_and_its_counters_count_a_key_in_two_tiers_once(tmp_path: Path, backend: str) -> None:
    mine, other = two_copies(tmp_path, FakeClock(), backend)
    with mine, other:
        assert mine.clear_memory("T") == 3  # was 4
        stats = mine.memory("T").stats()
        assert (stats["session"]["forgets"], stats["persistent"]["forgets"]) == (1, 2)


def test_the_repl_export_writes_a_key_in_two_tiers_once(tmp_path: Path, backend: str) -> None:
    mine, other = two_copies(tmp_path / "mem", FakeClock(), backend)
    with mine, other:
        out = tmp_path / "t.jsonl"
        assert Console(mine, io.StringIO(), io.StringIO()).export(["T"], out)
        lines = [json.loads(line) for line in out.read_text().splitlines()[1:]]
        dups = [line for line in lines if line.get("key") == "dup"]
        assert [d["value"] for d in dups] == ["yak wool"]
