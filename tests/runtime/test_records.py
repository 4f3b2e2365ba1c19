"""Memory records (docs/language.md §8, seed 002): types with default expiry, importance,
associations, and the recall filters on them; every backend on real storage.

Each test runs over every backend (tests/runtime/backends.py) with a clock the test
moves (`FakeClock`), through the statements and the Python handle alike.
"""

from __future__ import annotations

import asyncio
import datetime
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

import axon
from axon.errors import AxonCheckError, AxonMemoryError, AxonRuntimeError
from axon.memory.backend import MemoryBackend
from axon.memory.entry import IMPORTANCE_LEVELS, RECORD_TYPES
from axon.memory.registry import registry
from axon.memory.transfer import export_memories, import_memories
from axon.runtime.session import Session
from tests.memory.conftest import FakeClock
from tests.runtime.backends import KINDS, SessionKit

DAY = 86400.0


@pytest.fixture(params=KINDS)
def kit(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    clock: FakeClock,
) -> SessionKit:
    return SessionKit(request.param, tmp_path, monkeypatch, clock)


def open_session(kit: SessionKit, extra: str = "") -> Session:
    session = axon.Session(**kit.kwargs())
    session.execute(kit.decl(extra=extra))
    return session


@pytest.fixture
def session(kit: SessionKit) -> Iterator[Session]:
    with open_session(kit) as s:
        yield s


# ---------------------------------------------------------------- types and expiry


def test_each_type_has_its_default_expiry_and_entries_go_when_it_passes(
    session: Session, kit: SessionKit
) -> None:
    notes = session.memory("Notes")
    now = kit.clock.now
    for kind in RECORD_TYPES:
        session.execute(
            f'remember("{kind} note") -> Notes with {{ key: "s_{kind}", type: {kind} }}'
        )
        notes.remember(f"{kind} by hand", key=f"h_{kind}", type=kind)
    assert RECORD_TYPES == {
        "long_term": 365 * DAY, "short_term": 30 * DAY, "reflex": 90 * DAY, "dreams": 180 * DAY,
    }
    for kind, seconds in RECORD_TYPES.items():
        for key in (f"s_{kind}", f"h_{kind}"):
            entry = notes.get(key)
            assert entry is not None and entry.type == kind
            assert entry.expires_at == now + seconds, (kind, key)
            assert entry.importance == IMPORTANCE_LEVELS["normal"] == 0.5
    kit.clock.advance(30 * DAY)  # short_term expires at exactly 30 days
    assert notes.get("s_short_term") is None and notes.get("h_short_term") is None
    assert notes.get("s_reflex") is not None
    kit.clock.advance(60 * DAY)
    assert notes.get("h_reflex") is None and notes.get("h_dreams") is not None
    kit.clock.advance(90 * DAY)
    assert notes.get("h_dreams") is None and notes.get("h_long_term") is not None
    kit.clock.advance(185 * DAY)
    assert notes.count() == 0


def test_an_entry_without_a_type_keeps_todays_behaviour(session: Session, kit: SessionKit) -> None:
    """No type, no decay: no expiry, and no importance or type metadata is added."""
    notes = session.memory("Notes")
    notes.remember("plain", key="p")
    session.execute('remember("plain") -> Notes with { key: "q", tags: ["x"] }')
    for key in ("p", "q"):
        entry = notes.get(key)
        assert entry is not None and entry.expires_at is None
        assert "importance" not in entry.metadata and "type" not in entry.metadata
        assert entry.type is None and entry.importance is None
    kit.clock.advance(400 * DAY)
    assert notes.count() == 2


def test_the_memorys_decay_wins_over_the_types_default(kit: SessionKit) -> None:
    with open_session(kit, extra="decay: 2d ") as session:
        notes = session.memory("Notes")
        notes.remember("x", key="a", type="long_term")
        session.execute('remember("y") -> Notes with { key: "b", type: dreams }')
        now = kit.clock.now
        for key in ("a", "b"):
            entry = notes.get(key)
            assert entry is not None and entry.expires_at == now + 2 * DAY
        kit.clock.advance(2 * DAY)
        assert notes.count() == 0


