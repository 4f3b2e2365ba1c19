"""The PostgreSQL + pgvector backend beyond the conformance suite, on a real server.

Settings and error messages (no server needed), schema versions, exact on
non-ASCII text, keyword statistics (`scope_stats`) against the rows and scores against
the in-memory backend's, vector search against raw SQL and numpy, atomic
batches, the expiry sweep, two processes sharing a database and eight
concurrent writers. The server is the one `scripts/pg` starts (`AXON_PG_DSN`);
without it these tests skip, except in CI where they fail.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axon.errors import AxonMemoryError
from axon.memory.backends import postgres as pgmod
from axon.memory.backends import postgres_schema, postgres_versions
from axon.memory.backends import sqlite as sqlite_backend
from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.backends.postgres import PostgresBackend
from axon.memory.backends.postgres_schema import (
    MAX_TERM_CHARS,
    SCHEMA_VERSION,
    counted_terms,
    describe_dsn,
    entry_terms,
    index_term,
    indexed,
    indexed_terms,
    parse_dsn,
    text_array,
)
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import NewEntry
from axon.memory.retrieval.exact import seed_score
from axon.memory.retrieval.scores import text_length
from axon.memory.retrieval.text import index_terms
from axon.memory.versions import KEEP_ALL, Version
from tests.conftest import require_extra
from tests.memory.conftest import FakeClock, pg_test_schema

require_extra("psycopg", "psycopg_pool", module_level=True)  # every test builds the backend

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def pg(pg_dsn: str, tmp_path: Path, clock: FakeClock) -> AsyncIterator[PostgresBackend]:
    backend = PostgresBackend(
        location=pg_dsn,
        schema=pg_test_schema(tmp_path),
        clock=clock,
        embedder=HashingEmbedder(),
        pool_size=2,
    )
    try:
        yield backend
    finally:
        await backend.close()


def raw(pg_dsn: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description else []


# ---------------------------------------------------------------------- settings (no server)


def test_no_dsn_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AXON_PG_DSN", raising=False)
    with pytest.raises(AxonMemoryError, match="AXON_PG_DSN"):
        PostgresBackend()
    with pytest.raises(AxonMemoryError, match="AXON_NOT_SET_ANYWHERE"):
        PostgresBackend(location="env:AXON_NOT_SET_ANYWHERE")


def test_location_env_var_and_default_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_MEMORY_DB", "postgresql://alice@db.example:6543/mem")
    monkeypatch.setenv("AXON_PG_DSN", "host=other port=5 dbname=x user=bob")
    assert PostgresBackend(location="env:MY_MEMORY_DB").target == "alice@db.example:6543/mem"
    assert PostgresBackend().target == "bob@other:5/x"


def test_passwords_never_appear_in_errors() -> None:
    with pytest.raises(AxonMemoryError) as info:
        PostgresBackend(location="host=x password=se cret")  # not a valid string
    assert "se cret" not in str(info.value) and "cret" not in str(info.value)
    params = parse_dsn("postgresql://u:hunter2@h:1/d")
    assert "hunter2" not in describe_dsn(params)


async def test_unreachable_server_is_a_clear_error() -> None:
    # Port 9 on loopback: nothing listens there, so the connection is refused at once.
    backend = PostgresBackend(
        location="postgresql://axon:hunter2@127.0.0.1:9/nowhere", connect_timeout=2
    )
    with pytest.raises(AxonMemoryError) as info:
        await backend.store("k", "v")
    message = str(info.value)
    assert "axon@127.0.0.1:9/nowhere" in message and "hunter2" not in message
    await backend.close()


def test_the_connection_strings_connect_timeout_is_the_wait() -> None:
    """libpq's `connect_timeout` in the DSN bounds how long an operation waits for an
    unreachable server (the keyword wins; neither: 15 s); a non-number is an error."""
    base = "postgresql://u@127.0.0.1:9/nowhere"
    assert PostgresBackend(location=base)._db._timeout == 15.0
    assert PostgresBackend(location=f"{base}?connect_timeout=0")._db._timeout == 15.0
    assert PostgresBackend(location=f"{base}?connect_timeout=3")._db._timeout == 3.0
    assert (
        PostgresBackend(location=f"{base}?connect_timeout=3", connect_timeout=5)._db._timeout == 5.0
    )
    with pytest.raises(AxonMemoryError, match="connect_timeout must be a number of seconds"):
        PostgresBackend(location=f"{base}?connect_timeout=soon")


def test_bad_schema_name_is_refused() -> None:
    with pytest.raises(AxonMemoryError, match="schema name"):
        PostgresBackend(location="postgresql://u@h/d", schema='x"; DROP TABLE y; --')


def test_indexed_terms_are_the_distinct_porter_stems_and_the_token_count() -> None:
    assert indexed_terms("Painting paints, PAINTED the cats' NEAR(dogs)") == (
        ["paint", "the", "cat", "near", "dog"],
        [3, 1, 1, 1, 1],
        7,
    )
    long_word = "x" * (MAX_TERM_CHARS + 1)
    # A word too long for the GIN index is indexed as its `index_term`, under 512 characters.
    assert indexed_terms(f"short {long_word}") == (["short", index_term(long_word)], [1, 1], 2)
    assert len(index_term(long_word)) < MAX_TERM_CHARS and index_term(long_word) != long_word
    assert index_term(long_word) != index_term(long_word + "x")
    assert text_array(["a", 'q"uote', "back\\slash"]) == '{"a","q\\"uote","back\\\\slash"}'


# ---------------------------------------------------------------------- schema


async def test_schema_is_created_and_versioned(pg: PostgresBackend, pg_dsn: str) -> None:
    await pg.store("k", "v")
    rows = raw(pg_dsn, f'SELECT value FROM "{pg.schema}".meta WHERE name = %s', ("schema_version",))
    assert rows == [(str(SCHEMA_VERSION),)]
    tables = {
        r[0]
        for r in raw(pg_dsn, "SELECT tablename FROM pg_tables WHERE schemaname = %s", (pg.schema,))
    }
    assert {"meta", "entries", "models", "scope_stats", "versions"} <= tables
    indexes = {
        r[0]
        for r in raw(pg_dsn, "SELECT indexname FROM pg_indexes WHERE schemaname = %s", (pg.schema,))
    }
    assert {
        "entries_terms", "entries_context_terms", "entries_expires", "versions_entry"
    } <= indexes
    assert "entries_tsv" not in indexes  # schema 3 dropped ts_rank's tsvector


async def test_newer_schema_version_is_refused(pg: PostgresBackend, pg_dsn: str) -> None:
    await pg.store("k", "v")
    raw(pg_dsn, f"UPDATE \"{pg.schema}\".meta SET value = '999' WHERE name = 'schema_version'")
    other = PostgresBackend(location=pg_dsn, schema=pg.schema)
    with pytest.raises(AxonMemoryError, match="version 999"):
        await other.count()
    await other.close()


async def test_reopening_keeps_entries(pg: PostgresBackend, pg_dsn: str, clock: FakeClock) -> None:
    await pg.store("k", {"b": 1, "a": ["\x00", 2.5]}, {"scope": "S", "z": 1, "y": "\x00"})
    await pg.close()
    again = PostgresBackend(location=pg_dsn, schema=pg.schema, clock=clock)
    entry = await again.get("k", "S")
    assert entry is not None
    assert list(entry.value) == ["b", "a"] and entry.value["a"] == ["\x00", 2.5]  # key order kept
    assert list(entry.metadata) == ["scope", "z", "y"] and entry.metadata["y"] == "\x00"
    await again.close()


# ---------------------------------------------------------------------- retrieval


SUBSTRING_PIECES = st.sampled_from(
    ["ab", "AB", "c", "İ", "i̇", "ß", "SS", "é", "É", "_", "%", "\\", " ", "\u212a", "x"]
)


def _substring_text(max_size: int) -> st.SearchStrategy[str]:
    return st.lists(SUBSTRING_PIECES, max_size=max_size).map("".join)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["A", "B"]), _substring_text(3).filter(bool), _substring_text(10)
        ),
        max_size=12,
    ),
    needle=_substring_text(6) | st.sampled_from(["aba", "ABAB", "b%_", "İab", "ss", "\\x"]),
    top_k=st.integers(1, 6),
    scope=st.sampled_from(["A", None]),
)
async def test_exact_through_trigram_indexes_is_the_in_memory_backend(
    pg: PostgresBackend,
    clock: FakeClock,
    steps: list[tuple[str, str, str]],
    needle: str,
    top_k: int,
    scope: str | None,
) -> None:
    """`LIKE` on the trigram-indexed lower-cased columns (schema 4) answers as the
    in-memory scan: short needles, case, non-ASCII folding, LIKE metacharacters."""
    await pg.clear()
    memory = InMemoryBackend(clock=clock)
    try:
        for n, (name, key, value) in enumerate(steps):
            clock.advance(1.0 if n % 3 else 0.0)
            for store in (pg, memory):
                await store.store(key, value, {"scope": name})
        got, want = [
            [(e.scope, e.key, e.score) for e in await store.retrieve(needle, top_k, scope)]
            for store in (pg, memory)
        ]
        assert got == want
    finally:
        await memory.close()


async def test_exact_reads_a_rare_needle_through_the_trigram_index(
    pg: PostgresBackend, pg_dsn: str
) -> None:
    s = f'"{pg.schema}"'
    await pg.store_many([NewEntry(f"k{i}", f"filler text number {i}") for i in range(3000)])
    await pg.store("rare", "a Zebra crossing")
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"ANALYZE {s}.entries")
        conn.execute("SET enable_seqscan = off")  # a table this small is cheaper to scan
        plan = conn.execute(
            f"EXPLAIN SELECT id FROM {s}.entries AS e WHERE "
            'coalesce(e.text_lc, lower(e.text COLLATE "C")) LIKE %s',
            ("%zebra cr%",),
        ).fetchall()
    assert "entries_text_trgm" in " ".join(row[0] for row in plan)
    assert [(e.key, e.score) for e in await pg.retrieve("ZEBRA CR", 3)] == [("rare", 0.4)]


async def test_exact_matches_seed_on_non_ascii_text(pg: PostgresBackend, clock: FakeClock) -> None:
    items = {
        "İstanbul": "Şehir",
        "STRASSE": "Große Straße",
        "ΣΟΦΙΑ": "σοφία ΟΔΟΣ",
        "ǅungla": "ǆ ǅ Ǆ",
        "plain": "nothing special, İi",
    }
    for key, value in items.items():
        await pg.store(key, value)
        clock.advance(1)
    for query in ["i̇stanbul", "İSTANBUL", "straße", "STRASSE", "σοφ", "ΟΔΟΣ", "ǆ", "İi", "i"]:
        got = await pg.retrieve(query, top_k=10, mode="exact")
        want = sorted(
            (
                (seed_score(query.lower(), key, value), i, key)
                for i, (key, value) in enumerate(items.items())
                if seed_score(query.lower(), key, value) > 0
            ),
            reverse=True,
        )
        assert [(e.key, e.score) for e in got] == [(k, s) for s, _, k in want], query


def _stats_agree(pg_dsn: str, schema: str) -> dict[str | None, tuple[int, int, int]]:
    """`scope_stats` checked against the rows themselves, recomputed in Python."""
    rows = raw(
        pg_dsn,
        "SELECT scope, key, text, context, terms, term_counts, length, context_terms, "
        f'context_counts FROM "{schema}".entries',
    )
    want: dict[str | None, list[int]] = {}
    for scope, key, text, context, terms, counts, length, context_terms, context_counts in rows:
        own = Counter(index_term(term) for term in index_terms(f"{key} {text}"))
        assert (terms, counts) == (list(own), list(own.values()))
        assert length == text_length(f"{key} {text}")
        around = Counter(index_term(term) for term in index_terms(context))
        assert (context_terms, context_counts) == (list(around), list(around.values()))
        totals = want.setdefault(scope, [0, 0, 0])
        totals[0] += 1
        totals[1] += length
        totals[2] += text_length(context)
    got = {
        scope: (int(docs), int(length), int(context_length))
        for scope, docs, length, context_length in raw(
            pg_dsn, f'SELECT scope, docs, length, context_length FROM "{schema}".scope_stats'
        )
    }
    assert got == {scope: tuple(totals) for scope, totals in want.items()}
    assert _term_stats(pg_dsn, schema) == _term_stats_of_rows(rows)
    return got


TermStats = dict[tuple[str, str | None], tuple[int, int]]
"""`term_stats`: (term, scope) -> (docs, linked_docs)."""


def _term_stats(pg_dsn: str, schema: str) -> TermStats:
    """`term_stats` as stored: (term, scope) -> (docs, linked_docs)."""
    found = raw(pg_dsn, f'SELECT term, scope, docs, linked_docs FROM "{schema}".term_stats')
    return {(term, scope): (int(docs), int(linked)) for term, scope, docs, linked in found}


def _term_stats_of_rows(rows: list[tuple[Any, ...]]) -> TermStats:
    """Each (term, scope)'s rows holding the term in `terms`, and in `terms` or
    `context_terms` (what keyword recall counted per query before schema 5)."""
    docs: Counter[tuple[str, str | None]] = Counter()
    linked: Counter[tuple[str, str | None]] = Counter()
    for scope, _key, _text, _context, terms, _counts, _length, context_terms, _c in rows:
        docs.update((term, scope) for term in set(terms))
        linked.update((term, scope) for term in set(terms) | set(context_terms))
    return {pair: (docs[pair], linked[pair]) for pair in linked}


@pytest.mark.parametrize(
    "name", ["postgres_v1.sql", "postgres_v2.sql", "postgres_v3.sql", "postgres_v4.sql"]
)
async def test_old_schemas_get_terms_and_scope_stats_when_migrated(
    name: str, pg_dsn: str, tmp_path: Path
) -> None:
    from tests.memory.conftest import load_postgres_dump

    schema = pg_test_schema(tmp_path)
    load_postgres_dump(name, pg_dsn, schema)
    backend = PostgresBackend(location=pg_dsn, schema=schema, pool_size=1)
    try:
        await backend.count()  # migrates
        stats = _stats_agree(pg_dsn, schema)
        [(rows,)] = raw(pg_dsn, f'SELECT count(*) FROM "{schema}".entries')
        assert rows > 0 and sum(docs for docs, _, _ in stats.values()) == rows
        assert len(_term_stats(pg_dsn, schema)) > 20  # counted by the migration (schema 5)
        await backend.store("new", "after the migration", {"scope": "Notes"})
        await backend.store("standup", "Standup moved to Tuesdays", {"scope": "Notes"})
        assert await backend.delete("invoice_globex", "Notes")
        _stats_agree(pg_dsn, schema)  # the triggers keep it from then on
        # Held only by the context of the entry stored after it: a linked recall's count.
        assert _term_stats(pg_dsn, schema)[("globex", "Notes")] == (0, 1)
        # The old schema gained the (empty) versions table of schema 8: history works.
        assert raw(pg_dsn, f'SELECT count(*) FROM "{schema}".versions') == [(0,)]
        await backend.record_versions("Notes", [Version("new", "remember", "v", {}, 1.0)], 2)
        assert [v.value for v in await backend.history("new", "Notes")] == ["v"]
    finally:
        await backend.close()


async def test_schema_6_indexes_the_long_words_schema_5_left_out(
    pg_dsn: str, tmp_path: Path
) -> None:
    """Rows written before schema 6 lack their words over MAX_TERM_CHARS: the migration
    indexes them (only those rows), and `term_stats` counts them (by the triggers)."""
    schema = pg_test_schema(tmp_path)
    long_word = "z" * (MAX_TERM_CHARS + 1)
    backend = PostgresBackend(location=pg_dsn, schema=schema, pool_size=1)
    try:
        await backend.store("long", f"{long_word} tail", {"scope": "S"})
    finally:
        await backend.close()
    # What schema 5 stored: the long word neither in `terms` nor in `term_stats`.
    raw(
        pg_dsn,
        f"UPDATE \"{schema}\".entries SET terms = '{{long,tail}}', term_counts = '{{1,1}}' "
        "WHERE key = 'long'",
    )
    raw(pg_dsn, f"UPDATE \"{schema}\".meta SET value = '5' WHERE name = 'schema_version'")
    assert (index_term(long_word), "S") not in _term_stats(pg_dsn, schema)
    backend = PostgresBackend(location=pg_dsn, schema=schema, pool_size=1)
    try:
        [found] = await backend.retrieve(long_word, 5, "S", mode="keyword")
        assert found.key == "long"
        assert _term_stats(pg_dsn, schema)[(index_term(long_word), "S")] == (1, 1)
        _stats_agree(pg_dsn, schema)
    finally:
        await backend.close()


# ---------------------------------------------------------------------- history (versions)


async def test_a_schema_7_store_opens_and_gains_the_versions_table(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schema written by the code before history (migrations 1 to 7) opens: the
    migration to 8 adds an empty `versions` table, its index and sequence, and changes
    no entry; history then works on it."""
    schema = pg_test_schema(tmp_path)
    with monkeypatch.context() as before:
        before.setattr(postgres_schema, "MIGRATIONS", postgres_schema.MIGRATIONS[:7])
        before.setattr(postgres_schema, "SCHEMA_VERSION", 7)
        old = PostgresBackend(location=pg_dsn, schema=schema, pool_size=1)
        try:
            await old.store("a", "first fact", {"scope": "S", "tags": ["x"]})
            await old.store_many([NewEntry(f"k{i}", f"fact {i}", {"scope": "T"}) for i in range(5)])
        finally:
            await old.close()
    tables = "SELECT tablename FROM pg_tables WHERE schemaname = %s"
    assert "versions" not in {r[0] for r in raw(pg_dsn, tables, (schema,))}
    version = f'SELECT value FROM "{schema}".meta WHERE name = %s'
    assert raw(pg_dsn, version, ("schema_version",)) == [("7",)]
    rows_before = raw(pg_dsn, f'SELECT id, scope, key, vgen, terms FROM "{schema}".entries')

    backend = PostgresBackend(location=pg_dsn, schema=schema, pool_size=1)
    try:
        assert await backend.count("T") == 5  # opens (and migrates)
        assert raw(pg_dsn, version, ("schema_version",)) == [(str(SCHEMA_VERSION),)]
        assert SCHEMA_VERSION == 8
        assert "versions" in {r[0] for r in raw(pg_dsn, tables, (schema,))}
        assert raw(pg_dsn, f'SELECT count(*) FROM "{schema}".versions') == [(0,)]
        [(index,)] = raw(
            pg_dsn, "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
            (schema, "versions_entry"),
        )
        assert index.endswith("(scope, key, seq)")
        assert raw(pg_dsn, f'SELECT id, scope, key, vgen, terms FROM "{schema}".entries') == (
            rows_before
        )
        entry = await backend.get("a", "S")
        assert entry is not None and entry.metadata == {"scope": "S", "tags": ["x"]}
        await backend.record_versions("S", [Version.of(entry, "remember")], 3)
        [kept] = await backend.history("a", "S")
        assert (kept.value, kept.metadata, kept.keep) == ("first fact", entry.metadata, 3)
    finally:
        await backend.close()


