"""`forget` at run time: exactly the entries asked for, on every backend, with records and events.

Every backend runs on real storage (tests/runtime/backends.py: a temporary SQLite
directory, a private PostgreSQL schema). A filter deletes the entries a recall with
the same filter may return and nothing else; other memories are untouched; a
missing key deletes 0 and is not an error; a session memory loses only this
session's entries. The statement and the Python handle's `delete` share one path,
so their records and `memory_delete` events agree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

import axon
from axon import render
from axon.errors import AxonMemoryError, AxonRuntimeError
from axon.repl.complete import AxonCompleter
from axon.repl.console import declarations_only
from axon.runtime import manager
from axon.runtime.session import Session
from tests.helpers.stores import Store
from tests.memory.conftest import FakeClock
from tests.runtime.backends import KINDS, SessionKit

ROOT = Path(__file__).resolve().parents[2]

SEED = """
remember("draft one") -> Notes with { key: "d1", tags: ["draft"] }
remember("draft two") -> Notes with {
  key: "d2", tags: ["draft", "q3"], metadata: { project: "apollo" }
}
remember("final") -> Notes with { key: "f1", tags: ["final"], metadata: { project: "apollo" } }
remember("plain") -> Notes with { key: "p1" }
remember("other draft") -> Other with { key: "d1", tags: ["draft"] }
"""


@pytest.fixture(params=KINDS)
def kit(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    clock: FakeClock,
) -> SessionKit:
    return SessionKit(request.param, tmp_path, monkeypatch, clock)


@pytest.fixture
def session(kit: SessionKit) -> Iterator[Session]:
    with axon.Session(**kit.kwargs()) as s:
        s.execute(kit.decl("Notes") + "\n" + kit.decl("Other"))
        s.execute(SEED)
        yield s


def keys(session: Session, memory: str = "Notes") -> list[str]:
    return sorted(e.key for e in session.memory(memory).list())


def deletes(session: Session) -> list[dict[str, Any]]:
    return [e["data"] for e in session.events if e["event_type"] == "memory_delete"]


# ---------------------------------------------------------------- every backend


def test_a_tags_filter_deletes_exactly_the_matching_entries(session: Session) -> None:
    [record] = session.execute('forget from Notes with { tags: ["draft"] }')
    assert record == {
        "op": "forget", "memory": "Notes", "filter": {"tags": ["draft"]}, "deleted": 2,
        "line": 1, "column": 1, "flow": None,
    }
    assert keys(session) == ["f1", "p1"]
    assert keys(session, "Other") == ["d1"]  # the same key and tag in another memory stays
    assert session.memory("Other").get("d1") is not None


def test_a_where_filter_deletes_exactly_the_matching_entries(session: Session) -> None:
    [record] = session.execute('forget from Notes with { where: { project: "apollo" } }')
    assert record["deleted"] == 2 and record["filter"] == {"project": "apollo"}
    assert keys(session) == ["d1", "p1"]
    [both] = session.execute(
        'forget from Notes with { tags: ["draft", "final"], where: { project: "none" } }'
    )
    assert both["deleted"] == 0 and keys(session) == ["d1", "p1"]
    [again] = session.execute('forget from Notes with { tags: ["draft"] }')
    assert again["deleted"] == 1 and keys(session) == ["p1"]


def test_a_filter_deletes_what_a_recall_with_the_same_filter_finds(session: Session) -> None:
    found = session.memory("Notes").recall("draft", top_k=10, tags=["q3"])
    [record] = session.execute('forget from Notes with { tags: ["q3"] }')
    assert record["deleted"] == len(found) == 1
    assert keys(session) == ["d1", "f1", "p1"]


def test_forget_by_key_deletes_one_entry_and_a_missing_key_deletes_nothing(
    session: Session,
) -> None:
    first, second, missing = session.execute(
        'forget("d1") from Notes\nlet k = "f1"\nforget k from Notes\nforget("nope") from Notes'
    )
    assert first == {"op": "forget", "memory": "Notes", "key": "d1", "deleted": 1,
                     "line": 1, "column": 1, "flow": None}
    assert (second["key"], second["deleted"], second["line"]) == ("f1", 1, 3)
    assert (missing["key"], missing["deleted"]) == ("nope", 0)
    assert keys(session) == ["d2", "p1"] and keys(session, "Other") == ["d1"]
    [again] = session.execute('forget("d1") from Notes')
    assert again["deleted"] == 0


def test_forget_inside_a_flow_names_the_flow(session: Session) -> None:
    records = session.execute(
        'flow Tidy(key) {\n  forget(key) from Notes\n'
        '  forget from Notes with { tags: ["final"] }\n}\nrun Tidy("d2")'
    )
    assert [(r["key"] if "key" in r else r["filter"], r["deleted"], r["line"], r["flow"])
            for r in records] == [("d2", 1, 2, "Tidy"), ({"tags": ["final"]}, 1, 3, "Tidy")]
    assert keys(session) == ["d1", "p1"]


def test_records_and_events_agree_with_the_python_handle(
    session: Session, kit: SessionKit
) -> None:
    [statement] = session.execute('forget("d1") from Notes')
    assert session.memory("Notes").delete("d2") is True
    handle = session.records[-1]
    assert statement | {"key": "d2", "line": None, "column": None} == handle
    session.execute('forget from Notes with { where: { project: "apollo" } }')
    by_key, by_handle, by_filter = deletes(session)
    for data in (by_key, by_handle, by_filter):
        assert data["memory"] == "Notes" and data["backend"] == kit.kind
        assert data["store"] == kit.store and data["duration_ms"] >= 0
    assert (by_key["key"], by_key["count"]) == ("d1", 1)
    assert (by_handle["key"], by_handle["count"]) == ("d2", 1)
    assert by_filter["filter"] == {"project": "apollo"} and by_filter["count"] == 1
    assert "key" not in by_filter


def test_a_filter_reads_every_page_before_deleting(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleting while paging would shift the pages and miss entries: all are read first."""
    monkeypatch.setattr(manager, "LIST_PAGE", 3)
    lines = [
        f'remember("n{i}") -> Notes with {{ key: "n{i}", tags: ["{"old" if i % 3 else "new"}"] }}'
        for i in range(20)
    ]
    session.execute("\n".join(lines))
    [record] = session.execute('forget from Notes with { tags: ["old"] }')
    assert record["deleted"] == sum(1 for i in range(20) if i % 3)
    remaining = [k for k in keys(session) if k.startswith("n")]
    assert remaining == sorted(f"n{i}" for i in range(20) if i % 3 == 0)