def test_expires_in_wins_over_the_decay_and_the_type(kit: SessionKit) -> None:
    with open_session(kit, extra="decay: 2d ") as session:
        notes = session.memory("Notes")
        now = kit.clock.now
        session.execute('remember("s") -> Notes with { key: "s", type: short_term, '
                        "expires_in: 3d }")
        notes.remember("h", key="h", type="short_term", expires_in=3600)
        notes.remember("t", key="t", expires_in=datetime.timedelta(hours=5))
        notes.remember("d", key="d", expires_in="1h30m")
        session.execute('remember("n") -> Notes with { key: "n", type: reflex, expires_in: never }')
        notes.remember("m", key="m", type="reflex", expires_in="never")
        wanted = {"s": now + 3 * DAY, "h": now + 3600, "t": now + 5 * 3600,
                  "d": now + 5400, "n": None, "m": None}
        for key, expires_at in wanted.items():
            entry = notes.get(key)
            assert entry is not None and entry.expires_at == expires_at, key
        [record] = session.execute('remember("r") -> Notes with { key: "r", expires_in: 1d }')
        assert record["expires_at"] == now + DAY
        kit.clock.advance(3 * DAY)
        assert sorted(e.key for e in notes.list()) == ["m", "n"]


def test_handle_refuses_bad_records_with_the_checkers_words(session: Session) -> None:
    notes = session.memory("Notes")
    with pytest.raises(AxonMemoryError, match=r"Unknown memory type \"short\".*did you mean "
                       r"'short_term'.*Valid: long_term, short_term, reflex, dreams") as info:
        notes.remember("x", key="k", type="short")
    assert info.value.memory == "Notes" and info.value.key == "k"
    with pytest.raises(AxonMemoryError, match=r"Unknown importance level \"hgh\".*'high'"):
        notes.remember("x", key="k", importance="hgh")
    with pytest.raises(AxonMemoryError, match="expires_in must be more than 0 seconds"):
        notes.remember("x", key="k", expires_in=0)
    with pytest.raises(AxonMemoryError, match="Invalid expires_in \"3x\": unknown unit 'x'"):
        notes.remember("x", key="k", expires_in="3x")
    with pytest.raises(TypeError, match="expires_in must be seconds, a timedelta"):
        notes.remember("x", key="k", expires_in=[1])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="type must be one of long_term"):
        notes.remember("x", key="k", type=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="related must be a list of entry keys"):
        notes.remember("x", key="k", related="other")
    with pytest.raises(AxonMemoryError, match="'type' is an option of its own"):
        notes.remember("x", key="k", metadata={"type": "reflex"})
    with pytest.raises(AxonMemoryError, match="min_importance must be a number from 0 to 1"):
        notes.recall("x", min_importance=2)
    with pytest.raises(AxonMemoryError, match="Unknown memory type"):
        notes.list(type="long")
    assert notes.count() == 0


# ---------------------------------------------------------------- importance and filters


def test_importance_levels_are_numbers(session: Session) -> None:
    notes = session.memory("Notes")
    for level, number in IMPORTANCE_LEVELS.items():
        session.execute(f'remember("s {level}") -> Notes with {{ key: "s_{level}", '
                        f"importance: {level} }}")
        notes.remember(f"h {level}", key=f"h_{level}", importance=level)
        for key in (f"s_{level}", f"h_{level}"):
            entry = notes.get(key)
            assert entry is not None and entry.metadata["importance"] == number
    session.execute('remember("q") -> Notes with { key: "q", importance: "critical" }')
    entry = notes.get("q")
    assert entry is not None and entry.importance == 1.0
    assert IMPORTANCE_LEVELS == {"low": 0.25, "normal": 0.5, "high": 0.75, "critical": 1.0}


