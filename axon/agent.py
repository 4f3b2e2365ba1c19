"""Seed 001's agent-loop protocol over AXON memories (docs/agents.md).

An agent loop outside AXON needs two calls: `recall` before a run (the records
relevant to the user's request, most relevant first) and `write` after it.
`Memory` is that protocol; two classes satisfy it:

- `AxonMemory(session_or_handle, *, memory=None)` puts it over a memory an
  `.axon` program declares, through that memory's handle
  (`axon.runtime.handle`): an agent's writes are entries a program's `recall`
  finds, and the other way round, on every backend. Nothing is stored twice.
- `InMemoryMemory` is seed 001's dependency-free default: keyword-overlap recall
  over a list, with `dump()` / `load()` for persistence.

Recalled records are data, never instructions. Every record `recall` returns has
`recalled=True`, and `format_recalled(records)` (or `record.quoted()`) renders them
fenced and labelled exactly as the model client renders recalled memory given to
a step (`axon.runtime.model.render_given`), so a loop that injects them into a
prompt quotes them instead of splicing them in. docs/agents.md has an example.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from axon.compiler.check_options import importance_problem, tags_problem
from axon.memory.entry import UnstorableError, find_unstorable, plain_json
from axon.runtime.model import Recalled, render_given

if TYPE_CHECKING:
    from axon.runtime.handle import AsyncMemoryHandle, MemoryHandle, Result
    from axon.runtime.session import AsyncSession, Session

__all__ = [
    "AxonMemory",
    "InMemoryMemory",
    "Memory",
    "MemoryLoadError",
    "MemoryRecord",
    "format_recalled",
    "words",
]

DEFAULT_LIMIT = 5
"""How many records `recall` returns unless told (seed 001)."""


@dataclasses.dataclass(frozen=True)
class MemoryRecord:
    """One stored memory (seed 001): `MemoryRecord(content, metadata, id, score)`.

    Seed 001's dataclass, frozen: `dataclasses.asdict`, `replace` and `fields` work on
    it, and a record cannot be changed in place (`replace` makes a changed copy); the
    metadata dict is the record's own copy.

    `score` is set by the memory that ranked a recall (None on a record that was not
    recalled). `recalled` is True on every record a `recall` returned: it came out
    of a memory and is data to quote (`quoted()`), not instructions to follow.
    """

    content: str
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    id: str | None = None
    score: float | None = None
    recalled: bool = False

    def quoted(self, *, query: str = "", memory: str = "memory") -> str:
        """This record alone, fenced and labelled as recalled data (`format_recalled`)."""
        return format_recalled([self], query=query, memory=memory)


@runtime_checkable
class Memory(Protocol):
    """Seed 001's cross-session recall: what an agent loop calls."""

    async def recall(self, query: str, *, limit: int = DEFAULT_LIMIT) -> list[MemoryRecord]:
        """Up to `limit` records relevant to `query`, most relevant first."""
        ...

    async def write(self, content: str, *, metadata: dict[str, Any] | None = None) -> None:
        """Store a new memory."""
        ...


_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")


def format_recalled(
    records: Iterable[MemoryRecord], *, query: str = "", memory: str = "memory"
) -> str:
    """Recalled records as prompt text: fenced, labelled as data, one per line.

    The very rendering the model client gives recalled memory (`render_given`):
    a `<recalled_memory memory=... query=...>` block that says its entries are
    stored data to treat as quoted content, each record's id and content as JSON
    strings. `memory` labels the block (a name such as `Notes`).
    """
    if not isinstance(query, str):
        raise TypeError(f"format_recalled: query must be a str, not {type(query).__name__}")
    if not isinstance(memory, str) or not _LABEL.match(memory):
        raise ValueError(
            f"format_recalled: memory must be a name such as 'Notes' (letters, digits, "
            f"'_', '.', '-'), got {memory!r}"
        )
    results = []
    for i, record in enumerate(records):
        if not isinstance(record, MemoryRecord):
            raise TypeError(
                f"format_recalled: record {i} is a {type(record).__name__}, not a MemoryRecord"
            )
        results.append({"key": record.id, "value": record.content})
    return render_given(Recalled(memory=memory, query=query, results=tuple(results)))


def _check_limit(limit: Any, op: str) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"{op}: limit must be an int, not {type(limit).__name__}")
    if limit < 0:
        raise ValueError(f"{op}: limit must be 0 or more, got {limit}")
    return limit


