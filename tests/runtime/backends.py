"""Sessions over every registered backend, for the handle and AsyncSession tests.

`SessionKit(kind, ...)` gives the `Session` arguments for one backend on real
storage (a temporary SQLite directory, a private PostgreSQL schema, a private
Chroma collection) with a
controllable clock and the small deterministic embedder of tests/memory, so
every retrieval mode runs. PostgreSQL is reached through `Session(pg_dsn=...)`
with `AXON_PG_DSN` removed from the environment: the argument alone must do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from axon.memory.embeddings.hashing import HashingEmbedder
from tests.memory.conftest import (
    BACKEND_FACTORIES,
    FakeClock,
    chroma_test_url,
    pg_dsn_or_skip,
    pg_test_schema,
)

KINDS = sorted(BACKEND_FACTORIES)
"""Every backend the conformance suite knows (a test fails there if one is missing)."""


class SessionKit:
    def __init__(
        self, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
    ) -> None:
        self.kind = kind
        self.clock = clock
        self.memory_dir = tmp_path / "mem"
        self.pg_dsn: str | None = None
        if kind == "pgvector":
            self.pg_dsn = pg_dsn_or_skip()
            monkeypatch.delenv("AXON_PG_DSN")
            monkeypatch.setenv("AXON_PG_SCHEMA", pg_test_schema(tmp_path))
        if kind == "chroma":
            # A collection of this test's own (a memory without `location:` uses it).
            monkeypatch.setenv("AXON_CHROMA_URL", chroma_test_url(tmp_path))

    def kwargs(self) -> dict[str, Any]:
        return {
            "memory_dir": self.memory_dir,
            "clock": self.clock,
            "pg_dsn": self.pg_dsn,
            "embedder": HashingEmbedder(),
        }

    @property
    def store(self) -> str:
        """The lifetime the backend can hold: in_memory keeps nothing across processes."""
        return "session" if self.kind == "in_memory" else "persistent"

    def decl(self, name: str = "Notes", store: str | None = None, retrieval: str = "keyword",
             extra: str = "") -> str:
        store = store or self.store
        return (
            f"memory {name} {{ store: {store} backend: {self.kind} retrieval: {retrieval} "
            f"{extra}}}"
        )