def test_min_importance_and_type_filter_recall_and_list(session: Session) -> None:
    notes = session.memory("Notes")
    notes.remember("deploy checklist low", key="low", type="reflex", importance="low")
    notes.remember("deploy checklist typed", key="typed", type="short_term")  # normal
    notes.remember("deploy checklist high", key="high", type="long_term", importance=0.8)
    notes.remember("deploy checklist critical", key="crit", type="reflex", importance="critical")
    notes.remember("deploy checklist plain", key="plain")  # no importance: counts as normal

    def keys(results: list[axon.Result] | list[axon.Entry]) -> list[str]:
        return sorted(r.key for r in results)

    assert keys(notes.recall("deploy checklist", top_k=10, min_importance="high")) == [
        "crit", "high"]
    assert keys(notes.recall("deploy checklist", top_k=10, min_importance=0.8)) == [
        "crit", "high"]
    assert keys(notes.recall("deploy checklist", top_k=10, min_importance="normal")) == [
        "crit", "high", "plain", "typed"]
    assert keys(notes.recall("deploy checklist", top_k=10, type="reflex")) == ["crit", "low"]
    assert keys(notes.recall("deploy checklist", top_k=10, type="reflex",
                             min_importance=0.3)) == ["crit"]
    assert keys(notes.list(min_importance=0.75)) == ["crit", "high"]
    assert keys(notes.list(type="short_term")) == ["typed"]
    [record] = session.execute('recall("deploy checklist") from Notes with { top_k: 10, '
                               "min_importance: high }")
    assert sorted(r["key"] for r in record["results"]) == ["crit", "high"]
    [record] = session.execute('recall("deploy checklist") from Notes with { top_k: 10, '
                               'type: "reflex", tags: [] }')
    assert record["results"] == []  # tags: [] shares no tag with anything
    [record] = session.execute('recall("deploy checklist") from Notes with { top_k: 10, '
                               "type: long_term }")
    assert [r["key"] for r in record["results"]] == ["high"]
    read = [e for e in session.events if e["event_type"] == "memory_read"][-1]
    assert read["data"]["filters"] == {"type": "long_term"}


# ---------------------------------------------------------------- associations


def test_related_associates_both_ways_and_get_returns_one_level(
    session: Session, kit: SessionKit
) -> None:
    notes = session.memory("Notes")
    notes.remember("the auth service times out", key="bug", type="short_term")
    notes.remember("raise the pool size", key="fix", related=["bug"])
    session.execute('remember("pools need limits") -> Notes with { key: "lesson", '
                    'type: reflex, related: ["fix", "bug"] }')
    bug = notes.get("bug")
    assert bug is not None
    assert bug.metadata["related"] == ["fix", "lesson"]
    assert [e.key for e in bug.associated] == ["fix", "lesson"]
    assert all(e.associated == () for e in bug.associated)  # one level only
    assert bug.associated[1].value == "pools need limits"
    assert bug.associated[1].metadata["related"] == ["fix", "bug"]
    assert bug.created_at == kit.clock.now and bug.expires_at == kit.clock.now + 30 * DAY
    fix = notes.get("fix")
    assert fix is not None and [e.key for e in fix.associated] == ["bug", "lesson"]
    listed = notes.list()
    assert all(e.associated == () for e in listed)  # only get fills it


def test_associate_keeps_values_and_times_and_is_idempotent(
    session: Session, kit: SessionKit
) -> None:
    notes = session.memory("Notes")
    notes.remember("a", key="a", type="short_term")
    kit.clock.advance(10)
    notes.remember({"b": 1}, key="b")
    before_a, before_b = notes.get("a"), notes.get("b")
    kit.clock.advance(10)
    notes.associate("a", "b")
    notes.associate("b", "a")
    a, b = notes.get("a"), notes.get("b")
    assert a is not None and b is not None and before_a is not None and before_b is not None
    assert a.metadata["related"] == ["b"] and b.metadata["related"] == ["a"]
    assert (a.value, a.created_at, a.expires_at) == (
        before_a.value, before_a.created_at, before_a.expires_at)
    assert (b.value, b.created_at, b.expires_at) == (
        before_b.value, before_b.created_at, before_b.expires_at)
    writes = [e["data"] for e in session.events
              if e["event_type"] == "memory_write" and e["data"].get("op") == "associate"]
    assert [w["count"] for w in writes] == [2, 0]
    with pytest.raises(AxonMemoryError, match="cannot associate: no such entry") as info:
        notes.associate("a", "nope")
    assert (info.value.memory, info.value.key) == ("Notes", "nope")
    with pytest.raises(AxonMemoryError, match="cannot be related to itself"):
        notes.associate("a", "a")


