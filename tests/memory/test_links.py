"""Associations and the metadata cap below the runtime: the base class's `write_links`
for third-party backends, and an import refusing what the cap refuses.

The built-in backends run `axon.testing.contract_links` in tests/memory/test_conformance.py
with their own transactions; a backend that does not override `_write_links` gets the
base class's read-and-rewrite, which must keep the same promises inside one process.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.entry import MAX_VALUE_BYTES
from axon.memory.transfer import TransferError, import_memories
from axon.testing import BackendEnv
from axon.testing.contract_helpers import backend_env, clock
from axon.testing.contract_links import *  # noqa: F403

__all__ = ["backend_env", "clock"]


class PlainBackend(InMemoryBackend):
    """A backend that leaves `_write_links` to the base class, as a third party's does."""

    _write_links = MemoryBackend._write_links


@pytest.fixture
async def backend(backend_env: BackendEnv) -> AsyncIterator[MemoryBackend]:
    made = PlainBackend(clock=backend_env.clock, embedder=backend_env.embedder)
    yield made
    await made.close()


async def test_import_refuses_metadata_past_the_cap_naming_the_line(tmp_path: Path) -> None:
    """An import goes through the same check as every write: a line whose metadata is
    past 1 MB is refused at its line, and nothing of its batch is written."""
    header = json.dumps({"format": "axon-memory", "version": 1})
    good = json.dumps({"memory": "A", "key": "first", "value": "v", "created_at": 1.0})
    fat = json.dumps({"memory": "A", "key": "fat", "value": "v", "created_at": 1.0,
                      "metadata": {"pad": "p" * MAX_VALUE_BYTES}})
    target = SQLiteBackend(memory_dir=tmp_path)
    try:
        with pytest.raises(TransferError) as info:
            await import_memories(target, [header + "\n", good + "\n", fat + "\n"],
                                  source="f.jsonl")
        assert str(info.value).startswith("f.jsonl:3: error: Metadata is too large to store")
        assert "(the limit is 1,000,000) (memory 'A', key 'fat')" in str(info.value)
        assert await target.count() == 0
    finally:
        await target.close()
