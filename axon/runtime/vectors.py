"""A session's embedding model and background vector worker -> what its memories use to
compute, wait for and count vectors, and the budgets a recall waits.

One `Vectors` per session (`MemoryManager` makes it and hands it to every memory it
binds): the model is asked for once, when a semantic or hybrid memory first needs
it; the worker (`axon.memory.embeddings.worker`) is started when the first memory
with a model hands it a scope, and closed with the session.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.base import Embedder
from axon.memory.entry import number_text

if TYPE_CHECKING:
    from axon.memory.embeddings.worker import VectorWorker, WaitProgress

EmbedderProvider = Callable[[], Embedder | None]
"""What `Session(embedder=...)` takes besides an `Embedder`: a zero-argument callable
returning one (or None: no model, semantic memories run keyword), called once, when a
semantic or hybrid memory is first bound."""

DEFAULT_EMBED_WAIT = 0.5
"""Seconds a handle's recall waits for pending vectors by default (`Session(embed_wait=)`).

Vectors are computed in the background (`axon.memory.embeddings.worker`): a remember
never waits for the model. A recall of a semantic or hybrid memory waits for its
memory's pending vectors at most its budget; past it, it runs with the vectors there
are (entries still without one are found by keyword in hybrid recall) and its record
and `memory_read` event say how many were pending (`pending_vectors`). 0.5 s keeps the
first recall after thousands of remembers under about a second: the query embedding
itself may wait for the batch in flight. Recall statements of a program
(`Session.execute`, `axon run`) wait for every vector unless `Session(embed_wait=...)`
says otherwise, so a program's output does not depend on the machine's speed.
"""

WAIT_ALL = "all"
"""`embed_wait="all"`: wait until every pending vector of the memory is computed."""


def embed_wait_seconds(value: Any, where: str, memory: str | None = None) -> float:
    """`embed_wait` as seconds (`math.inf` for "all"); a TypeError, or an `AxonMemoryError`
    for a wrong number (a `ValueError`, one `except AxonError` away), naming `where`."""
    if value == WAIT_ALL and isinstance(value, str):
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{where}: embed_wait must be a number of seconds or 'all', "
            f"not {type(value).__name__}"
        )
    try:
        seconds = float(value)
    except OverflowError:  # an int past what a float holds
        raise AxonMemoryError(
            f"{where}: embed_wait must be seconds a float can hold, got "
            f"{number_text(value)}; to wait for every vector, pass 'all'",
            memory=memory,
        ) from None
    if math.isnan(seconds) or seconds < 0:
        raise AxonMemoryError(
            f"{where}: embed_wait must be 0 or more seconds (or 'all'), got {value!r}",
            memory=memory,
        )
    return seconds


def default_embedder() -> Embedder | None:
    """The model `Session()` uses when given none (`axon.memory.embeddings.default`)."""
    from axon.memory.embeddings.default import default_embedder as chosen

    return chosen()


class Vectors:
    """The embedding model and vector worker of one session, shared by its memories."""

    def __init__(self, provider: EmbedderProvider, embed_wait: float | str | None) -> None:
        explicit = None if embed_wait is None else embed_wait_seconds(embed_wait, "Session")
        self.statement_wait = math.inf if explicit is None else explicit
        """Budget of a recall statement (seconds, inf: all); see `DEFAULT_EMBED_WAIT`."""
        self.call_wait = DEFAULT_EMBED_WAIT if explicit is None else explicit
        """Budget of a handle's recall that does not give one."""
        self.worker: VectorWorker | None = None
        """The background worker, once a memory with a model handed it a scope."""
        self.wait_progress: WaitProgress | None = None
        """What a recall waiting for pending vectors shows (`worker.WaitProgress`; the CLI's
        progress bar); None shows nothing (a library never prints)."""
        self.fallback_warned: set[str] = set()
        """The memories whose recall already warned that it fell back to keyword."""
        self._provider = provider
        self._embedder: Embedder | None = None
        self._resolved = False

    def embedder(self) -> Embedder | None:
        """The session's model (asked for once), or None: semantic recall runs keyword."""
        if not self._resolved:
            from axon.memory.embeddings.errors import EmbedderUnavailableError

            try:
                self._embedder = self._provider()
            except EmbedderUnavailableError as exc:  # e.g. AXON_EMBEDDER names no model
                raise AxonMemoryError(str(exc)) from None
            self._resolved = True
        return self._embedder

    def background(self, backend: MemoryBackend, scope: str) -> VectorWorker | None:
        """Hand the vectors of `scope` in `backend` to the background worker; None without
        a model."""
        if backend.embedder is None:
            return None
        if self.worker is None:
            from axon.memory.embeddings.worker import VectorWorker

            self.worker = VectorWorker()
        backend.embed_on_recall = False
        self.worker.wait_progress = self.wait_progress
        self.worker.notify(backend, scope)
        return self.worker

    def wrote(self, backend: MemoryBackend, scope: str) -> None:
        """After a write to `scope`: wake the worker when it computes that backend's vectors."""
        if self.worker is not None and not backend.embed_on_recall:
            self.worker.notify(backend, scope)

    async def close(self) -> None:
        """Stop the worker (before the stores close: no batch is saved after)."""
        if self.worker is not None:
            await self.worker.close()
