"""A trace file's JSON (what `axon run --trace` writes) in, its checked events out.

`axon trace` and AXON Studio read the same files with the same rules: an object with an
`events` list, each event an object whose times are finite numbers, whose names are
strings and whose `data` is an object; bounded in size and nesting. A file that breaks
a rule raises `BadTraceFile` naming the first event and field at fault.
"""

from __future__ import annotations

import math
from typing import Any

MAX_TRACE_BYTES = 256 * 1024 * 1024
"""Larger trace files are refused before they are read."""

MAX_TRACE_DEPTH = 64
"""An event nested deeper than this is not one AXON wrote."""


class BadTraceFile(ValueError):
    """The file is not a trace `axon run --trace` writes; the message says why."""


def trace_events(data: Any) -> list[dict[str, Any]]:
    """`data["events"]`, each one checked for the fields `axon trace` prints."""
    if not isinstance(data, dict) or "events" not in data:
        raise BadTraceFile(f'expected an object with an "events" list, got {kind(data)}')
    events = data["events"]
    if not isinstance(events, list):
        raise BadTraceFile(f'"events" must be a list, not {kind(events)}')
    for index, event in enumerate(events):
        where = f"event {index}"
        if not isinstance(event, dict):
            raise BadTraceFile(f"{where} must be an object, not {kind(event)}")
        if depth(event) > MAX_TRACE_DEPTH:
            raise BadTraceFile(f"{where} is nested more than {MAX_TRACE_DEPTH} levels deep")
        for name in ("timestamp", "duration_ms"):
            value = event.get(name)
            if value is not None and not finite(value):
                raise BadTraceFile(f'{where}: "{name}" must be a number, not {kind(value)}')
        for name in ("event_type", "step_name"):
            value = event.get(name)
            if value is not None and not isinstance(value, str):
                raise BadTraceFile(f'{where}: "{name}" must be a string, not {kind(value)}')
        payload = event.get("data", {})
        if not isinstance(payload, dict):
            raise BadTraceFile(f'{where}: "data" must be an object, not {kind(payload)}')
        duration = payload.get("duration_ms")
        if duration is not None and not finite(duration):
            raise BadTraceFile(f'{where}: "duration_ms" must be a number, not {kind(duration)}')
        results = payload.get("results")
        if results is not None and not isinstance(results, list):
            raise BadTraceFile(f'{where}: "results" must be a list, not {kind(results)}')
        for rank, result in enumerate(results or []):
            if not isinstance(result, dict):
                raise BadTraceFile(f"{where}, result {rank}: must be an object, not {kind(result)}")
            if "score" in result and not finite(result["score"]):
                raise BadTraceFile(
                    f'{where}, result {rank}: "score" must be a number, '
                    f"not {kind(result['score'])}"
                )
    return events


def finite(value: Any) -> bool:
    """A JSON number a float can hold (not a bool, NaN, 1e999 or a 400-digit integer)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number out of range" if not finite(value) else "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def depth(value: Any) -> int:
    """How deeply `value` nests lists and objects (iterative: no recursion limit)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if deepest > MAX_TRACE_DEPTH:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest
