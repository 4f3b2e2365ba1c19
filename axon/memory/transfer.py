"""Export and import: a backend's memories in, JSON Lines out (and back), streaming.

The format (docs/cli.md, Export format), one JSON object per line:

    {"format": "axon-memory", "version": 1}
    {"memory": "Notes", "key": "k1", "value": "...", "metadata": {...},
     "created_at": 1700000000.0, "updated_at": 1700000000.0, "expires_at": null}
    ...

- `memory` is the memory's name (the entry's scope); `metadata` is the entry's
  metadata without `scope` (the memory says it); `created_at` is the entry's first
  write, `updated_at` its last (its timestamp) and `expires_at` its expiry (Unix
  seconds, or null). A line without `updated_at` (an older export, whose
  `created_at` was the entry's timestamp) takes `created_at` for both.
- `context` is the entry's `link: sequence` context (`MemoryBackend.read_contexts`:
  the text stored just before its first store), written when the backend keeps
  contexts; an import stores the entry with it (`NewEntry.context`), so an entry
  stored again after others keeps the context it had. A line without one (an older
  export, a backend keeping none) gets the backend's own: the text stored before it.
- Entries are written oldest first, ties in the order the backend lists them, so
  an import stores them in the order they were first stored: newest-first listing,
  tie order (hence recall rankings) and, with the contexts, linked recall come out
  the same. Expired entries are not exported. Owned scopes (session and ephemeral entries of
  live or dead sessions, `axon.memory.lifetimes`) are never exported: they are not
  memories.
- `namespace` (`"acme/u42"`) is the entry's namespace, absent for the root
  (`axon.memory.namespaces`); an export of a namespace (`export_memories(...,
  namespace=)`) holds it and every namespace below it, and its header says which
  (`{"format": ..., "version": 2, "namespace": "acme"}`). An export holding any entry
  outside the root is version 2 (`NAMESPACES_VERSION`), so an AXON older than
  namespaces refuses it rather than import every namespace into its root. An import
  restores each entry in its line's namespace, or with `namespace=P` puts the exported
  namespace at P (`placed`: an export of acme/u42 imported at acme/u43 lands there,
  its acme/u42/x at acme/u43/x; an export of the whole store lands under P).
- Unknown fields of an entry line are ignored, so a newer writer's extra fields do
  not stop an older reader; a header with a higher `version` does.

- With vectors (`with_vectors=True`, `axon memory export --with-vectors`) each entry
  that has a stored vector of the source's embedding model also carries
  `"vector": {"model": MODEL_ID, "dim": N, "f32": BASE64}`: the vector's N float32
  values, little-endian, base64 (about 1.4 KB per 256 dimensions, a third of the
  same numbers as JSON text). Entries not embedded yet are written without one.
  The field is optional, so the format stays version 1: a reader that does not know
  it ignores it (and embeds the entry itself).

Streaming: export reads `PAGE` entries at a time with `list_page` (a keyset cursor
over the backend's order index, oldest first: no OFFSET scan), their contexts with
`read_contexts` and their vectors with `read_vectors`, holding the page and 8 bytes
per key written (`_Written`, so that an entry stored again during the export is not
written twice); import stores `BATCH` entries per `store_many` call, so neither
holds the entries of the store.

Import is idempotent: an entry is identified by (memory, key) and carries its
original timestamp, so importing the same file twice replaces each entry by
identical data and adds nothing. A bad line stops the import with a
`TransferError` naming the line; the batch holding it is not written (batches
before it are, and importing the repaired file again is safe).

Vectors on import: a vector whose model is the target backend's embedding model
(same id and dimension) is kept with `write_vectors` right after its batch is
stored, so the entry is not embedded again; any other vector is dropped and the
entry is embedded by the target's model, lazily like any entry, the first time a
semantic recall needs it. The report counts both (`vectors_kept`,
`vectors_dropped`). Should an import stop between a batch and its vectors, those
entries just have no vector yet (they are embedded when needed): never a wrong one.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import json
import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from typing import IO, Any, Protocol

import attrs

from axon.errors import AxonError, AxonMemoryError
from axon.files import replacing
from axon.memory.backend import MemoryBackend
from axon.memory.entry import (
    MAX_CONTEXT_JSON_CHARS,
    MAX_KEY_CHARS,
    MAX_VALUE_BYTES,
    MemoryEntry,
    NewEntry,
    context_problem,
    encode_json,
    json_kind,
    scope_of,
    validate_entry,
)
from axon.memory.lifetimes import OWNED_MARKER, is_reserved
from axon.memory.namespaces import ROOT, Namespace, split_scope

FORMAT = "axon-memory"
VERSION = 1
HEADER: dict[str, Any] = {"format": FORMAT, "version": VERSION}
NAMESPACES_VERSION = 2
"""The version of an export holding an entry outside the root namespace: the same format,
numbered so that an AXON older than namespaces, which ignores `namespace` and would
import every namespace's entries into its root (one user's keys replacing another's),
refuses the file instead."""
VERSIONS = (VERSION, NAMESPACES_VERSION)
"""The versions this AXON reads."""

PAGE = 2000
"""Entries read per `list_entries` call while exporting."""

BATCH = 1000
"""Entries stored per `store_many` call (one transaction) while importing."""

MAX_VECTOR_DIM = 65536
"""The most dimensions a `vector` of an export line has."""

MAX_MODEL_CHARS = 1024
"""The longest embedding model id a `vector` names (export refuses to write a longer one)."""

NORM_TOLERANCE = 0.01
"""An imported vector's L2 norm must be within 1 +- this: embedders give unit vectors
(float32 rounding is ~1e-6 off), and a recall scores by dot product, so a longer one
would outscore every real match and a shorter one would never be found."""

_LONGEST_FLOAT = len(repr(-2.2250738585072014e-308))
"""Characters of the longest JSON number a time is written as (`repr` of a float: 24)."""

_SKELETON = encode_json(
    {
        "memory": "",
        "key": "",
        "value": 0,
        "metadata": 0,
        "created_at": 0,
        "updated_at": 0,
        "expires_at": 0,
        "context": "",
        "vector": {"model": "", "dim": 0, "f32": ""},
        "namespace": "",
    }
)

MAX_LINE_CHARS = (
    len(_SKELETON)
    + 1  # the line's end
    + MAX_VALUE_BYTES  # the memory's name, its namespace and the metadata: the stored
    # metadata's "scope" is the namespace's scope of the name (`Namespace.scope`: each
    # label followed by a control character, 6 characters in JSON, where the line has
    # one "/"), and that metadata's JSON is at most MAX_VALUE_BYTES bytes (>= characters)
    + MAX_VALUE_BYTES  # the value's JSON, as measured when it was stored
    + 6 * MAX_KEY_CHARS  # the key, every character escaped (`\u0001`)
    + 3 * _LONGEST_FLOAT  # created_at, updated_at, expires_at
    + MAX_CONTEXT_JSON_CHARS  # the context's JSON (the skeleton has its quotes too)
    + len(str(MAX_VECTOR_DIM))
    + 6 * MAX_MODEL_CHARS
    + 4 * -(-4 * MAX_VECTOR_DIM // 3)  # base64 of MAX_VECTOR_DIM float32 values
)
"""The longest line export can write (7,362,053 characters): an import reads every
line up to this, and refuses a longer one after reading only this much of it."""

Progress = Callable[[int], None]
"""Told how many entries are done so far (after every page or batch)."""


class TextSink(Protocol):
    """Where an export is written: anything with `write(str)` (a text file, stdout)."""

    def write(self, text: str, /) -> int: ...


class TransferError(AxonError):
    """An import file is not an AXON memory export: `where` is `file:line`."""

    def __init__(self, message: str, *, where: str) -> None:
        super().__init__(f"{where}: error: {message}")
        self.where = where
        self.detail = message

    def __str__(self) -> str:
        return self.message


@attrs.frozen
class TransferReport:
    """What an export or import did: entries per memory, and expired entries skipped."""

    memories: dict[str, int]
    skipped_expired: int = 0
    vectors_kept: int = 0
    """Export: vectors written. Import: vectors stored with their entries (not re-embedded)."""
    vectors_dropped: int = 0
    """Import: vectors of another model than the target's (those entries are re-embedded)."""

    @property
    def entries(self) -> int:
        return sum(self.memories.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "memories": dict(self.memories),
            "skipped_expired": self.skipped_expired,
            "vectors_kept": self.vectors_kept,
            "vectors_dropped": self.vectors_dropped,
        }


