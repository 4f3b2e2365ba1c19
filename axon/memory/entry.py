"""What a memory holds: `MemoryEntry` (the seed's record plus expiry) and value checks.

A `MemoryEntry` is immutable. `score` is set only on entries returned by a
retrieval; `signals` explains a fused score (which retrieval signal gave what).
"""

from __future__ import annotations

import datetime
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from axon.errors import AxonMemoryError

Clock = Callable[[], float]
"""A zero-argument callable returning Unix seconds; every backend takes one."""

MAX_VALUE_BYTES = 1_000_000
"""Largest JSON encoding of a value, and of its metadata, a memory accepts (1 MB each).

Every write checks both (`validate_entry`), a link that adds to an entry's `related`
metadata too (`axon.memory.links`), so every entry an export writes can be imported."""

MAX_KEY_CHARS = 1024

MAX_CONTEXT_JSON_CHARS = 5 * MAX_VALUE_BYTES + 2
"""The longest JSON (characters, quotes included, as an export writes it) of a
`link: sequence` context (`NewEntry.context`). A context is the text (`value_text`) of
another entry's value, whose JSON is at most `MAX_VALUE_BYTES` bytes: a string's text
is that string, whose JSON is the value's; a list's or dict's text is Python's `str()`
of it, whose JSON is at most 5 characters per byte of the value's JSON (DEL is one byte
there, `'\\x7f'` in `str()` and `\\\\x7f` in JSON), plus its two quotes."""

MAX_INT_DIGITS = 4300
"""Most decimal digits of an int in a value or metadata: Python's own default limit on
converting an int to and from text (`sys.get_int_max_str_digits`), past which JSON can
neither write nor read it back. A longer int is refused by name (memory and key), never
a raw ValueError from the encoder."""

_INT_BOUND = 10**MAX_INT_DIGITS


def number_text(value: int | float) -> str:
    """`repr(value)` for a message, or `an int of about 5,000 digits` for an int of more
    than 40 digits (`str` of one past `MAX_INT_DIGITS` digits even raises ValueError)."""
    if isinstance(value, int) and not -_SHOWN_BOUND < value < _SHOWN_BOUND:
        return f"an int of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    return repr(value)


_SHOWN_BOUND = 10**40


@dataclass(frozen=True)
class MemoryEntry:
    """A single value stored in semantic memory (seed `000`), with its times.

    `timestamp` is its last write (`updated_at`, the same number): what newest-first
    order, recency and `since`/`until` read. `created_at` is its first write, kept
    when the key is stored again while the entry is live (None given: `timestamp`).
    `expires_at` is `None` or the Unix time from which recall no longer returns it.
    """

    key: str
    value: Any
    metadata: dict[str, Any] = field(default_factory=dict)
    score: float = 0.0
    timestamp: float = 0.0
    expires_at: float | None = None
    signals: dict[str, float] | None = field(default=None, compare=False)
    context: str | None = field(default=None, compare=False, repr=False)
    """On an entry being written only (what `_put` gets): `NewEntry.context`. Entries
    read back never carry it (`MemoryBackend.read_contexts` gives contexts)."""
    created_at: float = None  # type: ignore[assignment]  # None given: `timestamp`
    fresh: bool = field(default=False, compare=False, repr=False)
    """On an entry being written only: True when its write gave no `created_at`, so the
    live entry it replaces keeps its own (`_put` reads it in its transaction)."""

    def __post_init__(self) -> None:
        if self.created_at is None:
            object.__setattr__(self, "created_at", self.timestamp)

    @property
    def updated_at(self) -> float:
        """The entry's last write: `timestamp` by its other name."""
        return self.timestamp

    @property
    def scope(self) -> str | None:
        scope = self.metadata.get("scope")
        return scope if isinstance(scope, str) else None

    def is_expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def with_score(self, score: float, signals: dict[str, float] | None = None) -> MemoryEntry:
        return MemoryEntry(
            key=self.key,
            value=self.value,
            metadata=self.metadata,
            score=score,
            timestamp=self.timestamp,
            expires_at=self.expires_at,
            signals=signals,
            created_at=self.created_at,
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "key": self.key,
            "value": self.value,
            "score": self.score,
            "metadata": self.metadata,
            "timestamp": self.timestamp,
            "created_at": self.created_at,
            "updated_at": self.timestamp,
            "expires_at": self.expires_at,
        }
        if self.signals is not None:
            data["signals"] = self.signals
        return data


