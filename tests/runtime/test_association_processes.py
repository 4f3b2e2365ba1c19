"""Associations against concurrent writers of the same entry, in real processes.

One process keeps replacing entry T's value while another keeps associating entries
with T and deleting some of them (see association_worker.py). An association changes
only the links, atomically (`MemoryBackend.write_links`): no acknowledged value of T
is reverted, and `related` stays symmetric, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import axon
from tests.memory.conftest import pg_dsn_or_skip

WORKER = Path(__file__).with_name("association_worker.py")
SECONDS = "2.5"


def _drop_schema(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            psycopg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                psycopg.sql.Identifier(schema)
            )
        )


@pytest.mark.parametrize("backend", ["sqlite", "pgvector"])
def test_links_never_revert_values_and_stay_symmetric(tmp_path: Path, backend: str) -> None:
    schema = f"assoc_{uuid.uuid4().hex[:12]}"
    pg: dict[str, str] = {}
    if backend == "pgvector":
        pg = {"pg_dsn": pg_dsn_or_skip(), "pg_schema": schema}
    declare = f"memory Notes {{ store: persistent backend: {backend} }}"
    try:
        with axon.Session(memory_dir=tmp_path, **pg) as session:
            session.execute(declare)
            session.memory("Notes").remember("value 0", key="T")
        workers = [
            subprocess.Popen(
                [sys.executable, str(WORKER), role, str(tmp_path), backend, schema, SECONDS],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=Path(__file__).resolve().parents[2],
            )
            for role in ("writer", "linker")
        ]
        results = []
        for worker in workers:
            out, err = worker.communicate(timeout=90)
            assert worker.returncode == 0, err
            results.append(json.loads(out))
        writer, linker = results
        assert linker["count"] >= 30  # the race really ran, with the writer going throughout
        assert writer["writes"] > 5
        assert writer["reverts"] == []
        with axon.Session(memory_dir=tmp_path, **pg) as session:
            session.execute(declare)
            notes = session.memory("Notes")
            t = notes.get("T")
            assert t is not None and t.value == writer["last"]
            assert sorted(t.metadata.get("related", [])) == sorted(linker["alive"])
            for key in linker["alive"]:
                other = notes.get(key)
                assert other is not None and other.metadata["related"] == ["T"]
    finally:
        if pg:
            _drop_schema(pg["pg_dsn"], schema)