def _versions_rows(pg_dsn: str, schema: str) -> list[tuple[Any, ...]]:
    return raw(
        pg_dsn,
        f'SELECT scope, key, op, value::text, metadata::text, keep FROM "{schema}".versions '
        "ORDER BY seq",
    )


async def test_versions_are_stored_as_entries_are_and_kept_per_schema(
    pg: PostgresBackend, pg_dsn: str, tmp_path: Path, clock: FakeClock
) -> None:
    """Values and metadata are `json` text as written (key order, `\\u0000`); a forget has
    SQL NULLs; another `schema` on the same server keeps versions of its own."""
    value = {"b": 1, "a": "\x00 nul", "z": [None, 2.5]}
    await pg.record_versions(
        "S", [Version("k", "remember", value, {"tags": ["t"], "importance": 0.5}, 1.0, 9.5)], 2
    )
    await pg.record_versions("S", [Version.forget("k", 2.0)], 2)
    assert _versions_rows(pg_dsn, pg.schema) == [
        ("S", "k", "remember", '{"b":1,"a":"\\u0000 nul","z":[null,2.5]}',
         '{"tags":["t"],"importance":0.5}', 2),
        ("S", "k", "forget", None, None, 2),
    ]
    got = await pg.history("k", "S")
    assert [v.op for v in got] == ["forget", "remember"]
    assert list(got[1].value) == ["b", "a", "z"] and got[1].value["a"] == "\x00 nul"
    assert (got[1].expires_at, got[0].value, got[0].metadata) == (9.5, None, {})

    other = PostgresBackend(
        location=pg_dsn, schema=pg_test_schema(tmp_path / "other"), clock=clock, pool_size=1
    )
    try:
        assert await other.history("k", "S") == []
        await other.record_versions("S", [Version("k", "remember", "elsewhere", {}, 3.0)], 2)
        assert await other.purge_history(None) == 1
        assert len(await pg.history("k", "S")) == 2  # untouched by the other schema's purge
    finally:
        await other.close()


