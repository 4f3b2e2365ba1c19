"""Trace events of a run: what happened, when, in which step, with which data.

Seed-compatible: `Tracer().emit(TraceEventType.MEMORY_WRITE, data={...})` and
`Tracer().events`. Every event is also a structlog debug entry under its stable
name (`memory_write`, `memory_read`, ...) once an application has configured
structlog (`axon run -v` does); the library itself never configures logging.
The executor adds the memory name, the backend and a duration to every memory
event; `axon run --trace FILE` writes `to_dict()`. The event types and the event
record live in `axon.trace` (the floor memory backends may import) and are
re-exported here, so seed 000's `from axon.runtime.tracer import Tracer,
TraceEventType` keeps working.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from axon.trace import History, TraceEvent, TraceEventType, TraceSink, checked_keep

__all__ = ["TraceEvent", "TraceEventType", "TraceSink", "Tracer"]


def _structlog_logger() -> Any:
    """This module's structlog logger, or None while no application configured structlog.

    structlog (which loads rich) is never imported here: an application that turns
    logging on has imported it already, so a library run without logging pays nothing.
    """
    structlog = sys.modules.get("structlog")
    if structlog is None or not structlog.is_configured():
        return None
    return structlog.get_logger(__name__)


class Tracer:
    """Collects `TraceEvent`s in order (a `TraceSink`). `clock` (Unix seconds) stamps them.

    `keep` bounds how many it keeps: the newest `keep` events (None, the default of a
    tracer made by hand: every one; a `Session` makes its tracer with its `history`).
    Listeners see every event whatever is kept.
    """

    def __init__(
        self, clock: Callable[[], float] | None = None, *, keep: int | None = None
    ) -> None:
        self._clock = clock or time.time
        self._events: list[TraceEvent] = History(checked_keep(keep, "keep", "Tracer"))
        self._spans: list[str] = []
        self._listeners: list[Callable[[TraceEvent], None]] = []

    @property
    def events(self) -> list[TraceEvent]:
        """The events emitted so far (the newest `keep`), oldest first (whether or not a
        span is open)."""
        return list(self._events)

    @property
    def current_step(self) -> str | None:
        return self._spans[-1] if self._spans else None

    def subscribe(self, listener: Callable[[TraceEvent], None]) -> None:
        """Call `listener` with every future event (the CLI's live log uses this)."""
        self._listeners.append(listener)

    def emit(
        self,
        event_type: TraceEventType | str,
        data: Mapping[str, Any] | None = None,
        step_name: str | None = None,
        duration_ms: float | None = None,
    ) -> TraceEvent:
        event = TraceEvent(
            event_type=TraceEventType(event_type),
            timestamp=self._clock(),
            step_name=step_name if step_name is not None else self.current_step,
            data=dict(data or {}),
            duration_ms=duration_ms or 0.0,
        )
        self._events.append(event)
        log = _structlog_logger()  # only an application (the CLI) turns logging on
        if log is not None:
            log.debug(event.event_type.value, **{"step_name": event.step_name, **event.data})
        for listener in self._listeners:
            listener(event)
        return event

    def start_span(self, name: str) -> None:
        self._spans.append(name)

    def end_span(self) -> None:
        if self._spans:
            self._spans.pop()

    def to_dict(self) -> dict[str, Any]:
        return {"events": [event.to_dict() for event in self._events]}


class NamespacedTracer(Tracer):
    """`tracer` as the memories of one namespace see it: every event they emit carries
    `namespace` ("acme/u42"); everything else is `tracer`'s own (events, spans, listeners).
    The root's memories use `tracer` itself, so their events have no `namespace`."""

    def __init__(self, tracer: Tracer, namespace: str) -> None:  # no state of its own
        self.inner = tracer
        self.namespace = namespace

    @property
    def events(self) -> list[TraceEvent]:
        return self.inner.events

    @property
    def current_step(self) -> str | None:
        return self.inner.current_step

    def subscribe(self, listener: Callable[[TraceEvent], None]) -> None:
        self.inner.subscribe(listener)

    def emit(
        self,
        event_type: TraceEventType | str,
        data: Mapping[str, Any] | None = None,
        step_name: str | None = None,
        duration_ms: float | None = None,
    ) -> TraceEvent:
        marked = {**(data or {}), "namespace": self.namespace}
        return self.inner.emit(event_type, marked, step_name, duration_ms)

    def start_span(self, name: str) -> None:
        self.inner.start_span(name)

    def end_span(self) -> None:
        self.inner.end_span()

    def to_dict(self) -> dict[str, Any]:
        return self.inner.to_dict()