@dataclass(frozen=True)
class NewEntry:
    """One item of a batch store: what `store(key, value, metadata, expires_at=...)` takes.

    `timestamp` is None for "now" (the backend's clock); an import gives the entry's
    original time instead, so recency and newest-first order survive a move. It is the
    entry's `updated_at`. `created_at` is None for "the entry's first write": the live
    entry this one replaces keeps its own, a new one takes `timestamp`; an import or a
    tier move gives the original.

    `context` is None for the backend's own `link: sequence` context (the text stored
    just before the entry's first store, kept when it is stored again); an import
    gives the one the export read (`MemoryBackend.read_contexts`), which the entry then
    keeps, whether new or replacing one, so linked recall ranks as on the source. A
    backend that keeps no contexts ignores it. See `MAX_CONTEXT_JSON_CHARS`.
    """

    key: str
    value: Any
    metadata: Mapping[str, Any] | None = None
    expires_at: float | None = None
    timestamp: float | None = None
    context: str | None = None
    created_at: float | None = None


def kept_created(entry: MemoryEntry, live_created: float | None) -> dict[str, Any]:
    """The fields to replace on `entry` being written over a key whose live entry was
    first written at `live_created` (None: no live entry): a `fresh` write keeps that
    first write (`created_at`), and the entry no longer needs `fresh`."""
    if not entry.fresh:
        return {}
    return {"fresh": False, "created_at": entry.timestamp if live_created is None else live_created}


EXPIRY_DURATION = "expires_in"
"""The metadata field that keeps an entry's expiry duration (seconds) on a memory with
`refresh_on_read` (the runtime writes it): what `MemoryBackend.restart_expiry` restarts."""


def expiry_duration(metadata: Mapping[str, Any]) -> float | None:
    """The expiry duration `metadata` keeps (`EXPIRY_DURATION`): a positive finite number
    of seconds (not a boolean), else None: such an entry's expiry is never restarted.
    SQLite and PostgreSQL apply this rule in their own SQL (`restart_expiry`)."""
    seconds = metadata.get(EXPIRY_DURATION)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    return float(seconds) if 0 < seconds < math.inf else None


def scope_of(metadata: Mapping[str, Any] | None) -> str | None:
    """The scope an entry belongs to: its metadata's `scope` when that is a string."""
    if not metadata:
        return None
    scope = metadata.get("scope")
    return scope if isinstance(scope, str) else None


MAX_NESTING_DEPTH = 100
"""Most lists and dicts a value (or metadata) may nest, one inside the other.

Deeper data is refused with a clear error instead of exhausting the interpreter's
stack in a JSON encoder or decoder (a list nested 5,000 deep was a RecursionError);
it matches the language's limit of 100 brackets open at once."""


class _Unstorable(Exception):
    """Raised inside `plain_json`: `problem` is said of the path built from `parts`."""

    def __init__(self, problem: str, *, whole: bool = False, too_long: bool = False) -> None:
        super().__init__(problem)
        self.problem = problem
        self.parts: list[str] = []
        self.whole = whole  # nesting: name only the outermost part, not 100 brackets
        self.too_long = too_long  # an int past MAX_INT_DIGITS

    def text(self, path: str) -> str:
        inside = self.parts[-1:] if self.whole else reversed(self.parts)
        return f"{path}{''.join(inside)} {self.problem}"


