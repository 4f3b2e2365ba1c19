"""What a remember writes, and the output record every memory operation reports.

A remember statement and the handle's `remember` stamp the same metadata
(`entry_metadata`: source, tags, importance, record type, associations, free
fields) and the same expiry (`expiry_of`: the entry's `expires_in`, else the
memory's `decay:`, else its record type's default), and every operation reports
one output record of the same shape whichever way it was called
(docs/language.md §11 Output records). Keeping them here, apart from the manager,
is what makes the statement and the Python API agree by construction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from axon.compiler.durations import parse_decay
from axon.compiler.ir import IRMemory
from axon.errors import AxonMemoryError
from axon.memory.entry import (
    DEFAULT_IMPORTANCE,
    EXPIRY_DURATION,
    RECORD_TYPES,
    MemoryEntry,
    time_bound,
    updated_window,
)

Record = dict[str, Any]
"""An output record (docs/language.md §11 Output records): what a remember, recall or delete
reports."""

NEVER = math.inf
"""`expires_in` of an entry that never expires (`with { expires_in: never }`)."""


def entry_metadata(
    source: str,
    tags: Sequence[str] | None = None,
    importance: float | None = None,
    metadata: Mapping[str, Any] | None = None,
    *,
    record_type: str | None = None,
    related: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The metadata a remember writes: where the value came from, tags, importance, free.

    `source` is the statement's origin (`main`, a flow or step name) or `python` for
    the handle. The checker (and the handle) keep the free names apart from these.
    A record (an entry with a `type`) gets `importance` normal (0.5) when it gives
    none; an entry that is not a record gets `importance` only when it asks for it.
    `related` are the keys of associated entries (`Memory.remember` checks them).
    """
    meta: dict[str, Any] = {"source": source}
    if tags is not None:
        meta["tags"] = list(tags)
    if record_type is not None:
        meta["type"] = record_type
        if importance is None:
            importance = DEFAULT_IMPORTANCE
    if importance is not None:
        meta["importance"] = importance
    if related is not None:
        meta["related"] = list(dict.fromkeys(related))
    meta.update(metadata or {})
    return meta


def expires_in_seconds(text: str | None) -> float | None:
    """An `expires_in` as written (`3d`, `never`) -> seconds, `NEVER`, or None if not given."""
    if text is None:
        return None
    seconds = parse_decay(text)
    return NEVER if seconds is None else seconds


def statement_window(options: Mapping[str, Any]) -> dict[str, Any]:
    """`with { since, until }` of a recall statement (as written, checked by the
    checker) -> the backend's window filter (`entry.updated_window`), `{}` without."""
    since, until = (
        None if options.get(name) is None else time_bound(options[name], name)
        for name in ("since", "until")
    )
    return updated_window(since, until)


def expiry_of(
    decl: IRMemory, metadata: Mapping[str, Any], now: float, expires_in: float | None
) -> float | None:
    """When a new entry expires: the entry's `expires_in`, else the memory's `decay:`, else
    its record type's default (`RECORD_TYPES`), else never.

    An entry without a type keeps the memory's decay (or none), so programs written
    before records existed do not start expiring. A memory whose decay is `none`
    (or not given) leaves a typed entry its type's default.
    """
    if expires_in is not None:
        return None if math.isinf(expires_in) else now + expires_in
    if decl.decay_seconds is not None:
        return now + decl.decay_seconds
    kind = metadata.get("type")
    if isinstance(kind, str) and kind in RECORD_TYPES:
        return now + RECORD_TYPES[kind]
    return None


def keep_duration(
    decl: IRMemory, memory: str, key: str, meta: dict[str, Any],
    expires_at: float | None, now: float,
) -> None:
    """On a memory with `refresh_on_read`, keep in `meta` the expiry duration a read
    restarts (`EXPIRY_DURATION`, `expires_in`: `expires_at - now` seconds; none for an
    entry that never expires). That field is then the runtime's: one given in the
    metadata is an `AxonMemoryError` naming the memory and the key. Other memories'
    metadata is left as given."""
    if not decl.refresh_on_read:
        return
    if EXPIRY_DURATION in meta:
        raise duration_given(memory, key)
    if expires_at is not None:
        meta[EXPIRY_DURATION] = expires_at - now


def duration_given(memory: str, key: str) -> AxonMemoryError:
    """The error of a write (remember or update) whose metadata gives `EXPIRY_DURATION`
    on a memory with `refresh_on_read`, where that field is the runtime's."""
    return AxonMemoryError(
        f"'{EXPIRY_DURATION}' is kept by the runtime in the metadata of a memory with "
        f"refresh_on_read: give expires_in as an option, not inside metadata",
        memory=memory,
        key=key,
    )


def remember_record(
    memory: str, key: str, value: Any, entry: MemoryEntry, *,
    line: int | None, column: int | None, flow: str | None,
) -> Record:
    """The output record of one remember (a statement's or the handle's)."""
    return {
        "op": "remember",
        "memory": memory,
        "key": key,
        "value": value,
        "metadata": entry.metadata,
        "expires_at": entry.expires_at,
        "line": line,
        "column": column,
        "flow": flow,
    }


def recall_results(entries: Sequence[MemoryEntry]) -> list[dict[str, Any]]:
    """Recall results as records show them: key, value, score (6 decimals), metadata, signals."""
    return [
        {
            "key": e.key,
            "value": e.value,
            "score": round(e.score, 6),
            "metadata": e.metadata,
            **({"tier": e.metadata["tier"]} if "tier" in e.metadata else {}),
            **({"signals": e.signals} if e.signals else {}),
        }
        for e in entries
    ]


def recall_record(
    memory: str, query: str, retrieval: str, top_k: int, alias: str | None,
    results: Sequence[Mapping[str, Any]], *,
    line: int | None, column: int | None, flow: str | None, pending_vectors: int = 0,
    below_floor: int = 0,
) -> Record:
    """The output record of one recall (a statement's or the handle's).

    `pending_vectors` (only when some were): entries of the memory that had no vector
    yet when the recall ran (its embedding budget ran out, see `DEFAULT_EMBED_WAIT`).
    `below_floor` (only when some were): how many of the `top_k` nearest entries were
    left out for scoring below the relevance floor (`min_score`).
    """
    extra: Record = {"pending_vectors": pending_vectors} if pending_vectors else {}
    if below_floor:
        extra["below_floor"] = below_floor
    return {
        "op": "recall",
        "memory": memory,
        "query": query,
        "retrieval": retrieval,
        "top_k": top_k,
        "alias": alias,
        "results": list(results),
        "line": line,
        "column": column,
        "flow": flow,
        **extra,
    }


def forget_record(
    memory: str, key: str | None, deleted: int, *,
    line: int | None, column: int | None, flow: str | None,
    filters: Mapping[str, Any] | None = None,
) -> Record:
    """The output record of a delete (docs/language.md §7 forget): how many entries went.

    A delete by key (a forget statement's or the handle's `delete`) has `key`; a
    filtered forget has `filter` (the merged `tags` and `where`) instead.
    """
    record: Record = {"op": "forget", "memory": memory}
    if key is not None:
        record["key"] = key
    if filters is not None:
        record["filter"] = dict(filters)
    record.update(deleted=deleted, line=line, column=column, flow=flow)
    return record
