"""Runtime fixtures: a session on a temporary memory directory with a clock tests move."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import axon
from axon.runtime.session import Session
from tests.memory.conftest import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def session(tmp_path: Path, clock: FakeClock) -> Iterator[Session]:
    with axon.Session(memory_dir=tmp_path / "mem", clock=clock) as s:
        yield s
