"""The conformance kit's fixtures and the small helpers its tests share.

`clock` and `backend_env` are the fixtures a backend package's `backend` fixture
builds on (docs/backends.md, "Testing your backend"); `keys`, `exact_mode` and
`snapshot` read results the same way in every group of tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import MemoryEntry
from axon.testing import BackendEnv, FakeClock


@pytest.fixture
def clock() -> FakeClock:
    """The clock of the backend under test; tests move it with `clock.advance(seconds)`."""
    return FakeClock()


@pytest.fixture
def backend_env(tmp_path: Path, clock: FakeClock) -> BackendEnv:
    """What a `backend` fixture builds its backend from: a temporary directory, the
    test's `clock` and a fresh `HashingEmbedder` (the suite compares scores with it)."""
    return BackendEnv(tmp_path, clock, HashingEmbedder())


def keys(entries: list[MemoryEntry]) -> list[str]:
    return [entry.key for entry in entries]


def exact_mode(backend: MemoryBackend) -> str:
    if "exact" not in backend.capabilities.retrieval:
        pytest.skip(f"{backend.name} has no exact retrieval")
    return "exact"


async def snapshot(backend: MemoryBackend) -> list[tuple[Any, ...]]:
    entries = await backend.list_entries()
    return sorted((e.scope or "", e.key, repr(e.value)) for e in entries)
