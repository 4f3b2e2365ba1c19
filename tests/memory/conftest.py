"""Fixtures for the memory engine: one backend factory per registered backend.

`backend` is parametrized over every name in the registry, so a backend that is
registered is automatically put through the whole conformance suite. Each factory
receives a `BackendEnv` (a temporary directory, a controllable clock, a small
deterministic embedder) and returns a fresh, empty backend.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import attrs
import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.registry import registry


class FakeClock:
    """A clock tests move by hand: `clock.advance(seconds)`."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@attrs.define
class BackendEnv:
    tmp_path: Path
    clock: FakeClock
    embedder: HashingEmbedder


BackendFactory = Callable[[BackendEnv], MemoryBackend]

BACKEND_FACTORIES: dict[str, BackendFactory] = {}
"""Filled below, one entry per registered backend; a test fails if one is missing."""


def _in_memory(env: BackendEnv) -> MemoryBackend:
    return registry.create("in_memory", clock=env.clock, embedder=env.embedder)


BACKEND_FACTORIES["in_memory"] = _in_memory


def _sqlite(env: BackendEnv) -> MemoryBackend:
    return registry.create(
        "sqlite", memory_dir=env.tmp_path / "sqlite", clock=env.clock, embedder=env.embedder
    )


def _vector_db(env: BackendEnv) -> MemoryBackend:
    return registry.create(
        "vector_db", memory_dir=env.tmp_path / "vector_db", clock=env.clock, embedder=env.embedder
    )


BACKEND_FACTORIES["sqlite"] = _sqlite
BACKEND_FACTORIES["vector_db"] = _vector_db


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=sorted(BACKEND_FACTORIES))
async def backend(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[MemoryBackend]:
    env = BackendEnv(tmp_path, clock, HashingEmbedder())
    instance = BACKEND_FACTORIES[request.param](env)
    try:
        yield instance
    finally:
        await instance.close()