def test_forgetting_either_side_removes_the_association(session: Session) -> None:
    notes = session.memory("Notes")
    notes.remember("hub", key="hub")
    notes.remember("x", key="x", related=["hub"])
    notes.remember("y", key="y", related=["hub", "x"])
    assert notes.delete("x") is True
    hub, y = notes.get("hub"), notes.get("y")
    assert hub is not None and y is not None
    assert hub.metadata["related"] == ["y"] and y.metadata["related"] == ["hub"]
    assert notes.delete("hub") is True
    y = notes.get("y")
    assert y is not None and "related" not in y.metadata and y.associated == ()
    assert notes.delete("hub") is False


def test_replacing_an_entry_keeps_its_associations(session: Session) -> None:
    notes = session.memory("Notes")
    notes.remember("a", key="a")
    notes.remember("b", key="b", related=["a"])
    notes.remember("b again", key="b")  # no related given: the association stays
    notes.remember("c", key="c")
    notes.remember("b thrice", key="b", related=["c"])
    b, a, c = notes.get("b"), notes.get("a"), notes.get("c")
    assert b is not None and a is not None and c is not None
    assert b.value == "b thrice" and b.metadata["related"] == ["a", "c"]
    assert a.metadata["related"] == ["b"] and c.metadata["related"] == ["b"]
    notes.remember("d", key="d", related=[])
    d = notes.get("d")
    assert d is not None and "related" not in d.metadata


def test_a_missing_related_key_is_an_error_naming_memory_and_key_and_writes_nothing(
    session: Session, kit: SessionKit
) -> None:
    notes = session.memory("Notes")
    notes.remember("a", key="a")
    with pytest.raises(AxonMemoryError,
                       match="related entry 'ghost' is not stored in this memory") as info:
        notes.remember("new", key="new", related=["a", "ghost"])
    assert (info.value.memory, info.value.key) == ("Notes", "new")
    assert notes.get("new") is None
    a = notes.get("a")
    assert a is not None and "related" not in a.metadata
    with pytest.raises(AxonRuntimeError, match=r"related entry 'ghost'.*memory 'Notes'"):
        session.execute('remember("s") -> Notes with { key: "s", related: ["ghost"] }')
    assert notes.get("s") is None
    with pytest.raises(AxonMemoryError, match="cannot be related to itself"):
        notes.remember("a", key="a", related=["a"])
    kit.clock.advance(1)
    notes.remember("short", key="short", expires_in=5)
    kit.clock.advance(5)  # expired: not a valid target any more
    with pytest.raises(AxonMemoryError, match="related entry 'short'"):
        notes.remember("late", key="late", related=["short"])


def test_an_expired_association_is_left_out_of_get(session: Session, kit: SessionKit) -> None:
    notes = session.memory("Notes")
    notes.remember("stays", key="stays")
    notes.remember("goes", key="goes", type="short_term", related=["stays"])
    kit.clock.advance(31 * DAY)
    stays = notes.get("stays")
    assert stays is not None and stays.associated == ()


def test_axon_memory_forget_removes_the_association_too(tmp_path: Path) -> None:
    from tests.helpers.cli import axon as axon_cli

    decl = "memory Notes { store: persistent backend: sqlite retrieval: keyword }"
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(decl)
        notes = session.memory("Notes")
        notes.remember("a", key="a")
        notes.remember("b", key="b", related=["a"], tags=["draft"])
        notes.remember("c", key="c", related=["a"])
    done = axon_cli("memory", "forget", "Notes", "b", "--memory-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    done = axon_cli("memory", "forget", "Notes", "--where", "related=a", "--yes",
                    "--memory-dir", str(tmp_path))
    assert done.returncode == 0 and "forgot 1 entry" in done.stdout, done.stdout + done.stderr
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(decl)
        a = session.memory("Notes").get("a")
        assert a is not None and "related" not in a.metadata