def _plain(value: Any, strict: bool, finite: bool, depth: int) -> Any:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        if -_INT_BOUND < value < _INT_BOUND:
            return value
        raise _Unstorable(_TOO_LONG, too_long=True)
    if kind is float:
        if finite and not math.isfinite(value):
            raise _Unstorable(f"is {value!r} (not a finite number)")
        return value
    if isinstance(value, str):  # a str Enum, a str subclass: the text itself
        return str.__str__(value)
    if isinstance(value, int):  # an IntEnum, an int subclass (bool is caught above)
        return _plain(int.__int__(value), strict, finite, depth)
    if isinstance(value, float):  # numpy.float64, a float subclass
        number = float.__float__(value)
        if finite and not math.isfinite(number):
            raise _Unstorable(f"is {number!r} (not a finite number)")
        return number
    if isinstance(value, list) or (isinstance(value, tuple) and not strict):
        if depth >= MAX_NESTING_DEPTH:
            raise _Unstorable(_TOO_DEEP, whole=True)
        items = []
        for i, item in enumerate(value):
            try:
                items.append(_plain(item, strict, finite, depth + 1))
            except _Unstorable as exc:
                exc.parts.append(f"[{i}]")
                raise
        return items
    if isinstance(value, dict):
        if depth >= MAX_NESTING_DEPTH:
            raise _Unstorable(_TOO_DEEP, whole=True)
        fields: dict[str, Any] = {}
        for k, item in value.items():
            if type(k) is not str:
                if not isinstance(k, str):
                    raise _Unstorable(
                        f"has a key of type {type(k).__name__} (keys must be strings)"
                    )
                k = str.__str__(k)
            try:
                fields[k] = _plain(item, strict, finite, depth + 1)
            except _Unstorable as exc:
                exc.parts.append(f"[{k!r}]")
                raise
        return fields
    if not strict:
        raise _Unstorable(f"is of type {type(value).__name__}, which is not JSON-representable")
    hint = " (use a list)" if isinstance(value, tuple | set | frozenset) else ""
    raise _Unstorable(
        f"is of type {type(value).__name__}{hint}: a memory stores str, int, "
        "float, bool, None, and lists and dicts of them"
    )


_TOO_LONG = (
    f"is an int of more than {MAX_INT_DIGITS:,} digits, which JSON cannot store "
    "(the limit is axon.memory.entry.MAX_INT_DIGITS)"
)

_TOO_DEEP = (
    f"is nested too deeply: more than {MAX_NESTING_DEPTH} lists or dicts one inside "
    "the other (the limit is axon.memory.entry.MAX_NESTING_DEPTH)"
)


class UnstorableError(ValueError):
    """What `plain_json` raises: `problem` says which part cannot be stored, and why;
    `too_deep` is True when the data is nested past `MAX_NESTING_DEPTH`, `too_long`
    when an int has more than `MAX_INT_DIGITS` digits. Those two are problems of
    value (`wrong_value`); the others are problems of type."""

    def __init__(self, problem: str, *, too_deep: bool = False, too_long: bool = False) -> None:
        super().__init__(problem)
        self.problem = problem
        self.too_deep = too_deep
        self.too_long = too_long

    @property
    def wrong_value(self) -> bool:
        """Data of storable types that is too big (too deep, too long an int)."""
        return self.too_deep or self.too_long


def plain_json(
    value: Any, path: str = "value", *, strict: bool = False, finite: bool = True
) -> Any:
    """`value` as plain JSON data, or `UnstorableError` naming the first part that is not.

    A memory stores JSON data: str, int, float (finite), bool, None, and lists and
    dicts (string keys) of them. What comes back is built of exactly those types,
    fresh containers included, so every backend returns the same thing: a str Enum
    is its text, an IntEnum its int, numpy.float64 a float, a defaultdict or
    OrderedDict a dict, and the caller's later changes to what it passed do not reach
    the stored copy. A plain str (the common value) is returned as it is, uncopied.
    The backends also take tuples, stored as lists (the seed's API did); `strict`
    refuses them, and sets, for the Python APIs, where what `get` returns must be what
    was given. `finite=False` lets NaN and infinities pass (a caller that leaves them
    to `validate_entry`, which names the memory and key). Deeper nesting than
    `MAX_NESTING_DEPTH` is refused, and so is an int of more than `MAX_INT_DIGITS`
    digits.
    """
    if type(value) is str:
        return value
    try:
        return _plain(value, strict, finite, 0)
    except _Unstorable as exc:
        raise UnstorableError(exc.text(path), too_deep=exc.whole, too_long=exc.too_long) from None


def find_unstorable(
    value: Any, path: str = "value", *, strict: bool = False, finite: bool = True
) -> str | None:
    """Describe the first part of `value` that a memory cannot store, or None
    (`plain_json`'s rules)."""
    try:
        plain_json(value, path, strict=strict, finite=finite)
    except UnstorableError as exc:
        return exc.problem
    return None


_JSON_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
# One encoder for every call: `json.dumps` with these options builds a new encoder each
# time, which cost more than the encoding itself on small values.


