"""Output records, trace events and memory entries -> text a person reads.

Shared by `axon run` (plain lines, `format_record`) and `axon repl` (aligned
tables for recall results, `.memories` and `.show`, one line per live trace
event). Nothing here prints: every function returns a string.
"""

from __future__ import annotations

import datetime
import fractions
import io
import json
import math
import re
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from axon.memory.entry import IMPORTANCE_LEVELS, MemoryEntry
from axon.redaction import redact_secrets

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""What a terminal may act on instead of showing: the C0 controls but tab and newline
(ESC starts the sequences that clear the screen, retitle the window or plant a
hyperlink), DEL, the C1 controls (U+0080-U+009F: U+009B is a one-character CSI), the
line and paragraph separators and the bidirectional controls (U+202E turns the text
after it around, so a key can pass for another)."""


def visible(text: str) -> str:
    """`text` safe to print for a person: every character of `_UNSAFE` as an escape a person
    can read (`\\x1b`, `\\x07`, `\\x9b`, `\\u202e`), everything else as it is.

    Stored text (a memory name, key, value, tag or metadata written by an import, an MCP
    agent or any program) reaches the terminal only through this: `axon.cli_output.out`
    and `err`, the REPL's output and every table call it. Tab and newline are kept
    (tables and one-line renderings fold them into spaces). A backslash is left as it is,
    so stored text that already reads `\\x1b` looks like an escaped ESC. Idempotent.
    """
    if text.isprintable() or not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_json(data: Any, **options: Any) -> str:
    """`data` as JSON text (`ensure_ascii=False`, `default=str`, `options` for
    `json.dumps`) with the characters of `_UNSAFE` that JSON leaves raw (DEL, the C1,
    separator and bidirectional controls) written as `\\u` escapes: the same JSON
    document, safe on a terminal, and unchanged by `visible`."""
    text = json.dumps(data, ensure_ascii=False, default=str, **options)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def counted(count: int, one: str, many: str) -> str:
    """`count` with the noun that agrees with it: `counted(1, "memory", "memories")`."""
    return f"{count:,} {one if count == 1 else many}"


def score_text(score: Any) -> str:
    """A score for people: three decimals, or three significant digits below 0.001.

    Scores are in [0, 1] (docs/backends.md, "Scores"); a positive score under 0.001
    (a weak semantic match) still reads as a match, not as "0.000".
    """
    try:
        value = float(score)
    except (OverflowError, ValueError, TypeError):  # a hand-edited trace file
        return shorten(score, 20)
    return f"{value:.3g}" if 0 < abs(value) < 0.001 else f"{value:.3f}"


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
                f"  {i:>2}. {result['key']}  score={score_text(result['score'])}  "
                f"{shorten(result['value'])}"
            )
        for note in (
            below_floor_line(record.get("below_floor")),
            pending_line(record.get("pending_vectors")),
        ):
            if note:
                lines.append(f"  ({note})")
        return "\n".join(lines)
    if record["op"] == "forget":
        return f"{forget_line(record)}  ({where})"
    return json.dumps(record, ensure_ascii=False, default=str)


def below_floor_line(count: Any) -> str | None:
    """`3 entries scored below the floor (min_score 0 shows them)`: why a recall came back
    empty or short (its record's `below_floor`); None when nothing was left out."""
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return None
    entries = f"{count} entr{'y' if count == 1 else 'ies'}"
    return f"{entries} scored below the floor (min_score 0 shows them)"


def pending_line(count: Any) -> str | None:
    """`3 entries had no vector yet (not compared by meaning; --embed-wait all waits for
    them)`: a semantic or hybrid recall that ran past its wait (its record's
    `pending_vectors`); None when every vector was there."""
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return None
    entries = f"{count:,} entr{'y' if count == 1 else 'ies'}"
    return (
        f"{entries} had no vector yet (not compared by meaning; --embed-wait all waits "
        "for them)"
    )


def forget_line(record: Mapping[str, Any]) -> str:
    """`forgot 'key' from M`, `no entry 'key' in M to forget`, `forgot 2 entries from M
    matching {...}`: what a forget record says, without its position."""
    memory, deleted = record.get("memory"), record.get("deleted")
    if "filter" in record:
        count = f"{deleted} entr{'y' if deleted == 1 else 'ies'}"
        matching = json.dumps(record["filter"], ensure_ascii=False, default=str)
        return f"forgot {count} from {memory} matching {shorten(matching, 60)}"
    if deleted:
        return f"forgot {record.get('key')!r} from {memory}"
    return f"no entry {record.get('key')!r} in {memory} to forget"


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


def text_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    right: Collection[int] = (),
    flex: int | None = None,
    width: int = 100,
) -> str:
    """Rows as an aligned `rich` table under an underlined header, at most `width` wide.

    Cells are shown `visible` (control characters as escapes) and never read as rich
    markup (`[bold]` is text). Columns are measured in terminal cells, so wide
    characters (CJK, emoji) align.
    Columns in `right` are right-aligned. When the table is too wide, column `flex`
    (else the widest) is cut with '…' to fit. Plain text, no colours and no trailing
    spaces, so the output reads the same in a terminal, a pipe or a test.
    """
    return TableWriter(headers, right=right, flex=flex, width=width).page(rows)