# ---------------------------------------------------------------- export and import


async def _move(source: MemoryBackend, target: MemoryBackend) -> None:
    buffer = io.StringIO()
    await export_memories(source, buffer, ["Notes"])
    await import_memories(target, buffer.getvalue().splitlines(), source="export")


def test_export_and_import_carry_type_importance_related_and_expiry(
    kit: SessionKit, tmp_path: Path
) -> None:
    if kit.kind == "in_memory":
        pytest.skip("an in-process memory is gone when its session closes: nothing to export")
    with open_session(kit) as session:
        notes = session.memory("Notes")
        notes.remember("a", key="a", type="dreams", importance="high", tags=["idea"])
        notes.remember("b", key="b", type="reflex", related=["a"])
        before = {k: notes.get(k) for k in ("a", "b")}
    source = registry.create(kit.kind, location=kit.pg_dsn, memory_dir=kit.memory_dir,
                             clock=kit.clock)
    target = registry.create("sqlite", memory_dir=tmp_path / "copy", clock=kit.clock)

    async def move() -> None:
        try:
            await _move(source, target)
        finally:
            await source.close()
            await target.close()

    asyncio.run(move())
    with axon.Session(memory_dir=tmp_path / "copy", clock=kit.clock) as copy:
        copy.execute("memory Notes { store: persistent backend: sqlite retrieval: keyword }")
        notes = copy.memory("Notes")
        for key, entry in before.items():
            moved = notes.get(key)
            assert entry is not None and moved is not None
            assert moved.metadata == entry.metadata, key
            assert (moved.value, moved.created_at, moved.expires_at) == (
                entry.value, entry.created_at, entry.expires_at)
        a = notes.get("a")
        assert a is not None and a.type == "dreams" and a.importance == 0.75
        assert [e.key for e in a.associated] == ["b"]
        assert [r.key for r in notes.recall("a b", top_k=5, type="reflex")] == ["b"]


# ---------------------------------------------------------------- checker


DECL = "memory Notes { store: persistent, backend: sqlite, retrieval: keyword }\n"


def check_errors(text: str) -> list[tuple[str, int, int]]:
    with pytest.raises(AxonCheckError) as info:
        axon.compile(DECL + text, filename="records.axon")
    return [(d.message, d.line, d.column) for d in info.value.diagnostics]


@pytest.mark.parametrize(
    ("text", "wanted", "column"),
    [
        ('remember("a") -> Notes with { type: short_trem }',
         "Unknown memory type \"short_trem\" (did you mean 'short_term'?). "
         "Valid: long_term, short_term, reflex, dreams", 37),
        ('remember("a") -> Notes with { type: "dream" }', "(did you mean 'dreams'?)", 37),
        ('remember("a") -> Notes with { type: 3 }', "type must be one of long_term", 37),
        ('remember("a") -> Notes with { importance: hihg }',
         "Unknown importance level \"hihg\" (did you mean 'high'?). importance is a number "
         "from 0 to 1 or one of low, normal, high, critical", 43),
        ('remember("a") -> Notes with { expires_in: 3x }',
         "Invalid expires_in \"3x\": unknown unit 'x'", 43),
        ('remember("a") -> Notes with { expires_in: 3 }', "(add a unit: ms, s, m, h, d, w)", 43),
        ('remember("a") -> Notes with { related: "b" }',
         'related must be a list of entry keys, such as ["q3_summary"]', 40),
        ('remember("a") -> Notes with { key: "a", related: ["a"] }',
         "Entry 'a' cannot be related to itself", 51),  # a list's span: its first item
        ('remember("a") -> Notes with { min_importance: high }',
         "'min_importance' is a recall option, not valid in remember", 31),
        ('recall("a") from Notes with { expires_in: 3d }',
         "'expires_in' is a remember option, not valid in recall", 31),
        ('recall("a") from Notes with { min_importance: 1.5 }',
         "min_importance must be a number from 0 to 1 or one of low, normal, high, critical",
         47),
        ('recall("a") from Notes with { min_importnce: high }',
         "did you mean 'min_importance'?", 31),
        ('recall("a") from Notes with { type: longterm }', "(did you mean 'long_term'?)", 37),
        ('recall("a") from Notes with { type: reflex, where: { type: "dreams" } }',
         "Filter 'type' given as an option and in where", 54),
        ('remember("a") -> Notes with { metadata: { related: ["x"] } }',
         "'related' is an option of its own", 43),
    ],
)
def test_checker_errors_have_positions_and_suggestions(
    text: str, wanted: str, column: int
) -> None:
    [(message, line, col)] = check_errors(text)
    assert wanted in message
    assert (line, col) == (2, column)


