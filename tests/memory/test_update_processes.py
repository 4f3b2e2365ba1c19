"""`MemoryBackend.update` across processes: two processes each add 1 to one counter
entry 40 times through `update` on the same SQLite file and the same PostgreSQL schema;
the counter ends at 80 (no update read a value another one was about to replace)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.memory.conftest import pg_dsn_or_skip, pg_test_schema

ROOT = Path(__file__).resolve().parents[2]
STEPS = 40

WORKER = """
import asyncio, sys
from axon.memory.entry import NewEntry
from axon.memory.registry import registry

async def main(kind, where, schema):
    if kind == "sqlite":
        backend = registry.create("sqlite", memory_dir=where)
    else:
        backend = registry.create("pgvector", location=where, schema=schema, pool_size=1)
    def bump(old):
        return NewEntry("n", old.value + 1, old.metadata)
    sys.stdin.readline()
    for _ in range(int(sys.argv[4])):
        assert await backend.update("n", "S", bump) is not None
    await backend.close()

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
"""


async def _race(kind: str, where: str, schema: str) -> int:
    from axon.memory.registry import registry

    if kind == "sqlite":
        backend = registry.create("sqlite", memory_dir=where)
    else:
        backend = registry.create("pgvector", location=where, schema=schema, pool_size=1)
    await backend.store("n", 0, {"scope": "S"})
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, kind, where, schema, str(STEPS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, cwd=ROOT,
        )
        for _ in range(2)
    ]
    for child in children:  # both start together
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
    entry = await backend.get("n", "S")
    await backend.close()
    assert entry is not None
    return int(entry.value)


async def test_sqlite_updates_from_two_processes_are_all_counted(tmp_path: Path) -> None:
    assert await _race("sqlite", str(tmp_path), "") == 2 * STEPS


@pytest.mark.postgres
async def test_postgres_updates_from_two_processes_are_all_counted(tmp_path: Path) -> None:
    dsn = pg_dsn_or_skip()
    assert await _race("pgvector", dsn, pg_test_schema(tmp_path)) == 2 * STEPS
