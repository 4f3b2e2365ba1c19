"""How a memory operation reports: errors that name the memory, durations in milliseconds.

Shared by the memory manager and the operations of tiered memories (`tiered_ops`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from axon.errors import AxonMemoryError
from axon.memory.lifetimes import is_reserved


@contextlib.contextmanager
def errors_named(name: str) -> Iterator[None]:
    """Backend errors name the memory, not the owned scope its entries are stored under."""
    try:
        yield
    except AxonMemoryError as exc:
        if exc.memory is not None and is_reserved(exc.memory):
            exc.memory = name
        raise


def elapsed_ms(started: float) -> float:
    """Milliseconds since `started` (a `time.perf_counter()`), as trace events give them."""
    return round((time.perf_counter() - started) * 1000, 3)
