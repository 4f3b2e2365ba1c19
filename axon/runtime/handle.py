"""`session.memory("Notes")`: one declared memory, driven from Python (docs/language.md).

A `MemoryHandle` takes and returns Python values (str, int, float, bool, None,
lists and dicts with string keys), never source text the caller must quote. It
has exactly the semantics of the statements, because it goes through the same
code (`axon.runtime.manager`):

- `remember(value)` without a key derives the key a literal gets
  (`axon.compiler.names.key_for_literal`), so `notes.remember("x")` and
  `remember("x") -> Notes` write one entry. The entry's metadata is that of a
  statement, with `source: "python"` (a statement writes `main`, or its flow or
  step name); `tags`, `importance`, `metadata` and the record fields (`type`,
  `expires_in`, `related`; recall's `type` and `min_importance`) follow the
  checker's rules (`axon.compiler.check_options`), so the same mistakes are
  refused. `associate(a, b)` links two entries both ways; `get` returns an entry
  with its associated entries, one level deep.
- The memory's `store:` lifetime holds: `session` entries belong to this session
  (private, removed by `close()`); each handle call is one "input", like one
  `execute`, so what it writes to an `ephemeral` memory is gone when it returns.
- Every call emits the statements' trace events (`memory_write`, `memory_read`,
  and `memory_delete` for `delete`; `get` and `list` are `memory_read`s with
  `op: get` / `op: list`); `remember`, `recall` and `delete` append the output
  records a statement appends to `session.records` (with `line: None`; a
  `recall(..., keep_record=False)` appends none).

Mistakes in the arguments raise `TypeError` (a wrong type) or `ValueError` (a
wrong value; `AxonMemoryError`, which names the memory and key, for data the
memory refuses). Each call takes the session's lock: see `axon.runtime.session`.

Each operation is written once, as a coroutine method of `AsyncMemoryHandle` (the
handle of an `AsyncSession`): it checks its arguments, then hands its work to the
session. `MemoryHandle` runs that same coroutine on its `Session`'s loop
(`Session.run_on_loop`) and waits for it, so the two handles share every signature,
default, error and docstring. The session reaches this module through two Protocols
(`OperationRunner`, `SessionLoop`): this module does not import it.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import functools
import math
import types
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

import attrs

from axon.compiler.check_options import (
    expires_in_problem,
    filter_problem,
    importance_problem,
    importance_value,
    key_problem,
    metadata_name_problem,
    min_importance_filter,
    related_problem,
    retrieval_problem,
    tags_problem,
    tier_problem,
    tiers_problem,
    top_k_problem,
    type_problem,
    where_value,
)
from axon.compiler.names import did_you_mean, key_for_literal
from axon.errors import AxonMemoryError
from axon.memory.backend import MAX_TOP_K
from axon.memory.entry import (
    Ago,
    MemoryEntry,
    UnstorableError,
    number_text,
    plain_json,
    time_bound,
    updated_window,
)
from axon.memory.namespaces import ROOT, Namespace
from axon.memory.retrieval.scores import min_score_problem
from axon.memory.versions import Version
from axon.runtime.manager import Memories, embed_wait_seconds
from axon.runtime.memory import UNCHANGED, Change, Write
from axon.runtime.records import (
    entry_metadata,
    expires_in_seconds,
    forget_record,
    recall_record,
    recall_results,
    remember_record,
)

T = TypeVar("T")
P = ParamSpec("P")

HANDLE_SOURCE = "python"
"""The `source` metadata of entries written through a handle."""


@attrs.frozen
class Entry:
    """One stored entry: its key, value (as it was given), metadata and times (Unix s).

    `metadata` holds `scope` (the memory's name), `source`, and `tags`,
    `importance`, `type`, `related` and free metadata when they were given.
    `associated` is filled by `get` only: the entries named by `related` (one
    level: their own `associated` is empty), in that order, without those that
    have expired.
    """

    key: str
    value: Any
    metadata: dict[str, Any]
    created_at: float
    """The entry's first write (kept when its key is remembered again while it lives)."""
    expires_at: float | None = None
    associated: tuple[Entry, ...] = ()
    updated_at: float | None = None
    """The entry's last write (None given: `created_at`); what newest first orders by."""

    def __attrs_post_init__(self) -> None:
        if self.updated_at is None:
            object.__setattr__(self, "updated_at", self.created_at)

    @property
    def timestamp(self) -> float:
        """`updated_at` by its backend name (the last write)."""
        return self.created_at if self.updated_at is None else self.updated_at

    @classmethod
    def of(cls, entry: MemoryEntry, associated: Sequence[MemoryEntry] = ()) -> Entry:
        return cls(
            key=entry.key,
            value=copy.deepcopy(entry.value),
            metadata=copy.deepcopy(entry.metadata),
            created_at=entry.created_at,
            expires_at=entry.expires_at,
            associated=tuple(Entry.of(e) for e in associated),
            updated_at=entry.updated_at,
        )

    @property
    def type(self) -> str | None:
        """The record's memory type (`long_term`, `short_term`, `reflex`, `dreams`) or None."""
        kind = self.metadata.get("type")
        return kind if isinstance(kind, str) else None

    @property
    def importance(self) -> float | None:
        """The entry's importance (0 to 1), or None when it was never given one."""
        value = self.metadata.get("importance")
        return float(value) if isinstance(value, int | float) else None

    @property
    def tier(self) -> str | None:
        """The tier holding the entry (a tiered memory's), else None."""
        tier = self.metadata.get("tier")
        return tier if isinstance(tier, str) else None


@attrs.frozen
class Result:
    """One recall result, best first; exactly what a recall statement's record holds.

    `score` is rounded to 6 decimals like the records'; `signals` explains a fused
    (hybrid) score, signal by signal, and is None for the modes that do not.
    """

    key: str
    value: Any
    score: float
    metadata: dict[str, Any]
    signals: dict[str, float] | None = None
    tier: str | None = None
    """The tier the result was found in (a tiered memory's), else None."""
    created_at: float | None = None
    """The entry's first write (None only on a Result built without one)."""
    updated_at: float | None = None
    """The entry's last write (None only on a Result built without one)."""


class Results(list[Result]):
    """What `recall` returns: its results, best first (a plain list otherwise), and
    `below_floor`, how many of the `top_k` nearest entries were left out for scoring
    below the relevance floor (`min_score`; docs/language.md). An empty or short
    list with `below_floor > 0` is a miss the floor explains: `min_score=0` returns them.
    """

    __slots__ = ("below_floor",)

    def __init__(self, results: Sequence[Result] = (), below_floor: int = 0) -> None:
        super().__init__(results)
        self.below_floor = below_floor

    def __repr__(self) -> str:
        return f"Results({list.__repr__(self)}, below_floor={self.below_floor})"


@attrs.frozen
class Page:
    """One page of `handle.page(...)`: entries newest first, and `next`, the cursor to
    pass as `after=` for the following page (None on the last page). The cursor is
    opaque text (keep it between calls, processes or requests); paging while others
    write or delete repeats nothing and skips nothing that stayed (docs/language.md §13.1)."""

    entries: tuple[Entry, ...]
    next: str | None


# ---------------------------------------------------------------- argument checks


def _check(problem: str | None, op: str, memory: str, key: str | None = None) -> None:
    if problem is not None:
        raise AxonMemoryError(f"{op}: {problem}", memory=memory, key=key)


def _tags(tags: Sequence[str] | None, op: str, memory: str) -> list[str] | None:
    if tags is None:
        return None
    as_list = list(tags) if isinstance(tags, tuple) else tags
    problem = tags_problem(as_list)
    if problem is not None:
        raise TypeError(f"{op}: {problem} (memory '{memory}')")
    return list(as_list)


def _key(key: Any, op: str, memory: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"{op}: key must be a str, not {type(key).__name__} (memory '{memory}')")
    _check(key_problem(key, ""), op, memory)
    return key


Importance = float | str
"""A number from 0 to 1 or a level: "low", "normal", "high", "critical"."""


def _importance(value: Any, op: str, memory: str, key: str | None, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        where = f"memory '{memory}'" + (f", key '{key}'" if key else "")
        raise TypeError(f"{op}: {importance_problem(value, name)} ({where})")
    _check(importance_problem(value, name), op, memory, key)
    return importance_value(value)


def _type(value: Any, op: str, memory: str, key: str | None = None) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{op}: {type_problem(value)} (memory '{memory}')")
    _check(type_problem(value), op, memory, key)
    return value


def _filters(
    tags: Sequence[str] | None,
    where: Mapping[str, Any] | None,
    op: str,
    memory: str,
    record_type: str | None = None,
    min_importance: Importance | None = None,
) -> dict[str, Any]:
    """`tags`, `type`, `min_importance` and `where` as the backend's filters, by the
    checker's rules."""
    filters: dict[str, Any] = {}
    checked = _tags(tags, op, memory)
    if checked is not None:
        filters["tags"] = checked
    if record_type is not None:
        filters["type"] = _type(record_type, op, memory)
    if min_importance is not None:
        least = _importance(min_importance, op, memory, None, "min_importance")
        filters["importance"] = min_importance_filter(least)
    if where is None:
        return filters
    if not isinstance(where, Mapping):
        raise TypeError(
            f"{op}: where must be a dict such as {{'project': 'apollo'}}, "
            f"not {type(where).__name__} (memory '{memory}')"
        )
    for name, value in where.items():
        if not isinstance(name, str):
            raise TypeError(f"{op}: where keys must be str, not {type(name).__name__}")
        field = where_value(value)  # tuples as lists, an `in` operand's too
        _check(filter_problem(name, field, filters), op, memory)
        filters[name] = field
    return filters


def _window(since: Any, until: Any, op: str, memory: str) -> dict[str, Any]:
    """`since=` / `until=`: the filters entry of the window (`entry.updated_window`),
    each bound checked (`entry.time_bound`); an empty window is an `AxonMemoryError`."""
    bounds: list[float | Ago | None] = []
    for name, value in (("since", since), ("until", until)):
        if value is None:
            bounds.append(None)
            continue
        try:
            bounds.append(time_bound(value, name))
        except TypeError as exc:
            raise TypeError(f"{op}: {exc} (memory '{memory}')") from None
        except ValueError as exc:
            raise AxonMemoryError(f"{op}: {exc}", memory=memory) from None
    low, high = bounds
    if isinstance(low, float) and isinstance(high, float) and low >= high:
        raise AxonMemoryError(
            f"{op}: since must be before until (nothing is in [{low}, {high}))", memory=memory
        )
    return updated_window(low, high)


def _limit(limit: Any, op: str, memory: str) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"{op}: limit must be an int, not {type(limit).__name__}")
    if limit < 0:
        raise AxonMemoryError(
            f"{op}: limit must be 0 or more, got {number_text(limit)}", memory=memory
        )
    if limit > MAX_TOP_K:  # it becomes a SQL LIMIT, which a bigger int overflows
        raise AxonMemoryError(
            f"{op}: limit must be at most {MAX_TOP_K:,}, got {number_text(limit)}",
            memory=memory,
        )
    return limit


@attrs.frozen
class _Remember:
    key: str
    value: Any
    metadata: dict[str, Any]
    expires_in: float | None = None
    tier: str | None = None


def _tier(value: Any, op: str, memory: str) -> str | None:
    """`tier=`: a tier name (whether the memory has it, the manager says)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{op}: tier must be a str, not {type(value).__name__}")
    _check(tier_problem(value), op, memory)
    return value


def _tiers(value: Any, op: str, memory: str) -> tuple[str, ...] | None:
    """`tiers=`: a non-empty list of tier names."""
    if value is None:
        return None
    as_list = list(value) if isinstance(value, tuple) else value
    if not isinstance(as_list, list):
        raise TypeError(f"{op}: tiers must be a list of str, not {type(value).__name__}")
    _check(tiers_problem(as_list), op, memory)
    return tuple(as_list)


def _expires_in(value: Any, op: str, memory: str, key: str) -> float:
    """`expires_in=`: seconds (> 0), a `timedelta`, or a duration text ("3d", "never")."""
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, str):
        _check(expires_in_problem(value), op, memory, key)
        seconds = expires_in_seconds(value)
        assert seconds is not None
        return seconds
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{op}: expires_in must be seconds, a timedelta or a duration such as '3d', "
            f"not {type(value).__name__} (memory '{memory}', key '{key}')"
        )
    try:
        seconds = float(value)
    except OverflowError:  # an int past what a float holds (1.8e308)
        raise AxonMemoryError(
            f"{op}: expires_in must be seconds a float can hold (at most about 1.8e308), "
            f"got {number_text(value)}; for no expiry leave it out or pass 'never'",
            memory=memory, key=key,
        ) from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise AxonMemoryError(
            f"{op}: expires_in must be more than 0 seconds, got {value!r}",
            memory=memory, key=key,
        )
    return seconds


def _related(value: Any, op: str, memory: str, key: str) -> list[str]:
    as_list = list(value) if isinstance(value, tuple) else value
    problem = related_problem(as_list)
    if problem is not None:
        raise TypeError(f"{op}: {problem} (memory '{memory}', key '{key}')")
    assert isinstance(as_list, list)
    if key in as_list:
        raise AxonMemoryError(f"{op}: an entry cannot be related to itself", memory=memory, key=key)
    return [str(k) for k in as_list]


def _value(value: Any, op: str, memory: str, key: str | None) -> Any:
    """A value to store: a plain JSON copy (`plain_json`), finite; a `TypeError` for a
    type no memory stores, an `AxonMemoryError` for a storable one that is too big."""
    try:
        value = plain_json(value, "value", strict=True, finite=False)
    except UnstorableError as exc:
        if exc.wrong_value:
            raise AxonMemoryError(f"{op}: {exc.problem}", memory=memory, key=key) from None
        where = f"memory '{memory}'" + (f", key '{key}'" if key else "")
        raise TypeError(f"{op}: {exc.problem} ({where})") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise AxonMemoryError(
            f"{op}: value is {value!r} (not a finite number)", memory=memory, key=key
        )
    return value


def _free(metadata: Any, op: str, memory: str, key: str) -> dict[str, Any]:
    """`metadata=`: free fields (not the runtime's nor the options' names), plain copies."""
    if not isinstance(metadata, Mapping):
        raise TypeError(
            f"{op}: metadata must be a dict, not {type(metadata).__name__} "
            f"(memory '{memory}', key '{key}')"
        )
    free: dict[str, Any] = {}
    for name, field in metadata.items():
        if not isinstance(name, str):
            raise TypeError(f"{op}: metadata keys must be str, not {type(name).__name__}")
        _check(metadata_name_problem(name), op, memory, key)
        try:
            free[name] = plain_json(field, f"metadata[{name!r}]", strict=True, finite=False)
        except UnstorableError as exc:
            if exc.wrong_value:
                raise AxonMemoryError(f"{op}: {exc.problem}", memory=memory, key=key) from None
            raise TypeError(f"{op}: {exc.problem} (memory '{memory}', key '{key}')") from None
    return free


def update_args(
    memory: str,
    key: Any,
    value: Any,
    metadata: Mapping[str, Any] | None,
    tags: Sequence[str] | None,
    importance: Importance | None,
    record_type: str | None,
    expires_in: float | datetime.timedelta | str | None,
) -> tuple[str, Change]:
    """`update(key, ...)`'s arguments checked as `remember` checks them: the key and the
    `Change`; nothing given at all is a `TypeError`."""
    op = f"{memory}.update"
    chosen = _key(key, op, memory)
    change = Change(
        value=UNCHANGED if value is UNCHANGED else _value(value, op, memory, chosen),
        metadata=None if metadata is None else _free(metadata, op, memory, chosen),
        tags=_tags(tags, op, memory),
        importance=(
            None if importance is None
            else _importance(importance, op, memory, chosen, "importance")
        ),
        type=None if record_type is None else _type(record_type, op, memory, chosen),
        expires_in=(
            UNCHANGED if expires_in is UNCHANGED
            else math.inf if expires_in is None
            else _expires_in(expires_in, op, memory, chosen)
        ),
    )
    if not change.fields():
        raise TypeError(
            f"{op}: give at least one of value, metadata, tags, importance, type, "
            f"expires_in (memory '{memory}', key '{chosen}')"
        )
    return chosen, change


def _remember_args(
    memory: str,
    value: Any,
    key: str | None,
    tags: Sequence[str] | None,
    importance: Importance | None,
    metadata: Mapping[str, Any] | None,
    record_type: str | None = None,
    expires_in: float | datetime.timedelta | str | None = None,
    related: Sequence[str] | None = None,
    tier: str | None = None,
) -> _Remember:
    op = f"{memory}.remember"
    chosen_tier = _tier(tier, op, memory)
    given = key if isinstance(key, str) and key else None  # the key, when the caller gave one
    value = _value(value, op, memory, given)
    chosen = key_for_literal(value) if key is None else _key(key, op, memory)
    checked_tags = _tags(tags, op, memory)
    number = None
    if importance is not None:
        number = _importance(importance, op, memory, chosen, "importance")
    kind = None if record_type is None else _type(record_type, op, memory, chosen)
    seconds = None if expires_in is None else _expires_in(expires_in, op, memory, chosen)
    links = None if related is None else _related(related, op, memory, chosen)
    free = {} if metadata is None else _free(metadata, op, memory, chosen)
    meta = entry_metadata(
        HANDLE_SOURCE, checked_tags, number, free, record_type=kind, related=links
    )
    return _Remember(chosen, value, meta, seconds, chosen_tier)  # plain_json copied it


REMEMBER_OPTIONS = ("value", "key", "tags", "importance", "metadata", "type", "expires_in", "tier")
"""What an item of `remember_many` may hold: `value` (required) and remember's options."""


def _remember_many_args(memory: str, items: Any) -> list[_Remember]:
    """`remember_many(items)`: each item checked as `remember`'s arguments; a bad one
    raises the error `remember` would (a `TypeError` or an `AxonMemoryError`), its
    message naming the item's index."""
    op = f"{memory}.remember_many"
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise TypeError(
            f"{op}: items must be a list of dicts, not {type(items).__name__} "
            f"(memory '{memory}')"
        )
    checked: list[_Remember] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TypeError(
                f"{op}: item {index} must be a dict with 'value' and remember's options, "
                f"not {type(item).__name__} (memory '{memory}')"
            )
        for name in item:
            if name == "related":
                raise TypeError(
                    f"{op}: item {index}: remember_many makes no associations: give "
                    f"related to remember, or associate after (memory '{memory}')"
                )
            if name not in REMEMBER_OPTIONS:
                shown = name if isinstance(name, str) else repr(name)
                raise TypeError(
                    f"{op}: item {index}: unknown option '{shown}'"
                    f"{did_you_mean(str(name), REMEMBER_OPTIONS)}. "
                    f"An item takes: {', '.join(REMEMBER_OPTIONS)} (memory '{memory}')"
                )
        if "value" not in item:
            raise TypeError(f"{op}: item {index} has no 'value' (memory '{memory}')")
        try:
            checked.append(
                _remember_args(
                    memory, item["value"], item.get("key"), item.get("tags"),
                    item.get("importance"), item.get("metadata"), item.get("type"),
                    item.get("expires_in"), None, item.get("tier"),
                )
            )
        except AxonMemoryError as exc:
            message = exc.message.replace(f"{memory}.remember: ", "", 1)
            raise AxonMemoryError(
                f"{op}: item {index}: {message}", memory=exc.memory, key=exc.key
            ) from None
        except TypeError as exc:
            message = str(exc).replace(f"{memory}.remember: ", "", 1)
            raise TypeError(f"{op}: item {index}: {message}") from None
    return checked


@attrs.frozen
class _Recall:
    query: str
    top_k: int | None
    retrieval: str | None
    filters: dict[str, Any]
    embed_wait: float | None = None
    """Seconds to wait for pending vectors (inf: all); None: the session's default."""
    tiers: tuple[str, ...] | None = None
    min_score: float | None = None


def _recall_args(
    memory: str,
    query: Any,
    top_k: int | None,
    retrieval: str | None,
    tags: Sequence[str] | None,
    where: Mapping[str, Any] | None,
    record_type: str | None = None,
    min_importance: Importance | None = None,
    embed_wait: float | str | None = None,
    tiers: Sequence[str] | None = None,
    min_score: float | None = None,
) -> _Recall:
    op = f"{memory}.recall"
    chosen_tiers = _tiers(tiers, op, memory)
    if not isinstance(query, str):
        raise TypeError(
            f"{op}: query must be a str, not {type(query).__name__} (memory '{memory}')"
        )
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int):
            raise TypeError(f"{op}: {top_k_problem(top_k)} (memory '{memory}')")
        _check(top_k_problem(top_k), op, memory)
    if retrieval is not None:
        if not isinstance(retrieval, str):
            raise TypeError(
                f"{op}: retrieval must be a str, not {type(retrieval).__name__}"
            )
        _check(retrieval_problem(retrieval), op, memory)
    filters = _filters(tags, where, op, memory, record_type, min_importance)
    wait = None if embed_wait is None else embed_wait_seconds(embed_wait, op, memory)
    if min_score is not None:
        if isinstance(min_score, bool) or not isinstance(min_score, int | float):
            raise TypeError(f"{op}: {min_score_problem(min_score)} (memory '{memory}')")
        _check(min_score_problem(min_score), op, memory)
        min_score = float(min_score)
    return _Recall(query, top_k, retrieval, filters, wait, chosen_tiers, min_score)