class TableWriter:
    """`text_table` a page of rows at a time, for a table too long to hold at once.

    The first `page` sets the columns' widths (and carries the header); later pages keep
    them, so the pages print as one aligned table while the rows are still being read:
    a later cell wider than its column is cut with '…'.
    """

    def __init__(
        self,
        headers: Sequence[str],
        *,
        right: Collection[int] = (),
        flex: int | None = None,
        width: int = 100,
    ) -> None:
        self.headers = headers
        self.right = right
        self.flex = flex
        self.width = width
        self.widths: list[int] | None = None

    def page(self, rows: Iterable[Sequence[str]]) -> str:
        """The lines of `rows` (with the header on the first page)."""
        table = [[_one_line(visible(cell)) for cell in row] for row in rows]
        first = self.widths is None
        if self.widths is None:
            self.widths = self._measure(table)
        return _render(self.headers, table, self.widths, self.right, header=first)

    def _measure(self, table: list[list[str]]) -> list[int]:
        headers, width = self.headers, self.width
        widths = [
            max([cell_len(h), *(cell_len(row[i]) for row in table)])
            for i, h in enumerate(headers)
        ]
        total = sum(widths) + _GAP * (len(widths) - 1)
        if total > width:
            cut = (
                self.flex if self.flex is not None
                else max(range(len(widths)), key=widths.__getitem__)
            )
            widths[cut] = max(cell_len(headers[cut]), 8, widths[cut] - (total - width))
        return widths


_GAP = 3


def _render(
    headers: Sequence[str],
    table: list[list[str]],
    widths: list[int],
    right: Collection[int],
    *,
    header: bool,
) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    grid = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        show_header=header,
        pad_edge=False,
        padding=(0, 1),
        expand=False,
    )
    for i, name in enumerate(headers):
        grid.add_column(
            name,
            justify="right" if i in right else "left",
            no_wrap=True,
            overflow="ellipsis",
            width=widths[i],
        )
    for row in table:
        grid.add_row(*row)
    total_width = sum(widths) + _GAP * (len(widths) - 1)
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=total_width + 1,
        color_system=None,
        force_terminal=False,
        legacy_windows=False,
        highlight=False,
        emoji=False,
        markup=False,
    )
    console.print(grid)
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip("\n").split("\n"))


def cell_len(text: str) -> int:
    """How many terminal cells `text` takes (a CJK character or an emoji takes two)."""
    from rich.cells import cell_len as rich_cell_len

    return rich_cell_len(text)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def recall_table(record: Mapping[str, Any], width: int = 100) -> str:
    """Recall results as a table: rank, key, score, value (shortened)."""
    rows = [
        (str(rank), str(r["key"]), score_text(r["score"]), shorten(r["value"], 200))
        for rank, r in enumerate(record.get("results", []), 1)
    ]
    return text_table(("#", "key", "score", "value"), rows, right={0, 2}, flex=3, width=width)


def memories_table(memories: Iterable[Mapping[str, Any]], width: int = 100) -> str:
    """`Session.describe_memories()` as a table (one row per memory; DSN passwords `***`)."""
    headers = ("memory", "store", "backend", "retrieval", "decay", "top_k", "entries", "location")
    rows = [
        [
            str(m["name"]),
            str(m["store"]),
            str(m["backend"]),
            str(m["retrieval"]),
            str(m["decay"]),
            str(m["top_k"]),
            str(m["entries"]),
            redact_secrets(str(m.get("location") or "")),
        ]
        for m in memories
    ]
    return text_table(headers, rows, right={5, 6}, flex=7, width=width)