async def test_recording_again_after_a_commit_adds_nothing(
    pg: PostgresBackend, pg_dsn: str
) -> None:
    """`Connector.run` runs a body again when the connection broke under it, even if its
    COMMIT went through: the second run of a committed record adds no version (its `seq`
    values were drawn once), and the trim keeps each key at `keep + 1` in one statement
    for a batch of many keys."""
    body = postgres_versions.record_body(
        pg._q, "S", [Version("k", "remember", 1, {}, 1.0), Version("k", "update", 2, {}, 2.0)], 5
    )
    pg._run(body)
    pg._run(body)  # as a retry after a lost COMMIT answer
    assert [v.value for v in await pg.history("k", "S")] == [2, 1]
    for round_ in range(3):
        await pg.record_versions(
            None, [Version(f"key{i}", "update", round_, {}, float(round_)) for i in range(200)], 1
        )
    [(rows, keys)] = raw(
        pg_dsn, f'SELECT count(*), count(DISTINCT key) FROM "{pg.schema}".versions '
        "WHERE scope IS NULL"
    )
    assert (rows, keys) == (400, 200)
    assert [v.value for v in await pg.history("key7", None)] == [2, 1]
    await pg.record_versions(None, [Version("key7", "update", 9, {}, 9.0)], KEEP_ALL)
    assert [v.value for v in await pg.history("key7", None)] == [9, 2, 1]