# ---------------------------------------------------------------- lifetimes


@pytest.fixture(params=["sqlite", "pgvector"])
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    """A persistent backend two sessions share (in_memory is private to one session)."""
    return Store(request.param, tmp_path, monkeypatch)


def test_a_session_memory_loses_only_this_sessions_entries(store: Store) -> None:
    decl = store.decl("Notes", "session")
    with store.session() as first, store.session() as second:
        for s, who in ((first, "first"), (second, "second")):
            s.execute(decl)
            s.execute(
                f'remember("{who}") -> Notes with {{ key: "shared", tags: ["draft"] }}\n'
                f'remember("{who} 2") -> Notes with {{ key: "{who}", tags: ["draft"] }}'
            )
        [record] = first.execute('forget from Notes with { tags: ["draft"] }')
        assert record["deleted"] == 2
        assert first.memory("Notes").count() == 0
        assert sorted(e.key for e in second.memory("Notes").list()) == ["second", "shared"]
        [by_key] = second.execute('forget("first") from Notes')
        assert by_key["deleted"] == 0  # the other session's entry is not this one's to forget
        [own] = second.execute('forget("shared") from Notes')
        assert own["deleted"] == 1 and second.memory("Notes").count() == 1


def test_a_persistent_memory_of_the_same_name_is_untouched(store: Store) -> None:
    with store.session() as keeper:
        keeper.execute(store.decl("Notes", "persistent"))
        keeper.execute('remember("kept") -> Notes with { key: "k", tags: ["draft"] }')
    with store.session() as scratch:
        scratch.execute(store.decl("Notes", "session"))
        scratch.execute('remember("gone") -> Notes with { key: "k", tags: ["draft"] }')
        [record] = scratch.execute('forget from Notes with { tags: ["draft"] }')
        assert record["deleted"] == 1
    with store.session() as keeper:
        keeper.execute(store.decl("Notes", "persistent"))
        entry = keeper.memory("Notes").get("k")
        assert entry is not None and entry.value == "kept"


# ---------------------------------------------------------------- run-time mistakes


@pytest.fixture
def plain(tmp_path: Path, clock: FakeClock) -> Iterator[Session]:
    with axon.Session(memory_dir=tmp_path / "mem", clock=clock) as s:
        s.execute("memory Notes { store: session }")
        yield s


@pytest.mark.parametrize(
    ("setup", "shown"),
    [("let k = 3", "3"), ("let k = \"\"", "''"), ('recall("x") from Notes as k', "a recall's")],
)
def test_a_key_that_is_not_a_string_is_a_runtime_error_with_a_position(
    plain: Session, setup: str, shown: str
) -> None:
    with pytest.raises(AxonRuntimeError) as info:
        plain.execute(f"{setup}\nforget k from Notes")
    assert "forget: the key must be a non-empty string, but 'k' is" in info.value.message
    assert shown in info.value.message and "memory 'Notes'" in info.value.message
    assert (info.value.span.line, info.value.span.column) == (2, 1)


