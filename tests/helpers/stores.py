"""One real store (a SQLite file or a PostgreSQL schema) -> `Store`: the `Session` on it,
the declaration of a memory there, and its rows counted in the store itself."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

import axon
from axon.memory.lifetimes import OWNED_MARKER
from axon.runtime.session import Session
from tests.memory.conftest import pg_dsn_or_skip, pg_test_schema

ROOT = Path(__file__).resolve().parents[2]


class Store:
    """One real store (a SQLite file or a PostgreSQL schema) and how to look inside it."""

    def __init__(self, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kind = kind
        self.memory_dir = tmp_path / "mem"
        self.env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if kind == "pgvector":
            self.dsn = pg_dsn_or_skip()
            self.schema = pg_test_schema(tmp_path)
            monkeypatch.setenv("AXON_PG_SCHEMA", self.schema)
            self.env["AXON_PG_SCHEMA"] = self.schema

    def decl(self, name: str, store: str) -> str:
        return f"memory {name} {{ store: {store} backend: {self.kind} retrieval: keyword }}"

    def rows(self, *, owned: bool) -> int:
        """Rows in the store itself: those under owned scopes, or under plain names."""
        op = "LIKE" if owned else "NOT LIKE"
        if self.kind == "sqlite":
            with sqlite3.connect(self.memory_dir / "memory.db") as conn:
                row = conn.execute(
                    f"SELECT count(*) FROM entries WHERE scope {op} ?", (OWNED_MARKER + "%",)
                ).fetchone()
            return int(row[0])
        import psycopg

        with psycopg.connect(self.dsn) as conn:
            row = conn.execute(
                f'SELECT count(*) FROM "{self.schema}".entries WHERE scope {op} %s',
                (OWNED_MARKER + "%",),
            ).fetchone()
        assert row is not None
        return int(row[0])

    def session(self) -> Session:
        return axon.Session(memory_dir=self.memory_dir)
