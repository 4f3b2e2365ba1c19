"""`session.memory(NAME)`: Python values in and out, the statements' semantics
(docs/language.md §13.1).

Every test runs over every backend on real storage (tests/runtime/backends.py): the
handle must give what the statements give (same keys, same scores, same metadata,
same events and records) and keep the same lifetimes.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import axon
from axon.errors import AxonCheckError, AxonError, AxonMemoryError
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.runtime.model import ModelRequest
from axon.runtime.session import Session
from tests.helpers.stores import Store
from tests.memory.conftest import FakeClock, pg_dsn_or_skip, pg_test_schema
from tests.runtime.backends import KINDS, SessionKit

VALUES: list[Any] = [
    "plain text",
    "ünïcødé ✓ 日本語",
    "",
    42,
    -7,
    2**70,
    2.5,
    0.1,
    True,
    False,
    None,
    [1, "a", [2, [3.5]], None, {"k": False}],
    {"a": {"b": [1.5, False, None]}, "n": 0, "s": "x"},
    [],
    {},
]


@pytest.fixture(params=KINDS)
def kit(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    clock: FakeClock,
) -> SessionKit:
    return SessionKit(request.param, tmp_path, monkeypatch, clock)


@pytest.fixture
def session(kit: SessionKit) -> Iterator[Session]:
    with axon.Session(**kit.kwargs()) as s:
        s.execute(kit.decl())
        yield s


def same_types(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (True == 1 does not pass)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_types(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_types(a[k], b[k]) for k in a)
    return bool(a == b)


# ---------------------------------------------------------------- remember and get


def test_remember_then_get_gives_the_same_values_with_the_same_types(
    session: Session, kit: SessionKit
) -> None:
    notes = session.memory("Notes")
    for i, value in enumerate(VALUES):
        assert notes.remember(value, key=f"k{i}") == f"k{i}"
    for i, value in enumerate(VALUES):
        entry = notes.get(f"k{i}")
        assert entry is not None, i
        assert same_types(entry.value, value), (kit.kind, value, entry.value)
        assert entry.key == f"k{i}"
        assert entry.metadata == {"source": "python", "scope": "Notes"}
        assert entry.created_at == kit.clock.now and entry.expires_at is None
    assert notes.get("missing") is None
    assert notes.count() == len(VALUES)


def test_the_same_value_without_a_key_gets_the_key_a_literal_statement_gets(
    session: Session,
) -> None:
    notes = session.memory("Notes")
    for value, literal in [
        ("The client prefers short answers", '"The client prefers short answers"'),
        (42, "42"),
        ([1, "two"], '[1, "two"]'),
        ({"city": "Oslo", "n": 3}, '{ city: "Oslo", n: 3 }'),
    ]:
        key = notes.remember(value)
        [record] = session.execute(f"remember({literal}) -> Notes")
        assert record["key"] == key, (value, literal)
        stored = notes.get(key)
        assert stored is not None and same_types(stored.value, value)
    assert notes.count() == 4  # one entry each: the statement replaced the handle's


def test_tags_importance_and_metadata_are_stored_as_the_statements_store_them(
    session: Session,
) -> None:
    notes = session.memory("Notes")
    notes.remember("q3 budget", key="h", tags=["finance"], importance=0.8,
                   metadata={"project": "apollo", "n": [1, 2]})
    session.execute('remember("q3 budget") -> Notes with { key: "s", tags: ["finance"], '
                    'importance: 0.8, metadata: { project: "apollo", n: [1, 2] } }')
    by_handle, by_statement = notes.get("h"), notes.get("s")
    assert by_handle is not None and by_statement is not None
    assert by_statement.metadata == {**by_handle.metadata, "source": "main"}
    assert by_handle.metadata["source"] == "python"


def test_the_handle_copies_values_in_and_out(session: Session) -> None:
    notes = session.memory("Notes")
    value = {"items": [1, 2]}
    notes.remember(value, key="v")
    value["items"].append(3)
    first = notes.get("v")
    assert first is not None and first.value == {"items": [1, 2]}
    first.value["items"].append(99)
    again = notes.get("v")
    assert again is not None and again.value == {"items": [1, 2]}


# ---------------------------------------------------------------- recall


def _statement_results(session: Session, text: str) -> list[tuple[str, Any, float]]:
    [record] = session.execute(text)
    return [(r["key"], r["value"], r["score"]) for r in record["results"]]


@pytest.mark.parametrize("mode", ["exact", "keyword", "semantic", "hybrid"])
def test_recall_gives_what_the_recall_statement_gives(kit: SessionKit, mode: str) -> None:
    with axon.Session(**kit.kwargs()) as session:
        session.execute(kit.decl(retrieval=mode))
        notes = session.memory("Notes")
        texts = [
            "the budget for q3 is approved", "budget meeting moved to friday",
            "lunch with the design team", "q3 roadmap draft", "the budget is tight",
            "friday deploy freeze", "design review of the roadmap",
        ]
        for i, text in enumerate(texts):
            kit.clock.advance(1)
            notes.remember(text, key=f"n{i}", tags=["even" if i % 2 == 0 else "odd"],
                           metadata={"team": "core" if i < 4 else "web"})
        cases: list[tuple[dict[str, Any], str]] = [
            ({}, ""),
            ({"top_k": 3}, " with { top_k: 3 }"),
            ({"tags": ["even"]}, ' with { tags: ["even"] }'),
            ({"where": {"team": "core"}, "top_k": 10},
             ' with { where: { team: "core" }, top_k: 10 }'),
            ({"retrieval": "keyword"}, " with { retrieval: keyword }"),
        ]
        for query in ["budget q3", "friday", "design roadmap", "nothing matches zzz"]:
            for options, written in cases:
                results = notes.recall(query, **options)
                got = [(r.key, r.value, r.score) for r in results]
                expected = _statement_results(session, f'recall("{query}") from Notes{written}')
                assert got == expected, (kit.kind, mode, query, options)
                for r in results:
                    assert r.metadata["scope"] == "Notes" and r.metadata["source"] == "python"
        if mode == "hybrid":
            [first, *_] = notes.recall("budget q3")
            assert first.signals  # hybrid explains its fused score
        else:
            assert all(r.signals is None for r in notes.recall("budget q3"))


# ---------------------------------------------------------------- delete, list, count


def test_delete_list_and_count(session: Session, kit: SessionKit) -> None:
    notes = session.memory("Notes")
    for i in range(7):
        kit.clock.advance(1)
        notes.remember(f"note {i}", key=f"k{i}", tags=["a" if i % 2 else "b"],
                       metadata={"day": i % 3})
    assert [e.key for e in notes.list()] == [f"k{i}" for i in range(6, -1, -1)]  # newest first
    assert [e.key for e in notes.list(limit=3)] == ["k6", "k5", "k4"]
    assert notes.list(limit=0) == []
    assert [e.key for e in notes.list(tags=["a"])] == ["k5", "k3", "k1"]
    assert [e.key for e in notes.list(tags=("a",), limit=2)] == ["k5", "k3"]
    assert [e.key for e in notes.list(where={"day": 0})] == ["k6", "k3", "k0"]
    assert [e.key for e in notes.list(where={"day": [1, 2]}, tags=["b"])] == ["k4", "k2"]
    assert notes.count() == 7
    assert notes.delete("k3") is True
    assert notes.delete("k3") is False
    assert notes.get("k3") is None
    assert notes.count() == 6
    assert "k3" not in [e.key for e in notes.list()]
    [record] = session.execute('recall("note 3") from Notes with { top_k: 10 }')
    assert "k3" not in [r["key"] for r in record["results"]]


def test_a_filtered_list_pages_through_a_large_memory(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    import axon.memory.backend as backends

    monkeypatch.setattr(backends, "LIST_PAGE", 4)
    notes = session.memory("Notes")
    for i in range(11):
        notes.remember(i, key=f"k{i:02}", tags=["x"] if i % 3 == 0 else ["y"])
    assert sorted(e.value for e in notes.list(tags=["x"])) == [0, 3, 6, 9]
    assert len(notes.list(tags=["y"], limit=5)) == 5


def test_a_scope_filter_is_decided_on_the_memorys_name(session: Session) -> None:
    """Entries show `metadata["scope"]` as the memory's name whatever scope the backend
    stores; a `scope` filter tests that name (the backend gets the rest of the filter)."""
    notes = session.memory("Notes")
    notes.remember("a", key="a", tags=["x"])
    notes.remember("b", key="b")
    assert sorted(e.key for e in notes.list(where={"scope": "Notes"})) == ["a", "b"]
    assert notes.list(where={"scope": "Other"}) == []
    assert [e.key for e in notes.list(where={"scope": ["Other", "Notes"]}, tags=["x"])] == ["a"]


def test_expired_entries_are_gone_from_get_list_count_and_recall(kit: SessionKit) -> None:
    with axon.Session(**kit.kwargs()) as session:
        session.execute(kit.decl(extra="decay: 10s "))
        notes = session.memory("Notes")
        notes.remember("short lived", key="s")
        entry = notes.get("s")
        assert entry is not None and entry.expires_at == kit.clock.now + 10
        kit.clock.advance(11)
        assert notes.get("s") is None
        assert notes.list() == [] and notes.count() == 0 and notes.recall("short") == []


# ---------------------------------------------------------------- events and records


def test_events_and_records_are_those_of_the_statements(session: Session, kit: SessionKit) -> None:
    notes = session.memory("Notes")
    first_event = len(session.events)
    notes.remember({"x": 1}, key="k")
    notes.recall("x", top_k=2)
    notes.get("k")
    notes.list(limit=5)
    notes.delete("k")
    notes.delete("k")
    events = session.events[first_event:]
    kinds = [(e["event_type"], e["data"].get("op")) for e in events
             if e["event_type"] != "memory_expire"]
    assert kinds == [
        ("memory_write", None), ("memory_read", None), ("memory_read", "get"),
        ("memory_read", "list"), ("memory_delete", None), ("memory_delete", None),
    ]
    write, read, get, listed, deleted, again = (
        e for e in events if e["event_type"] != "memory_expire"
    )
    backend = kit.kind
    assert write["data"] | {"duration_ms": 0} == {
        "key": "k", "value_type": "dict", "memory": "Notes", "backend": backend,
        "store": kit.store, "expires_at": None, "duration_ms": 0,
    }
    assert read["data"]["query"] == "x" and read["data"]["top_k"] == 2
    assert read["data"]["memory"] == "Notes" and read["data"]["results_count"] == 1
    assert get["data"]["key"] == "k" and get["data"]["results_count"] == 1
    assert listed["data"]["results_count"] == 1 and listed["data"]["limit"] == 5
    assert deleted["data"]["count"] == 1 and again["data"]["count"] == 0
    assert deleted["data"]["memory"] == "Notes" and deleted["data"]["key"] == "k"
    ops = [(r["op"], r["memory"], r.get("key"), r["line"]) for r in session.records]
    assert ops == [("remember", "Notes", "k", None), ("recall", "Notes", None, None),
                   ("forget", "Notes", "k", None), ("forget", "Notes", "k", None)]
    remember, recall, forget, forget_again = session.records
    [statement] = session.execute('recall("x") from Notes with { top_k: 2 }')
    assert statement["line"] == 1 and statement["results"] == []  # "k" was deleted since
    assert {k: v for k, v in recall.items() if k not in ("line", "column", "results")} == {
        k: v for k, v in statement.items() if k not in ("line", "column", "results")
    }
    assert [r["key"] for r in recall["results"]] == ["k"]
    assert remember["value"] == {"x": 1} and remember["metadata"]["source"] == "python"
    assert forget["deleted"] == 1 and forget_again["deleted"] == 0


# ---------------------------------------------------------------- lifetimes


@pytest.fixture(params=["sqlite", "pgvector"])
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    return Store(request.param, tmp_path, monkeypatch)


def test_a_session_memorys_handle_writes_are_owned(store: Store) -> None:
    decl = store.decl("Scratch", "session")
    one, two = store.session(), store.session()
    try:
        one.execute(decl)
        two.execute(decl)
        one.execute(store.decl("Keep", "persistent"))
        one.memory("Scratch").remember("mine", key="a")
        one.memory("Keep").remember("kept", key="p")
        assert one.memory("Scratch").count() == 1
        assert two.memory("Scratch").get("a") is None  # invisible to another live session
        assert two.memory("Scratch").count() == 0 and two.memory("Scratch").list() == []
        assert store.rows(owned=True) == 1
    finally:
        one.close()
    assert store.rows(owned=True) == 0  # gone with its session
    assert store.rows(owned=False) == 1  # the persistent entry stays
    try:
        three = store.session()
        three.execute(decl)
        assert three.memory("Scratch").get("a") is None
    finally:
        three.close()
        two.close()


def test_an_ephemeral_write_lasts_one_call_like_one_input(
    session: Session, kit: SessionKit
) -> None:
    session.execute(kit.decl("Now", store="ephemeral"))
    now = session.memory("Now")
    assert now.remember("fleeting", key="f") == "f"
    assert now.get("f") is None and now.count() == 0
    [record] = session.records
    assert record["op"] == "remember" and record["key"] == "f"


# ---------------------------------------------------------------- mistakes


def _checker_message(session: Session, option: str) -> str:
    with pytest.raises(AxonCheckError) as caught:
        session.check(f'remember("x") -> Notes with {{ {option} }}')
    [diagnostic] = caught.value.diagnostics
    return diagnostic.message


def test_the_handle_refuses_what_the_checker_refuses_with_its_words(session: Session) -> None:
    notes = session.memory("Notes")
    for option, call in [
        ("importance: 2", lambda: notes.remember("x", importance=2)),
        ("importance: -0.5", lambda: notes.remember("x", importance=-0.5)),
        ("metadata: { source: 1 }", lambda: notes.remember("x", metadata={"source": 1})),
        ("metadata: { scope: 1 }", lambda: notes.remember("x", metadata={"scope": 1})),
        ("metadata: { tags: 1 }", lambda: notes.remember("x", metadata={"tags": 1})),
        ('key: ""', lambda: notes.remember("x", key="")),
    ]:
        with pytest.raises(AxonMemoryError) as caught:
            call()
        # The same words; the checker says where the key was written ("in 'with'").
        expected = _checker_message(session, option).replace(" in 'with'", "")
        assert expected in str(caught.value), option
        assert "memory 'Notes'" in str(caught.value)
    with pytest.raises(AxonCheckError) as check:
        session.check('recall("x") from Notes with { tags: ["a"], where: { tags: ["b"] } }')
    with pytest.raises(AxonMemoryError) as caught:
        notes.recall("x", tags=["a"], where={"tags": ["b"]})
    assert check.value.diagnostics[0].message in str(caught.value)
    with pytest.raises(AxonMemoryError, match=r"Unknown retrieval .*did you mean 'keyword'"):
        notes.recall("x", retrieval="keywrd")
    with pytest.raises(AxonMemoryError, match="top_k in recall must be a positive integer"):
        notes.recall("x", top_k=0)
    with pytest.raises(AxonCheckError) as too_many:
        session.check('recall("x") from Notes with { top_k: 99999999999999999999 }')
    with pytest.raises(AxonMemoryError) as caught:
        notes.recall("x", top_k=99999999999999999999)  # past SQLite INTEGER: no OverflowError
    assert too_many.value.diagnostics[0].message in str(caught.value)
    assert caught.value.memory == "Notes"
    with pytest.raises(AxonMemoryError, match="limit must be at most 1,000,000"):
        notes.list(limit=2**64)
    with pytest.raises(AxonMemoryError, match="limit must be at most 1,000,000"):
        notes.page(limit=2**64)
    with pytest.raises(AxonMemoryError, match="where: unknown operator 'nested' for 'n'"):
        notes.recall("x", where={"n": {"nested": 1}})
    # NaN and infinities: silently no results (and a raw ValueError on pgvector) before.
    for bad in [float("nan"), float("inf"), [1, float("-inf")]]:
        for call in (notes.recall, notes.list, notes.page):
            args = ("x",) if call == notes.recall else ()
            with pytest.raises(AxonMemoryError, match="where: 'n' must be a finite number") as nan:
                call(*args, where={"n": bad})
            assert nan.value.memory == "Notes"
    assert notes.count() == 0  # nothing refused was written


def test_wrong_argument_types_are_type_errors_that_say_what_was_expected(
    session: Session,
) -> None:
    notes = session.memory("Notes")
    cases: list[tuple[Any, str]] = [
        (lambda: notes.remember((1, 2)), "value is of type tuple (use a list)"),
        (lambda: notes.remember({1, 2}, key="a"), "(memory 'Notes', key 'a')"),
        (lambda: notes.remember({1: "a"}), "keys must be strings"),
        (lambda: notes.remember([object()]), "value[0] is of type object"),
        (lambda: notes.remember("x", key=3), "key must be a str, not int"),
        (lambda: notes.remember("x", tags="finance"), "tags must be a list of strings"),
        (lambda: notes.remember("x", tags=[1]), "tags must be a list of strings"),
        (lambda: notes.remember("x", importance=[1]), "importance must be a number"),
        (lambda: notes.remember("x", importance=True), "importance must be a number"),
        (lambda: notes.remember("x", metadata=["a"]), "metadata must be a dict"),
        (lambda: notes.remember("x", metadata={"at": {1, 2}}), "of type set"),
        (lambda: notes.recall(42), "query must be a str, not int"),
        (lambda: notes.recall("x", top_k="3"), "top_k in recall must be a positive integer"),
        (lambda: notes.recall("x", where=[("a", 1)]), "where must be a dict"),
        (lambda: notes.get(None), "key must be a str, not NoneType"),
        (lambda: notes.delete(1), "key must be a str, not int"),
        (lambda: notes.list(limit="5"), "limit must be an int"),
        (lambda: session.memory(3), "the name must be a str"),
    ]
    for call, message in cases:
        with pytest.raises(TypeError, match=re.escape(message)):
            call()
    assert notes.count() == 0


def test_values_a_memory_cannot_hold_are_refused_naming_memory_and_key(session: Session) -> None:
    notes = session.memory("Notes")
    with pytest.raises(AxonMemoryError, match="not a finite number"):
        notes.remember(float("nan"), key="n")
    with pytest.raises(AxonMemoryError) as caught:
        notes.remember({"v": float("inf")}, key="inf")
    assert "memory 'Notes'" in str(caught.value) and "key 'inf'" in str(caught.value)
    with pytest.raises(AxonMemoryError, match=r"too large .* key 'big'"):
        notes.remember("x" * 1_100_000, key="big")
    with pytest.raises(AxonMemoryError, match="limit must be 0 or more"):
        notes.list(limit=-1)
    # Without a key, an unpaired surrogate in the value was a raw UnicodeEncodeError
    # from deriving the key; it is refused like the same value under a given key.
    for bad in ["a\ud800", ["x", {"y": "\udc00"}]]:
        with pytest.raises(AxonMemoryError, match="unpaired surrogate") as caught:
            notes.remember(bad)
        assert "memory 'Notes'" in str(caught.value) and caught.value.key
    assert notes.count() == 0


def test_an_undeclared_memory_is_a_clear_error_with_a_suggestion(session: Session) -> None:
    with pytest.raises(AxonMemoryError) as caught:
        session.memory("notes")
    message = str(caught.value)
    assert "memory 'notes' is not declared" in message
    assert "did you mean 'Notes'?" in message and "declared: Notes" in message
    assert "session.execute('memory notes {" in message


def test_a_closed_session_refuses_handle_calls(kit: SessionKit) -> None:
    session = axon.Session(**kit.kwargs())
    session.execute(kit.decl())
    notes = session.memory("Notes")
    session.close()
    with pytest.raises(RuntimeError, match="this session is closed"):
        notes.count()
    with pytest.raises(axon.AxonError, match="this session is closed") as caught:
        session.execute('recall("x") from Notes')  # one `except AxonError` catches it
    assert isinstance(caught.value, axon.AxonSessionError)


# ---------------------------------------------------------------- Session arguments


class EchoModel:
    """A model client of one's own: answers with the task it was asked."""

    name = "echo"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> str:
        self.requests.append(request)
        return f"echo: {request.ask}"


