"""A conformance kit for memory backends: AXON's own backend tests, importable.

A backend package (its own or a third party's) runs the whole backend contract and
the stateful model test against its backend without touching AXON's `tests/`:

- `axon.testing.conformance`: the conformance suite as pytest tests and fixtures
  (`from axon.testing.conformance import *` plus a `backend` fixture);
- `axon.testing.stateful`: `run_stateful(factory)` and `stateful_test(factory)`,
  the Hypothesis state machine that checks a backend against a plain model.

`FakeClock` and `BackendEnv` (below) are what a factory builds a backend from.
docs/backends.md ("Testing your backend") shows the whole test file.

This package needs pytest, pytest-asyncio and hypothesis (the `axon-memory[testing]`
extra); `import axon` never imports it. Importing it registers the kit's modules for
pytest's assertion rewriting, so a failing check shows the values it compared.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.registry import registry

pytest.register_assert_rewrite("axon.testing.conformance", "axon.testing.stateful")


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
    """What a backend factory gets: a private directory, the clock the test moves
    and the embedder the backend must use (the suite compares scores across backends)."""

    tmp_path: Path
    clock: FakeClock
    embedder: HashingEmbedder


BackendFactory = Callable[[BackendEnv], MemoryBackend]
"""Builds a fresh, empty backend from a `BackendEnv`."""


def in_memory_reference(env: BackendEnv) -> MemoryBackend:
    """The in-memory backend, the reference whose scores every backend must reproduce."""
    return registry.create("in_memory", clock=env.clock, embedder=env.embedder)


__all__ = ["BackendEnv", "BackendFactory", "FakeClock", "in_memory_reference"]