async def test_erase_takes_a_prefix_literally_and_nul_names_are_refused(
    pg: PostgresBackend,
) -> None:
    """The prefix of an erase is compared as text, not a LIKE pattern: `%`, `_` and `\\`
    match only themselves. A NUL in a scope or key is refused as for entries."""
    scopes = ["a%x", "abx", "a_y", "a\\z", "a\\", "A%x"]
    for scope in scopes:
        await pg.record_versions(scope, [Version("k", "remember", scope, {}, 1.0)], 2)

    async def left() -> list[str]:
        return [s for s in scopes if await pg.history("k", s)]

    await pg.erase("a%")
    assert await left() == ["abx", "a_y", "a\\z", "a\\", "A%x"]
    await pg.erase("a_")
    assert await left() == ["abx", "a\\z", "a\\", "A%x"]
    await pg.erase("a\\")
    assert await left() == ["abx", "A%x"]
    with pytest.raises(AxonMemoryError, match="NUL"):
        await pg.record_versions("S\x00", [Version("k", "remember", 1, {}, 1.0)], 2)
    with pytest.raises(AxonMemoryError, match=r"NUL.*key 'k\x00'"):
        await pg.record_versions("S", [Version("k\x00", "remember", 1, {}, 1.0)], 2)
    assert await pg.history("k", "S\x00") == [] and await pg.purge_history("S\x00") == 0


