"""A tiered memory whose persistent tier several sessions share (docs/language.md, Tiered
memories): opening it changes nothing, and demotion never hands a persistent entry to a
tier that ends with the session."""

from __future__ import annotations

import asyncio
from pathlib import Path

import axon
from axon.runtime.session import Session
from axon.testing import FakeClock
from tests.repl.conftest import run_axon_repl

SHARED = """
memory T {
  tiers: [session, persistent]
  retrieval: keyword
  demote_after: 1s
}
"""
"""No `store:`: a write goes to the persistent tier, which the sessions share."""

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
    bound = session.memories.tiered[name].tiers[tier]
    entries = asyncio.run(bound.backend.list_entries(scope=bound.scope))
    return sorted(e.key for e in entries)


def write_five(memory_dir: Path, clock: FakeClock) -> None:
    with axon.Session(memory_dir=memory_dir, clock=clock) as first:
        first.execute(SHARED)
        for i in range(5):
            first.memory("T").remember(f"fact number {i}", key=f"k{i}")


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
