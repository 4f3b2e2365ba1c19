"""Output records, trace events and memory entries -> text a person reads.

Shared by `axon run` (plain lines, `format_record`) and `axon repl` (rich tables
for recall results, `.memories` and `.show`, one line per live trace event).
Nothing here prints: every function returns a string or a `rich` renderable.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from axon.memory.entry import MemoryEntry


def shorten(value: Any, width: int = 72) -> str:
    """`value` on one line (JSON for non-strings), cut to `width` characters with '…'."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _where(record: Mapping[str, Any]) -> str:
    where = f"line {record.get('line')}"
    if record.get("flow"):
        where += f", in {record['flow']}"
    return where


def format_record(record: Mapping[str, Any]) -> str:
    """A human-readable rendering of one output record (the lines `axon run` prints)."""
    where = _where(record)
    if record["op"] == "remember":
        return f"remembered {record['key']!r} in {record['memory']}  ({where})"
    if record["op"] == "recall":
        results = record.get("results", [])
        head = (
            f"recall {json.dumps(record['query'], ensure_ascii=False)} from {record['memory']}: "
            f"{len(results)} result{'s' if len(results) != 1 else ''} "
            f"({record.get('retrieval')}, {where})"
        )
        lines = [head]
        for i, result in enumerate(results, 1):
            lines.append(
                f"  {i:>2}. {result['key']}  score={result['score']:.3f}  "
                f"{shorten(result['value'])}"
            )
        return "\n".join(lines)
    return json.dumps(record, ensure_ascii=False, default=str)


# ---------------------------------------------------------------- the REPL's forms


def remember_line(record: Mapping[str, Any]) -> str:
    """`remembered 'key' in Memory` (plus the flow and expiry when there is one)."""
    line = f"remembered {record['key']!r} in {record['memory']}"
    if record.get("flow"):
        line += f" (in flow {record['flow']})"
    expires_at = record.get("expires_at")
    if expires_at:
        line += f", expires {_clock_text(expires_at)}"
    return line


def recall_heading(record: Mapping[str, Any]) -> str:
    """`recall "query" from Memory: N results (retrieval)`."""
    results = record.get("results", [])
    count = f"{len(results)} result{'s' if len(results) != 1 else ''}"
    head = (
        f"recall {json.dumps(record['query'], ensure_ascii=False)} from {record['memory']}: "
        f"{count} ({record.get('retrieval')}"
    )
    if record.get("flow"):
        head += f", in flow {record['flow']}"
    head += ")"
    if record.get("alias"):
        head += f" as {record['alias']}"
    return head


def recall_table(record: Mapping[str, Any], value_width: int = 60) -> Table:
    """Recall results as a table: rank, key, score, value (shortened)."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("key", no_wrap=True, overflow="ellipsis", max_width=32)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("value", no_wrap=True, overflow="ellipsis")
    for rank, result in enumerate(record.get("results", []), 1):
        table.add_row(
            str(rank),
            Text(str(result["key"])),
            f"{float(result['score']):.3f}",
            Text(shorten(result["value"], value_width)),
        )
    return table


def memories_table(memories: Iterable[Mapping[str, Any]]) -> Table:
    """`Session.describe_memories()` as a table (one row per memory)."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("memory", "store", "backend", "retrieval", "decay", "top_k", "entries"):
        if column in ("top_k", "entries"):
            table.add_column(column, justify="right", no_wrap=True)
        else:
            table.add_column(column, no_wrap=True)
    table.add_column("location", overflow="ellipsis", no_wrap=True)
    for memory in memories:
        table.add_row(
            Text(str(memory["name"])),
            str(memory["store"]),
            str(memory["backend"]),
            str(memory["retrieval"]),
            str(memory["decay"]),
            str(memory["top_k"]),
            str(memory["entries"]),
            Text(str(memory.get("location") or "")),
        )
    return table


def entries_table(entries: Iterable[MemoryEntry], now: float, value_width: int = 40) -> Table:
    """Entries of one memory (newest first) with their age, tags and expiry."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("key", no_wrap=True, overflow="ellipsis", max_width=24)
    table.add_column("age", justify="right", no_wrap=True)
    table.add_column("value", no_wrap=True, overflow="ellipsis")
    table.add_column("tags", no_wrap=True, overflow="ellipsis", max_width=16)
    table.add_column("expires", justify="right", no_wrap=True)
    for entry in entries:
        tags = entry.metadata.get("tags") if isinstance(entry.metadata, Mapping) else None
        tag_text = ", ".join(map(str, tags)) if isinstance(tags, list | tuple) else ""
        expires = "" if entry.expires_at is None else age_text(entry.expires_at - now)
        table.add_row(
            Text(entry.key),
            age_text(now - entry.timestamp),
            Text(shorten(entry.value, value_width)),
            Text(tag_text),
            expires,
        )
    return table


def age_text(seconds: float) -> str:
    """A short duration: `12s`, `5m`, `3h`, `2d` (negative durations read as `0s`)."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _clock_text(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def format_event(event: Mapping[str, Any]) -> str:
    """One trace event (its `to_dict()` form) on one line: type, step, data, duration."""
    data = dict(event.get("data", {}))
    duration = data.pop("duration_ms", event.get("duration_ms"))
    results = data.pop("results", None)
    parts = [f"{event.get('event_type', '?'):<13}"]
    if event.get("step_name"):
        parts.append(f"[{event['step_name']}]")
    parts.append(", ".join(f"{k}={shorten(v, 40)}" for k, v in data.items()))
    if duration is not None:
        parts.append(f"({float(duration):.2f} ms)")
    line = "  ".join(p for p in parts if p)
    if isinstance(results, list):
        for result in results[:5]:
            if not isinstance(result, Mapping):
                continue
            signals = result.get("signals")
            explain = ""
            if isinstance(signals, Mapping) and signals:
                explain = "  " + ", ".join(f"{k}={float(v):.3f}" for k, v in signals.items())
            line += (
                f"\n    -> {result.get('key')}  score={float(result.get('score', 0)):.3f}{explain}"
            )
    return line