# ---------------------------------------------------------------- the operations
# Each is the coroutine an operation's work runs: on the session's loop, under its lock
# and inside one lifetime (the handle's `OperationRunner`).


async def _do_remember(
    memories: Memories, records: list[dict[str, Any]], memory: str, args: _Remember
) -> str:
    entry = await memories[memory].remember(
        args.key, args.value, args.metadata, expires_in=args.expires_in, tier=args.tier
    )
    records.append(
        remember_record(memory, args.key, args.value, entry, line=None, column=None, flow=None)
    )
    return args.key


async def _do_remember_many(
    memories: Memories, records: list[dict[str, Any]], memory: str, items: list[_Remember]
) -> list[str]:
    writes = [
        Write(args.key, args.value, args.metadata, args.expires_in, args.tier) for args in items
    ]
    entries = await memories[memory].remember_many(writes)
    for args, entry in zip(items, entries, strict=True):
        records.append(
            remember_record(memory, args.key, args.value, entry, line=None, column=None, flow=None)
        )
    return [args.key for args in items]


async def _do_recall(
    memories: Memories, records: list[dict[str, Any]], memory: str, args: _Recall
) -> Results:
    decl = memories[memory].decl
    top_k = args.top_k or decl.top_k
    mode = args.retrieval or decl.retrieval
    floor = decl.min_score if args.min_score is None else args.min_score
    wait = memories.call_embed_wait if args.embed_wait is None else args.embed_wait
    entries, effective, pending, below = await memories[memory].recall(
        args.query, top_k, mode, args.filters or None, embed_wait=wait,
        tiers=args.tiers, min_score=floor,
    )
    results = recall_results(entries)
    records.append(
        recall_record(memory, args.query, effective, top_k, None, results,
                      line=None, column=None, flow=None, pending_vectors=pending,
                      below_floor=below)
    )
    return Results([
        Result(
            key=r["key"],
            value=copy.deepcopy(r["value"]),
            score=r["score"],
            metadata=copy.deepcopy(r["metadata"]),
            signals=dict(r["signals"]) if "signals" in r else None,
            tier=r.get("tier"),
            created_at=entry.created_at,
            updated_at=entry.updated_at,
        )
        for r, entry in zip(results, entries, strict=True)
    ], below)


async def _do_update(memories: Memories, memory: str, key: str, change: Change) -> Entry:
    return Entry.of(await memories[memory].update(key, change))


async def _do_get(memories: Memories, memory: str, key: str) -> Entry | None:
    found = await memories[memory].get(key)
    if found is None:
        return None
    return Entry.of(found, await memories[memory].associated(found))


async def _do_history(memories: Memories, memory: str, key: str) -> list[Version]:
    versions = await memories[memory].history(key)
    return [
        dataclasses.replace(v, value=copy.deepcopy(v.value), metadata=copy.deepcopy(v.metadata))
        for v in versions
    ]


async def _do_associate(memories: Memories, memory: str, a: str, b: str) -> None:
    await memories[memory].associate(a, b)


async def _do_delete(
    memories: Memories, records: list[dict[str, Any]], memory: str, key: str
) -> bool:
    removed = await memories[memory].delete(key)
    records.append(forget_record(memory, key, int(removed), line=None, column=None, flow=None))
    return removed


async def _do_list(
    memories: Memories, memory: str, limit: int | None, filters: dict[str, Any]
) -> list[Entry]:
    return [Entry.of(e) for e in await memories[memory].list_matching(limit, filters or None)]


async def _do_page(
    memories: Memories,
    memory: str,
    limit: int,
    after: str | None,
    filters: dict[str, Any],
) -> Page:
    entries, cursor = await memories[memory].page_matching(limit, after, filters or None)
    return Page(tuple(Entry.of(e) for e in entries), cursor)


