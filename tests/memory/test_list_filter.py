"""A filtered list (`list_matching`) gives `matches_filters`'s answer on every backend.

SQLite and PostgreSQL put the filter in their query (`sql_common.filter_condition`, one
walk with a dialect each); these tests compare them with the in-memory backend (which
tests each entry with `matches_filters`) on random metadata and filters, and check
that the SQL condition alone is exact wherever it says it is.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axon.memory.backends.sql_common import POSTGRES_FILTERS, SQLITE_FILTERS
from axon.memory.backends.sql_common import filter_condition as compile_filter
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import NewEntry, encode_json, matches_filters
from axon.testing import BackendEnv, FakeClock
from tests.memory.conftest import BACKEND_FACTORIES

NAMES = ["group", "tags", "a.b", "é", "", "type", "importance", 'q"t', "b\\s", "n\n", "$x"]
STRINGS = ["a", "b", "é", "ü中", "1", "true", "", "a b", '"', "x\x00", "2024-06-01"]
STRINGS += ["\U0001f600"]
NUMBERS: list[Any] = [0, 1, 2, -1, 0.0, -0.0, 1.0, 0.1, 2.5, 0.75, 1e20, 10**20, 2**53 + 1]
NUMBERS += [2**70, 1e-310, 1 + 1e-12, 0.75 - 1e-12]  # the last two: inside the SQL slack
SCALARS = st.sampled_from(STRINGS) | st.sampled_from(NUMBERS) | st.booleans()

VALUES = st.recursive(
    st.none() | SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(NAMES), inner, max_size=2)
    ),
    max_leaves=5,
)
def filter_condition(filters: dict[str, Any], column: str) -> tuple[str, list[Any], bool]:
    return compile_filter(filters, column, SQLITE_FILTERS)


def postgres_condition(filters: dict[str, Any], column: str) -> tuple[str, list[Any], bool]:
    return compile_filter(filters, column, POSTGRES_FILTERS)


METADATA = st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=4)

OPERANDS = (
    st.sampled_from(NUMBERS)
    | st.sampled_from([*STRINGS, "a\x00", "\ud800", "2024-06", "2024-06-01T00:00"])
    | st.sampled_from([True, False, None])
    | st.lists(SCALARS, max_size=3)
)
COMPARISON = st.dictionaries(
    st.sampled_from(["gte", "gt", "lte", "lt", "default", "eq", "ne", "in", "exists"]),
    OPERANDS,
    min_size=1,
    max_size=3,
)
FILTER_VALUES = SCALARS | st.lists(SCALARS, max_size=3) | COMPARISON | st.none()
FILTERS = st.dictionaries(st.sampled_from(NAMES), FILTER_VALUES, min_size=1, max_size=2)


def _sql_matches(metadata: list[dict[str, Any]], filters: dict[str, Any]) -> tuple[list[int], bool]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, metadata_json TEXT)")
    conn.executemany(
        "INSERT INTO t VALUES (?, ?)", [(i, encode_json(m)) for i, m in enumerate(metadata)]
    )
    sql, params, exact = filter_condition(filters, "metadata_json")
    rows = conn.execute(f"SELECT id FROM t WHERE {sql} ORDER BY id", params).fetchall()
    return [row[0] for row in rows], exact


@settings(max_examples=400, deadline=None)
@given(metadata=st.lists(METADATA, max_size=8), filters=FILTERS)
def test_the_sqlite_condition_keeps_every_match_and_only_them_when_exact(
    metadata: list[dict[str, Any]], filters: dict[str, Any]
) -> None:
    wanted = [i for i, m in enumerate(metadata) if matches_filters(m, filters)]
    passed, exact = _sql_matches(metadata, filters)
    assert set(wanted) <= set(passed)
    if exact:
        assert passed == wanted


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(metadata=st.lists(METADATA, max_size=8), filters=FILTERS)
def test_the_postgres_condition_keeps_every_match_and_only_them_when_exact(
    pg_dsn: str, metadata: list[dict[str, Any]], filters: dict[str, Any]
) -> None:
    import psycopg
    from psycopg import sql

    wanted = [i for i, m in enumerate(metadata) if matches_filters(m, filters)]
    condition, params, exact = postgres_condition(filters, "e.metadata")
    with psycopg.connect(pg_dsn) as conn:
        conn.execute("CREATE TEMP TABLE t (id int PRIMARY KEY, metadata json NOT NULL)")
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO t VALUES (%s, %s)",
                [(i, encode_json(m)) for i, m in enumerate(metadata)],
            )
        query = sql.SQL("SELECT id FROM t AS e WHERE {} ORDER BY id").format(sql.SQL(condition))
        passed = [row[0] for row in conn.execute(query, params).fetchall()]
    assert set(wanted) <= set(passed)
    if exact:  # rows whose metadata holds a \u0000 escape pass unexamined (no jsonb for them)
        unexamined = [i for i, m in enumerate(metadata) if "\\u0000" in encode_json(m)]
        assert passed == sorted({*wanted, *unexamined})


@pytest.mark.parametrize(
    "filters",
    [
        {"group": 7},
        {"tags": ["finance", "legal"]},
        {"type": "short_term", "tags": ["x"]},
        {"importance": {"gte": 0.75, "default": 0.5}},
        {"flag": True, "ratio": 0.1, "name": "é中"},
        {"a.b": ["x", 1, False]},
    ],
)
def test_the_filters_the_language_writes_are_all_in_the_query(filters: dict[str, Any]) -> None:
    sql, params, _ = filter_condition(filters, "metadata_json")
    assert sql != "1" and len(params) >= 2 * len(filters)  # every field in the condition
    pg_params = postgres_condition(filters, "e.metadata")[1]
    assert len(pg_params) >= 1 + len(filters)  # the NUL guard, then every field


OPERATOR_ROWS: list[dict[str, Any]] = [
    {"day": "2024-03-05", "n": 1, "k": "a"},
    {"day": "2024-06-01", "n": 3, "k": ["a", "b"]},
    {"day": "2024-06", "n": "3", "k": None},
    {"day": 2024, "n": True},
    {"day": "\U0001f600", "n": 5.5, "k": "é"},
    {},
]


@pytest.mark.parametrize(
    "filters",
    [
        {"day": {"lt": "2024-06"}},
        {"day": {"gte": "2024-06", "lt": "2024-07"}},
        {"day": {"gt": "2024-06"}},
        {"day": {"gte": "z"}},
        {"n": {"gte": 3}},
        {"n": {"gt": 2, "lte": 6}},
        {"k": {"exists": False}},
        {"k": {"exists": True, "ne": "a"}},
        {"k": {"in": ["b", "é"]}},
        {"k": {"ne": "é"}},
    ],
)
def test_operator_maps_are_in_the_query_on_both_dialects(
    pg_dsn: str, filters: dict[str, Any]
) -> None:
    """The condition alone keeps the documented rows (numbers: up to the slack, none here):
    string order by code point, a number never against a string, `in`, `ne`, `exists`."""
    import psycopg
    from psycopg import sql

    wanted = [i for i, m in enumerate(OPERATOR_ROWS) if matches_filters(m, filters)]
    assert _sql_matches(OPERATOR_ROWS, filters)[0] == wanted
    condition, params, _ = postgres_condition(filters, "e.metadata")
    with psycopg.connect(pg_dsn) as conn:
        conn.execute("CREATE TEMP TABLE t (id int PRIMARY KEY, metadata json NOT NULL)")
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO t VALUES (%s, %s)",
                [(i, encode_json(m)) for i, m in enumerate(OPERATOR_ROWS)],
            )
        query = sql.SQL("SELECT id FROM t AS e WHERE {} ORDER BY id").format(sql.SQL(condition))
        assert [row[0] for row in conn.execute(query, params).fetchall()] == wanted


def test_string_filters_are_exact_and_numbers_have_a_slack() -> None:
    assert filter_condition({"tags": ["a", "é"], "type": "x"}, "metadata_json")[2]
    assert not filter_condition({"group": 7}, "metadata_json")[2]
    assert postgres_condition({"group": 7, "tags": ["a"]}, "e.metadata")[2]
    assert not postgres_condition({"importance": {"gte": 0.5}}, "e.metadata")[2]


@pytest.mark.parametrize("filters", [{'q"t': "a"}, {"n\n": 1}, {"x": "a\x00"}, {"x": None}])
def test_what_sqlite_cannot_spell_is_left_to_python(filters: dict[str, Any]) -> None:
    sql, params, exact = filter_condition(filters, "metadata_json")
    assert (sql, params, exact) == ("1", [], False)


@pytest.mark.parametrize("kind", ["sqlite", "pgvector"])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    metadata=st.lists(METADATA, min_size=1, max_size=10),
    filters=FILTERS,
    limit=st.none() | st.integers(0, 4),
    same_time=st.booleans(),
)
async def test_list_matching_gives_the_reference_answer(
    tmp_path_factory: pytest.TempPathFactory,
    kind: str,
    metadata: list[dict[str, Any]],
    filters: dict[str, Any],
    limit: int | None,
    same_time: bool,
) -> None:
    if kind == "pgvector" and any("\x00" in encode_json(m) for m in metadata):
        metadata = [m for m in metadata if "\x00" not in encode_json(m)] or [{}]
    clock = FakeClock()
    env = BackendEnv(tmp_path_factory.mktemp(kind), clock, HashingEmbedder())
    backends = [BACKEND_FACTORIES["in_memory"](env), BACKEND_FACTORIES[kind](env)]
    try:
        answers = []
        for backend in backends:
            for i, m in enumerate(metadata):
                if not same_time:
                    clock.advance(1.0)
                await backend.store_many([NewEntry(f"k{i}", i, {**m, "scope": "S"})])
            found = await backend.list_matching("S", filters, limit=limit)
            answers.append([(e.key, e.metadata) for e in found])
        listed = await backends[0].list_entries("S")
        reference = [(e.key, e.metadata) for e in listed if matches_filters(e.metadata, filters)]
        assert answers[0] == answers[1] == reference[:limit]
    finally:
        for backend in backends:
            await backend.close()
