"""The seed's memory module (`000`): the names its examples import, from their new homes.

`from axon.runtime.memory_backend import MemoryBackend, MemoryEntry, InMemoryBackend`
works as the seed describes: `InMemoryBackend(tracer=tracer)`, async `store`,
`retrieve` and `clear` with the seed's signatures, 1.0 / 0.7 / 0.4 substring
scoring (case-insensitive, ties newest first), the scope filter,
`ValueError("Memory key must not be empty")` (our `AxonMemoryError` is a
`ValueError`), `clear` returning the count, and `memory_write {key, value_type}` /
`memory_read {query, results_count, top_k}` tracer events.

`MemoryBackend` here is the seed's three-method abstract class
(`axon.memory.backend.SeedMemoryBackend`): a store written as in the seed, with
only `store`, `retrieve` and `clear`, subclasses it. Every AXON backend is one.
The engine itself lives in `axon.memory`; this module only re-exports it.
"""

from __future__ import annotations

from axon.memory.backend import SeedMemoryBackend as MemoryBackend
from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.entry import MemoryEntry, NewEntry

__all__ = ["InMemoryBackend", "MemoryBackend", "MemoryEntry", "NewEntry"]