def _page_args(limit: Any, after: Any, op: str, memory: str) -> tuple[int, str | None]:
    checked = _limit(limit, op, memory)
    if checked is None:
        raise TypeError(f"{op}: limit must be an int, not NoneType")
    if checked < 1:
        raise AxonMemoryError(f"{op}: limit must be 1 or more, got {checked}", memory=memory)
    if after is not None and not isinstance(after, str):
        raise TypeError(f"{op}: after must be a cursor (a str from Page.next) or None")
    return checked, after


async def _do_stats(memories: Memories, memory: str) -> dict[str, dict[str, int]]:
    return memories[memory].stats()


Work = Callable[[Memories, list[dict[str, Any]]], Coroutine[Any, Any, T]]
"""One operation's work: given the memories of its namespace (the session's manager or a
`NamespaceView`) and the list its record goes to."""


class OperationRunner(Protocol):
    """How a handle's work reaches its session: called with the memory's name and the
    work, it runs the work as one input of the session (on the session's loop, under
    its lock; the memory still declared) and returns its result. `Session` and
    `AsyncSession` give their handles one (a Protocol: this module does not import
    `axon.runtime.session`, which imports it)."""

    def __call__(self, name: str, work: Work[T], /) -> Awaitable[T]: ...


class SessionLoop(Protocol):
    """What a `MemoryHandle` needs of its `Session`: `Session.run_on_loop`."""

    def run_on_loop(self, work: Coroutine[Any, Any, T]) -> T: ...


