"""The seed's memory module (`000`, docs/seed-api.md): the names its examples import.

`from axon.runtime.memory_backend import MemoryBackend, MemoryEntry, InMemoryBackend`
works as the seed describes: `InMemoryBackend(tracer=tracer)`, async `store`,
`retrieve` and `clear` with the seed's signatures, 1.0 / 0.7 / 0.4 substring
scoring (case-insensitive, ties newest first), the scope filter,
`ValueError("Memory key must not be empty")` (our `AxonMemoryError` is a
`ValueError`), `clear` returning the count, and `memory_write {key, value_type}` /
`memory_read {query, results_count, top_k}` tracer events.

`MemoryBackend` here is the seed's three-method abstract class
(`axon.memory.backend.MinimalMemoryBackend`, under the seed's name): a store written
as in the seed, with only `store`, `retrieve` and `clear`, subclasses it. Every AXON
backend is one. The engine itself lives in `axon.memory`; this module re-exports it
and keeps the seed's quirks, which the engine knows nothing of.


Two differences from the engine are kept here for the seed's sake. Values are any
Python objects, as in the seed's dict (the engine stores JSON values of at most 1 MB,
which every persistent backend needs). And the seed slices its ranked candidates
with `top_k` (`candidates[:top_k]`), so `retrieve(q, top_k=0)` returns `[]` and a
negative `top_k` drops that many from the end. This module's `InMemoryBackend`
does the same; the engine (`axon.memory`, every `backend:` of the language)
refuses a `top_k` below 1, and `top_k: 0` in a program is a checker error. The class
that does both is `AnyValueInMemoryBackend`; `InMemoryBackend` is its seed name here
(the engine's own is `axon.memory.backends.in_memory.InMemoryBackend`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from axon.memory.backend import MinimalMemoryBackend
from axon.memory.backends import in_memory
from axon.memory.entry import MemoryEntry, NewEntry

MemoryBackend = MinimalMemoryBackend
"""The seed's abstract `MemoryBackend`: `store`, `retrieve` and `clear` only."""


class AnyValueInMemoryBackend(in_memory.InMemoryBackend):
    """The engine's in-memory backend with the seed's `top_k` slicing and the seed's
    values: any Python object (a date, a set, bytes, a dataclass, a text of any
    length), kept as it is and matched by its `str()` (see the module)."""

    def _validated(self, item: NewEntry) -> tuple[Any, dict[str, Any] | None]:
        """The caller's object as it is, as the seed's dict keeps it; the key and
        metadata are checked as on every backend."""
        _, metadata = super()._validated(dataclasses.replace(item, value=None))
        return item.value, metadata

    async def retrieve(
        self,
        query: str,
        top_k: int = 5,
        scope: str | None = None,
        *,
        mode: str | None = None,
        filters: Mapping[str, Any] | None = None,
        linked: bool = False,
        min_score: float | None = None,
    ) -> list[MemoryEntry]:
        """`retrieve` as the engine's, except that `top_k <= 0` slices as the seed does."""
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k > 0:
            return await super().retrieve(
                query, top_k, scope, mode=mode, filters=filters, linked=linked,
                min_score=min_score,
            )
        results: list[MemoryEntry] = []
        live = await self.count(scope or None)
        if top_k < 0 and live:
            tracer, self._tracer = self._tracer, None  # one event, with the caller's top_k
            try:
                ranked = await super().retrieve(
                    query, live, scope, mode=mode, filters=filters, linked=linked,
                    min_score=min_score,
                )
            finally:
                self._tracer = tracer
            results = ranked[:top_k]
        else:
            self._check_open()
        if self._tracer is not None:
            from axon.runtime.tracer import TraceEventType

            self._tracer.emit(
                TraceEventType.MEMORY_READ,
                data={"query": query, "results_count": len(results), "top_k": top_k},
            )
        return results


InMemoryBackend = AnyValueInMemoryBackend
"""The seed's `InMemoryBackend(tracer=None)`: see `AnyValueInMemoryBackend`."""

__all__ = ["InMemoryBackend", "MemoryBackend", "MemoryEntry", "NewEntry"]
