"""`axon.agent.AxonMemory` in a namespace: it works in its handle's namespace (a
session's, or `session.memory(NAME, namespace=...)`'s), so one session can give each
user's agent loop its own memory, and nothing one writes is recalled by another."""

from __future__ import annotations

from pathlib import Path

import pytest

import axon
from axon.agent import AxonMemory
from axon.memory.namespaces import Namespace
from tests.memory.conftest import pg_dsn_or_skip, pg_test_schema

PROGRAM = "memory Notes {{ store: persistent backend: {backend} retrieval: keyword }}"


def _settings(kind: str, tmp_path: Path) -> dict[str, str]:
    if kind == "sqlite":
        return {"memory_dir": str(tmp_path / "mem")}
    return {"memory_dir": str(tmp_path / "mem"), "pg_dsn": pg_dsn_or_skip(),
            "pg_schema": pg_test_schema(tmp_path)}


@pytest.mark.parametrize("kind", ["sqlite", "pgvector"])
async def test_each_users_agent_memory_is_its_own(kind: str, tmp_path: Path) -> None:
    backend = "sqlite" if kind == "sqlite" else "pgvector"
    with axon.Session(**_settings(kind, tmp_path)) as session:  # type: ignore[arg-type]
        session.declare(PROGRAM.format(backend=backend))
        agents = {
            user: AxonMemory(session.memory("Notes", namespace=("chat", user)))
            for user in ("ann", "bob")
        }
        assert agents["ann"].namespace == Namespace.of("chat/ann")
        assert repr(agents["ann"]) == "<AxonMemory 'Notes' in 'chat/ann'>"
        await agents["ann"].write("ann prefers green tea", metadata={"tags": ["drinks"]})
        await agents["bob"].write("bob prefers black coffee")
        ann = await agents["ann"].recall("what does she prefers to drink", limit=5)
        assert [r.content for r in ann] == ["ann prefers green tea"]
        bob = await agents["bob"].recall("prefers tea", limit=5)
        assert [r.content for r in bob] == ["bob prefers black coffee"]
        root = AxonMemory(session)  # the session's namespace: the root, which is empty
        assert root.namespace.is_root and repr(root) == "<AxonMemory 'Notes'>"
        assert await root.recall("prefers", limit=5) == []
        assert session.namespaces() == [("chat", "ann"), ("chat", "bob")]
    # a session in chat/ann: its AxonMemory sees ann's memory and no one else's
    async with axon.AsyncSession(  # type: ignore[arg-type]
        **_settings(kind, tmp_path), namespace="chat/ann"
    ) as scoped:
        await scoped.declare(PROGRAM.format(backend=backend))
        agent = AxonMemory(scoped)
        assert agent.namespace == Namespace.of("chat/ann")
        assert [r.content for r in await agent.recall("prefers", limit=5)] == [
            "ann prefers green tea"
        ]