def test_a_model_client_of_ones_own_answers_the_steps(tmp_path: Path) -> None:
    model = EchoModel()
    assert isinstance(model, axon.ModelClient)
    with axon.Session(memory_dir=tmp_path, model=model) as session:
        session.execute("memory Out { store: persistent backend: sqlite }\n"
                        'flow F() { step S { ask: "say hi" } remember(S) -> Out }\nrun F()')
        entry = session.memory("Out").get("s")
        assert entry is not None and entry.value == "echo: say hi"
        assert [r.ask for r in model.requests] == ["say hi"]
        assert any(e["event_type"] == "model_call" and e["data"]["client"] == "echo"
                   for e in session.events)
    with pytest.raises(TypeError, match="model must be a ModelClient"):
        axon.Session(memory_dir=tmp_path, model=object())  # type: ignore[arg-type]


@pytest.mark.parametrize("how", ["instance", "provider"])
def test_an_embedder_of_ones_own_runs_semantic_recall(tmp_path: Path, how: str) -> None:
    embedder = HashingEmbedder(dim=32)
    assert isinstance(embedder, axon.Embedder)
    given: Any = embedder if how == "instance" else (lambda: embedder)
    with axon.Session(memory_dir=tmp_path, embedder=given) as session:
        session.execute("memory S { store: persistent backend: sqlite retrieval: semantic }")
        notes = session.memory("S")
        notes.remember("the cat sat on the mat", key="cat")
        notes.remember("stock prices fell", key="stock")
        assert notes.recall("a cat on a mat", top_k=1)[0].key == "cat"
        [read] = [e for e in session.events if e["event_type"] == "memory_read"]
        assert read["data"]["retrieval"] == "semantic" and "note" not in read["data"]
    with pytest.raises(TypeError, match="embedder must be an Embedder"):
        axon.Session(memory_dir=tmp_path, embedder=42)  # type: ignore[arg-type]