async def test_scope_stats_follow_every_write_delete_clear_and_purge(
    pg: PostgresBackend, pg_dsn: str, clock: FakeClock
) -> None:
    await pg.store("a", "Running cats chase mice", {"scope": "S"})
    await pg.store("b", "A dog runs home", {"scope": "S"})
    await pg.store("c", "Mice are small")
    assert _stats_agree(pg_dsn, pg.schema) == {"S": (2, 10, 4), None: (1, 4, 0)}
    await pg.store("a", "cats", {"scope": "S"})  # an update: the length changes, not the count
    await pg.store_many(  # COPY path, with overwrites inside the batch
        [NewEntry(f"k{i % 50}", f"word{i} and more {i}", {"scope": "T"}) for i in range(100)]
    )
    await pg.store_many(  # COPY path replacing 40 stored rows (staged upsert) and 40 new
        [NewEntry(f"k{i}", f"rewritten {i % 7} cats", {"scope": "T"}) for i in range(10, 90)]
    )
    await pg.store_many(
        [NewEntry(f"e{i}", "soon gone", expires_at=clock.now + 1) for i in range(9)]
    )
    _stats_agree(pg_dsn, pg.schema)
    assert _term_stats(pg_dsn, pg.schema)[("gone", None)] == (9, 9)  # expired, not purged
    assert await pg.delete("b", "S")
    await pg.clear("T")
    clock.advance(2)
    assert await pg.purge_expired() == 9
    assert _stats_agree(pg_dsn, pg.schema) == {"S": (1, 2, 0), None: (1, 4, 0)}
    # Only the terms of what is left: "a" ("a cats") and "c" ("c Mice are small").
    assert _term_stats(pg_dsn, pg.schema) == {
        ("a", "S"): (1, 1),
        ("cat", "S"): (1, 1),
        ("c", None): (1, 1),
        ("mice", None): (1, 1),
        ("ar", None): (1, 1),
        ("small", None): (1, 1),
    }
    await pg.clear()
    assert _stats_agree(pg_dsn, pg.schema) == {}
    assert _term_stats(pg_dsn, pg.schema) == {}


async def test_keyword_matches_porter_stems_and_is_not_sql(pg: PostgresBackend) -> None:
    await pg.store("a", "Running cats chase mice", {"scope": "S"})
    await pg.store("b", "A dog runs home", {"scope": "S"})
    await pg.store("c", "Mice are small", {"scope": "T"})
    found = await pg.retrieve("run", 10, "S", mode="keyword")
    assert sorted(e.key for e in found) == ["a", "b"]  # stemmed: running, runs
    await pg.retrieve("x') || to_tsvector('y'); DROP TABLE entries; --", 5, mode="keyword")
    assert await pg.count() == 3


async def test_a_word_too_long_for_the_index_is_stored_and_counted(
    pg: PostgresBackend, clock: FakeClock
) -> None:
    """A GIN index row must fit in a page: a longer token is indexed as its `index_term`
    (under 512 characters), so it is found and scored as by the in-memory backend."""
    rng = np.random.default_rng(5)  # incompressible: 18 kB of UTF-8 in one word
    blob = "".join(chr(int(c)) for c in rng.integers(0x4E00, 0x9FFF, size=6000))
    reference = InMemoryBackend(clock=clock, embedder=HashingEmbedder())
    for backend in (pg, reference):
        await backend.store("blob", f"attachment {blob}")
        await backend.store("other", "attachment")
    for query in ("attachment", blob, f"attachment {blob}"):
        got = await pg.retrieve(query, 5, mode="keyword")
        want = await reference.retrieve(query, 5, mode="keyword")
        assert [(e.key, round(e.score, 9)) for e in got] == [
            (e.key, round(e.score, 9)) for e in want
        ]
    assert [e.key for e in await pg.retrieve(blob, 5, mode="keyword")] == ["blob"]
    await reference.close()