async def memory_names(backend: MemoryBackend, namespace: Namespace = ROOT) -> list[str]:
    """The memories `backend` holds in `namespace` (scopes with unexpired entries there,
    not below it), owned scopes left out; their names in the namespace, sorted."""
    names = []
    for scope in await backend.scopes(namespace.scope_prefix):
        space, name = split_scope(scope)
        if space == namespace and not is_reserved(name) and await backend.count(scope):
            names.append(name)
    return names


async def export_total(backend: MemoryBackend, memories: Sequence[str]) -> int:
    """How many entries exporting `memories` will write (for a progress bar)."""
    return sum([await backend.count(name) for name in memories])


async def _oldest_pages(backend: MemoryBackend, scope: str) -> AsyncIterator[list[MemoryEntry]]:
    """The unexpired entries of `scope`, oldest first (ties in listing order), by page.

    Keyset paging (`list_page`): each page starts where the last one ended, so a walk
    while others write skips nothing that existed throughout. The order moves, though:
    an entry stored again takes its new timestamp, after the cursor, and is met a
    second time if the walk had passed it (`_Written` drops that repeat).
    """
    cursor: str | None = None
    while True:
        page = await backend.list_page(scope, limit=PAGE, after=cursor, oldest_first=True)
        if page.entries:
            yield page.entries
        if page.cursor is None:
            return
        cursor = page.cursor


