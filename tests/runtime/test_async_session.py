"""`axon.AsyncSession`: the session and handle as coroutines that never block the loop
(docs/language.md §13.3).

Over every backend the async handle gives what the synchronous one gives; under
`asyncio.gather` of hundreds of remembers and recalls nothing is lost, every
result is right, and a ticker coroutine measures the loop's largest stall.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import axon
from axon.errors import AxonMemoryError
from axon.runtime.model import ModelRequest
from tests.helpers.stalls import STALL_LIMIT, Ticker
from tests.memory.conftest import FakeClock
from tests.runtime.backends import KINDS, SessionKit

CONCURRENT = 200
@pytest.fixture(params=KINDS)
def kit(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    clock: FakeClock,
) -> SessionKit:
    return SessionKit(request.param, tmp_path, monkeypatch, clock)


@pytest.fixture
async def session(kit: SessionKit) -> AsyncIterator[axon.AsyncSession]:
    async with axon.AsyncSession(**kit.kwargs()) as s:
        await s.execute(kit.decl())
        yield s


async def test_the_async_handle_does_what_the_sync_one_does(
    session: axon.AsyncSession, kit: SessionKit
) -> None:
    notes = session.memory("Notes")  # a plain call
    assert isinstance(notes, axon.AsyncMemoryHandle)
    value = {"a": [1, 2.5, None, True], "s": "ünï"}
    key = await notes.remember(value, tags=["t"], importance=0.5, metadata={"p": "x"})
    assert key == session.sync.memory("Notes").remember(value, tags=["t"], importance=0.5,
                                                        metadata={"p": "x"})
    entry = await notes.get(key)
    assert entry is not None and entry.value == value
    assert entry.metadata == {"source": "python", "tags": ["t"], "importance": 0.5, "p": "x",
                              "scope": "Notes"}
    for i in range(5):
        kit.clock.advance(1)
        await notes.remember(f"budget line {i}", key=f"b{i}", tags=["even" if i % 2 else "odd"])
    results = await notes.recall("budget line", top_k=3, tags=["odd"])
    sync = session.sync.memory("Notes").recall("budget line", top_k=3, tags=["odd"])
    assert results == sync and [r.key for r in results]
    [record] = await session.execute('recall("budget line") from Notes with '
                                     '{ top_k: 3, tags: ["odd"] }')
    assert [(r.key, r.score) for r in results] == [
        (r["key"], r["score"]) for r in record["results"]
    ]
    assert [e.key for e in await notes.list(limit=2)] == ["b4", "b3"]
    first = await notes.page(limit=2)
    assert first == session.sync.memory("Notes").page(limit=2)
    second = await notes.page(limit=2, after=first.next)
    assert [e.key for e in (*first.entries, *second.entries)] == ["b4", "b3", "b2", "b1"]
    assert await notes.count() == 6
    assert await notes.delete("b4") is True and await notes.delete("b4") is False
    assert await notes.count() == 5
    ops = [r["op"] for r in session.records]
    assert ops.count("forget") == 2 and ops[-3:] == ["recall", "forget", "forget"]
    assert any(e["event_type"] == "memory_delete" for e in session.events)


async def test_mistakes_raise_the_sync_sessions_errors_and_undeclared_memories_at_once(
    session: axon.AsyncSession,
) -> None:
    with pytest.raises(AxonMemoryError, match="did you mean 'Notes'"):
        session.memory("notse")
    notes = session.memory("Notes")
    with pytest.raises(TypeError, match="query must be a str"):
        await notes.recall(3)  # type: ignore[arg-type]
    with pytest.raises(AxonMemoryError, match="importance must be a number from 0 to 1"):
        await notes.remember("x", importance=3)
    with pytest.raises(axon.AxonSyntaxError, match="expected '\\)'"):
        await session.execute("recall(x from Notes")
    with pytest.raises(axon.AxonCheckError, match="Undefined memory 'Nots'"):
        await session.execute('recall("x") from Nots')
    with pytest.raises(TypeError, match="text must be a str"):
        await session.execute(b"memory M {}")  # type: ignore[arg-type]
    assert await notes.count() == 0


async def test_gather_of_many_remembers_and_recalls_loses_nothing_and_never_stalls(
    tmp_path: Path,
) -> None:
    async with axon.AsyncSession(memory_dir=tmp_path) as session:
        await session.execute("memory Log { store: persistent backend: sqlite retrieval: keyword }")
        log = session.memory("Log")
        calls: list[Any] = []
        for i in range(CONCURRENT):
            calls.append(log.remember({"n": i, "text": f"entry token{i}"}, key=f"k{i}"))
            calls.append(log.recall(f"k{i}", retrieval="exact", top_k=1))
        # A full collection scans the whole heap and stops every thread; in a process
        # that ran the whole test suite it alone can take 0.3 s. Freeze what exists
        # so the stall measured is this work's, not the suite's garbage collector's.
        gc.freeze()
        try:
            async with Ticker() as ticker:
                results = await asyncio.gather(*calls)
        finally:
            gc.unfreeze()
        keys, recalls = results[0::2], results[1::2]
        assert keys == [f"k{i}" for i in range(CONCURRENT)]
        for i, found in enumerate(recalls):
            # Calls run in the order they were made: each recall sees its remember.
            assert [(r.key, r.value, r.score) for r in found] == [
                (f"k{i}", {"n": i, "text": f"entry token{i}"}, 1.0)
            ], i
        assert await log.count() == CONCURRENT
        stored = {e.key: e.value for e in await log.list()}
        assert stored == {f"k{i}": {"n": i, "text": f"entry token{i}"} for i in range(CONCURRENT)}
        assert ticker.ticks > 10  # the loop kept running while the work did
        assert ticker.longest < STALL_LIMIT, f"the event loop stalled {ticker.longest:.3f}s"


class SlowModel:
    """A model client that takes `delay` seconds per answer (a network call, say)."""

    name = "slow"

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def complete(self, request: ModelRequest) -> str:
        time.sleep(self.delay)
        return f"slow {request.name}"


async def test_a_slow_model_call_does_not_block_the_loop(tmp_path: Path) -> None:
    async with axon.AsyncSession(memory_dir=tmp_path, model=SlowModel(0.4)) as session:
        await session.execute("memory Out { store: persistent backend: sqlite }\n"
                              'flow F() { step S { ask: "think" } remember(S) -> Out }')
        started = time.perf_counter()
        async with Ticker() as ticker:
            await session.execute("run F()")
        assert time.perf_counter() - started >= 0.4
        assert ticker.longest < 0.2, f"the loop stalled {ticker.longest:.3f}s during the call"
        entry = await session.memory("Out").get("s")
        assert entry is not None and entry.value == "slow S"


async def test_a_call_cancelled_before_its_turn_never_happens(tmp_path: Path) -> None:
    async with axon.AsyncSession(memory_dir=tmp_path, model=SlowModel(0.3)) as session:
        await session.execute("memory Out { store: persistent backend: sqlite }\n"
                              'flow F() { step S { ask: "think" } }')
        out = session.memory("Out")
        busy = asyncio.create_task(session.execute("run F()"))
        queued = asyncio.create_task(out.remember("never", key="n"))
        await asyncio.sleep(0.05)
        queued.cancel()
        await busy
        with pytest.raises(asyncio.CancelledError):
            await queued
        assert await out.get("n") is None and await out.count() == 0


async def test_a_call_cancelled_during_its_turn_completes_whole(tmp_path: Path) -> None:
    """A running call cannot be interrupted half-way (the audit's repro cancelled calls
    already running): the caller sees CancelledError, and the call completed as one
    unit, the whole flow's writes there, before any call queued after it runs."""
    async with axon.AsyncSession(memory_dir=tmp_path, model=SlowModel(0.3)) as session:
        await session.execute(
            "memory Out { store: persistent backend: sqlite }\n"
            'flow F() { remember("before") -> Out with { key: "b" } '
            'step S { ask: "think" } remember(S) -> Out with { key: "s" } }'
        )
        out = session.memory("Out")
        running = asyncio.create_task(session.execute("run F()"))
        await asyncio.sleep(0.1)  # the model call is under way
        after = asyncio.create_task(out.count())
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert await after == 2  # queued behind it: sees the completed call, both writes
        entry = await out.get("s")
        assert entry is not None and entry.value == "slow S"