async def test_keyword_reading_only_rare_terms_rows_changes_no_result(
    pg: PostgresBackend, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`best_ranked` (postgres_bm25) skips the rows of a query's common words only when
    it provably may: on a Zipf corpus its candidates are those of ranking every matching
    row, every answer (scope, linked, top_k) is the in-memory backend's, and the skipping did
    happen (and was refused) for some queries."""
    rng = np.random.default_rng(11)
    vocab = [f"w{i}x" for i in range(80)]
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    reference_clock = FakeClock(clock.now)
    reference = InMemoryBackend(clock=reference_clock)
    batch = [
        NewEntry(
            f"k{i}",
            " ".join(rng.choice(vocab, size=int(rng.integers(3, 14)), p=weights)),
            {"scope": "S" if i % 4 else "T"},
        )
        for i in range(900)
    ]
    for start in range(0, len(batch), 100):
        for store in (pg, reference):
            await store.store_many(batch[start : start + 100])
        clock.advance(1)
        reference_clock.advance(1)
    calls: list[tuple[int, int]] = []  # (terms of the query, terms whose rows were read)
    original = pgmod.best_ranked

    def spy(ranked: Any, terms: list[str], stats: Any, want: int) -> list[Any]:
        def recording(holding: list[str], limit: int) -> list[Any]:
            calls.append((len(terms), len(holding)))
            return ranked(holding, limit)

        best = original(recording, terms, stats, want)
        every = ranked(terms, want)  # what ranking every matching row gives
        assert [row[0] for row in best] == [row[0] for row in every], terms
        return best

    monkeypatch.setattr(pgmod, "best_ranked", spy)  # the name postgres.py calls
    queries = ["w0x w40x", "w0x w1x w70x", "w1x w2x", "w0x w1x w2x w3x w60x", "w5x w79x", "w0x"]
    try:
        for scope in ("S", None):
            for query in queries:
                for linked in (False, True):
                    for top_k in (1, 5):
                        got, want = [
                            await store.retrieve(query, top_k, scope, mode="keyword", linked=linked)
                            for store in (pg, reference)
                        ]
                        assert [(e.key, e.score) for e in got] == [
                            (e.key, pytest.approx(e.score, abs=1e-9)) for e in want
                        ], (scope, query, linked, top_k)
    finally:
        await reference.close()
    assert any(held < total for total, held in calls)  # rows of rare terms only
    assert any(held == total > 1 for total, held in calls)  # every matching row


async def test_keyword_common_words_rows_are_read_when_they_may_rank_first(
    pg: PostgresBackend,
) -> None:
    """The rare word's rows rank low (long texts) and the common word's short rows rank
    first: the bound check must refuse to skip the common word's rows."""
    reference = InMemoryBackend()
    batch = [NewEntry(f"a{i}", "alpha " * (5 if i % 2 else 1) + f"n{i}") for i in range(300)]
    batch += [NewEntry(f"b{i}", "beta " + "filler " * 100) for i in range(25)]
    batch += [NewEntry(f"c{i}", f"other words {i}") for i in range(675)]
    try:
        for store in (pg, reference):
            await store.store_many(batch)
        got, want = [
            await store.retrieve("alpha beta", 5, mode="keyword") for store in (pg, reference)
        ]
        assert [e.key for e in got] == [e.key for e in want]
        assert all(e.key.startswith("a") for e in got)
    finally:
        await reference.close()


async def test_keyword_top_k_of_many_candidates_is_the_in_memory_one(
    pg: PostgresBackend, clock: FakeClock
) -> None:
    """More matches than candidates rescored: the best `top_k` are still the exact ones."""
    rng = np.random.default_rng(3)
    words = ["paint", "painting", "red", "apple", "meeting", "invoice", "zebra", "blue"]
    reference_clock = FakeClock(clock.now)
    reference = InMemoryBackend(clock=reference_clock)
    batch = [
        NewEntry(
            f"k{i}",
            " ".join(rng.choice(words, size=int(rng.integers(1, 12)))),
            {"scope": "S" if i % 3 else "T"},
        )
        for i in range(400)
    ]
    for start in range(0, len(batch), 40):
        for store in (pg, reference):
            await store.store_many(batch[start : start + 40])
        clock.advance(1)
        reference_clock.advance(1)
    try:
        for scope in ("S", "T", None):
            for query in ("paint", "red apple", "invoice zebra meeting", "blue painting"):
                for linked in (False, True):
                    got, want = [
                        await store.retrieve(query, 5, scope, mode="keyword", linked=linked)
                        for store in (pg, reference)
                    ]
                    assert [(e.key, e.score) for e in got] == [
                        (e.key, pytest.approx(e.score, abs=1e-9)) for e in want
                    ], (scope, query, linked)
    finally:
        await reference.close()


async def test_semantic_agrees_with_exact_cosine(pg: PostgresBackend, pg_dsn: str) -> None:
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(60)]
    texts = [" ".join(rng.choice(words, size=6)) for _ in range(300)]
    await pg.store_many(
        [NewEntry(f"k{i}", t, {"scope": "S" if i % 3 else "T"}) for i, t in enumerate(texts)]
    )
    embedder = HashingEmbedder()
    vectors = embedder.embed_passages(texts)
    for query in ["w1 w2 w3", "w10 w40", "w59"]:
        found = await pg.retrieve(query, 5, "S", mode="semantic")
        q = embedder.embed_query(query)
        cos = vectors @ q
        best = sorted((i for i in range(len(texts)) if i % 3), key=lambda i: -cos[i])[:5]
        assert [e.scope for e in found] == ["S"] * 5
        np.testing.assert_allclose(
            [e.score for e in found], [cos[i] for i in best], rtol=1e-4, atol=1e-5
        )
    # The query uses the HNSW index when a sequential scan is not an option.
    model = embedder.model_id
    (tbl,) = raw(pg_dsn, f'SELECT tbl FROM "{pg.schema}".models WHERE model = %s', (model,))[0]
    literal = "[" + ",".join(["0.125"] * embedder.dim) + "]"
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = conn.execute(
            f'EXPLAIN SELECT entry_id FROM "{pg.schema}"."{tbl}" '
            f"ORDER BY embedding <=> '{literal}'::vector LIMIT 5"
        ).fetchall()
    assert any("hnsw" in str(row[0]) for row in plan), plan


async def test_changed_text_is_embedded_again(pg: PostgresBackend) -> None:
    await pg.store("k", "quantum computing", {"scope": "S"})
    await pg.store("j", "tomato soup", {"scope": "S"})
    assert (await pg.retrieve("quantum computing", 1, "S", mode="semantic"))[0].key == "k"
    await pg.store("j", "quantum computing now", {"scope": "S"})
    await pg.store("k", "tomato soup", {"scope": "S"})
    assert (await pg.retrieve("tomato soup", 1, "S", mode="semantic"))[0].key == "k"
    assert (await pg.retrieve("quantum computing now", 1, "S", mode="semantic"))[0].key == "j"


# ---------------------------------------------------------------------- writes and expiry


@pytest.mark.parametrize("copy_threshold", [1, 10_000], ids=["copy", "arrays"])
async def test_a_failing_batch_stores_nothing(
    pg: PostgresBackend, pg_dsn: str, monkeypatch: pytest.MonkeyPatch, copy_threshold: int
) -> None:
    await pg.store("existing", "kept")
    s = f'"{pg.schema}"'
    raw(
        pg_dsn,
        f"CREATE FUNCTION {s}.boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF NEW.key = 'boom' THEN RAISE EXCEPTION 'refused by trigger'; END IF; "
        f"RETURN NEW; END $$; CREATE TRIGGER boom BEFORE INSERT ON {s}.entries "
        f"FOR EACH ROW EXECUTE FUNCTION {s}.boom()",
    )
    monkeypatch.setattr(pgmod, "COPY_THRESHOLD", copy_threshold)
    batch = [NewEntry(f"k{i}", i) for i in range(35)] + [NewEntry("boom", 0)]
    with pytest.raises(AxonMemoryError, match="refused by trigger"):
        await pg.store_many(batch)
    assert [e.key for e in await pg.list_entries()] == ["existing"]
    await pg.store_many(batch[:-1])
    await pg.store_many(batch[:-1])  # again: the staging table is reused
    assert await pg.count() == 36
    assert [e.key for e in await pg.list_entries()][:3] == ["existing", "k0", "k1"]


