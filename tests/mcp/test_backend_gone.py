"""A store that goes away while `axon mcp` serves: every call is an error result, none
crashes or hangs the server, and nothing is written where no one will find it.

SQLite: the memory directory is removed (or replaced by a new store) under the
server. PostgreSQL: the server is reached through a TCP proxy on 127.0.0.1 that
the test starts and then stops (the shared PostgreSQL server itself is never
touched).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time

import axon
from axon.mcp_server import tool as tool_module
from axon.mcp_server.target import default_declaration, open_tool
from tests.conftest import require_extra
from tests.mcp.conftest import Store, error, ok, serve

require_extra("mcp", module_level=True)  # `serve` runs the SDK's client


async def test_a_removed_memory_directory_is_an_error_not_lost_writes(
    sqlite_store: Store,
) -> None:
    tool = await open_tool(**sqlite_store.kwargs())
    try:
        async with serve(tool) as client:
            await ok(client, action="write", name="before", content="kept")
            assert sqlite_store.memory_dir is not None
            shutil.rmtree(sqlite_store.memory_dir)
            gone = f"the memory file {sqlite_store.memory_dir / 'memory.db'} is gone"
            for arguments in (
                {"action": "write", "name": "after", "content": "lost?"},
                {"action": "read", "name": "before"},
                {"action": "list"},
                {"action": "search", "query": "kept"},
            ):
                assert (await error(client, **arguments)).startswith(gone)
            # A new store in its place (another process recreated it) is not the one
            # the server has open: still refused, rather than written to the old file.
            with axon.Session(memory_dir=sqlite_store.memory_dir) as session:
                session.execute(default_declaration())
                session.memory("AgentMemory").remember("new store", key="fresh")
            assert "was replaced since the server opened it" in await error(
                client, action="write", name="after", content="x"
            )
    finally:
        await tool.session.close()
    # A restarted server serves the new store.
    tool = await open_tool(**sqlite_store.kwargs())
    try:
        async with serve(tool) as client:
            listed = await ok(client, action="list")
            assert [m["name"] for m in listed["memories"]] == ["fresh"]
    finally:
        await tool.session.close()


class Proxy:
    """A TCP proxy on 127.0.0.1 to the PostgreSQL test server; `stop()` cuts it off."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self.writers += [writer, up_writer]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ConnectionError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.close()
        await self.server.wait_closed()


async def test_an_unreachable_postgresql_server_is_an_error_result(pg_store: Store) -> None:
    import psycopg.conninfo  # the postgres extra: pg_store has skipped without it

    store = pg_store
    assert store.pg_dsn is not None
    parts = psycopg.conninfo.conninfo_to_dict(store.pg_dsn)
    proxy = Proxy(str(parts.get("host", "127.0.0.1")), int(parts.get("port", 5432)))
    port = await proxy.start()
    # The connection string's own connect_timeout is the backend's (default 15 s).
    dsn = psycopg.conninfo.make_conninfo(
        store.pg_dsn, host="127.0.0.1", port=str(port), connect_timeout="2"
    )
    tool = await open_tool(pg_dsn=dsn)
    try:
        async with serve(tool) as client:
            await ok(client, action="write", name="before", content="stored")
            await proxy.stop()
            started = time.monotonic()
            # The backend's own words, within its connect timeout (2 s here; the tool's
            # CALL_TIMEOUT, 60 s, is the backstop for a backend that never answers).
            message = await error(client, action="write", name="after", content="x")
            where = f"PostgreSQL at {parts.get('user')}@127.0.0.1:{port}/"
            assert message.startswith(where), message
            message = await error(client, action="search", query="stored")
            assert "cannot connect" in message and "Connection refused" in message, message
            # Two calls, each within about its 2 s (15 s each if the DSN's were ignored).
            assert time.monotonic() - started < 12 < tool_module.CALL_TIMEOUT
    finally:
        with contextlib.suppress(Exception):
            await tool.session.close()
    # Nothing half-written: the server behind the proxy has the first write only.
    with axon.Session(pg_dsn=store.pg_dsn) as session:
        session.execute(default_declaration(store.pg_dsn))
        assert [e.key for e in session.memory("AgentMemory").list()] == ["before"]