def _kept(keep_record: object) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """The session's records for a call that keeps its record, else a list nobody keeps."""
    if not isinstance(keep_record, bool):
        raise TypeError(f"keep_record must be True or False, not {type(keep_record).__name__}")
    return (lambda records: records) if keep_record else (lambda records: [])


class AsyncMemoryHandle:
    """A declared memory of an `AsyncSession`, used from async Python: the methods of
    `MemoryHandle`, as coroutines; see the module docstring.

    Arguments are checked on the caller's loop when the coroutine starts (a
    mistake raises before any work is queued); the work runs off the event loop
    as `AsyncSession` describes. These methods are the one definition of each
    handle operation: `MemoryHandle` runs them on its session's loop.
    """

    def __init__(self, run: OperationRunner, name: str, namespace: Namespace = ROOT) -> None:
        self._runner = run
        self.name = name
        self.namespace = namespace
        """Where this handle reads and writes (`session.memory(NAME, namespace=...)`)."""

    def __repr__(self) -> str:
        return f"<AsyncMemoryHandle {self.name!r}>"

    async def _run(self, work: Work[T]) -> T:
        return await self._runner(self.name, work)

    async def remember(
        self,
        value: Any,
        *,
        key: str | None = None,
        tags: Sequence[str] | None = None,
        importance: Importance | None = None,
        metadata: Mapping[str, Any] | None = None,
        type: str | None = None,
        expires_in: float | datetime.timedelta | str | None = None,
        related: Sequence[str] | None = None,
        tier: str | None = None,
    ) -> str:
        """Store `value` (replacing the entry under the same key); returns the key.

        Without `key`, the key is derived from the value as for a literal in
        `remember(...) -> M`. `tags` (list of str), `importance` (0 to 1, or "low",
        "normal", "high", "critical"), `metadata` (free fields; not `scope`,
        `source`, `tags`, `importance`, `type`, `related`), `type` (a record type:
        "long_term", "short_term", "reflex", "dreams"), `expires_in` (seconds, a
        `timedelta`, or "3d"/"never") and `related` (keys of stored entries to
        associate, both ways) are those of `with { ... }`; so is `tier` (a tiered
        memory's tier to write to; else its `persist_if` policy, then its `store:`).
        """
        args = _remember_args(
            self.name, value, key, tags, importance, metadata, type, expires_in, related, tier
        )
        return await self._run(lambda m, r: _do_remember(m, r, self.name, args))

    async def remember_many(self, items: Iterable[Mapping[str, Any]]) -> list[str]:
        """Store many entries at once, all or none; returns their keys in item order.

        Each item is a dict with `value` and any option of `remember` (`key`, `tags`,
        `importance`, `metadata`, `type`, `expires_in`, `tier`), checked as `remember`
        checks them: a bad item raises the error `remember` would, naming the item's
        index, and nothing is written. Then one batched write (one transaction on SQLite
        and PostgreSQL); on a tiered memory each item goes to its tier, one batch per
        tier (docs/language.md §13.4). A replaced entry keeps its associations; an item
        may not make new ones (`related`: use `remember` or `associate`). One
        `memory_write` event with the `count`; one output record per item.
        """
        checked = _remember_many_args(self.name, items)
        if not checked:
            return []
        return await self._run(lambda m, r: _do_remember_many(m, r, self.name, checked))

    async def update(
        self,
        key: str,
        *,
        value: Any = UNCHANGED,
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        importance: Importance | None = None,
        type: str | None = None,
        expires_in: Any = UNCHANGED,
    ) -> Entry:
        """Change the stored entry under `key`, only in what is given; returns it.

        `value` replaces the value; `metadata` the free fields (tags, importance, type
        and associations stay); `tags` the tags (`[]`: none); `importance` and `type`
        theirs; `expires_in` restarts the expiry from now (seconds, a `timedelta`, "3d",
        or "never"/None: no expiry). `created_at` and all else stay; `updated_at` is now.
        Read and written in one transaction of the store (no lost update); on a tiered
        memory, in the tier holding the key. No such entry: an `AxonMemoryError` naming
        the memory and the key. One `memory_update` event (docs/language.md §5.2).
        """
        checked, change = update_args(
            self.name, key, value, metadata, tags, importance, type, expires_in
        )
        return await self._run(lambda m, r: _do_update(m, self.name, checked, change))

    async def recall(
        self,
        query: str,
        *,
        top_k: int | None = None,
        retrieval: str | None = None,
        tags: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        type: str | None = None,
        min_importance: Importance | None = None,
        embed_wait: float | str | None = None,
        tiers: Sequence[str] | None = None,
        min_score: float | None = None,
        keep_record: bool = True,
        since: Any = None,
        until: Any = None,
    ) -> Results:
        """The best entries for `query`, best first: a recall statement's results.

        `top_k`, `retrieval` and `min_score` default to the memory's; `min_score` (0
        to 1) keeps results of at least that relevance, 0 the `top_k` nearest whatever
        they score, and the returned list's `below_floor` says how many of the `top_k`
        nearest the floor left out (docs/language.md §6.1). `tags` keeps entries with
        one of the tags, `type` the records of that type, `min_importance` (a
        number or a level) those at least that important (an entry without an
        importance counts as normal), `where` those whose metadata has the given
        values. `embed_wait` bounds how long a semantic or hybrid recall waits for
        vectors still being computed in the background (seconds, 0, or "all";
        default the session's, `manager.DEFAULT_EMBED_WAIT`). `tiers` (a tiered
        memory's) restricts the search to those tiers; each result says its `tier`.
        `keep_record=False` appends no output record to `session.records`: the
        results are returned and kept nowhere (a service that recalls for ever).
        `since` / `until` keep entries last written (`updated_at`) in `[since, until)`:
        Unix seconds, a `datetime`, an ISO 8601 text or a duration before now ("7d")
        (docs/language.md §6.4).
        """
        args = _recall_args(
            self.name, query, top_k, retrieval, tags, where, type, min_importance,
            embed_wait, tiers, min_score
        )
        args.filters.update(_window(since, until, f"{self.name}.recall", self.name))
        kept = _kept(keep_record)
        return await self._run(lambda m, r: _do_recall(m, kept(r), self.name, args))

    async def embed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Compute every vector still pending for this memory now (a warm-up); returns how many.

        Remembers never wait for the model (vectors are computed in the background);
        call this before a burst of recalls that must see every entry semantically.
        `progress(done, total)` is called after each batch. 0 for a memory whose
        recall uses no vectors (`exact`, `keyword`) or when no model is available.
        """
        if progress is not None and not callable(progress):
            raise TypeError(f"{self.name}.embed: progress must be callable")
        return await self._run(lambda m, r: m[self.name].embed(progress))

    async def get(self, key: str) -> Entry | None:
        """The unexpired entry stored under `key`, or None; with its `associated` entries."""
        checked = _key(key, f"{self.name}.get", self.name)
        return await self._run(lambda m, r: _do_get(m, self.name, checked))

    async def history(self, key: str) -> list[Version]:
        """The versions of the entry under `key`, newest first: the current one first, a
        `forget` (value None) first when it was forgotten, then the earlier ones the
        memory's `history: N` keeps (docs/language.md §5.3). Each `Version` has `op`
        (`remember`, `update`, `forget`), `value`, `metadata`, `updated_at` and
        `expires_at`. [] when nothing was recorded; a memory declared without
        `history:` is an `AxonMemoryError`."""
        checked = _key(key, f"{self.name}.history", self.name)
        return await self._run(lambda m, r: _do_history(m, self.name, checked))

    async def purge_history(self) -> int:
        """Delete every version the memory keeps (its entries stay); how many went."""
        return await self._run(lambda m, r: m[self.name].purge_history())

    async def associate(self, a: str, b: str) -> None:
        """Associate the entries under `a` and `b`, both ways (each one's `related`
        names the other; `get` returns each with the other). Both must be stored."""
        op = f"{self.name}.associate"
        first, second = _key(a, op, self.name), _key(b, op, self.name)
        await self._run(lambda m, r: _do_associate(m, self.name, first, second))

    async def delete(self, key: str) -> bool:
        """Remove the entry under `key`; True when there was one."""
        checked = _key(key, f"{self.name}.delete", self.name)
        return await self._run(lambda m, r: _do_delete(m, r, self.name, checked))

    async def list(
        self,
        *,
        limit: int | None = None,
        tags: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        type: str | None = None,
        min_importance: Importance | None = None,
        since: Any = None,
        until: Any = None,
    ) -> list[Entry]:
        """Unexpired entries, newest first (at most `limit`), filtered as recall filters
        (`since` / `until` too: last written in `[since, until)`)."""
        op = f"{self.name}.list"
        checked = _limit(limit, op, self.name)
        filters = _filters(tags, where, op, self.name, type, min_importance)
        filters.update(_window(since, until, op, self.name))
        return await self._run(lambda m, r: _do_list(m, self.name, checked, filters))

    async def page(
        self,
        *,
        limit: int = 100,
        after: str | None = None,
        tags: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        type: str | None = None,
        min_importance: Importance | None = None,
        since: Any = None,
        until: Any = None,
    ) -> Page:
        """A page of at most `limit` entries, newest first, after the cursor `after`.

        Walk a memory of any size with `page = notes.page()` then
        `notes.page(after=page.next)` until `page.next` is None: each page is one
        index range read (a keyset cursor, no OFFSET scan). Filters are recall's, and
        `since` / `until` `list`'s (last written in `[since, until)`, checked alike);
        with one, a page holds the matching entries of the next `limit` (maybe none),
        and the cursor walks on past the others. Give each page the same filters: a
        duration (`since="7d"`) counts back from each page's call.
        """
        op = f"{self.name}.page"
        checked, cursor = _page_args(limit, after, op, self.name)
        filters = _filters(tags, where, op, self.name, type, min_importance)
        filters.update(_window(since, until, op, self.name))
        return await self._run(lambda m, r: _do_page(m, self.name, checked, cursor, filters))

    async def count(self) -> int:
        """How many unexpired entries the memory holds (for this session's lifetime)."""
        return await self._run(lambda m, r: m[self.name].count())

    async def stats(self) -> dict[str, dict[str, int]]:
        """Per tier: `stores`, `recalls`, `forgets`, `promotions`, `demotions` (seed 004).

        A tiered memory has a row per tier, its persistent tier's counted across
        sessions; another memory one row, its `store`, counted in this session.
        """
        return await self._run(lambda m, r: _do_stats(m, self.name))


class _Blocking(Generic[P, T]):
    """A `MemoryHandle` method: the `AsyncMemoryHandle` operation `op`, run to its end on
    the session's loop (`Session.run_on_loop`) while the caller's thread waits.

    A descriptor, so that a type checker sees the operation's own parameters and its
    plain result; the function it binds wraps `op` (`functools.update_wrapper`), so
    `help()` and `inspect.signature` show the operation's signature and docstring.
    """

    def __init__(self, op: Callable[Concatenate[AsyncMemoryHandle, P], Coroutine[Any, Any, T]]):
        def blocking(handle: MemoryHandle, /, *args: P.args, **kwargs: P.kwargs) -> T:
            return handle._session.run_on_loop(op(handle._on_loop, *args, **kwargs))

        functools.update_wrapper(blocking, op)
        self.function: Callable[Concatenate[MemoryHandle, P], T] = blocking

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.function.__qualname__ = f"{owner.__qualname__}.{name}"

    @overload
    def __get__(
        self, handle: None, owner: type[Any]
    ) -> Callable[Concatenate[MemoryHandle, P], T]: ...

    @overload
    def __get__(self, handle: MemoryHandle, owner: type[Any]) -> Callable[P, T]: ...

    def __get__(self, handle: MemoryHandle | None, owner: type[Any]) -> Callable[..., T]:
        if handle is None:
            return self.function
        return types.MethodType(self.function, handle)


class MemoryHandle:
    """A declared memory of a `Session`, used from Python; see the module docstring.

    Each method is the `AsyncMemoryHandle` operation of the same name (its signature
    and docstring), run on the session's loop under its lock while the caller waits.
    """

    def __init__(
        self, session: SessionLoop, name: str, run: OperationRunner, namespace: Namespace = ROOT
    ) -> None:
        self._session = session
        self.name = name
        self.namespace = namespace
        """Where this handle reads and writes (`session.memory(NAME, namespace=...)`)."""
        self._on_loop = AsyncMemoryHandle(run, name, namespace)
        """The operations, as they run on the session's loop (`run` runs their work there)."""

    def __repr__(self) -> str:
        return f"<MemoryHandle {self.name!r}>"

    remember = _Blocking(AsyncMemoryHandle.remember)
    remember_many = _Blocking(AsyncMemoryHandle.remember_many)
    update = _Blocking(AsyncMemoryHandle.update)
    recall = _Blocking(AsyncMemoryHandle.recall)
    embed = _Blocking(AsyncMemoryHandle.embed)
    get = _Blocking(AsyncMemoryHandle.get)
    history = _Blocking(AsyncMemoryHandle.history)
    purge_history = _Blocking(AsyncMemoryHandle.purge_history)
    associate = _Blocking(AsyncMemoryHandle.associate)
    delete = _Blocking(AsyncMemoryHandle.delete)
    list = _Blocking(AsyncMemoryHandle.list)
    page = _Blocking(AsyncMemoryHandle.page)
    count = _Blocking(AsyncMemoryHandle.count)
    stats = _Blocking(AsyncMemoryHandle.stats)
