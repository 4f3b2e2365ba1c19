"""Operator maps in `where` (docs/language.md §6.3 Operator filters) through a session on
every backend: Python's `list`/`page`/`recall` and a program's recall and forget keep the
same entries; a bad operator or operand is an `AxonMemoryError` naming the memory and
the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import axon
from axon.errors import AxonMemoryError
from axon.runtime.session import Session
from tests.memory.conftest import FakeClock
from tests.runtime.backends import KINDS, SessionKit

ROWS: dict[str, dict[str, Any]] = {
    "march": {"day": "2024-03-05", "n": 1},
    "june": {"day": "2024-06-01", "n": 3},
    "july": {"day": "2024-07-20", "n": 5},
    "text": {"day": 2024, "n": "9"},
}


@pytest.fixture(params=KINDS)
def session(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Session]:
    kit = SessionKit(request.param, tmp_path, monkeypatch, FakeClock())
    with axon.Session(**kit.kwargs()) as s:
        s.execute(kit.decl())
        notes = s.memory("Notes")
        for key, metadata in ROWS.items():
            notes.remember(f"note {key}", key=key, metadata=metadata)
        yield s


def test_python_lists_pages_and_recalls_take_operator_maps(session: Session) -> None:
    notes = session.memory("Notes")
    early = {"day": {"lt": "2024-06"}}
    assert [e.key for e in notes.list(where=early)] == ["march"]
    assert sorted(e.key for e in notes.list(where={"n": {"gte": 3}})) == ["july", "june"]
    assert [e.key for e in notes.page(where={"n": {"gt": 3, "lte": 5}}).entries] == ["july"]
    summer = {"day": {"gte": "2024-06", "lt": "2024-08"}, "n": {"ne": 5}}
    assert [r.key for r in notes.recall("note", where=summer)] == ["june"]
    assert sorted(e.key for e in notes.list(where={"n": {"in": [1, "9"]}})) == ["march", "text"]
    assert notes.list(where={"n": {"exists": False}}) == []


def test_an_in_operand_may_be_a_tuple_and_every_backend_gets_a_list(session: Session) -> None:
    # A tuple was refused ("in takes a list"): it is Python's natural sequence. Passed on
    # as a tuple, SQLite and PostgreSQL would match nothing (their queries take a list).
    notes = session.memory("Notes")
    where = {"n": {"in": (1, "9")}}
    assert sorted(e.key for e in notes.list(where=where)) == ["march", "text"]
    assert sorted(e.key for e in notes.page(where=where).entries) == ["march", "text"]
    assert sorted(r.key for r in notes.recall("note", where=where)) == ["march", "text"]
    assert sorted(e.key for e in notes.list(where={"n": (3, 5)})) == ["july", "june"]
    assert where == {"n": {"in": (1, "9")}}  # the caller's map is left as it was
    read = [e for e in session.events if e["event_type"] == "memory_read"][-1]
    assert read["data"]["filters"] == {"n": [3, 5]}
    for bad, shown in (({1, 9}, "a value of type set"), ("19", '"19"')):
        with pytest.raises(AxonMemoryError) as caught:
            notes.list(where={"n": {"in": bad}})
        assert f"where: 'n': in takes a list of strings, numbers or booleans, got {shown}" in (
            str(caught.value)
        )
        assert caught.value.memory == "Notes"


def test_a_program_recalls_and_forgets_by_operator_maps(session: Session) -> None:
    [record] = session.execute(
        'recall("note") from Notes with { where: { day: { gte: "2024-06" } } } as hits'
    )
    assert sorted(r["key"] for r in record["results"]) == ["july", "june"]
    session.execute("forget from Notes with { where: { n: { lt: 3 } } }")
    assert sorted(e.key for e in session.memory("Notes").list()) == ["july", "june", "text"]


@pytest.mark.parametrize(
    ("where", "wanted"),
    [
        ({"n": {"gtee": 3}}, "where: unknown operator 'gtee' for 'n' (did you mean 'gte'?)"),
        ({"n": {"gte": [1, 2]}}, "where: 'n': gte takes a number or a string, got [1, 2]"),
        ({"n": {"lt": None}}, "where: 'n': lt takes a number or a string, got null"),
        ({"n": {"lt": True}}, "where: 'n': lt takes a number or a string, got true"),
        ({"n": {"gte": float("nan")}}, "where: 'n' must be a finite number, got nan"),
        ({"n": {"in": "a"}}, "where: 'n': in takes a list of strings, numbers or booleans"),
        ({"n": {"exists": 1}}, "where: 'n': exists takes true or false, got 1"),
        ({"n": {"ne": [1]}}, "where: 'n': ne takes a string, number or boolean, got [1]"),
        ({"n": {"gte": 1, "lt": "b"}}, "where: 'n' compares with a number and a string"),
        ({"n": {}}, "where: 'n' has an empty operator map"),
    ],
)
def test_bad_operator_maps_are_errors_naming_the_memory_and_the_field(
    session: Session, where: dict[str, Any], wanted: str
) -> None:
    notes = session.memory("Notes")
    for call in (lambda: notes.list(where=where), lambda: notes.recall("x", where=where)):
        with pytest.raises(AxonMemoryError) as caught:
            call()
        assert wanted in str(caught.value)
        assert caught.value.memory == "Notes"
