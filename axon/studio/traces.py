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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from axon.trace_files import MAX_TRACE_BYTES, finite, trace_events

PAGE = 200
"""Events a trace page lists (`start` pages on through the rest)."""


@attrs.frozen
class TraceFile:
    path: Path
    events: tuple[dict[str, Any], ...] = ()
    error: str | None = None


def load(path: Path) -> TraceFile:
    """The trace at `path`, or its `error` (never raises for the file's content)."""
    try:
        if path.stat().st_size > MAX_TRACE_BYTES:
            return TraceFile(path, error=f"larger than {MAX_TRACE_BYTES // 2**20} MiB")
        text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError) as exc:
        return TraceFile(path, error=f"cannot read it: {exc.__class__.__name__}: {exc}")
    try:
        return TraceFile(path, events=tuple(trace_events(json.loads(text))))
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
        if value is not None and finite(value):
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