def encode_json(obj: Any) -> str:
    """Compact JSON text of a value already checked by `validate_entry`."""
    return _JSON_ENCODER.encode(obj)


def _json_size(value: Any) -> int:
    """Bytes of the JSON encoding of `value`, exact whenever it could matter.

    A string's JSON is at most six bytes per UTF-8 byte (`\\u0001`) plus quotes, so
    a string far below the limit is measured without encoding it as JSON.
    Raises `UnicodeEncodeError` for text with unpaired surrogates.
    """
    if isinstance(value, str):
        raw = len(value) if value.isascii() else len(value.encode("utf-8"))
        if raw * 6 + 2 <= MAX_VALUE_BYTES:
            return raw + 2
    return len(encode_json(value).encode("utf-8"))


def is_valid_unicode(text: str) -> bool:
    """Whether `text` can be encoded as UTF-8 (no unpaired surrogates): what a stored
    key must be, so a key that is not can name no entry on any backend."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def can_name_entry(key: object) -> bool:
    """Whether `key` could be the key of a stored entry: a non-string is passed on (the
    backend says what is wrong with it), a key with a NUL or an unpaired surrogate is not
    (`validate_entry` refuses both). `get` and `delete` answer such a key with "not
    found" on every backend without asking the store, which may not even be able to
    hold the text (PostgreSQL refuses a NUL in any text parameter)."""
    if not isinstance(key, str):
        return True
    return "\x00" not in key and is_valid_unicode(key)


def valid_query(query: str) -> str:
    """`query` with unpaired surrogates (not valid Unicode, so in no stored text) replaced
    by U+FFFD: every backend can then send it to its store and they answer alike."""
    if is_valid_unicode(query):
        return query
    return query.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def validate_entry(
    key: str, value: Any, metadata: Mapping[str, Any] | None, *, memory: str | None = None
) -> tuple[Any, dict[str, Any] | None]:
    """Refuse what cannot be stored, before anything is written; return what to store.

    Raises `AxonMemoryError` (a `ValueError`) naming the memory and key: empty key
    (the seed's message), non-string key, a value or metadata JSON cannot represent
    (or nested deeper than `MAX_NESTING_DEPTH`), or a value or metadata whose encoding is
    larger than `MAX_VALUE_BYTES` (each on its own). Returns the value and metadata as
    `plain_json` makes them, the same plain types on every backend.
    """
    if not isinstance(key, str):
        raise AxonMemoryError(
            f"Memory key must be a string, not {type(key).__name__}", memory=memory
        )
    if not key:
        raise AxonMemoryError("Memory key must not be empty", memory=memory)
    if len(key) > MAX_KEY_CHARS:
        raise AxonMemoryError(
            f"Memory key is {len(key)} characters long (at most {MAX_KEY_CHARS})",
            memory=memory,
            key=key[:40] + "...",
        )
    if "\x00" in key:
        raise AxonMemoryError("Memory key must not contain NUL characters", memory=memory, key=key)
    try:
        value = plain_json(value)
    except UnstorableError as exc:
        problem = f"Cannot store value: {exc.problem}"
        raise AxonMemoryError(problem, memory=memory, key=key) from None
    plain_metadata = None
    if metadata is not None:
        try:
            plain_metadata = plain_json(dict(metadata), "metadata")
        except UnstorableError as exc:
            raise AxonMemoryError(
                f"Cannot store metadata: {exc.problem}", memory=memory, key=key
            ) from None
    part = "key"
    metadata_text = ""
    try:
        key.encode("utf-8")
        part = "value"
        size = _json_size(value)
        if plain_metadata:
            part = "metadata"
            metadata_text = encode_json(plain_metadata)
            metadata_text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.start + 1]
        raise AxonMemoryError(
            f"Cannot store {part}: its text contains an unpaired surrogate "
            f"(U+{ord(bad):04X}), which is not valid Unicode",
            memory=memory,
            key=key if part != "key" else None,
        ) from None
    if size > MAX_VALUE_BYTES:
        raise AxonMemoryError(
            f"Value is too large to store: {size:,} bytes as JSON "
            f"(the limit is {MAX_VALUE_BYTES:,})",
            memory=memory,
            key=key,
        )
    check_metadata_size(metadata_text, memory=memory, key=key)
    return value, plain_metadata


def context_problem(context: Any) -> str | None:
    """Why `context` cannot be an entry's `link: sequence` context (`NewEntry.context`),
    or None when it can: it must be valid Unicode text whose JSON is at most
    `MAX_CONTEXT_JSON_CHARS` characters (what the text of a stored value can be)."""
    if not isinstance(context, str):
        return f"an entry's context must be a string, not {type(context).__name__}"
    if not is_valid_unicode(context):
        return "an entry's context contains an unpaired surrogate, which is not valid Unicode"
    size = len(context) * 6 + 2  # at most six characters each (`\u0001`): often enough
    if size > MAX_CONTEXT_JSON_CHARS:
        size = len(encode_json(context))
    if size > MAX_CONTEXT_JSON_CHARS:
        return (
            f"an entry's context is {size:,} characters as JSON (at most "
            f"{MAX_CONTEXT_JSON_CHARS:,}, the longest text of a value)"
        )
    return None


def check_metadata_size(text: str, *, memory: str | None, key: str, why: str = "") -> None:
    """Refuse metadata whose JSON `text` is larger than `MAX_VALUE_BYTES` (UTF-8 bytes):
    an `AxonMemoryError` naming the memory, the key and the limit (`why` says what made
    it grow, for a link)."""
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > MAX_VALUE_BYTES:
        raise AxonMemoryError(
            f"Metadata is too large to store{' ' + why if why else ''}: {size:,} bytes as "
            f"JSON (the limit is {MAX_VALUE_BYTES:,})",
            memory=memory,
            key=key,
        )


def value_text(value: Any) -> str:
    """The text of a value that retrieval matches against.

    Strings as they are; everything else as `str()` (the seed's `str(entry.value)`).
    """
    return value if isinstance(value, str) else str(value)


# ---------------------------------------------------------------- records (seed 002)

DAY = 86400.0
RECORD_TYPES: dict[str, float] = {
    "long_term": 365 * DAY,
    "short_term": 30 * DAY,
    "reflex": 90 * DAY,
    "dreams": 180 * DAY,
}
"""The memory types of a record (metadata `type`) and the default expiry of each, seconds."""

IMPORTANCE_LEVELS: dict[str, float] = {
    "low": 0.25,
    "normal": 0.5,
    "high": 0.75,
    "critical": 1.0,
}
"""The importance levels and the number each stands for (metadata `importance` is the number)."""

DEFAULT_IMPORTANCE = IMPORTANCE_LEVELS["normal"]
"""The importance of a record that gives none, and what `min_importance` assumes for an
entry without `importance` metadata."""

COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "gte": lambda have, bound: have >= bound,
    "gt": lambda have, bound: have > bound,
    "lte": lambda have, bound: have <= bound,
    "lt": lambda have, bound: have < bound,
}
"""The ordering operators of an operator filter (see `matches_filters`): a number
against numbers, a string against strings (by code point)."""

OPERATORS = ("gte", "gt", "lte", "lt", "ne", "in", "exists")
"""The operators a `where` operator map may hold (`{"gte": 3}`, see `matches_filters`)."""


def json_kind(value: Any, *, array: str = "an array") -> str:
    """What a decoded JSON value is, for an error message: "null", "a boolean", "a
    number", "a string", `array` (JSON's "an array", or e.g. "a list") or "an object"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return array if isinstance(value, list) else "an object"


def is_number(value: Any) -> bool:
    """An int or float that is not a boolean."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def comparison_filter(op: str, bound: float, default: float | None = None) -> dict[str, Any]:
    """A comparison filter value: `{"gte": 0.75}`, with the value assumed when a field is absent.

    `min_importance: high` is `{"importance": comparison_filter("gte", 0.75,
    DEFAULT_IMPORTANCE)}`: entries that never said how important they are count as normal.
    """
    if op not in COMPARISONS:
        raise ValueError(f"unknown comparison '{op}' (one of {', '.join(COMPARISONS)})")
    wanted: dict[str, Any] = {op: bound}
    if default is not None:
        wanted["default"] = default
    return wanted


def _orders(have: Any, bound: Any) -> bool:
    """Whether `have` and `bound` compare: two numbers (not booleans) or two strings."""
    if isinstance(bound, str):
        return isinstance(have, str)
    return is_number(have) and is_number(bound)


def _equals(have: Any, wanted: Any) -> bool:
    """An equality filter's match: `have` (an array: one of its elements) is `wanted`."""
    if isinstance(have, list):
        return wanted in have
    return have is wanted or have == wanted


def _holds(present: bool, have: Any, op: str, operand: Any) -> bool:
    """One operator of an operator map against a metadata value (`present`: the entry
    has the field, or the map's `default` stands for it)."""
    if op == "exists":
        return operand is present
    if not present:
        return False
    if op == "in":
        return isinstance(operand, list) and any(_equals(have, item) for item in operand)
    if op == "ne":
        return not _equals(have, operand)
    test = COMPARISONS.get(op)
    return test is not None and _orders(have, operand) and bool(test(have, operand))


def _compares(have: Any, wanted: Mapping[str, Any]) -> bool:
    """An operator map against one metadata value (`_ABSENT`: no such field): every
    operator given must hold."""
    present = have is not _ABSENT
    return all(
        _holds(present, have, op, operand) for op, operand in wanted.items() if op != "default"
    )


def matches_filters(metadata: Mapping[str, Any], filters: Mapping[str, Any] | None) -> bool:
    """Whether an entry's metadata satisfies recall filters (`with { tags: [...] }`).

    Every backend applies this one function to the entries its index finds, so all
    of them agree. Three forms of filter value:

    - a list matches when the metadata value (a list or a scalar) shares at least
      one element with it (`tags: ["finance", "legal"]`);
    - a scalar matches by equality (`type: "short_term"`);
    - an operator map (`OPERATORS`) matches when every operator holds
      (`importance: {"gte": 0.75}`, `day: {"gte": "2024-03", "lt": "2024-04"}`):
      `gte`/`gt`/`lte`/`lt` a number against a number or a string against a string
      (by code point), never a number against a string, a boolean, null or an array;
      `in` a list, as the list form; `ne` a value the field is not equal to as the
      scalar form has it (an array: holds no element equal to it); `exists` true or
      false, whether the entry has the field. Every operator but `exists: false`
      needs the field. `default` (internal: `min_importance`) is the value assumed
      when the entry has no such field. An unknown operator never matches.

    An entry without the field does not match a list or scalar filter.
    """
    return True if not filters else filter_predicate(filters)(metadata)


_ABSENT = object()


UPDATED_WINDOW = "\x00updated_at"
"""The filter that keeps entries whose last write (`updated_at`, the `timestamp`) is in
`[since, until)`: `{UPDATED_WINDOW: (since, until)}`, each a Unix time or None for no
bound (`updated_window`). Not a metadata field (no metadata name holds NUL): metadata
tests (`matches_filters`, `filter_predicate`) pass it by; `window_test` decides it."""


@dataclass(frozen=True)
class Ago:
    """A window bound `seconds` before the backend's now (`since="7d"`): the backend
    resolves it when the call starts (`resolved_window`)."""

    seconds: float


_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def time_bound(value: Any, name: str) -> float | Ago:
    """A `since` / `until` as given -> Unix seconds, or `Ago` for a duration.

    Unix seconds (an int or float), a `datetime` (naive: UTC) or `date` (its midnight,
    UTC), an ISO 8601 text (`2024-03-01`, `2024-03-01T09:30:00+02:00`; without an
    offset, UTC), or a duration (`7d`, `1h30m`) meaning that long before now. Anything
    else raises `ValueError` (a `TypeError` for a type that is none of these), its
    message naming `name`."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be Unix seconds, a datetime or a text, not bool")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number of Unix seconds, got {value!r}")
        return float(value)
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
        return moment.timestamp()
    if isinstance(value, datetime.date):
        midnight = datetime.datetime(value.year, value.month, value.day, tzinfo=datetime.UTC)
        return midnight.timestamp()
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be Unix seconds, a datetime, an ISO 8601 text or a duration "
            f"such as '7d', not {type(value).__name__}"
        )
    text = value.strip()
    if _DURATION.fullmatch(text):
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(text))
        if seconds > 0:
            return Ago(seconds)
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00", 1))
    except ValueError:
        raise ValueError(
            f"{name} must be an ISO 8601 date or time ('2024-03-01', "
            f"'2024-03-01T09:30:00Z') or a duration before now ('7d', '12h'), got {value!r}"
        ) from None
    return time_bound(moment, name)


def updated_window(
    since: float | Ago | None, until: float | Ago | None
) -> dict[str, Any]:
    """The filters entry for `since` / `until` (nothing when both are None)."""
    if since is None and until is None:
        return {}
    return {UPDATED_WINDOW: (since, until)}


def shown_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
    """`filters` as a trace event shows them: the window as `updated_at: {"since",
    "until"}` (an `Ago` as `{"ago": seconds}`), JSON all through."""
    shown = {k: v for k, v in filters.items() if k != UPDATED_WINDOW}
    if UPDATED_WINDOW in filters:
        since, until = filters[UPDATED_WINDOW]
        shown["updated_at"] = {
            name: {"ago": bound.seconds} if isinstance(bound, Ago) else bound
            for name, bound in (("since", since), ("until", until))
            if bound is not None
        }
    return shown


def resolved_window(
    filters: Mapping[str, Any] | None, now: float
) -> Mapping[str, Any] | None:
    """`filters` with the window's `Ago` bounds as Unix times (`now` minus them)."""
    if not filters or UPDATED_WINDOW not in filters:
        return filters
    bounds = tuple(
        now - bound.seconds if isinstance(bound, Ago) else bound
        for bound in filters[UPDATED_WINDOW]
    )
    return {**filters, UPDATED_WINDOW: bounds}


def window_of(filters: Mapping[str, Any] | None) -> tuple[float | None, float | None]:
    """`(since, until)` of `filters` (`UPDATED_WINDOW`), `(None, None)` without one."""
    if not filters or UPDATED_WINDOW not in filters:
        return None, None
    since, until = filters[UPDATED_WINDOW]
    return since, until


def window_test(filters: Mapping[str, Any] | None) -> Callable[[float], bool]:
    """Whether an entry's `timestamp` (its `updated_at`) is in the filters' window."""
    since, until = window_of(filters)
    if since is None and until is None:
        return lambda timestamp: True
    low = -math.inf if since is None else since
    high = math.inf if until is None else until
    return lambda timestamp: low <= timestamp < high


def matching_entries(
    entries: Sequence[MemoryEntry], filters: Mapping[str, Any] | None, now: float
) -> list[MemoryEntry]:
    """The `entries` `filters` keep, in their order: the metadata filters
    (`filter_predicate`) and the time window (`window_test`, its `Ago` bounds counted
    back from `now`, `resolved_window`). What a keyset page (`list_page`) read before
    filtering is left with, so `page` keeps the entries `list_matching` keeps."""
    if not filters:
        return list(entries)
    accepts = filter_predicate(filters)
    inside = window_test(resolved_window(filters, now))
    return [entry for entry in entries if inside(entry.timestamp) and accepts(entry.metadata)]


def filter_predicate(filters: Mapping[str, Any] | None) -> Callable[[Mapping[str, Any]], bool]:
    """`matches_filters(metadata, filters)` as a function of the metadata alone (the
    time window, `UPDATED_WINDOW`, is `window_test`'s).

    Each filter's form is decided once, so a walk over many entries (an in-memory
    `list(where=...)`, an index search's veto) tests each with a few operations
    instead of re-reading the filters for every entry.
    """
    if filters and UPDATED_WINDOW in filters:
        filters = {k: v for k, v in filters.items() if k != UPDATED_WINDOW}
    if not filters:
        return lambda metadata: True
    tests = [_field_test(name, wanted) for name, wanted in filters.items()]
    if len(tests) == 1:
        return tests[0]
    return lambda metadata: all(test(metadata) for test in tests)


def _field_test(name: str, wanted: Any) -> Callable[[Mapping[str, Any]], bool]:
    """One filter of `matches_filters`: a comparison, any of a list, or a scalar."""
    if isinstance(wanted, Mapping):
        fallback = wanted.get("default", _ABSENT)

        def compares(metadata: Mapping[str, Any]) -> bool:
            return _compares(metadata.get(name, fallback), wanted)

        return compares
    if isinstance(wanted, list | tuple):
        choices = list(wanted)

        def shares(metadata: Mapping[str, Any]) -> bool:
            if name not in metadata:
                return False
            have = metadata[name]
            have_items = have if isinstance(have, list) else [have]
            return any(item in have_items for item in choices)

        return shares

    def equals(metadata: Mapping[str, Any]) -> bool:
        return name in metadata and _equals(metadata[name], wanted)

    return equals
