"""Trace event types, the event record, and the interface that receives events.

This is the lowest floor of AXON beside `errors` and `source`: it imports nothing
of ours, so memory backends can emit their optional events (`memory_write`,
`memory_read`) without knowing the runtime. The runtime's collecting `Tracer`
(`axon.runtime.tracer`, which re-exports everything here) is one `TraceSink`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

import attrs

T = TypeVar("T")


class TraceEventType(enum.StrEnum):
    """Stable event names (the `event_type` of every event).

    Every name is emitted by this runtime except `REFERENCE_ONLY_EVENTS`, the
    reference implementation's names kept for compatibility (a test checks both).

    `MEMORY_WRITE` and `MEMORY_READ` are the seed's (docs/seed-api.md); the memory
    backends emit them when given a tracer. The executor emits the flow, step,
    model and error events; the memory manager the memory events with the memory
    name and backend added.
    """

    FLOW_START = "flow_start"
    FLOW_END = "flow_end"
    STEP_START = "step_start"
    STEP_END = "step_end"
    MODEL_CALL = "model_call"
    MEMORY_WRITE = "memory_write"
    MEMORY_READ = "memory_read"
    MEMORY_EXPIRE = "memory_expire"
    MEMORY_CLEAR = "memory_clear"
    MEMORY_DELETE = "memory_delete"
    MEMORY_UPDATE = "memory_update"
    MEMORY_PROMOTE = "memory_promote"
    MEMORY_DEMOTE = "memory_demote"
    ERROR = "error"

    # The event names of the public reference implementation of AXON's tracer, kept so
    # that code written against it (filters on `event_type`, dashboards) still resolves
    # them. This runtime does not run those constructs yet, so it emits none of them;
    # `REFERENCE_ONLY_EVENTS` lists them.
    PROGRAM_START = "program_start"
    PROGRAM_END = "program_end"
    MODEL_RESPONSE = "model_response"
    ANCHOR_CHECK = "anchor_check"
    ANCHOR_PASS = "anchor_pass"
    ANCHOR_BREACH = "anchor_breach"
    VALIDATION_PASS = "validation_pass"
    VALIDATION_FAIL = "validation_fail"
    RETRY_ATTEMPT = "retry_attempt"
    REFINE_START = "refine_start"
    CONFIDENCE_CHECK = "confidence_check"
    AGENT_CYCLE_START = "agent_cycle_start"
    AGENT_CYCLE_END = "agent_cycle_end"
    AGENT_GOAL_CHECK = "agent_goal_check"
    AGENT_STUCK = "agent_stuck"

    def __str__(self) -> str:
        return self.value


REFERENCE_ONLY_EVENTS: frozenset[TraceEventType] = frozenset(
    {
        TraceEventType.PROGRAM_START,
        TraceEventType.PROGRAM_END,
        TraceEventType.MODEL_RESPONSE,
        TraceEventType.ANCHOR_CHECK,
        TraceEventType.ANCHOR_PASS,
        TraceEventType.ANCHOR_BREACH,
        TraceEventType.VALIDATION_PASS,
        TraceEventType.VALIDATION_FAIL,
        TraceEventType.RETRY_ATTEMPT,
        TraceEventType.REFINE_START,
        TraceEventType.CONFIDENCE_CHECK,
        TraceEventType.AGENT_CYCLE_START,
        TraceEventType.AGENT_CYCLE_END,
        TraceEventType.AGENT_GOAL_CHECK,
        TraceEventType.AGENT_STUCK,
    }
)
"""Names of the reference implementation's tracer that this runtime never emits."""


@attrs.frozen
class TraceEvent:
    """One event. `data` holds event-specific keys (the seed's keys for memory events)."""

    event_type: TraceEventType
    timestamp: float
    step_name: str | None = None
    data: Mapping[str, Any] = attrs.field(factory=dict)
    duration_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "event_type": self.event_type.value,
            "timestamp": self.timestamp,
            "data": dict(self.data),
        }
        if self.step_name is not None:
            out["step_name"] = self.step_name
        out["duration_ms"] = self.duration_ms
        return out

    def __getitem__(self, name: str) -> Any:
        """Dict-style access (`event["event_type"]`) to the `to_dict()` form."""
        return self.to_dict()[name]


class TraceSink(Protocol):
    """Anything that receives trace events: what a memory backend's `tracer=` accepts.

    `axon.runtime.tracer.Tracer` is the implementation AXON ships; a backend only
    ever calls `emit`.
    """

    def emit(
        self,
        event_type: TraceEventType | str,
        data: Mapping[str, Any] | None = None,
        step_name: str | None = None,
        duration_ms: float | None = None,
    ) -> object: ...


class History(list[T]):
    """A list that keeps only the newest `keep` items `append` gives it (None: all).

    What a long-lived session keeps of its past (trace events, output records): without
    a bound it grows by one item per operation for as long as the process runs. Only
    `append` trims; the list is otherwise a plain list (`del history[:n]` still works).
    """

    def __init__(self, keep: int | None = None) -> None:
        super().__init__()
        self.keep = keep

    def append(self, item: T) -> None:
        super().append(item)
        if self.keep is not None and len(self) > self.keep:
            del self[: len(self) - self.keep]


def checked_keep(keep: object, name: str, where: str) -> int | None:
    """`keep` as a `History` bound: None, or an int from 0 (a TypeError or ValueError
    naming `name` in `where` otherwise)."""
    if keep is None:
        return None
    if isinstance(keep, bool) or not isinstance(keep, int):
        raise TypeError(
            f"{where}: {name} must be an int (how many to keep) or None (keep all), "
            f"not {type(keep).__name__}"
        )
    if keep < 0:
        raise ValueError(f"{where}: {name} must be 0 or more (or None: keep all), got {keep}")
    return keep