def test_pg_dsn_is_a_session_argument_and_the_cli_passes_it_without_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from axon.cli import app

    dsn = pg_dsn_or_skip()
    monkeypatch.delenv("AXON_PG_DSN")
    monkeypatch.setenv("AXON_PG_SCHEMA", pg_test_schema(tmp_path))
    program = tmp_path / "p.axon"
    program.write_text('memory P { store: persistent backend: pgvector }\n'
                       'remember("on the server") -> P with { key: "s" }\n')
    result = CliRunner().invoke(
        app, ["run", str(program), "--json", "--pg-dsn", dsn, "--memory-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.splitlines()[0])["key"] == "s"
    assert "AXON_PG_DSN" not in os.environ  # the CLI no longer sets process-wide state
    with axon.Session(memory_dir=tmp_path, pg_dsn=dsn) as session:
        session.execute("memory P { store: persistent backend: pgvector }")
        entry = session.memory("P").get("s")
        assert entry is not None and entry.value == "on the server"
    with axon.Session(memory_dir=tmp_path) as session, pytest.raises(
        axon.AxonRuntimeError, match="set the AXON_PG_DSN"
    ):
        session.execute("memory P { store: persistent backend: pgvector }")


def test_page_walks_by_cursor_while_others_write_and_delete(
    session: Session, kit: SessionKit
) -> None:
    """`handle.page(after=page.next)`: newest first, a cursor per page; entries written
    or deleted meanwhile never make an entry that stayed repeat or go missing."""
    notes = session.memory("Notes")
    for i in range(25):
        if i % 4 == 0:
            kit.clock.advance(1)  # runs of equal timestamps, too
        notes.remember(f"note {i}", key=f"k{i:02}", tags=["even" if i % 2 == 0 else "odd"])
    everything = [e.key for e in notes.list()]
    page = notes.page(limit=4)
    assert [e.key for e in page.entries] == everything[:4] and page.next is not None
    seen = [e.key for e in page.entries]
    deleted = set()
    step = 0
    while page.next is not None and step < 50:
        step += 1
        victim = everything[(step * 5) % len(everything)]
        if notes.delete(victim):
            deleted.add(victim)
        kit.clock.advance(1)
        notes.remember(f"late {step}", key=f"late{step}")
        page = notes.page(limit=4, after=page.next)
        seen += [e.key for e in page.entries]
    assert page.next is None
    assert len(seen) == len(set(seen))
    assert {k for k in everything if k not in deleted} <= set(seen)
    assert not any(key.startswith("late") for key in seen)  # newer than the first page
    evens = notes.page(limit=100, tags=["even"])
    assert evens.next is None and all(e.metadata["tags"] == ["even"] for e in evens.entries)
    with pytest.raises(AxonMemoryError, match="not a cursor of this listing"):
        notes.page(after="garbage")
    with pytest.raises(AxonMemoryError, match="limit must be 1 or more"):
        notes.page(limit=0)
    with pytest.raises(TypeError, match="after must be a cursor"):
        notes.page(after=3)  # type: ignore[arg-type]


def _nested(depth: int) -> list[Any]:
    root: list[Any] = []
    inner = root
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return root


def test_arguments_json_cannot_show_get_messages_naming_the_memory(session: Session) -> None:
    """A set, bytes or data nested 5,000 deep in tags, where, a value or metadata: a clear
    error naming the memory (and key), never json's TypeError or a RecursionError."""
    notes = session.memory("Notes")
    cases: list[tuple[Any, type[Exception], str]] = [
        (lambda: notes.remember("x", key="k", tags={"a"}), TypeError, "got a value of type set"),
        (lambda: notes.recall("x", tags={"a"}), TypeError, "got a value of type set"),
        (lambda: notes.list(tags=b"ab"), TypeError, "got a value of type bytes"),
        (lambda: notes.recall("x", where={"p": {1}}), AxonMemoryError, "'p' must be a string"),
        (lambda: notes.list(where={"p": b"x"}), AxonMemoryError, "got a value of type bytes"),
        (lambda: notes.list(where={"p": _nested(5000)}), AxonMemoryError, "'p' must be"),
        (lambda: notes.remember(_nested(5000), key="d"), AxonMemoryError, "nested too deeply"),
        (
            lambda: notes.remember("x", key="m", metadata={"deep": _nested(5000)}),
            AxonMemoryError,
            "metadata['deep'][0] is nested too deeply: more than 100 lists or dicts",
        ),
    ]
    for call, kind, message in cases:
        with pytest.raises(kind, match=re.escape(message)) as caught:
            call()
        assert "Notes" in str(caught.value)
    notes.remember(_nested(99), key="deep")  # the limit itself is storable
    entry = notes.get("deep")
    assert entry is not None and entry.value == _nested(99)
    assert notes.count() == 1


def test_subclasses_of_json_types_are_stored_as_the_plain_types(session: Session) -> None:
    """IntEnum, str Enum, numpy.float64, defaultdict, OrderedDict come back as int, str,
    float and dict on every backend (SQLite always did; in_memory returned the caller's
    objects), and the caller's containers are copied, not shared."""
    import collections
    import enum

    import numpy as np

    class Level(enum.IntEnum):
        HIGH = 3

    class Color(str, enum.Enum):  # noqa: UP042 (the mixin is what is tested)
        RED = "red"

    notes = session.memory("Notes")
    given: dict[str, Any] = {
        "intenum": Level.HIGH,
        "strenum": Color.RED,
        "np": np.float64(0.5),
        "ddict": collections.defaultdict(list, {"a": [Level.HIGH]}),
        "odict": collections.OrderedDict([("b", 1), ("a", Color.RED)]),
    }
    want: dict[str, Any] = {
        "intenum": 3, "strenum": "red", "np": 0.5, "ddict": {"a": [3]},
        "odict": {"b": 1, "a": "red"},
    }  # fmt: skip
    for key, value in given.items():
        notes.remember(value, key=key, metadata={"level": Level.HIGH, "at": [np.float64(1.5)]})
    for key, value in want.items():
        entry = notes.get(key)
        assert entry is not None and same_types(entry.value, value), key
        shown = {k: entry.metadata[k] for k in ("level", "at")}
        assert same_types(shown, {"level": 3, "at": [1.5]})
    mutable = {"list": [1, 2]}
    notes.remember(mutable, key="mutable", metadata={"extra": mutable["list"]})
    mutable["list"].append(3)
    mutable["new"] = [4]
    entry = notes.get("mutable")
    assert entry is not None and entry.value == {"list": [1, 2]}
    assert entry.metadata["extra"] == [1, 2]


def test_session_pg_schema_puts_pgvector_memories_in_that_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Session(pg_schema=...)` is the CLI's `--pg-schema` (docs/language.md §13.2): it wins over
    `AXON_PG_SCHEMA`; the entries land in that schema of the real server, nowhere else."""
    import uuid

    dsn = pg_dsn_or_skip()  # skips without psycopg too (fails under CI=true)
    import psycopg

    schema = f"fix5_{uuid.uuid4().hex[:12]}"
    decoy = f"fix5_{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("AXON_PG_SCHEMA", decoy)
    try:
        with axon.Session(memory_dir=tmp_path, pg_dsn=dsn, pg_schema=schema) as session:
            session.execute("memory Notes { store: persistent backend: pgvector }")
            session.memory("Notes").remember("in the chosen schema", key="k")
        with psycopg.connect(dsn) as conn:
            [(found,)] = conn.execute(
                psycopg.sql.SQL("SELECT count(*) FROM {} WHERE key = 'k'").format(
                    psycopg.sql.Identifier(schema, "entries")
                )
            ).fetchall()
            assert found == 1
            names = {row[0] for row in conn.execute(
                "SELECT schema_name FROM information_schema.schemata WHERE schema_name = %s",
                (decoy,),
            )}
            assert names == set()
        with pytest.raises(AxonMemoryError, match="schema name 'no-dash' is not allowed"):
            axon.Session(memory_dir=tmp_path, pg_schema="no-dash")
        with pytest.raises(TypeError, match="pg_schema must be a str, not int"):
            axon.AsyncSession(memory_dir=tmp_path, pg_schema=3)  # type: ignore[arg-type]
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for name in (schema, decoy):
                conn.execute(
                    psycopg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                        psycopg.sql.Identifier(name)
                    )
                )


async def test_async_session_takes_pg_schema(tmp_path: Path) -> None:
    import uuid

    dsn = pg_dsn_or_skip()  # skips without psycopg too (fails under CI=true)
    import psycopg

    schema = f"fix5_{uuid.uuid4().hex[:12]}"
    try:
        async with axon.AsyncSession(memory_dir=tmp_path, pg_dsn=dsn, pg_schema=schema) as s:
            await s.execute("memory Notes { store: persistent backend: pgvector }")
            await s.memory("Notes").remember("async", key="a")
            assert await s.memory("Notes").count() == 1
        with psycopg.connect(dsn) as conn:
            rows = conn.execute(
                psycopg.sql.SQL("SELECT key FROM {}").format(
                    psycopg.sql.Identifier(schema, "entries")
                )
            ).fetchall()
            assert rows == [("a",)]
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                psycopg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                    psycopg.sql.Identifier(schema)
                )
            )


@pytest.mark.parametrize(
    ("clock", "message"),
    [
        (lambda: None, "returned None (NoneType)"),
        (lambda: math.nan, "returned nan (float)"),
        (lambda: math.inf, "returned inf (float)"),
        (lambda: 2**70, "returned 1180591620717411303424 (int)"),
        (lambda: -1.0, "returned -1.0 (float)"),
        (lambda: True, "returned True (bool)"),
    ],
    ids=["none", "nan", "inf", "huge", "negative", "bool"],
)
def test_a_clock_returning_no_time_is_a_clear_error_naming_it(
    tmp_path: Path, clock: Any, message: str
) -> None:
    """Checked when the clock is used, before anything is written with that time: no
    NOT NULL constraint, OverflowError or an entry created at inf."""
    with axon.Session(memory_dir=tmp_path, clock=clock) as session:
        with pytest.raises(AxonError) as caught:
            session.execute("memory N { store: persistent backend: sqlite }")
            session.memory("N").remember("x", key="k")
        assert "the session's clock '" in str(caught.value) and message in str(caught.value)
        assert "a finite number from 0 to 253,402,300,799" in str(caught.value)
    with axon.Session(memory_dir=tmp_path) as session:  # nothing was stored meanwhile
        session.execute("memory N { store: persistent backend: sqlite }")
        assert session.memory("N").count() == 0


def test_session_arguments_of_the_wrong_type_fail_at_construction(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"clock must be a zero-argument callable .* not str"):
        axon.Session(memory_dir=tmp_path, clock="now")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"memory_dir must be a str or a path .* not int"):
        axon.Session(memory_dir=123)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="clock must be a zero-argument callable"):
        axon.AsyncSession(memory_dir=tmp_path, clock=5)  # type: ignore[arg-type]
    # A NUL in memory_dir was a raw ValueError (embedded null byte) at the first store.
    for bad in (f"{tmp_path}/a\x00b", tmp_path / "a\x00b"):
        with pytest.raises(AxonMemoryError, match=r"memory_dir .* contains a NUL character"):
            axon.Session(memory_dir=bad)
        with pytest.raises(AxonMemoryError, match=r"memory_dir .* contains a NUL character"):
            axon.AsyncSession(memory_dir=bad)
    with axon.Session(memory_dir=tmp_path, clock=lambda: 1_700_000_000) as session:  # an int
        session.execute("memory N { store: persistent backend: sqlite }")
        session.memory("N").remember("x", key="k")
        entry = session.memory("N").get("k")
        assert entry is not None and entry.created_at == 1_700_000_000


HUGE = 10**5000
"""An int of 5,001 digits: past Python's 4,300-digit limit on converting ints to text."""


def huge_int_calls(notes: Any) -> list[tuple[str, Any, str | None]]:
    """(what, call, key the error names) for every argument a huge int can reach."""
    return [
        ("value", lambda: notes.remember(HUGE, key="k"), "k"),
        ("nested value", lambda: notes.remember({"a": [HUGE]}, key="k"), "k"),
        ("metadata", lambda: notes.remember("x", key="k", metadata={"m": HUGE}), "k"),
        ("expires_in", lambda: notes.remember("x", key="k", expires_in=HUGE), "k"),
        ("expires_in past a float", lambda: notes.remember("x", key="k", expires_in=2**1030), "k"),
        ("importance", lambda: notes.remember("x", key="k", importance=HUGE), "k"),
        ("list limit", lambda: notes.list(limit=HUGE), None),
        ("page limit", lambda: notes.page(limit=HUGE), None),
        ("top_k", lambda: notes.recall("x", top_k=HUGE), None),
        ("embed_wait", lambda: notes.recall("x", embed_wait=HUGE), None),
    ]


def _check_huge_int_error(what: str, error: AxonMemoryError, key: str | None) -> None:
    text = str(error)
    assert error.memory == "Notes" and "memory 'Notes'" in text, what
    if key is not None:
        assert error.key == key and f"key '{key}'" in text, what
    assert "sys.set_int_max_str_digits" not in text and len(text) < 400, (what, text)


def test_huge_ints_are_axon_memory_errors_naming_memory_and_key(session: Session) -> None:
    """An int of 5,001 digits in a value, metadata, expires_in, limit, top_k or embed_wait
    is an AxonMemoryError naming the memory (and key), never the raw ValueError of int
    to text ("Exceeds the limit (4300 digits)") or OverflowError (int to float)."""
    notes = session.memory("Notes")
    for what, call, key in huge_int_calls(notes):
        with pytest.raises(AxonMemoryError) as caught:
            call()
        _check_huge_int_error(what, caught.value, key)
    assert notes.count() == 0
    big = 10**4299  # 4,300 digits: the limit itself is storable
    notes.remember(big, key="big", metadata={"n": -big})
    entry = notes.get("big")
    assert entry is not None and entry.value == big and entry.metadata["n"] == -big


async def test_huge_ints_through_the_async_handle(tmp_path: Path) -> None:
    async with axon.AsyncSession(memory_dir=tmp_path / "mem") as session:
        await session.execute("memory Notes { store: persistent backend: sqlite }")
        notes = session.memory("Notes")
        for what, call, key in huge_int_calls(notes):
            with pytest.raises(AxonMemoryError) as caught:
                await call()
            _check_huge_int_error(what, caught.value, key)
        assert await notes.count() == 0


def test_session_backend_settings_are_the_pg_keywords_written_per_backend(
    tmp_path: Path,
) -> None:
    """`Session(backend_settings={"pgvector": {"dsn": ..., "schema": ...}})` is what
    `pg_dsn=` / `pg_schema=` are shortcuts for: the entries land in that schema of that
    server; a shortcut that disagrees with the mapping, an unknown backend or setting is
    refused before anything opens."""
    import uuid

    dsn = pg_dsn_or_skip()  # skips without psycopg too (fails under CI=true)
    import psycopg

    schema = f"fix5_{uuid.uuid4().hex[:12]}"
    try:
        settings = {"pgvector": {"dsn": dsn, "schema": schema}}
        with axon.Session(memory_dir=tmp_path, backend_settings=settings) as session:
            session.execute("memory Notes { store: persistent backend: pgvector }")
            session.memory("Notes").remember("by the mapping", key="k")
        with psycopg.connect(dsn) as conn:
            [(found,)] = conn.execute(
                psycopg.sql.SQL("SELECT count(*) FROM {} WHERE key = 'k'").format(
                    psycopg.sql.Identifier(schema, "entries")
                )
            ).fetchall()
        assert found == 1
        with pytest.raises(AxonMemoryError):
            axon.Session(memory_dir=tmp_path, backend_settings={"nosuch": {"dsn": dsn}})
        with pytest.raises(AxonMemoryError):
            axon.Session(memory_dir=tmp_path, backend_settings={"pgvector": {"nosuch": "x"}})
        with pytest.raises(AxonMemoryError):
            axon.Session(memory_dir=tmp_path, pg_schema="other", backend_settings=settings)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                psycopg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                    psycopg.sql.Identifier(schema)
                )
            )