ENTRY_HEADERS = ("key", "age", "type", "importance", "value", "tags", "expires in")
ENTRY_COLUMNS: dict[str, Any] = {"right": {1, 3, 6}, "flex": 4}
"""How `entries_table` lays out its columns (and `axon memory show`, a page at a time)."""


def entries_table(entries: Iterable[MemoryEntry], now: float, width: int = 100) -> str:
    """Entries of one memory (newest first) with their age, tags and expiry."""
    return text_table(ENTRY_HEADERS, entry_rows(entries, now), width=width, **ENTRY_COLUMNS)


def entry_rows(entries: Iterable[MemoryEntry], now: float) -> list[tuple[str, ...]]:
    """The rows of `entries_table`: key, age, type, importance, value (shortened), tags,
    expires in (type and importance from the entry's metadata, blank when it has none)."""
    rows: list[tuple[str, ...]] = []
    for entry in entries:
        meta = entry.metadata if isinstance(entry.metadata, Mapping) else {}
        tags = meta.get("tags")
        tag_text = ", ".join(map(str, tags)) if isinstance(tags, list | tuple) else ""
        expires = "" if entry.expires_at is None else age_text(entry.expires_at - now)
        rows.append(
            (
                entry.key,
                age_text(now - entry.timestamp),
                record_type(meta),
                importance_text(meta.get("importance")),
                shorten(entry.value, 200),
                tag_text,
                expires,
            )
        )
    return rows


def record_type(metadata: Mapping[str, Any]) -> str:
    """An entry's record type (metadata `type`: `long_term`, `short_term`, ...), else ''."""
    kind = metadata.get("type")
    return "" if kind is None else shorten(kind, 40)


def importance_text(importance: Any) -> str:
    """Metadata `importance` for people: the level's name when it is one (`high`), else
    the number (`0.6`), '' when there is none."""
    if importance is None:
        return ""
    if _is_number(importance):
        for level, number in IMPORTANCE_LEVELS.items():
            if importance == number:
                return level
        return _number(importance, "g")
    return shorten(importance, 20)


MAX_AGE_DAYS = 99_999
"""The longest duration `age_text` spells out (~274 years); longer reads `>99999d`, so an
expiry of `decay: 999999999999d` (or an imported `expires_at` of 1e300) keeps its table
column narrow instead of printing a 13- or 300-digit day count."""


def age_text(seconds: float) -> str:
    """A short duration in at most two units: `12s`, `5m3s`, `1d23h` (negative reads `0s`).

    Never raises: infinity reads `∞`, NaN `?`, more than `MAX_AGE_DAYS` days `>99999d`.
    """
    try:
        if math.isnan(seconds):
            return "?"
        left = int(max(0.0, seconds))
    except (OverflowError, ValueError, TypeError):  # inf, NaN, not a number
        return "∞" if isinstance(seconds, int | float) and seconds > 0 else "?"
    if left > MAX_AGE_DAYS * 86400:
        return f">{MAX_AGE_DAYS}d"
    units = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
    for i, (unit, size) in enumerate(units):
        if left >= size or unit == "s":
            text = f"{left // size}{unit}"
            if unit != "s":
                small, small_size = units[i + 1]
                rest = (left % size) // small_size
                if rest:
                    text += f"{rest}{small}"
            return text
    raise AssertionError("unreachable")


def clock_text(timestamp: Any, *, far: str = "far future", past: str = "far past") -> str:
    """Local wall-clock time of a Unix timestamp (`2026-12-02 03:06:38`); never raises.

    A timestamp the platform cannot convert (`decay: 999999999999d` expires ~2.7 billion
    years from now; an imported `expires_at` of 1e300) reads as `far`, one before what it
    can convert as `past`, NaN or not a number as `unknown`: `float`'s repr (`8.64e+16`)
    means nothing to a person.
    """
    try:
        value = float(timestamp)
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(value))
    except (OverflowError, OSError, ValueError, TypeError):
        pass
    if _is_number(timestamp) and not math.isnan(timestamp):
        return far if timestamp > 0 else past
    return "unknown"


def _clock_text(timestamp: Any) -> str:
    text = clock_text(timestamp, far="in the far future", past="in the far past")
    return "at an unknown time" if text == "unknown" else text


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_LATEST = datetime.datetime.max.replace(tzinfo=datetime.UTC)
_EARLIEST = datetime.datetime.min.replace(tzinfo=datetime.UTC)