class _Written:
    """The keys of one memory an export has written, as 64-bit hashes (8 bytes a key).

    What makes the export repeat no entry: an entry stored again during the export
    moves past the cursor and is listed again (`_oldest_pages`); `fresh` says it was
    written. The hashes are kept in sorted numpy runs of halving sizes (a run is merged
    into the one before it when that is not longer), so a page is looked up with a
    binary search per run and adding a key costs O(log n) amortised. Two keys of one
    memory sharing a hash (about 1 in 2**64 per pair) would leave the second unwritten.
    """

    def __init__(self) -> None:
        self._runs: list[Any] = []  # sorted int64 arrays, longest first

    def fresh(self, keys: Sequence[str]) -> list[bool]:
        """For each of `keys`, whether it was not written before (nor earlier in `keys`);
        those are counted as written from now on."""
        import numpy as np

        hashes = np.fromiter((hash(key) for key in keys), dtype=np.int64, count=len(keys))
        new = np.zeros(len(keys), dtype=bool)
        new[np.unique(hashes, return_index=True)[1]] = True  # first of each in the page
        for run in self._runs:
            at = np.minimum(np.searchsorted(run, hashes), len(run) - 1)
            new &= run[at] != hashes
        run = np.sort(hashes[new])
        while self._runs and len(self._runs[-1]) <= len(run):
            run = np.sort(np.concatenate([self._runs.pop(), run]))
        if len(run):
            self._runs.append(run)
        return [bool(flag) for flag in new]


def vector_record(model_id: str, vector: Any) -> dict[str, Any]:
    """The `vector` field of an export line: model id, dimension, base64 float32 (LE)."""
    import numpy as np

    array = np.ascontiguousarray(vector, dtype="<f4").reshape(-1)
    return {
        "model": model_id,
        "dim": int(array.shape[0]),
        "f32": base64.b64encode(array.tobytes()).decode("ascii"),
    }


def shown_name(namespace: Namespace, memory: str) -> str:
    """A memory as a report names it: `acme/u42/Notes` in a namespace, `Notes` in the root
    (unambiguous: neither a label nor a memory name holds '/')."""
    return memory if namespace.is_root else f"{namespace.text}/{memory}"


def placed_namespace(memory: str, item: NewEntry) -> Namespace:
    """The namespace `import_entries` placed the entry of `memory` in (its scope's), as
    a `Route` sees it."""
    return split_scope(scope_of(item.metadata) or memory)[0]


def split_shown(name: str) -> tuple[Namespace, str]:
    """`shown_name`'s text -> its namespace and memory."""
    space, _, memory = name.rpartition("/")
    return Namespace.of(space or None), memory


def entry_record(memory: str, entry: MemoryEntry, namespace: Namespace = ROOT) -> dict[str, Any]:
    """The export line of one entry (as a dict); `namespace` is written unless the root."""
    metadata = {name: value for name, value in entry.metadata.items() if name != "scope"}
    return {
        **({} if namespace.is_root else {"namespace": namespace.text}),
        "memory": memory,
        "key": entry.key,
        "value": entry.value,
        "metadata": metadata,
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
        "expires_at": entry.expires_at,
    }


Source = tuple[str, MemoryBackend, str]
"""What one memory of an export is read from: its name, its backend and its scope there."""

Addressable = Callable[[str, str], str | None]
"""`(memory name, key) -> problem`: why no program could name that memory or key (None:
it can). The front doors pass the language's rules (`axon.cli_transfer`): this layer,
below the compiler, knows none of them."""

Route = Callable[[str, NewEntry], Awaitable[tuple[MemoryBackend, str]]]
"""Where an imported entry goes: (memory name, entry) -> (backend, scope); raises
`AxonMemoryError` if nowhere. The entry is given so a tiered memory can keep a key
in the one tier that holds it (`axon.repl.console`)."""


