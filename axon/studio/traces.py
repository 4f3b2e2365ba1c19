"""A trace file written by `axon run --trace` (or a session's events) in, a checked,
filterable timeline of its events out.

`load` reads only the paths given to `axon studio --trace` (the routes name a trace by
its index, never by a path) and never raises for what the file holds: a missing,
oversized, non-JSON or malformed file becomes a `TraceFile` with its `error`, shown as
an error page. `timeline` places each event on the time axis (seconds from the first
event, its duration) and filters it by memory and operation (`event_type`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

MAX_TRACE_BYTES = 256 * 1024 * 1024
"""Larger files are refused (`axon trace` has the same bound)."""

MAX_TRACE_DEPTH = 64
"""JSON nested deeper than this is not a trace file (`axon trace`'s bound)."""

PAGE = 200
"""Events a trace page lists (`start` pages on through the rest)."""


@attrs.frozen
class TraceFile:
    path: Path
    events: tuple[dict[str, Any], ...] = ()
    error: str | None = None


def _finite(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _depth(value: Any) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if deepest > MAX_TRACE_DEPTH:
                return deepest
            stack.extend((child, depth + 1) for child in (
                item.values() if isinstance(item, dict) else item
            ))
    return deepest


def checked(data: Any) -> tuple[dict[str, Any], ...]:
    """`data["events"]`, each an object with a string `event_type`, finite times and an
    object `data`; raises ValueError naming the first event that is not."""
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise ValueError('expected an object with an "events" list')
    if _depth(data) > MAX_TRACE_DEPTH + 2:
        raise ValueError(f"nested more than {MAX_TRACE_DEPTH} levels deep")
    events = []
    for index, event in enumerate(data["events"]):
        where = f"event {index}"
        if not isinstance(event, dict):
            raise ValueError(f"{where} is not an object")
        if not isinstance(event.get("event_type"), str):
            raise ValueError(f'{where}: "event_type" must be a string')
        for name in ("timestamp", "duration_ms"):
            if event.get(name) is not None and not _finite(event[name]):
                raise ValueError(f'{where}: "{name}" must be a number')
        payload = event.get("data", {})
        if not isinstance(payload, dict):
            raise ValueError(f'{where}: "data" must be an object')
        if payload.get("duration_ms") is not None and not _finite(payload["duration_ms"]):
            raise ValueError(f'{where}: "duration_ms" must be a number')
        events.append(event)
    return tuple(events)


def load(path: Path) -> TraceFile:
    """The trace at `path`, or its `error` (never raises for the file's content)."""
    try:
        if path.stat().st_size > MAX_TRACE_BYTES:
            return TraceFile(path, error=f"larger than {MAX_TRACE_BYTES // 2**20} MiB")
        text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError) as exc:
        return TraceFile(path, error=f"cannot read it: {exc.__class__.__name__}: {exc}")
    try:
        return TraceFile(path, events=checked(json.loads(text)))
    except json.JSONDecodeError as exc:
        return TraceFile(path, error=f"not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})")
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return TraceFile(path, error=f"not an AXON trace file: {reason}")


def memory_of(event: Mapping[str, Any]) -> str | None:
    memory = event.get("data", {}).get("memory")
    return memory if isinstance(memory, str) else None


def duration_of(event: Mapping[str, Any]) -> float:
    """The event's duration in milliseconds (its own field, else its data's), else 0."""
    for value in (event.get("duration_ms"), event.get("data", {}).get("duration_ms")):
        if value is not None and _finite(value):
            return max(float(value), 0.0)
    return 0.0


def timeline(
    events: Sequence[Mapping[str, Any]], memory: str = "", operation: str = "",
    start: int = 0, limit: int = PAGE,
) -> dict[str, Any]:
    """The memory events (`memory_*`) matching the filters, `limit` of them from the
    `start`th, each with `offset` (seconds from the trace's first event), `duration_ms`
    and its data; `next`, the `start` of the following page (None on the last); the
    memories and operations found, for the filter choices; `span`, the trace's length
    in seconds."""
    memory_events = [e for e in events if str(e.get("event_type", "")).startswith("memory")]
    stamps = [float(e["timestamp"]) for e in events if e.get("timestamp") is not None]
    first = min(stamps) if stamps else 0.0
    end = max(
        (float(e["timestamp"]) + duration_of(e) / 1000 for e in events
         if e.get("timestamp") is not None),
        default=first,
    )
    rows = []
    for index, event in enumerate(memory_events):
        if memory and memory_of(event) != memory:
            continue
        if operation and event.get("event_type") != operation:
            continue
        stamp = event.get("timestamp")
        rows.append({
            "index": index,
            "event_type": event.get("event_type"),
            "memory": memory_of(event),
            "offset": (float(stamp) - first) if stamp is not None else 0.0,
            "duration_ms": duration_of(event),
            "step_name": event.get("step_name"),
            "data": event.get("data", {}),
        })
    start = max(start, 0)
    return {
        "events": rows[start:start + limit],
        "matched": len(rows),
        "start": start,
        "next": start + limit if start + limit < len(rows) else None,
        "memories": sorted({m for e in memory_events if (m := memory_of(e)) is not None}),
        "operations": sorted({str(e.get("event_type")) for e in memory_events}),
        "span": max(end - first, 0.0),
    }