def iso_utc(timestamp: float | None) -> str | None:
    """A Unix timestamp as ISO 8601 in UTC; never raises.

    `datetime.fromtimestamp` fails past the platform's `time_t` (OSError "Value too
    large" for `decay: 999999999999d`) and past the year 9999 (ValueError), so the date
    is computed from the epoch and clamped: a time after 9999-12-31 reads as
    `9999-12-31T23:59:59.999999+00:00`, one before the year 1 as
    `0001-01-01T00:00:00+00:00`, and None or NaN as None. The time is truncated to
    the microsecond, so that it is never later than the stored one.
    """
    if timestamp is None or math.isnan(timestamp):
        return None
    if math.isinf(timestamp):
        return (_LATEST if timestamp > 0 else _EARLIEST).isoformat()
    # Truncated to the microsecond, exactly (never rounded up): a time shown is never
    # later than the time stored, so `since=` given a shown `updated_at` keeps that entry.
    micros = math.floor(fractions.Fraction(timestamp) * 1_000_000)
    try:
        return (_EPOCH + datetime.timedelta(microseconds=micros)).isoformat()
    except OverflowError:
        return (_LATEST if timestamp > 0 else _EARLIEST).isoformat()


def format_event(event: Mapping[str, Any]) -> str:
    """One trace event (its `to_dict()` form) on one line: type, step, data, duration.

    Tolerant of what a hand-edited file may hold: a field of the wrong type is
    shown as it is rather than raising.
    """
    raw_data = event.get("data")
    data = dict(raw_data) if isinstance(raw_data, Mapping) else {}
    duration = data.pop("duration_ms", event.get("duration_ms"))
    results = data.pop("results", None)
    parts = [f"{shorten(event.get('event_type', '?'), 40):<13}"]
    if event.get("step_name"):
        parts.append(f"[{shorten(event['step_name'], 40)}]")
    stamp = event.get("timestamp")
    parts.append(
        ", ".join(f"{shorten(k, 40)}={_event_value(k, v, stamp)}" for k, v in data.items())
    )
    if duration is not None:
        parts.append(f"({_number(duration, '.2f')} ms)")
    line = "  ".join(p for p in parts if p)
    if isinstance(results, list):
        for result in results[:5]:
            if not isinstance(result, Mapping):
                continue
            signals = result.get("signals")
            explain = ""
            if isinstance(signals, Mapping) and signals:
                explain = "  " + ", ".join(
                    f"{shorten(k, 20)}={_number(v, '.3f')}" for k, v in signals.items()
                )
            score = result.get("score", 0)
            line += f"\n    -> {shorten(result.get('key'), 60)}  score={score_text(score)}{explain}"
    return line


def _event_value(name: Any, value: Any, stamp: Any) -> str:
    """A field of an event's data for people: a time (`expires_at`, any `*_at`) as an ISO
    8601 date in UTC with how far it is from the event (`2026-12-12T09:08:15Z (in 7d)`),
    a duration (`*_seconds`) as one (`3h 20m`), anything else shortened."""
    if isinstance(name, str) and _is_number(value):
        try:
            seconds = float(value)
        except OverflowError:  # a 400-digit integer in a hand-edited file
            return shorten(value, 40)
        if math.isnan(seconds):
            return shorten(value, 40)
        if name.endswith("_at"):
            text = date_text(seconds)
            if _is_number(stamp) and math.isfinite(seconds - float(stamp)):
                gap = round(seconds - float(stamp))
                text += f" (in {duration_text(gap)})" if gap >= 0 else (
                    f" ({duration_text(-gap)} ago)"
                )
            return text
        if name.endswith("_seconds"):
            return duration_text(seconds)
    return shorten(value, 40)


def date_text(timestamp: float) -> str:
    """A Unix timestamp as an ISO 8601 date in UTC to the second (`2026-12-12T09:08:15Z`);
    never raises: past the year 9999 it reads `9999-12-31T23:59:59Z` (as `iso_utc`)."""
    try:
        moment = _EPOCH + datetime.timedelta(seconds=int(timestamp))
    except (OverflowError, ValueError):
        moment = _LATEST if timestamp > 0 else _EARLIEST
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def duration_text(seconds: float) -> str:
    """A duration in at most two units, spaced: `7d`, `3h 20m`, `45s` (`age_text`'s bounds:
    `>99999d`, `∞`)."""
    return re.sub(r"(?<=[dhms])(?=\d)", " ", age_text(seconds))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: Any, spec: str) -> str:
    """`value` formatted with `spec` when it is a number that fits a float, else as it is."""
    if _is_number(value):
        try:
            return format(float(value), spec)
        except OverflowError:
            pass
    return shorten(value, 20)