def test_an_unbound_key_in_a_flow_fails_at_its_position(plain: Session) -> None:
    with pytest.raises(AxonRuntimeError) as info:
        plain.execute("flow F() {\n  forget nobody from Notes\n}\nrun F()")
    assert "Unbound name 'nobody'" in info.value.message
    assert (info.value.span.line, info.value.span.column) == (2, 3)


def test_the_manager_refuses_an_empty_filter(plain: Session) -> None:
    plain.execute('remember("a") -> Notes')
    with pytest.raises(AxonMemoryError, match="empty filter would delete everything"):
        plain._memory_call("Notes", lambda m, r: m["Notes"].delete_matching({}))
    assert plain.memory("Notes").count() == 1


# ---------------------------------------------------------------- output and the REPL


def test_the_human_form_of_a_forget_record() -> None:
    where = {"line": 7, "column": 1, "flow": None}
    assert render.format_record(
        {"op": "forget", "memory": "Notes", "filter": {"tags": ["draft"]}, "deleted": 2, **where}
    ) == 'forgot 2 entries from Notes matching {"tags": ["draft"]}  (line 7)'
    assert render.format_record(
        {"op": "forget", "memory": "Notes", "filter": {"a": 1}, "deleted": 1, **where}
    ) == 'forgot 1 entry from Notes matching {"a": 1}  (line 7)'
    assert render.format_record(
        {"op": "forget", "memory": "Notes", "key": "k", "deleted": 1, **where, "flow": "F"}
    ) == "forgot 'k' from Notes  (line 7, in F)"
    assert render.forget_line(
        {"op": "forget", "memory": "Notes", "key": "k", "deleted": 0}
    ) == "no entry 'k' in Notes to forget"


def test_axon_run_prints_forget_records_and_json(tmp_path: Path) -> None:
    program = tmp_path / "tidy.axon"
    program.write_text(
        "memory Notes { store: persistent, backend: sqlite, retrieval: keyword }\n"
        'remember("a") -> Notes with { key: "a", tags: ["draft"] }\n'
        'remember("b") -> Notes with { key: "b", tags: ["draft"] }\n'
        'forget("a") from Notes\n'
        'forget from Notes with { tags: ["draft"] }\n'
        'forget("a") from Notes\n'
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "axon.cli", "run", "--memory-dir", str(tmp_path / "mem"),
             *args, str(program)],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )

    human = run()
    assert human.returncode == 0, human.stderr
    assert human.stdout.splitlines()[2:] == [
        "forgot 'a' from Notes  (line 4)",
        'forgot 1 entry from Notes matching {"tags": ["draft"]}  (line 5)',
        "no entry 'a' in Notes to forget  (line 6)",
    ]
    as_json = run("--json")
    assert as_json.returncode == 0, as_json.stderr
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [r for r in records if r["op"] == "forget"] == [
        {"op": "forget", "memory": "Notes", "key": "a", "deleted": 1, "line": 4, "column": 1,
         "flow": None},
        {"op": "forget", "memory": "Notes", "filter": {"tags": ["draft"]}, "deleted": 1,
         "line": 5, "column": 1, "flow": None},
        {"op": "forget", "memory": "Notes", "key": "a", "deleted": 0, "line": 6, "column": 1,
         "flow": None},
    ]


def _complete(completer: AxonCompleter, text: str) -> list[str]:
    document = Document(text, len(text))
    return [c.text for c in completer.get_completions(document, CompleteEvent(True, False))]


def test_the_repl_completes_forget_its_memory_and_its_options(plain: Session) -> None:
    plain.execute("memory Archive { store: session }")
    completer = AxonCompleter(plain, backend_names=lambda: [])
    assert "forget" in _complete(completer, "forg")
    assert "forget" in _complete(completer, "flow F() {\n  forg")
    assert _complete(completer, "forget from Ar") == ["Archive"]
    assert _complete(completer, 'forget("k") from No') == ["Notes"]
    assert _complete(completer, "forget k from ") == ["Notes", "Archive"]
    assert _complete(completer, "forget from Notes with { ") == ["tags: ", "where: "]
    assert _complete(completer, 'forget from Notes with { tags: ["a"], ') == ["where: "]


def test_preloading_a_file_skips_its_forget_statements() -> None:
    """`axon repl FILE` loads declarations only: a forget must never run then."""
    text = (
        "memory Notes { store: session }\n"
        'forget("a") from Notes\n'
        'forget from Notes with { tags: ["x"] }\n'
    )
    declarations, skipped = declarations_only(text, "f.axon")
    assert skipped == [2, 3]
    assert "forget" not in declarations and declarations.count("\n") == 3
