"""`axon mcp` runs for days: its session keeps the last `KEPT_HISTORY` records and events.

The server's session is an `AsyncSession(history=KEPT_HISTORY)`, the bound every
`Session` takes (docs/language.md, `history`), not a tracer and a trim of its own.
"""

from __future__ import annotations

from axon.mcp_server.target import open_tool
from axon.mcp_server.tool import KEPT_HISTORY
from tests.mcp.conftest import Store


async def test_a_long_running_server_keeps_a_bounded_past(sqlite_store: Store) -> None:
    tool = await open_tool(**sqlite_store.kwargs())
    try:
        _, failed = await tool.call({"action": "write", "name": "n", "content": "a note"})
        assert not failed
        for i in range(KEPT_HISTORY + 20):
            _, failed = await tool.call({"action": "search", "query": f"note {i}"})
            assert not failed
        records, events = tool.session.records, tool.session.events
        assert len(records) == KEPT_HISTORY and len(events) == KEPT_HISTORY
        assert records[-1]["query"] == f"note {KEPT_HISTORY + 19}"
    finally:
        await tool.session.close()
