"""The recall path from the executor to a backend stays short: a recall statement
reaches the backend's search in at most 6 frames spread over at most 3 files below the
executor (issue 27). A toy backend records the Python stack inside its keyword search.

Measured as: the frames between the executor (excluded) and the backend's own search
(included) are at most 6, and the files they pass through on the way, the backend's
own module (the destination) aside, are at most 3."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

import axon
from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.entry import MemoryEntry
from axon.memory.registry import BackendInfo, registry

EXECUTOR = Path(axon.__file__).parent / "runtime" / "executor.py"
MAX_FRAMES = 6
MAX_FILES = 3


class StackRecordingBackend(InMemoryBackend):
    """The in-memory backend, remembering the frames above its keyword search."""

    stacks: ClassVar[list[list[inspect.FrameInfo]]] = []

    async def _retrieve_keyword(
        self,
        query: str,
        top_k: int,
        scope: str | None,
        filters: Mapping[str, Any] | None,
        now: float,
        linked: bool = False,
    ) -> list[MemoryEntry]:
        StackRecordingBackend.stacks.append(inspect.stack(0))
        return await super()._retrieve_keyword(query, top_k, scope, filters, now, linked)


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    info = BackendInfo("stack_recording", f"{__name__}:StackRecordingBackend")
    monkeypatch.setitem(registry._by_name, info.name, info)
    monkeypatch.setitem(registry._aliases, info.name, info.name)
    StackRecordingBackend.stacks = []
    yield info.name


def below_executor(stack: list[inspect.FrameInfo]) -> list[inspect.FrameInfo]:
    """The frames from the backend's search up to (not including) the executor's."""
    for depth, frame in enumerate(stack):
        if Path(frame.filename) == EXECUTOR:
            return stack[:depth]
    raise AssertionError("the recall did not come from the executor")


def corridor_files(frames: list[inspect.FrameInfo]) -> set[str]:
    """The files a recall passes through below the executor, the destination's aside."""
    return {f.filename for f in frames[1:]}


def test_a_recall_statement_reaches_the_backend_in_few_frames(
    recording: str, tmp_path: Path
) -> None:
    session = axon.Session(memory_dir=tmp_path)
    try:
        session.execute(
            f"memory Notes {{ store: session backend: {recording} retrieval: keyword }}\n"
            'remember("the green door") -> Notes with { key: "door" }\n'
            'recall("green") from Notes\n'
        )
    finally:
        session.close()
    assert len(StackRecordingBackend.stacks) == 1
    frames = below_executor(StackRecordingBackend.stacks[0])
    path = [f"{Path(f.filename).name}:{f.function}" for f in frames]
    assert len(frames) <= MAX_FRAMES, path
    assert len(corridor_files(frames)) <= MAX_FILES, path
    # memory.recall -> memory.search -> backend.retrieve_counted -> the backend's search
    assert path[-1] == "plain.py:recall", path



def test_a_tiered_recall_reaches_each_tier_in_few_frames(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A tiered memory's recall searches each tier through the same short corridor: the
    tiered memory, the tier's plain memory, the backend (the tier rules are data, not a
    room the recall passes through). Both tiers' backends record their stacks."""
    stacks: list[list[inspect.FrameInfo]] = []
    for cls in (InMemoryBackend, SQLiteBackend):
        original = cls._retrieve_keyword

        def recorded(self: Any, *args: Any, _original: Any = original, **kw: Any) -> Any:
            stacks.append(inspect.stack(0))
            return _original(self, *args, **kw)

        monkeypatch.setattr(cls, "_retrieve_keyword", recorded)
    session = axon.Session(memory_dir=tmp_path)
    try:
        session.execute(
            "memory Notes { tiers: [session, persistent] backend: sqlite retrieval: keyword }\n"
            'remember("the green door") -> Notes with { key: "door", tier: "persistent" }\n'
            'remember("the green gate") -> Notes with { key: "gate", tier: "session" }\n'
            'recall("green") from Notes\n'
        )
    finally:
        session.close()
    assert len(stacks) == 2, "each tier is searched once"
    for stack in stacks:
        frames = below_executor(stack)
        path = [f"{Path(f.filename).name}:{f.function}" for f in frames]
        assert len(frames) <= MAX_FRAMES, path
        assert len(corridor_files(frames)) <= MAX_FILES, path
        assert path[-1] == "tiered.py:recall", path