ODD_TEXTS = [
    "naïve café ΣΊΣΥΦΟΣ straße İstanbul",  # lower() changes length or is not ASCII
    "emoji 🦜🏳️‍🌈 and e\u0301 combining, עברית, 日本語のテキスト",
    "quotes \" ' \\ backslashes {braces} ,commas, \t tabs \n newlines",
    "a NUL \x00 inside (left out of the matched text, kept in the value)",
    "",
    "x" * 6000 + " a word too long for the index, then words",
]


_ODD_CHARS = st.sampled_from(list("aZ Σσς'’İıß\u0301\u200d_-.0٣🦜\t\nﬁǅ"))


@settings(max_examples=300, deadline=None)
@given(
    key=st.text(_ODD_CHARS | st.characters(), max_size=12),
    text=st.text(_ODD_CHARS | st.characters(), max_size=40),
)
def test_entry_terms_from_the_text_counts_are_those_of_key_and_text(key: str, text: str) -> None:
    """A batch counts each text once (for the row and as the next row's context): the
    row's terms built from it are `indexed_terms(f"{key} {text}")` (final sigma, dotted
    I, combining marks and apostrophes at the join included)."""
    assert entry_terms(key, *counted_terms(text)) == indexed_terms(f"{key} {text}")
    assert indexed(*counted_terms(text)) == indexed_terms(text)


def _batch_rows(pg_dsn: str, schema: str) -> list[tuple[Any, ...]]:
    """Every stored column but the generated ones (id, vgen, wxid), in id order."""
    return raw(
        pg_dsn,
        "SELECT scope, key, key_lc, value::text, text, text_lc, metadata::text, timestamp, "
        "expires_at, terms, term_counts, length, context, context_terms, context_counts, "
        f'context_length FROM "{schema}".entries ORDER BY id',
    )