def test_checked_records_reach_the_ir() -> None:
    program = axon.compile(
        DECL + 'remember("a") -> Notes with { key: "k", type: reflex, importance: high, '
        'expires_in: 3d, related: ["x", "x", "y"] }\n'
        'recall("a") from Notes with { type: "dreams", min_importance: low }\n'
    )
    remember, recall = program.statements
    assert (remember.type, remember.importance, remember.expires_in, remember.related) == (
        "reflex", 0.75, "3d", ("x", "y"))
    assert recall.filters == {
        "type": "dreams", "importance": {"gte": 0.25, "default": 0.5}}


# ---------------------------------------------------------------- the example program


def test_the_records_example_stores_typed_linked_entries(tmp_path: Path) -> None:
    path = Path(__file__).resolve().parents[2] / "examples" / "agent_records.axon"
    clock = FakeClock()
    records, _ = axon.run(path.read_text(), filename=str(path), memory_dir=tmp_path,
                          clock=clock)
    writes = {r["key"]: r for r in records if r["op"] == "remember"}
    assert writes["bug_auth_timeout"]["expires_at"] == clock.now + 30 * DAY
    assert writes["idea_breaker"]["expires_at"] == clock.now + 7 * DAY
    assert writes["fix_auth_pool"]["metadata"]["importance"] == 0.75
    important, habits, short = (r for r in records if r["op"] == "recall")
    assert sorted(r["key"] for r in important["results"]) == ["fix_auth_pool",
                                                              "reflex_pool_check"]
    assert [r["key"] for r in habits["results"]] == ["reflex_pool_check"]
    assert [r["key"] for r in short["results"]] == ["bug_auth_timeout"]
    with axon.Session(memory_dir=tmp_path, clock=clock) as session:
        session.execute("memory Agent { store: persistent, backend: sqlite, retrieval: keyword }")
        fix = session.memory("Agent").get("fix_auth_pool")
        assert fix is not None and fix.type == "long_term"
        assert [e.key for e in fix.associated] == ["bug_auth_timeout", "reflex_pool_check"]


def test_a_filtered_forget_removes_associations_too(tmp_path: Path) -> None:
    """`forget from M with { tags: [...] }` unlinks what it deletes, as `delete(key)` does."""
    with Session(memory_dir=tmp_path) as session:
        session.execute("memory Agent { store: persistent backend: sqlite retrieval: exact }")
        agent = session.memory("Agent")
        agent.remember("keep me", key="keep")
        agent.remember("draft one", key="d1", tags=["draft"], related=["keep"])
        agent.remember("draft two", key="d2", tags=["draft"], related=["keep"])
        keep = agent.get("keep")
        assert keep is not None and sorted(keep.metadata["related"]) == ["d1", "d2"]
        [record] = session.execute('forget from Agent with { tags: ["draft"] }')
        assert record["deleted"] == 2
        keep = agent.get("keep")
        assert keep is not None
        assert keep.metadata.get("related", []) == [] and keep.associated == ()