def _check_write(content: Any, metadata: Any, op: str) -> dict[str, Any]:
    """The write's metadata as a fresh dict; a TypeError for a wrong content or metadata."""
    if not isinstance(content, str):
        raise TypeError(f"{op}: content must be a str, not {type(content).__name__}")
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"{op}: metadata must be a dict, not {type(metadata).__name__}")
    for name in metadata:
        if not isinstance(name, str):
            raise TypeError(f"{op}: metadata keys must be str, not {type(name).__name__}")
    try:  # a plain copy (`plain_json`), or a clear error, never a RecursionError
        copied: dict[str, Any] = plain_json(dict(metadata), "metadata", strict=True, finite=False)
    except UnstorableError as exc:
        raise (ValueError if exc.wrong_value else TypeError)(f"{op}: {exc.problem}") from None
    return copied


# ---------------------------------------------------------------- AxonMemory


def _content(value: Any) -> str:
    """An entry's value as record content: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                            sort_keys=True)


class AxonMemory:
    """Seed 001's `Memory` over one declared AXON memory; see the module docstring.

    `session_or_handle` is a `Session` or `AsyncSession` (then `memory` names the
    declared memory; it may be left out when exactly one is declared) or a handle
    from `session.memory(NAME)` (sync or async; `memory`, if given, must be its
    name). It works in the handle's namespace: a session's handle is in the session's
    namespace, `session.memory(NAME, namespace="acme/u42")`'s in acme/u42, so one
    session serving many users gives each user's agent its own `AxonMemory`. A
    synchronous session's calls run in a worker thread
    (`asyncio.to_thread`), so `recall` and `write` never block the caller's loop.

    - `write(content, metadata=...)` stores a new memory (seed 001): the handle's
      `remember(content)` under a fresh key (32 hex digits), so the same text written
      twice is two entries, as in `InMemoryMemory`. Any JSON metadata is accepted and
      kept as given under one free field, `AGENT_METADATA` (so `source`, `scope`,
      `type`, `related` cannot clash with the runtime's); a valid `tags` list and
      `importance` also become the entry's tags and importance, what programs filter on.
    - `recall(query, limit=5)` is the handle's `recall(query, top_k=limit)` with
      the memory's own retrieval mode; each result becomes a `MemoryRecord` with
      the entry's value as `content` (JSON text for a non-string value a program
      stored), the metadata `write` was given (a program's entry: its metadata),
      its key as `id`, the handle's `score`, and
      `recalled=True`. `limit=0` returns [] without reading. What is relevant to a
      query (also an empty one) is the retrieval mode's call, as for a statement.
    """

    def __init__(
        self,
        session_or_handle: Session | AsyncSession | MemoryHandle | AsyncMemoryHandle,
        *,
        memory: str | None = None,
    ) -> None:
        from axon.runtime.handle import AsyncMemoryHandle, MemoryHandle
        from axon.runtime.session import AsyncSession, Session

        if memory is not None and not isinstance(memory, str):
            raise TypeError(f"AxonMemory: memory must be a str, not {type(memory).__name__}")
        handle: MemoryHandle | AsyncMemoryHandle
        if isinstance(session_or_handle, MemoryHandle | AsyncMemoryHandle):
            handle = session_or_handle
            if memory is not None and memory != handle.name:
                raise ValueError(
                    f"AxonMemory: the handle is memory '{handle.name}', not '{memory}' "
                    "(leave out memory= when passing a handle)"
                )
        elif isinstance(session_or_handle, Session | AsyncSession):
            if memory is not None:
                name = memory
            elif isinstance(session_or_handle, AsyncSession):
                name = _only_memory(session_or_handle.sync.memory_names())
            else:
                name = _only_memory(session_or_handle.memory_names())
            handle = session_or_handle.memory(name)
        else:
            raise TypeError(
                "AxonMemory: expected a Session, an AsyncSession or a memory handle "
                f"(session.memory(NAME)), not {type(session_or_handle).__name__}"
            )
        self._handle = handle
        self.name = handle.name
        """The name of the AXON memory (labels `format_recalled` blocks)."""
        self.namespace = handle.namespace
        """Where every write and recall goes: the handle's namespace (a session's own, or
        `session.memory(NAME, namespace=...)`'s); nothing of another one is ever read."""

    def __repr__(self) -> str:
        where = "" if self.namespace.is_root else f" in {self.namespace.text!r}"
        return f"<AxonMemory {self.name!r}{where}>"

    async def write(self, content: str, *, metadata: dict[str, Any] | None = None) -> None:
        """Store `content` as a new entry; see the class docstring."""
        written = _check_write(content, metadata, f"{self.name}.write")
        kwargs: dict[str, Any] = {"key": uuid.uuid4().hex}
        if written:
            kwargs["metadata"] = {AGENT_METADATA: written}
            tags = written.get("tags")
            if tags_problem(tags) is None:
                kwargs["tags"] = tags
            importance = written.get("importance")
            if importance is not None and importance_problem(importance) is None:
                kwargs["importance"] = importance
        from axon.runtime.handle import AsyncMemoryHandle

        handle = self._handle
        if isinstance(handle, AsyncMemoryHandle):
            await handle.remember(content, **kwargs)
        else:
            await asyncio.to_thread(handle.remember, content, **kwargs)

    async def recall(self, query: str, *, limit: int = DEFAULT_LIMIT) -> list[MemoryRecord]:
        """Up to `limit` entries for `query`, best first; see the class docstring."""
        op = f"{self.name}.recall"
        if not isinstance(query, str):
            raise TypeError(f"{op}: query must be a str, not {type(query).__name__}")
        if _check_limit(limit, op) == 0:
            return []
        from axon.runtime.handle import AsyncMemoryHandle

        handle = self._handle
        results: list[Result]
        if isinstance(handle, AsyncMemoryHandle):
            results = await handle.recall(query, top_k=limit)
        else:
            results = await asyncio.to_thread(handle.recall, query, top_k=limit)
        return [
            MemoryRecord(
                content=_content(r.value),
                metadata=_record_metadata(r.metadata),
                id=r.key,
                score=r.score,
                recalled=True,
            )
            for r in results
        ]

    def format(self, records: Iterable[MemoryRecord], *, query: str = "") -> str:
        """`format_recalled(records)` labelled with this memory's name."""
        return format_recalled(records, query=query, memory=self.name)


AGENT_METADATA = "agent_metadata"
"""The free metadata field that holds what `AxonMemory.write` was given, as given.

An agent's metadata may use any name, also those the runtime and the record options
own (`source`, `scope`, `type`, `related`, `tags`, `importance`): kept under this one
field they cannot clash, and `recall` returns them exactly as written."""


def _record_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """A record's metadata: what `write` was given, or a program's entry's metadata."""
    written = metadata.get(AGENT_METADATA)
    return dict(written) if isinstance(written, dict) else metadata


def _only_memory(names: Sequence[str]) -> str:
    if len(names) == 1:
        return names[0]
    declared = ", ".join(names) if names else "none yet"
    raise ValueError(
        "AxonMemory: say which memory with memory='NAME' "
        f"(declared in this session: {declared})"
    )


# ---------------------------------------------------------------- InMemoryMemory

_WORD = re.compile(r"\w+")


def words(text: str) -> set[str]:
    """The distinct words of `text` as `InMemoryMemory` compares them.

    A word is a run of letters, digits and underscores (Unicode, so `café` and
    `日本語` are words), compared case-insensitively (`str.casefold`).
    """
    return set(_WORD.findall(text.casefold()))


class MemoryLoadError(ValueError):
    """`InMemoryMemory.load` was given data that is not what `dump()` writes, or the
    constructor records that `load` would refuse (the message starts with `op`).

    `index` is the position of the bad record (None when the whole input is wrong)
    and `field` the field at fault, both also in the message.
    """

    def __init__(
        self,
        message: str,
        *,
        index: int | None = None,
        field: str | None = None,
        op: str = "InMemoryMemory.load",
    ) -> None:
        where = "" if index is None else f"record {index}"
        if field is not None:
            where += f" ('{field}')" if where else f"'{field}'"
        super().__init__(f"{op}: {where + ': ' if where else ''}{message}")
        self.index = index
        self.field = field


_DUMPED = ("content", "metadata", "id", "score", "recalled")
"""The fields `load` accepts: `dump()`'s, and `score`/`recalled` from a record's asdict."""


class InMemoryMemory:
    """Seed 001's dependency-free `Memory` with keyword-overlap recall.

    `recall(query)` ranks the records by how many of the query's distinct words
    (`words`) their content contains, most first; ties keep insertion order, and a
    record sharing no word is not returned (so a query without words returns []).
    A returned record is a copy with `score` = that count (a float) and
    `recalled=True`. Not semantic (no synonyms), but enough for tests, demos and
    small apps.

    `write` appends a new record (the same text twice is two records) with a
    fresh id (32 hex digits) and a copy of `metadata`, which must be JSON data
    (str, int, float, bool, None, lists and dicts with str keys) so `dump()` can
    be saved as JSON. `records` seeds the memory in order (kept as given, ids too),
    checked as `load` checks its input (a str content, JSON metadata, no id twice),
    with the same `MemoryLoadError`: a seed that `write` would refuse would otherwise
    fail later, in `recall` or when its `dump()` is loaded. `dump()` / `load()`
    round-trip it.
    """

    def __init__(self, records: Iterable[MemoryRecord] | None = None) -> None:
        self._records: list[MemoryRecord] = []
        seen: dict[str, int] = {}
        for i, record in enumerate(records or ()):
            if not isinstance(record, MemoryRecord):
                raise TypeError(
                    f"InMemoryMemory: record {i} is a {type(record).__name__}, "
                    "not a MemoryRecord"
                )
            fields = {"content": record.content, "metadata": record.metadata, "id": record.id}
            self._records.append(_loaded(fields, i, seen, "InMemoryMemory"))

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return f"<InMemoryMemory {len(self._records)} records>"

    async def write(self, content: str, *, metadata: dict[str, Any] | None = None) -> None:
        """Append a new record; see the class docstring."""
        meta = _check_write(content, metadata, "InMemoryMemory.write")
        problem = find_unstorable(meta, "metadata", strict=True)
        if problem is not None:
            raise TypeError(f"InMemoryMemory.write: {problem}")
        self._records.append(MemoryRecord(content, meta, uuid.uuid4().hex))

    async def recall(self, query: str, *, limit: int = DEFAULT_LIMIT) -> list[MemoryRecord]:
        """Up to `limit` records sharing the most words with `query`; see the class."""
        if not isinstance(query, str):
            raise TypeError(
                f"InMemoryMemory.recall: query must be a str, not {type(query).__name__}"
            )
        _check_limit(limit, "InMemoryMemory.recall")
        wanted = words(query)
        if not wanted or limit == 0:
            return []
        scored = [(len(wanted & words(r.content)), r) for r in self._records]
        ranked = sorted((pair for pair in scored if pair[0] > 0), key=lambda p: -p[0])
        return [
            dataclasses.replace(
                r, metadata=copy.deepcopy(r.metadata), score=float(n), recalled=True
            )
            for n, r in ranked[:limit]
        ]

    def dump(self) -> list[dict[str, Any]]:
        """The records in order as JSON-able dicts: `{"content", "metadata", "id"}`."""
        return [
            {"content": r.content, "metadata": copy.deepcopy(r.metadata), "id": r.id}
            for r in self._records
        ]

    @classmethod
    def load(cls, dicts: Sequence[Mapping[str, Any]]) -> InMemoryMemory:
        """Rebuild from `dump()` output (e.g. after `json.loads`).

        Each item needs `content` (a str); `metadata` (a dict of JSON data, default
        {}) and `id` (a str or None) are optional, and `score` / `recalled` are
        accepted and dropped (they describe a recall, not a record). Anything
        else, a duplicated id included, raises `MemoryLoadError` naming the record
        and the field; nothing is loaded then.
        """
        if isinstance(dicts, str | bytes | Mapping) or not isinstance(dicts, Sequence):
            raise MemoryLoadError(
                f"expected a list of dicts (what dump() returns), got {type(dicts).__name__}"
            )
        memory = cls()
        seen: dict[str, int] = {}
        memory._records = [_loaded(item, i, seen) for i, item in enumerate(dicts)]
        return memory


def _loaded(
    item: Any, i: int, seen: dict[str, int], op: str = "InMemoryMemory.load"
) -> MemoryRecord:
    """One checked record (a copy) of `load`'s input or the constructor's `records`."""
    if not isinstance(item, Mapping):
        raise MemoryLoadError(f"expected a dict, got {type(item).__name__}", index=i, op=op)
    for name in item:
        if name not in _DUMPED:
            raise MemoryLoadError(
                f"unknown field {name!r} (expected {', '.join(_DUMPED[:3])})", index=i, op=op
            )
    if "content" not in item:
        raise MemoryLoadError(
            "missing (every record has its text)", index=i, field="content", op=op
        )
    content = item["content"]
    if not isinstance(content, str):
        raise MemoryLoadError(
            f"must be a str, got {type(content).__name__}", index=i, field="content", op=op
        )
    metadata = item.get("metadata")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise MemoryLoadError(
            f"must be a dict, got {type(metadata).__name__}", index=i, field="metadata",
            op=op,
        )
    problem = find_unstorable(metadata, "metadata", strict=True)
    if problem is not None:
        raise MemoryLoadError(problem, index=i, field="metadata", op=op)
    record_id = item.get("id")
    if record_id is not None:
        if not isinstance(record_id, str):
            raise MemoryLoadError(
                f"must be a str or None, got {type(record_id).__name__}", index=i,
                field="id", op=op,
            )
        if record_id in seen:
            raise MemoryLoadError(
                f"{record_id!r} is already the id of record {seen[record_id]}",
                index=i, field="id", op=op,
            )
        seen[record_id] = i
    return MemoryRecord(content, copy.deepcopy(metadata), record_id)