async def test_binary_copy_stores_what_the_array_path_stores(
    pg_dsn: str, tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Odd Unicode, NUL, huge texts, many scopes, overwrites inside the batch and of stored
    keys, integer timestamps and expiry: binary COPY (`postgres_copy`) and the array
    statement write the same rows and statistics."""
    before = [NewEntry(f"k{i}", f"stored before {i}", {"scope": f"s{i % 7}"}) for i in range(20)]
    before.append(NewEntry("unscoped0", "stored without a scope"))
    batch = [
        NewEntry(
            f"k{i}" if i % 5 else f"n{i}",
            {"text": ODD_TEXTS[i % 6], "i": i} if i % 3 == 0 else ODD_TEXTS[i % 5],
            {"scope": f"s{i % 300}", "tag": "ü"} if i % 11 else {"n": i},
            timestamp=1_700_000_000 + i if i % 2 else None,
            expires_at=clock.now + 100 if i % 4 == 0 else None,
        )
        for i in range(1200)
    ]
    batch += [NewEntry("k3", "overwritten inside the batch", {"scope": "s3"})]
    batch += [NewEntry("unscoped0", "replaced"), NewEntry("ключ", "κλειδί ΣΑΣ")]
    batch += [NewEntry("huge", "lorem ipsum dolor sit amet " * 36_000, {"scope": "s1"})]  # ~1 MB
    stored = {}
    for name, threshold in (("copy", 1), ("arrays", 100_000)):
        monkeypatch.setattr(pgmod, "COPY_THRESHOLD", threshold)
        backend = PostgresBackend(
            location=pg_dsn, schema=pg_test_schema(tmp_path / name), clock=clock, pool_size=1
        )
        try:
            await backend.store_many(before)
            await backend.store_many(batch)
            got = await backend.get("k3", "s3")
            assert got is not None and got.value == "overwritten inside the batch"
            stored[name] = (
                _batch_rows(pg_dsn, backend.schema),
                _stats_agree(pg_dsn, backend.schema),
            )
        finally:
            await backend.close()
    # k1-k4 and k6 replace stored rows, as do k3 again and unscoped0; ключ and huge are new
    assert len(stored["copy"][0]) == 21 + 1200 - 5 + 2
    assert stored["copy"] == stored["arrays"]
    assert len(stored["copy"][1]) > 300  # every scope's statistics


async def test_a_key_stored_after_the_look_is_upserted(
    pg: PostgresBackend, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer stores one of the batch's new keys between the look for stored keys
    and the COPY (simulated: the look finds nothing): the COPY's unique violation makes
    the batch an upsert, in the same transaction, with nothing lost or doubled."""
    from axon.memory.backends import postgres_copy

    monkeypatch.setattr(pgmod, "COPY_THRESHOLD", 1)
    await pg.store_many([NewEntry("k1", "first", {"scope": "S"})])
    monkeypatch.setattr(postgres_copy, "stored_positions", lambda *args: set())
    await pg.store_many([NewEntry(f"k{i}", f"second {i}", {"scope": "S"}) for i in range(5)])
    rows = raw(pg_dsn, f'SELECT key, value::text, context FROM "{pg.schema}".entries ORDER BY id')
    assert rows == [  # k1 keeps its place and its context; the new rows follow in order
        ("k1", '"second 1"', ""),
        ("k0", '"second 0"', "first"),
        *((f"k{i}", f'"second {i}"', f"second {i - 1}") for i in (2, 3, 4)),
    ]
    assert _stats_agree(pg_dsn, pg.schema) == {"S": (5, 15, 7)}


async def test_expired_rows_are_swept_in_batches(
    pg: PostgresBackend, pg_dsn: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pgmod, "PURGE_BATCH", 7)
    await pg.store_many([NewEntry(f"k{i}", i, expires_at=clock.now + 5) for i in range(30)])
    await pg.store("keep", 1)
    clock.advance(pgmod.PURGE_INTERVAL + 1)
    count_sql = f'SELECT count(*) FROM "{pg.schema}".entries'
    assert raw(pg_dsn, count_sql) == [(31,)]
    await pg.store("trigger", 2)  # a write past the interval sweeps
    assert raw(pg_dsn, count_sql) == [(2,)]
    await pg.store_many([NewEntry(f"j{i}", i, expires_at=clock.now + 1) for i in range(15)])
    clock.advance(2)
    assert await pg.purge_expired() == 15


async def test_a_failing_automatic_sweep_does_not_fail_the_write(
    pg: PostgresBackend, pg_dsn: str, clock: FakeClock
) -> None:
    """The purge policy shared with SQLite (`sql_common`): the sweep a write starts never
    fails it; `purge_expired` raises what went wrong."""
    s = f'"{pg.schema}"'
    await pg.store_many([NewEntry(f"k{i}", i, expires_at=clock.now + 5) for i in range(3)])
    raw(
        pg_dsn,
        f"CREATE FUNCTION {s}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "RAISE EXCEPTION 'refused by trigger'; END $$; CREATE TRIGGER refuse BEFORE DELETE "
        f"ON {s}.entries FOR EACH ROW EXECUTE FUNCTION {s}.refuse()",
    )
    clock.advance(pgmod.PURGE_INTERVAL + 1)
    await pg.store("later", "kept")
    assert [e.key for e in await pg.list_entries()] == ["later"]
    with pytest.raises(AxonMemoryError, match="refused by trigger"):
        await pg.purge_expired()
    raw(pg_dsn, f"DROP TRIGGER refuse ON {s}.entries")
    assert await pg.purge_expired() == 3
    assert pgmod.PURGE_BATCH == sqlite_backend.PURGE_BATCH  # one policy


# ---------------------------------------------------------------------- sharing


WORKER = """
import asyncio, json, sys
from axon.memory.backends.postgres import PostgresBackend
from axon.memory.entry import NewEntry

async def main(dsn, schema):
    backend = PostgresBackend(location=dsn, schema=schema)
    await backend.store_many([NewEntry(f"child{i}", {"i": i}, {"scope": "S"}) for i in range(20)])
    seen = await backend.get("from_parent", "S")
    found = await backend.retrieve("parent", 5, "S", mode="keyword")
    await backend.close()
    print(json.dumps({"seen": seen.value if seen else None, "found": [e.key for e in found]}))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_two_processes_share_one_database(pg: PostgresBackend, pg_dsn: str) -> None:
    await pg.store("from_parent", "written by the parent process", {"scope": "S"})
    done = subprocess.run(
        [sys.executable, "-c", WORKER, pg_dsn, pg.schema],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=True,
    )
    report = json.loads(done.stdout)
    # child0, stored just after the parent's entry, is not found through it (unlinked)
    assert report == {"seen": "written by the parent process", "found": ["from_parent"]}
    assert await pg.count("S") == 21
    entry = await pg.get("child7", "S")
    assert entry is not None and entry.value == {"i": 7}
    assert [e.key for e in await pg.retrieve("child1", 20, "S")][:1] == ["child1"]


def _race(
    pg_dsn: str,
    schema: str,
    writers: int,
    write: Callable[[int, PostgresBackend], Awaitable[None]],
) -> None:
    """`write(n, backend)` for each of `writers` threads, each with its own backend (and
    event loop), connected first and released together; any exception fails the test."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(writers)

    async def one(n: int) -> None:
        backend = PostgresBackend(location=pg_dsn, schema=schema, pool_size=1)
        try:
            await backend.count()  # connect (and migrate) before the race starts
            barrier.wait()
            await write(n, backend)
        finally:
            await backend.close()

    def run(n: int) -> None:
        try:
            asyncio.run(one(n))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors


def test_eight_concurrent_writers_lose_nothing(pg_dsn: str, tmp_path: Path) -> None:
    schema = pg_test_schema(tmp_path)
    writers, per_writer = 8, 60

    async def write(n: int, backend: PostgresBackend) -> None:
        for i in range(per_writer):
            if i % 3 == 0:  # batches that also fight over shared keys
                await backend.store_many(
                    [
                        NewEntry(f"w{n}-{i}", n, {"scope": "S"}),
                        NewEntry(f"shared{i % 5}", n, {"scope": "S"}),
                        NewEntry(f"shared{(i + 2) % 5}", n, {"scope": "S"}),
                    ]
                )
            else:
                await backend.store(f"w{n}-{i}", n, {"scope": "S"})

    _race(pg_dsn, schema, writers, write)
    rows = raw(pg_dsn, f'SELECT key, value::text FROM "{schema}".entries')
    stored = dict(rows)
    assert len(stored) == writers * per_writer + 5
    assert _stats_agree(pg_dsn, schema)["S"][0] == writers * per_writer + 5
    for n in range(writers):
        for i in range(per_writer):
            assert stored[f"w{n}-{i}"] == json.dumps(n)


def test_concurrent_binary_copies_of_the_same_new_keys_lose_nothing(
    pg_dsn: str, tmp_path: Path
) -> None:
    """Four writers copy batches (binary COPY path) holding the same 40 new keys: the
    ones that lose the race hit the unique index and upsert instead; every key is
    stored once, with one writer's value, and the statistics match the rows."""
    schema = pg_test_schema(tmp_path)
    writers, batches = 4, 5

    async def write(n: int, backend: PostgresBackend) -> None:
        for b in range(batches):
            shared = [
                NewEntry(f"shared{j}", f"writer {n} batch {b}", {"scope": "S"})
                for j in range(40)
            ]
            own = [NewEntry(f"w{n}-{b}-{j}", n, {"scope": "S"}) for j in range(40)]
            await backend.store_many(shared + own)

    assert pgmod.COPY_THRESHOLD <= 80
    _race(pg_dsn, schema, writers, write)
    stored = dict(raw(pg_dsn, f'SELECT key, value::text FROM "{schema}".entries'))
    assert len(stored) == 40 + writers * batches * 40
    # all 40 from one batch (atomic), the last committed: some writer's last
    [value] = {stored[f"shared{j}"] for j in range(40)}
    assert value in {json.dumps(f"writer {n} batch {batches - 1}") for n in range(writers)}
    assert _stats_agree(pg_dsn, schema)["S"][0] == len(stored)