def _export_model(backend: MemoryBackend, name: str) -> str:
    """The model whose vectors an export with vectors writes: the backend's embedder's."""
    if backend.embedder is None:
        raise AxonMemoryError(
            "exporting vectors needs the embedding model that made them, and none is "
            "configured (install the 'semantic' extra, or export without vectors)",
            memory=name,
        )
    model_id = backend.embedder.model_id
    if len(model_id) > MAX_MODEL_CHARS:
        raise AxonMemoryError(
            f"the embedding model's id is {len(model_id):,} characters long; an export "
            f"names a model of at most {MAX_MODEL_CHARS:,}",
            memory=name,
        )
    return model_id


async def export_entries(
    out: TextSink,
    sources: Sequence[Source],
    *,
    progress: Progress | None = None,
    with_vectors: bool = False,
    base: Namespace = ROOT,
) -> TransferReport:
    """Write the header, then every unexpired entry of each source, oldest first, to `out`.

    The general form (memories on several backends, or stored under owned scopes, as
    in the REPL); `export_memories` exports the memories of one backend. Each key of
    a memory is written once: an entry stored again while the export runs comes with
    its earlier data if the export had read it, else with its new data (`_Written`).
    `with_vectors` adds each entry's stored vector (see the module docstring). Each
    line names the namespace of its source's scope (none in the root); `base`, the
    namespace exported (sources are in it or below it), goes in the header unless it
    is the root (`import --namespace P` puts it at P).
    """
    models = (
        {name: _export_model(backend, name) for name, backend, _ in sources}
        if (with_vectors)
        else {}
    )
    header = dict(HEADER) if base.is_root else {**HEADER, "namespace": base.text}
    if not base.is_root or any(not split_scope(scope)[0].is_root for _, _, scope in sources):
        header["version"] = NAMESPACES_VERSION
    out.write(encode_json(header) + "\n")
    counts: dict[str, int] = {}
    written: dict[str, _Written] = {}
    done = vectors = 0
    for name, backend, scope in sources:
        space = split_scope(scope)[0]
        shown = shown_name(space, name)
        counts[shown] = counts.get(shown, 0)
        seen = written.setdefault(shown, _Written())
        async for listed in _oldest_pages(backend, scope):
            fresh = seen.fresh([entry.key for entry in listed])
            page = [entry for entry, new in zip(listed, fresh, strict=True) if new]
            if not page:
                continue
            records = [entry_record(name, entry, space) for entry in page]
            contexts = await backend.read_contexts(scope, [e.key for e in page])
            for record in records:
                context = contexts.get(record["key"])
                if context is not None:
                    record["context"] = context
            if with_vectors:
                model_id = models[name]
                found = await backend.read_vectors(scope, [e.key for e in page], model_id)
                for record in records:
                    vector = found.get(record["key"])
                    if vector is not None:
                        record["vector"] = vector_record(model_id, vector)
                        vectors += 1
            out.write("\n".join(encode_json(record) for record in records) + "\n")
            counts[shown] += len(records)
            done += len(records)
            if progress is not None:
                progress(done)
    return TransferReport(counts, vectors_kept=vectors)


async def export_memories(
    backend: MemoryBackend,
    out: TextSink,
    memories: Sequence[str] | None = None,
    *,
    progress: Progress | None = None,
    with_vectors: bool = False,
    namespace: Namespace = ROOT,
) -> TransferReport:
    """Write the header and every unexpired entry of `memories` (default: all) in
    `namespace` and every namespace below it to `out` (the root: the whole store),
    namespace by namespace, each line naming its namespace.

    Lets `OSError` from `out` through. `with_vectors`: see `export_entries`.
    """
    for name in memories or ():
        if is_reserved(name):
            raise AxonMemoryError("owned session scopes are not memories", memory=name)
    return await export_entries(
        out,
        [(name, backend, scope) for _, name, scope in await _sources(backend, namespace, memories)],
        progress=progress,
        with_vectors=with_vectors,
        base=namespace,
    )


async def _sources(
    backend: MemoryBackend, namespace: Namespace, memories: Sequence[str] | None = None
) -> list[tuple[Namespace, str, str]]:
    """`(namespace, memory, scope)` of the memories with entries in `namespace` and below
    (only those named `memories`, when given: each in `namespace` itself even when it
    holds nothing), sorted by namespace, then name."""
    wanted = None if memories is None else set(memories)
    found = {(namespace, name, namespace.scope(name)) for name in wanted or ()}
    for scope in await backend.scopes(namespace.scope_prefix):
        space, name = split_scope(scope)
        if is_reserved(name) or (wanted is not None and name not in wanted):
            continue
        if await backend.count(scope):
            found.add((space, name, scope))
    return sorted(found)


