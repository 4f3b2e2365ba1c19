"""How a memory operation reports: errors that name the memory, durations in milliseconds,
the trace event of a listing.

Shared by the memories of one store (`plain`), tiered memories (`tiered`) and the
lifetimes and sweeps (`sweeps`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from axon.errors import AxonMemoryError
from axon.memory.entry import shown_filters
from axon.memory.lifetimes import is_reserved
from axon.runtime.tracer import TraceEventType

if TYPE_CHECKING:
    from axon.runtime.tracer import Tracer


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


def emit_listing(
    tracer: Tracer,
    op: str,
    name: str,
    *,
    count: int,
    limit: int | None,
    backend: str,
    filters: Mapping[str, Any] | None,
    started: float,
    **extra: Any,
) -> None:
    """The `memory_read` event of a listing (`op`: `list` or `page`) of memory `name`:
    the seed's keys (a listing has no query), `extra` (a page's `more`, a tiered
    memory's `backends` and `tiers`), the filters when there are any."""
    duration = elapsed_ms(started)
    data: dict[str, Any] = {
        "op": op,
        "query": None,
        "results_count": count,
        "top_k": limit,
        "limit": limit,
        "memory": name,
        "backend": backend,
        **extra,
        "duration_ms": duration,
    }
    if filters:
        data["filters"] = shown_filters(filters)
    tracer.emit(TraceEventType.MEMORY_READ, data=data, duration_ms=duration)
