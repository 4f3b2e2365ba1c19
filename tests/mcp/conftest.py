"""`axon mcp` fixtures: a store (SQLite directory or private PostgreSQL schema) and a
connected in-process MCP client (the SDK's `Client` over the server object).

The SDK (the `mcp` extra) is imported only by the fixtures that use it; each test module
here calls `require_extra("mcp", module_level=True)` first, so without it the tests skip
(fail under CI=true) instead of failing to collect."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from axon.mcp_server.target import open_tool
from axon.mcp_server.tool import MemoryTool
from tests.memory.conftest import FakeClock, pg_dsn_or_skip, pg_test_schema

if TYPE_CHECKING:
    from mcp import Client

__all__ = ["FakeClock"]

ROOT = Path(__file__).resolve().parents[2]

STORES = ["sqlite", "pgvector"]


class Store:
    """Where the served memory lives, as `axon mcp` / `axon run` options and environment."""

    def __init__(self, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kind = kind
        self.memory_dir: Path | None = tmp_path / "mem"
        self.pg_dsn: str | None = None
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "AXON_EMBEDDER": "hashing"}
        self.env.pop("AXON_MEMORY_DIR", None)
        if kind == "pgvector":
            self.pg_dsn = pg_dsn_or_skip()
            self.memory_dir = None
            schema = pg_test_schema(tmp_path)
            monkeypatch.setenv("AXON_PG_SCHEMA", schema)
            self.env["AXON_PG_SCHEMA"] = schema

    @property
    def backend(self) -> str:
        return "pgvector" if self.kind == "pgvector" else "sqlite"

    def options(self) -> list[str]:
        """The store as command-line options (of `axon mcp` and `axon run`)."""
        if self.pg_dsn is not None:
            return ["--pg-dsn", self.pg_dsn]
        return ["--memory-dir", str(self.memory_dir)]

    def kwargs(self) -> dict[str, Any]:
        return {"memory_dir": self.memory_dir, "pg_dsn": self.pg_dsn}

    def axon(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "axon.cli", *args]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    return Store(request.param, tmp_path, monkeypatch)


@pytest.fixture
def sqlite_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    return Store("sqlite", tmp_path, monkeypatch)


@pytest.fixture
def pg_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    return Store("pgvector", tmp_path, monkeypatch)


@pytest.fixture
async def tool(store: Store) -> AsyncIterator[MemoryTool]:
    opened = await open_tool(**store.kwargs())
    try:
        yield opened
    finally:
        await opened.session.close()


@contextlib.asynccontextmanager
async def serve(tool: MemoryTool) -> AsyncIterator[Client]:
    """The SDK's client connected in-process to `axon mcp`'s server over `tool`.

    A context manager, not a fixture: the SDK's task groups must be entered and left
    in the same task, and pytest-asyncio runs a fixture's two halves in two.
    """
    from mcp import Client  # the SDK (the `mcp` extra): each test module requires it

    from axon.mcp_server.server import build_server

    async with Client(build_server(tool)) as connected:
        yield connected


async def call(client: Client, **arguments: Any) -> tuple[dict[str, Any], bool]:
    """One `memory` call: the JSON result (the text block, which must equal the
    structured content) and the MCP isError flag."""
    result = await client.call_tool("memory", arguments)
    assert len(result.content) == 1 and result.content[0].type == "text"
    payload = json.loads(result.content[0].text)
    assert result.structured_content == payload
    return payload, result.is_error


async def ok(client: Client, **arguments: Any) -> dict[str, Any]:
    payload, is_error = await call(client, **arguments)
    assert not is_error and payload.get("success") is True, payload
    return payload


async def error(client: Client, **arguments: Any) -> str:
    payload, is_error = await call(client, **arguments)
    assert is_error, payload
    assert list(payload) == ["error"] and isinstance(payload["error"], str), payload
    return payload["error"]
