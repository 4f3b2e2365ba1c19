"""Tiered memories at run time (seed 004; docs/language.md, Tiered memories): where writes
go, one ranking across tiers, promotion and demotion (also when the process dies between
the two writes of a move), operations across tiers, and the per-tier counters."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import axon
from axon.errors import AxonMemoryError
from axon.memory.entry import NewEntry
from axon.runtime.handle import MemoryHandle
from axon.runtime.session import Session
from axon.runtime.tiers import KILL_HOOK_ENV, STATS_SCOPE_PREFIX
from axon.testing import FakeClock

ROOT = Path(__file__).resolve().parents[2]
DAY = 86400.0

MEMORY = """
memory A {
  tiers: [ephemeral, session, persistent]
  store: session
  retrieval: exact
  promote_after: 2
  demote_after: 1d
  persist_if: { importance: high, type: [long_term] }
}
"""


def tiers_of(session: Session, name: str = "A") -> dict[str, str | None]:
    return {e.key: e.tier for e in session.memory(name).list()}


def stored_in(session: Session, tier: str, name: str = "A") -> list[str]:
    """The keys physically in one tier (read past the tiered view)."""
    bound = session.memories[name].tiers[tier]
    entries = asyncio.run(bound.backend.list_entries(scope=bound.scope))
    return sorted(e.key for e in entries)


def test_writes_follow_with_then_policy_then_store(session: Session) -> None:
    session.execute(MEMORY)
    notes = session.memory("A")
    notes.remember("plain", key="plain")  # store: session
    notes.remember("told", key="told", tier="ephemeral")  # with { tier } first
    notes.remember("vital", key="vital", importance="high")  # the policy
    notes.remember("typed", key="typed", type="long_term")  # the policy, by type
    notes.remember("forced", key="forced", importance="critical", tier="session")
    # persisted ephemeral write is dropped when its call ends (it is one "input")
    assert tiers_of(session) == {
        "plain": "session", "vital": "persistent", "typed": "persistent", "forced": "session",
    }
    records = session.execute('remember("x") -> A with { key: "s", tier: ephemeral }\n'
                              'recall("x") from A')
    assert records[1]["results"][0]["tier"] == "ephemeral"
    assert "s" not in tiers_of(session)  # the input ended: ephemeral entries went


def test_no_store_means_persistent(session: Session) -> None:
    session.execute("memory B {\n  tiers: [session, persistent]\n}")
    session.memory("B").remember("v", key="k")
    assert tiers_of(session, "B") == {"k": "persistent"}


def test_a_key_lives_in_one_tier(session: Session) -> None:
    session.execute(MEMORY)
    notes = session.memory("A")
    notes.remember("old", key="k")
    notes.remember("new", key="k", tier="persistent")
    assert stored_in(session, "session") == [] and stored_in(session, "persistent") == ["k"]
    entry = notes.get("k")
    assert entry is not None and (entry.value, entry.tier) == ("new", "persistent")
    assert notes.count() == 1


def test_recall_ranks_across_tiers_with_tier_order_as_tie_break(session: Session) -> None:
    session.execute(MEMORY)
    notes = session.memory("A")
    notes.remember("note about cats", key="p_cats", tier="persistent")
    notes.remember("note about cats", key="s_cats", tier="session")
    notes.remember("cats", key="cats", tier="persistent")  # key equal: 1.0
    results = notes.recall("cats")
    assert [(r.key, r.tier, r.score) for r in results] == [
        ("cats", "persistent", 1.0),
        ("s_cats", "session", 0.7),  # equal scores: the faster tier first
        ("p_cats", "persistent", 0.7),
    ]
    only = notes.recall("cats", tiers=["session"])
    assert [r.key for r in only] == ["s_cats"]
    records = session.execute('recall("cats") from A with { tiers: [persistent], top_k: 1 }')
    assert [(r["key"], r["tier"]) for r in records[0]["results"]] == [("cats", "persistent")]


def test_a_recalls_event_names_the_backends_of_the_tiers_it_searched(session: Session) -> None:
    # `backend` was the memory's own binding (in_memory, its session tier) for any recall.
    session.execute(MEMORY)
    session.execute('recall("x") from A with { tiers: [persistent] }')
    session.execute('recall("x") from A with { tiers: [ephemeral, session] }')
    session.execute('recall("x") from A')
    reads = [e["data"] for e in session.events if e["event_type"] == "memory_read"]
    assert [(r["backend"], r["backends"], r["tiers"]) for r in reads] == [
        ("sqlite", {"persistent": "sqlite"}, ["persistent"]),
        ("in_memory", {"ephemeral": "in_memory", "session": "in_memory"},
         ["ephemeral", "session"]),
        ("sqlite", {"ephemeral": "in_memory", "session": "in_memory", "persistent": "sqlite"},
         ["ephemeral", "session", "persistent"]),
    ]


def test_promotion_after_n_recalls_keeps_the_entry(session: Session, clock: FakeClock) -> None:
    session.execute(MEMORY)
    notes = session.memory("A")
    notes.remember("the quarterly report", key="q3", tags=["finance"], metadata={"n": 1})
    before = notes.get("q3")
    assert before is not None and before.tier == "session"
    clock.advance(5)
    notes.recall("quarterly")
    assert stored_in(session, "session") == ["q3"]
    notes.recall("quarterly")  # the second recall: promote_after: 2
    assert stored_in(session, "session") == [] and stored_in(session, "persistent") == ["q3"]
    after = notes.get("q3")
    assert after is not None and after.tier == "persistent"
    assert (after.value, after.created_at, after.expires_at) == (
        before.value, before.created_at, before.expires_at,
    )
    assert {k: v for k, v in after.metadata.items() if k != "tier"} == {
        k: v for k, v in before.metadata.items() if k != "tier"
    }
    moves = [e for e in session.events if e["event_type"] == "memory_promote"]
    assert [(e["data"]["key"], e["data"]["from"], e["data"]["to"]) for e in moves] == [
        ("q3", "session", "persistent")
    ]
    stats = notes.stats()
    assert stats["session"]["promotions"] == 1 and stats["session"]["stores"] == 1
    assert stats["persistent"]["recalls"] == 2


def test_an_entry_demoted_into_the_ephemeral_tier_ends_with_its_input(
    session: Session, clock: FakeClock
) -> None:
    """The ephemeral tier has the ephemeral lifetime, also for what a demotion brings."""
    session.execute(MEMORY)
    notes = session.memory("A")
    notes.remember("soon ephemeral", key="k")  # store: session -> the session tier
    clock.advance(2 * DAY)
    assert [(r.key, r.tier) for r in notes.recall("soon")] == [("k", "ephemeral")]
    assert stored_in(session, "ephemeral") == []  # that recall was one input: it ended
    assert notes.get("k") is None
    notes.remember("again", key="j")
    clock.advance(2 * DAY)
    records = session.execute('recall("again") from A')  # demoted inside this input
    assert [r["tier"] for r in records[0]["results"]] == ["ephemeral"]
    assert notes.count() == 0


def test_get_list_delete_and_forget_cross_tiers(session: Session, clock: FakeClock) -> None:
    session.execute(MEMORY)
    notes = session.memory("A")
    notes.remember("a", key="a", tier="session", tags=["t"])
    clock.advance(1)
    notes.remember("b", key="b", tier="persistent", related=["a"], tags=["t"])
    clock.advance(1)
    notes.remember("c", key="c", tier="persistent")
    a = notes.get("a")
    assert a is not None and [e.key for e in a.associated] == ["b"]  # across tiers
    assert [e.key for e in notes.list()] == ["c", "b", "a"]  # newest first over all tiers
    assert notes.delete("b") is True
    a = notes.get("a")
    assert a is not None and "related" not in a.metadata  # unlinked in the other tier
    records = session.execute('forget from A with { tags: ["t"] }')
    assert records[0]["deleted"] == 1 and notes.count() == 1
    stats = notes.stats()
    assert (stats["session"]["forgets"], stats["persistent"]["forgets"]) == (1, 1)
    notes.remember("d", key="d", tier="session")
    notes.associate("c", "d")
    d = notes.get("d")
    assert d is not None and [e.key for e in d.associated] == ["c"]


def walk(notes: MemoryHandle, limit: int, tags: list[str] | None = None) -> list[str]:
    page = notes.page(limit=limit, tags=tags)
    keys = [e.key for e in page.entries]
    while page.next is not None:
        page = notes.page(limit=limit, after=page.next, tags=tags)
        keys += [e.key for e in page.entries]
    return keys


def test_page_walks_every_tier_in_the_order_of_list(session: Session, clock: FakeClock) -> None:
    """`page` read only the memory's `store:` tier: a walk of a [session, persistent]
    memory skipped every persistent entry (13 of 27 here)."""
    session.execute(MEMORY)
    notes = session.memory("A")
    for i in range(25):
        clock.advance(1)
        tier = ("session", "persistent")[i % 2]
        notes.remember(f"v{i}", key=f"k{i:02d}", tier=tier, tags=[("even", "odd")[i % 2]])
    clock.advance(1)
    notes.remember("tie", key="tie_p", tier="persistent")  # the same time in two tiers:
    notes.remember("tie", key="tie_s", tier="session")  # the faster tier first, as list
    listed = [e.key for e in notes.list()]
    assert len(listed) == 27 and listed[:2] == ["tie_s", "tie_p"]
    for limit in (1, 2, 4, 26, 27, 100):
        assert walk(notes, limit) == listed, limit
    assert walk(notes, 3, tags=["odd"]) == [e.key for e in notes.list(tags=["odd"])]
    first = notes.page(limit=5)
    assert [e.tier for e in first.entries][:2] == ["session", "persistent"]
    assert first.next is not None
    notes.remember("new", key="new", tier="persistent")  # newer than the walk: not reached
    notes.delete("k22")  # deleted ahead of the walk: not met
    rest = walk_from(notes, first.next, 5)
    assert rest == [k for k in listed[5:] if k != "k22"]
    session.execute("memory Plain { store: persistent backend: sqlite }")
    plain = session.memory("Plain")
    for i in range(3):
        plain.remember(f"p{i}", key=f"p{i}")
    untiered = plain.page(limit=1).next
    assert untiered is not None
    for bad in (untiered, "junk", ""):
        with pytest.raises(AxonMemoryError, match="is not a cursor of this listing"):
            notes.page(after=bad)
    with pytest.raises(AxonMemoryError, match="is not a cursor of this listing"):
        plain.page(after=first.next)


def walk_from(notes: MemoryHandle, cursor: str, limit: int) -> list[str]:
    keys: list[str] = []
    next_cursor: str | None = cursor
    while next_cursor is not None:
        page = notes.page(limit=limit, after=next_cursor)
        keys += [e.key for e in page.entries]
        next_cursor = page.next
    return keys


def test_a_reader_that_meets_both_copies_keeps_the_slower_tier(session: Session) -> None:
    session.execute(MEMORY)
    notes = session.memory("A")
    notes.remember("v", key="k", tier="persistent")
    fast = session.memories["A"].tiers["session"]
    # What a move interrupted between its two writes leaves behind: a second copy.
    asyncio.run(fast.backend.store_many([NewEntry("k", "v", {"scope": fast.scope})]))
    results = notes.recall("v")
    assert [(r.key, r.tier) for r in results] == [("k", "persistent")]
    entry = notes.get("k")
    assert entry is not None and entry.tier == "persistent"
    assert stored_in(session, "session") == []  # the reader deleted the other copy
    assert notes.count() == 1


def test_tier_mistakes_at_run_time_name_the_memory(session: Session) -> None:
    session.execute(MEMORY + "memory Plain {\n  store: session\n}\n")
    with pytest.raises(AxonMemoryError, match=r"has no tiers.*memory 'Plain'"):
        session.memory("Plain").remember("x", tier="session")
    with pytest.raises(AxonMemoryError, match="Unknown tier"):
        session.memory("A").remember("x", tier="cold")
    with pytest.raises(AxonMemoryError, match="no tier 'ephemeral'"):
        session.execute("memory B {\n  tiers: [session, persistent]\n}")
        session.memory("B").recall("x", tiers=["ephemeral"])


def test_counters_of_the_persistent_tier_survive_restarts(tmp_path: Path) -> None:
    clock = FakeClock()
    with axon.Session(memory_dir=tmp_path, clock=clock) as first:
        first.execute(MEMORY)
        first.memory("A").remember("kept", key="kept", tier="persistent")
        first.memory("A").recall("kept")
        assert first.memory("A").stats()["persistent"]["stores"] == 1
    with axon.Session(memory_dir=tmp_path, clock=clock) as second:
        second.execute(MEMORY)
        notes = second.memory("A")
        assert notes.stats()["persistent"] == {
            "stores": 1, "recalls": 1, "forgets": 0, "promotions": 0, "demotions": 0,
        }
        assert notes.stats()["session"]["stores"] == 0  # the session tier's were that session's
        notes.delete("kept")
    with axon.Session(memory_dir=tmp_path, clock=clock) as third:
        third.execute(MEMORY)
        assert third.memory("A").stats()["persistent"]["forgets"] == 1
        assert third.memory("A").count() == 0  # the counters are no entry of the memory


def test_async_handle_stats(tmp_path: Path) -> None:
    async def main() -> dict[str, dict[str, int]]:
        async with axon.AsyncSession(memory_dir=tmp_path) as s:
            await s.execute(MEMORY)
            notes = s.memory("A")
            await notes.remember("x", key="x")
            await notes.recall("x", tiers=["session"])
            return await notes.stats()

    stats = asyncio.run(main())
    assert stats["session"]["stores"] == 1 and stats["session"]["recalls"] == 1
    assert stats["persistent"]["recalls"] == 0


def test_an_untiered_memory_counts_its_one_tier(session: Session) -> None:
    session.execute("memory P {\n  store: session\n}")
    notes = session.memory("P")
    notes.remember("x", key="x")
    notes.recall("x")
    notes.delete("x")
    assert notes.stats() == {
        "session": {"stores": 1, "recalls": 1, "forgets": 1, "promotions": 0, "demotions": 0}
    }


def cli(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "axon.cli", "memory", *args],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_axon_memory_stats_shows_the_persistent_tier_counters(tmp_path: Path) -> None:
    with axon.Session(memory_dir=tmp_path) as s:
        s.execute(MEMORY + "memory Plain {\n  store: persistent\n}\n")
        s.memory("A").remember("x", key="x", tier="persistent")
        s.memory("A").remember("y", key="y", tier="persistent")
        s.memory("A").recall("x")
        s.memory("Plain").remember("z", key="z")
    names = [m["memory"] for m in json.loads(cli("ls", "--json", "--memory-dir", str(tmp_path)))[
        "memories"]]
    assert names == ["A", "Plain"]  # the counters' reserved scope is no memory
    assert not any(n.startswith(STATS_SCOPE_PREFIX) for n in names)
    data = json.loads(cli("stats", "--json", "--memory-dir", str(tmp_path)))
    by_name = {m["memory"]: m for m in data["memories"]}
    assert by_name["A"]["entries"] == 2
    assert by_name["A"]["tiers"] == {"persistent": {
        "stores": 2, "recalls": 1, "forgets": 0, "promotions": 0, "demotions": 0}}
    assert "tiers" not in by_name["Plain"]
    table = cli("stats", "--memory-dir", str(tmp_path))
    assert "promotions" in table and "persistent" in table


def test_stats_shows_the_counters_of_a_tiered_memory_whose_entries_are_gone(
    tmp_path: Path,
) -> None:
    with axon.Session(memory_dir=tmp_path) as s:
        s.execute(MEMORY)
        notes = s.memory("A")
        notes.remember("x", key="x", tier="persistent")
        notes.recall("x")
        assert notes.delete("x")
    counters = {"stores": 1, "recalls": 1, "forgets": 1, "promotions": 0, "demotions": 0}
    for args in (["stats", "A"], ["stats"]):
        data = json.loads(cli(*args, "--json", "--memory-dir", str(tmp_path)))
        assert [(m["memory"], m["entries"], m["tiers"]) for m in data["memories"]] == [
            ("A", 0, {"persistent": counters})
        ]


def test_forgets_count_every_delete_the_cli_forget_and_a_clear(tmp_path: Path) -> None:
    with axon.Session(memory_dir=tmp_path) as s:
        s.execute(MEMORY)
        notes = s.memory("A")
        for key in ("a", "b", "c"):
            notes.remember(key, key=key, tier="persistent")
        notes.remember("d", key="d", tier="session")
    cli("forget", "A", "a", "--memory-dir", str(tmp_path))
    data = json.loads(cli("stats", "A", "--json", "--memory-dir", str(tmp_path)))
    assert data["memories"][0]["tiers"]["persistent"]["forgets"] == 1
    with axon.Session(memory_dir=tmp_path) as s:
        s.execute(MEMORY)
        notes = s.memory("A")
        notes.remember("e", key="e", tier="session")
        assert s.clear_memory("A") == 3  # b and c (persistent), e (session)
        stats = notes.stats()
        assert (stats["persistent"]["forgets"], stats["session"]["forgets"]) == (3, 1)
    with axon.Session(memory_dir=tmp_path) as s:
        s.execute(MEMORY)
        assert s.memory("A").stats()["persistent"]["forgets"] == 3  # kept on disk


# ---------------------------------------------------------------- a crash between the writes

CHILD = textwrap.dedent(
    """
    import json, sys
    import axon
    from axon.testing import FakeClock

    memory_dir = sys.argv[1]
    clock = FakeClock()
    session = axon.Session(memory_dir=memory_dir, clock=clock)
    session.execute('''MEMORY''')
    notes = session.memory("A")
    notes.remember("the report", key="r", tags=["x"], tier="session")
    entry = notes.get("r")
    print(json.dumps({"value": entry.value, "created_at": entry.created_at,
                      "metadata": entry.metadata}), flush=True)
    notes.recall("report")
    notes.recall("report")  # promote_after: 2 -> the move, killed half-way
    print("not killed", flush=True)
    """
).replace("MEMORY", MEMORY)


def test_a_move_killed_between_its_two_writes_loses_nothing(tmp_path: Path) -> None:
    """A promotion into the persistent tier, killed between its two writes. (A demotion
    never touches the persistent tier: both of its copies live in the process.)"""
    env = {**os.environ, "PYTHONPATH": str(ROOT), KILL_HOOK_ENV: "promote"}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    lines = child.stdout.splitlines()
    assert "not killed" not in lines
    before = json.loads(lines[0])
    with axon.Session(memory_dir=tmp_path, clock=FakeClock()) as after:
        after.execute(MEMORY)
        notes = after.memory("A")
        assert notes.count() == 1
        assert [e.key for e in notes.list()] == ["r"]
        entry = notes.get("r")
        assert entry is not None and entry.tier == "persistent"
        assert (entry.value, entry.created_at) == (before["value"], before["created_at"])
        kept = {k: v for k, v in entry.metadata.items() if k != "tier"}
        assert kept == {k: v for k, v in before["metadata"].items() if k != "tier"}
        assert [r.key for r in notes.recall("report")] == ["r"]


def test_the_tiered_example_program(tmp_path: Path) -> None:
    path = ROOT / "examples" / "tiered_assistant.axon"
    records, events = axon.run(path.read_text(), filename=str(path), memory_dir=tmp_path)
    recalls = {r["alias"]: r["results"] for r in records if r["op"] == "recall"}
    assert [(r["key"], r["tier"]) for r in recalls["work"]] == [
        ("todo_quotes", "session"), ("ops_friday", "persistent"),
    ]
    assert {r["tier"] for r in recalls["prefs"]} == {"persistent"}
    assert [(r["key"], r["tier"]) for r in recalls["again"]] == [("todo_quotes", "persistent")]
    promoted = [e["data"]["key"] for e in events if e["event_type"] == "memory_promote"]
    assert promoted == ["todo_quotes"]


def test_remember_many_moving_a_key_keeps_its_first_write(
    session: Session, clock: FakeClock
) -> None:
    # A batch item whose key lives in another tier moves it (written to the item's tier,
    # deleted from the other): it kept the batch's time as created_at, remember did not.
    session.execute(
        "memory A { tiers: [session, persistent] store: session retrieval: keyword "
        "backend: sqlite }"
    )
    notes = session.memory("A")
    first = clock.now
    notes.remember("draft", key="moved")
    notes.remember("draft", key="stays")
    clock.advance(10)
    notes.remember_many([
        {"value": "final", "key": "moved", "tier": "persistent"},
        {"value": "final", "key": "stays"},
        {"value": "new", "key": "new", "tier": "persistent"},
    ])
    assert stored_in(session, "session") == ["stays"]
    assert stored_in(session, "persistent") == ["moved", "new"]
    times = {e.key: (e.value, e.tier, e.created_at, e.updated_at) for e in notes.list()}
    assert times == {
        "moved": ("final", "persistent", first, first + 10),
        "stays": ("final", "session", first, first + 10),
        "new": ("new", "persistent", first + 10, first + 10),
    }