async def export_plan(
    backend: MemoryBackend, namespace: Namespace, memories: Sequence[str] | None = None
) -> dict[str, int]:
    """What `export_memories` will write: entries per memory (`shown_name`), in its order."""
    return {
        shown_name(space, name): await backend.count(scope)
        for space, name, scope in await _sources(backend, namespace, memories)
    }


EMPTY = '""'
"""The empty string as a message shows it."""


def _kind_of(value: Any) -> str:
    return json_kind(value, array="a list")


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


EARLIEST_TIME = -62_135_596_800.0
"""0001-01-01T00:00:00Z: the earliest `created_at` an import takes (Python's dates)."""

LATEST_TIME = 253_402_300_799.0
"""9999-12-31T23:59:59Z: the latest `created_at` an import takes. An entry's timestamp
is when it was stored; one past what a date can show (1e300) is not an export's.
`expires_at` has no such bound (`decay: 999999999999d` expires past it)."""


def _time_problem(field: str, value: Any, alternative: str = "") -> str:
    """`"created_at" must be ...`, saying which rule `value` broke: NaN and infinity are
    numbers to `json`, so "must be a number, not a number" said nothing."""
    if _finite(value):
        return (
            f'"{field}" must be a Unix time from {EARLIEST_TIME:,.0f} to {LATEST_TIME:,.0f} '
            f"(the years 1 to 9999), not {value!r}"
        )
    if isinstance(value, float):  # NaN, Infinity, -Infinity
        return f'"{field}" must be a finite number{alternative}, not {json.dumps(value)}'
    return f'"{field}" must be a number{alternative}, not {_kind_of(value)}'