async def test_close_is_idempotent_and_a_closed_session_refuses_calls(tmp_path: Path) -> None:
    session = axon.AsyncSession(memory_dir=tmp_path)
    await session.execute("memory M { store: session backend: sqlite }")
    notes = session.memory("M")
    await notes.remember("x", key="x")
    await session.close()
    await session.close()
    assert session.closed
    with pytest.raises(RuntimeError, match="closed"):
        await notes.count()
    with pytest.raises(RuntimeError, match="closed"):
        await session.execute("memory N { store: session backend: sqlite }")
    async with axon.AsyncSession(memory_dir=tmp_path) as other:
        await other.execute("memory M { store: session backend: sqlite }")
        assert await other.memory("M").count() == 0  # the session entry left with its session


async def test_a_burst_of_calls_wakes_the_dispatcher_once_and_keeps_its_order(
    tmp_path: Path,
) -> None:
    """What stalls the caller's loop is per-call work on it: 300 concurrent calls make
    a handful of dispatcher submissions, not one executor future per call (which
    made 300, each waking the dispatcher to contend for the GIL while the rest of
    the burst still ran on the loop), and still run in order."""
    async with axon.AsyncSession(memory_dir=tmp_path) as session:
        await session.execute("memory Log { store: persistent backend: sqlite retrieval: keyword }")
        log = session.memory("Log")
        submitted = 0
        submit = session._dispatcher.submit

        def counting(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            nonlocal submitted
            submitted += 1
            return submit(fn, *args, **kwargs)

        session._dispatcher.submit = counting  # type: ignore[method-assign]
        calls = []
        for i in range(150):
            calls.append(log.remember(f"entry token{i}", key=f"k{i}"))
            calls.append(log.count())
        results = await asyncio.gather(*calls)
        assert results[1::2] == list(range(1, 151))  # each count sees the remembers before it
        assert submitted <= 3, submitted