def _parse_json(text: str, where: str) -> Any:
    if len(text) > MAX_LINE_CHARS:
        raise TransferError(
            f"line is {len(text):,} characters long (an export writes at most "
            f"{MAX_LINE_CHARS:,})",
            where=where,
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # Some of json's messages end in "at" ("Unterminated string starting at").
        reason = exc.msg.removesuffix(" at")
        raise TransferError(f"not JSON ({reason} at column {exc.colno})", where=where) from None
    except (ValueError, RecursionError) as exc:  # a 5,000-digit number, 100,000 '['
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise TransferError(f"not JSON ({reason})", where=where) from None


def check_header(data: Any, where: str) -> Namespace:
    """The namespace an export was made of (its header's `namespace`, else the root);
    `TransferError` unless `data` is the first line of an export this reads."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise TransferError(
            f"not an AXON memory export (the first line must be {encode_json(HEADER)})",
            where=where,
        )
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int):  # `true` == 1 in Python
        shown = json.dumps(version) if isinstance(version, float) else _kind_of(version)
        raise TransferError(
            f'the export format "version" must be a whole number, not {shown} '
            f"(this AXON reads versions {VERSION} and {NAMESPACES_VERSION})",
            where=where,
        )
    if version not in VERSIONS:  # 0, a negative one, or a newer one
        raise TransferError(
            f"export format version {version} is not one this AXON reads (it reads "
            f"{VERSION} and {NAMESPACES_VERSION})",
            where=where,
        )
    return line_namespace(data, where)


def line_namespace(data: dict[str, Any], where: str) -> Namespace:
    """The `namespace` of a line (absent, null or "": the root), checked as a namespace
    is everywhere (`Namespace.of`): a bad one is a `TransferError` at `where`."""
    text = data.get("namespace")
    if text is not None and not isinstance(text, str):
        raise TransferError(
            f'"namespace" must be a string like "acme/u42", not {_kind_of(text)}', where=where
        )
    try:
        return Namespace.of(text or None)
    except AxonError as exc:
        raise TransferError(str(exc), where=where) from None


def placed(space: Namespace, base: Namespace, under: Namespace | None, where: str) -> Namespace:
    """Where an entry of namespace `space` of an export of `base` goes: `space` itself, or
    with `under` given, `space`'s path below `base` put under `under` (an export of
    acme/u42 imported under acme/u43 lands in acme/u43). `TransferError` at `where` for a
    line outside `base`, or a namespace that would have too many labels."""
    if under is None:
        return space
    if not base.contains(space):
        raise TransferError(
            f"namespace '{space.text or '(root)'}' is not in the exported namespace "
            f"'{base.text}' (the header's), so it has no place under '{under.text}'",
            where=where,
        )
    try:
        return Namespace.of(under.labels + space.labels[len(base.labels) :])
    except AxonError as exc:
        raise TransferError(f"namespace '{space.text}' put under '{under.text}': {exc}",
                            where=where) from None


def parse_record(data: Any, where: str, namespace: Namespace = ROOT) -> NewEntry:
    """One entry line -> the `NewEntry` that stores it (with its original timestamp) in
    `namespace` (its metadata's scope is the namespace's scope of the memory: checked
    with it, so a scope that makes the metadata too large is this line's error)."""
    if not isinstance(data, dict):
        raise TransferError(f"an entry must be a JSON object, not {_kind_of(data)}", where=where)
    for name in ("memory", "key", "value", "created_at"):
        if name not in data:
            raise TransferError(f'the entry has no "{name}"', where=where)
    memory, key = data["memory"], data["key"]
    if not isinstance(memory, str) or not memory:
        raise TransferError(
            f'"memory" must be a non-empty string, not {_kind_of(memory) if memory else EMPTY}',
            where=where,
        )
    if is_reserved(memory):
        raise TransferError(
            f"memory '{memory}': names starting with '{OWNED_MARKER}' are reserved", where=where
        )
    if not isinstance(key, str):
        raise TransferError(f'"key" must be a string, not {_kind_of(key)}', where=where)
    metadata = data.get("metadata", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise TransferError(f'"metadata" must be an object, not {_kind_of(metadata)}', where=where)
    created = data["created_at"]
    if not _finite(created) or not EARLIEST_TIME <= created <= LATEST_TIME:
        raise TransferError(
            f"memory '{memory}', key {key!r}: {_time_problem('created_at', created)}",
            where=where,
        )
    updated: Any = data.get("updated_at", created)  # absent: an older export, one time
    if not _finite(updated) or not EARLIEST_TIME <= updated <= LATEST_TIME:
        raise TransferError(
            f"memory '{memory}', key {key!r}: {_time_problem('updated_at', updated)}",
            where=where,
        )
    expires = data.get("expires_at")
    if expires is not None and not _finite(expires):
        raise TransferError(
            f"memory '{memory}', key {key!r}: {_time_problem('expires_at', expires, ' or null')}",
            where=where,
        )
    meta = {**metadata, "scope": namespace.scope(memory)}
    try:
        validate_entry(key, data["value"], meta, memory=memory)
    except AxonMemoryError as exc:
        raise TransferError(str(exc), where=where) from None
    context = data.get("context")  # absent or null: the backend's own (an older export)
    if context is not None:
        if not isinstance(context, str):
            raise TransferError(
                f'"context" must be a string or null, not {_kind_of(context)}', where=where
            )
        problem = context_problem(context)
        if problem is not None:
            raise TransferError(f"memory '{memory}', key {key!r}: {problem}", where=where)
    return NewEntry(
        key, data["value"], meta, expires, float(updated), context, created_at=float(created)
    )


ImportedVector = tuple[str, int, bytes]
"""A vector read from an export line: model id, dimension, little-endian float32 bytes."""


def parse_vector(data: dict[str, Any], where: str) -> ImportedVector | None:
    """The `vector` field of an entry line (None when it has none), checked: its model,
    dimension and bytes, and that they are an embedding (`_vector_problem`)."""
    field = data.get("vector")
    if field is None:
        return None
    if not isinstance(field, dict):
        raise TransferError(f'"vector" must be an object, not {_kind_of(field)}', where=where)
    model, dim, text = field.get("model"), field.get("dim"), field.get("f32")
    if not isinstance(model, str) or not model or len(model) > MAX_MODEL_CHARS:
        raise TransferError(
            f'"vector" needs a "model" (a non-empty string of at most {MAX_MODEL_CHARS:,} '
            "characters)",
            where=where,
        )
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= MAX_VECTOR_DIM:
        raise TransferError(
            f'"vector" needs a "dim" (a whole number, 1 to {MAX_VECTOR_DIM})', where=where
        )
    if not isinstance(text, str):
        raise TransferError('"vector" needs "f32" (base64 float32 values)', where=where)
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise TransferError('"vector" "f32" is not base64', where=where) from None
    if len(raw) != 4 * dim:
        raise TransferError(
            f'"vector" "f32" holds {len(raw)} bytes, not {4 * dim} ({dim} float32 values)',
            where=where,
        )
    problem = _vector_problem(raw)
    if problem is not None:
        raise TransferError(f'"vector" {problem}', where=where)
    return model, dim, raw


def _vector_problem(raw: bytes) -> str | None:
    """What makes little-endian float32 `raw` no embedding (None if it is one): a value
    that is not finite, or a length not 1 within `NORM_TOLERANCE`. Computed in float64,
    where no finite float32 overflows, so numpy warns of nothing."""
    import numpy as np

    values = np.frombuffer(raw, dtype="<f4")
    if not np.isfinite(values).all():
        return "holds a value that is not a finite number (NaN or infinity)"
    norm = float(np.sqrt(np.dot(values.astype(np.float64), values.astype(np.float64))))
    if norm == 0.0:
        return "is all zeros (no direction: an embedding has length 1)"
    if abs(norm - 1.0) > NORM_TOLERANCE:
        return (
            f"has length {norm:.6g}, not 1 (an embedding is normalised: 1 +- {NORM_TOLERANCE})"
        )
    return None


async def import_entries(
    lines: Iterable[str],
    route: Route,
    *,
    source: str = "<input>",
    progress: Progress | None = None,
    namespace: Namespace | None = None,
) -> TransferReport:
    """Store every entry of an export (`lines`, e.g. an open file) where `route` says.

    `route` gets each entry with the scope of its line's namespace in its metadata
    (`placed`: with `namespace` given, the exported namespace is put at it); the
    report counts entries per `shown_name`. Entries already expired by the target
    backend's clock are skipped (counted in the report). Raises `TransferError`
    (`source:line: error: ...`) for a bad line or a memory `route` refuses, before
    the batch holding it is written; storage failures are `AxonMemoryError`.
    """
    counts: dict[str, int] = {}
    skipped = kept = dropped = 0
    done = 0
    batch: list[tuple[MemoryBackend, str, NewEntry, ImportedVector | None]] = []
    seen_header = False
    base = ROOT
    number = 0
    # (backend, scope, key) -> the line first storing it, its memory in the file, and
    # whether an entry was stored there (not skipped as expired) by some line so far
    first: dict[tuple[int, str, str], tuple[int, str, bool]] = {}
    repeats: dict[str, int] = {}  # entries a later line of the same memory replaced

    async def flush() -> None:
        nonlocal batch, done, kept, dropped
        by_backend: dict[int, tuple[MemoryBackend, list[NewEntry]]] = {}
        for backend, _, item, _ in batch:
            by_backend.setdefault(id(backend), (backend, []))[1].append(item)
        for backend, items in by_backend.values():
            await backend.store_many(items)
        vectors: dict[tuple[int, str | None], tuple[MemoryBackend, list[tuple[str, Any]]]] = {}
        for backend, _, item, vector in batch:
            if vector is None:
                continue
            embedder = backend.embedder
            model, dim, raw = vector
            if embedder is None or model != embedder.model_id or dim != embedder.dim:
                dropped += 1
                continue
            import numpy as np

            scope = scope_of(item.metadata)
            vectors.setdefault((id(backend), scope), (backend, []))[1].append(
                (item.key, np.frombuffer(raw, dtype="<f4").astype(np.float32))
            )
        for (_, scope), (backend, keyed) in vectors.items():
            assert backend.embedder is not None
            kept += await backend.write_vectors(scope, backend.embedder.model_id, keyed)
        for _, name, _, _ in batch:
            counts[name] = counts.get(name, 0) + 1
        done += len(batch)
        batch = []
        if progress is not None:
            progress(done)

    def refused(exc: TransferError) -> TransferError:
        """`exc`, saying what the batches stored before it hold (they stay stored)."""
        if not done:
            return exc
        return TransferError(
            f"{exc.detail} ({done:,} entries before this line were "
            "imported; importing the file again once it is fixed adds none of them twice)",
            where=exc.where,
        )

    for number, line in enumerate(lines, start=1):
        where = f"{source}:{number}"
        text = line.removeprefix("\ufeff") if number == 1 else line
        if not text.strip():
            continue
        try:
            data = _parse_json(text, where)
            if not seen_header:
                base = check_header(data, where)
                seen_header = True
                continue
            space = (
                placed(line_namespace(data, where), base, namespace, where)
                if isinstance(data, dict) else ROOT  # parse_record refuses the rest
            )
            item = parse_record(data, where, space)
            vector = parse_vector(data, where)
        except TransferError as exc:
            raise refused(exc) from None
        memory = str(data["memory"])
        name = shown_name(space, memory)
        try:
            backend, scope = await route(memory, item)
        except AxonMemoryError as exc:
            raise refused(TransferError(str(exc), where=where)) from None
        slot = (id(backend), scope, item.key)
        expired = item.expires_at is not None and item.expires_at <= backend.clock()
        earlier = first.get(slot)
        if earlier is not None and earlier[1] != name:  # --into: two memories, one key
            raise refused(
                TransferError(
                    f"key {item.key!r} of memory '{name}' goes into memory "
                    f"'{shown_name(*split_scope(scope))}' where line {earlier[0]} "
                    f"(memory '{earlier[1]}') already puts it: each entry must be stored once",
                    where=where,
                )
            )
        if earlier is not None and earlier[2] and not expired:
            repeats[name] = repeats.get(name, 0) + 1  # replaced, as a remember replaces
        first[slot] = (
            earlier[0] if earlier else number,
            name,
            not expired or (earlier is not None and earlier[2]),
        )
        if expired:
            skipped += 1
            continue
        if scope != scope_of(item.metadata):
            item = dataclasses.replace(item, metadata={**(item.metadata or {}), "scope": scope})
        batch.append((backend, name, item, vector))
        if len(batch) >= BATCH:
            await flush()
    if not seen_header:
        raise TransferError("the file is empty (no header line)", where=f"{source}:{number or 1}")
    if batch:
        await flush()
    for name, replaced in repeats.items():
        counts[name] -= replaced
    return TransferReport(counts, skipped, kept, dropped)


async def import_memories(
    backend: MemoryBackend,
    lines: Iterable[str],
    *,
    source: str = "<input>",
    into: str | None = None,
    progress: Progress | None = None,
    addressable: Addressable | None = None,
    namespace: Namespace | None = None,
) -> TransferReport:
    """Store every entry of an export in `backend`, each in the memory and namespace its
    line names (absent: the root).

    `into` puts every entry into that memory instead (in its line's namespace);
    `namespace` puts the exported namespace (the header's, else the root) at that
    namespace, every line's below it where it was below the exported one (`placed`).
    With `addressable`, an entry whose memory (`into`, else its own) or key it refuses
    is a bad line (`TransferError` naming it, its memory and key). See `import_entries`.
    """
    if into is not None and (not into or is_reserved(into)):
        raise AxonMemoryError("not a memory name that can be imported into", memory=into)

    async def route(name: str, item: NewEntry) -> tuple[MemoryBackend, str]:
        target = into if into is not None else name
        problem = None if addressable is None else addressable(target, item.key)
        if problem is not None:
            raise AxonMemoryError(problem, memory=target, key=item.key)
        return backend, placed_namespace(name, item).scope(target)

    report = await import_entries(
        lines, route, source=source, progress=progress, namespace=namespace
    )
    if into is not None:
        memories: dict[str, int] = {}
        for name, count in report.memories.items():
            shown = shown_name(split_shown(name)[0], into)
            memories[shown] = memories.get(shown, 0) + count
        return attrs.evolve(report, memories=memories)
    return report


def export_to_path(
    backend: MemoryBackend,
    path: str | os.PathLike[str],
    memories: Sequence[str] | None = None,
    *,
    progress: Progress | None = None,
    with_vectors: bool = False,
    namespace: Namespace = ROOT,
) -> TransferReport:
    """`export_memories` into the file at `path`, written whole or not at all.

    Synchronous (runs its own event loop: call `export_memories` from async code).
    """
    with replacing(path) as handle:
        return asyncio.run(
            export_memories(
                backend, handle, memories, progress=progress, with_vectors=with_vectors,
                namespace=namespace,
            )
        )


def import_from_path(
    backend: MemoryBackend,
    path: str | os.PathLike[str],
    *,
    into: str | None = None,
    progress: Progress | None = None,
    addressable: Addressable | None = None,
    namespace: Namespace | None = None,
) -> TransferReport:
    """`import_memories` from the file at `path` (synchronous; see `export_to_path`).

    A file that is not UTF-8 is a `TransferError` naming the line.
    """
    with open(path, encoding="utf-8", newline="") as handle:
        return asyncio.run(
            import_memories(
                backend,
                read_lines(handle, str(path)),
                source=str(path),
                into=into,
                progress=progress,
                addressable=addressable,
                namespace=namespace,
            )
        )


def read_lines(handle: IO[str], source: str) -> Iterator[str]:
    """The lines of a text file, a decoding error becoming a `TransferError` with the line.

    At most `MAX_LINE_CHARS` + 1 characters of a line are read: a longer line is refused
    there, so a 300 MB line (or an endless one, `/dev/zero`) costs 2.4 MB, not its size.
    """
    number = 0
    while True:
        try:
            line = handle.readline(MAX_LINE_CHARS + 1)
        except UnicodeDecodeError as exc:
            raise TransferError(
                f"not UTF-8 text ({exc.reason})", where=f"{source}:{number + 1}"
            ) from None
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_CHARS:
            raise TransferError(
                f"line is more than {MAX_LINE_CHARS:,} characters long "
                "(the longest line an export writes)",
                where=f"{source}:{number}",
            )
        yield line
