"""Versions: the history a memory with `history: N` keeps of each entry (docs/language.md
§5.3 History).

Every write of such a memory (a remember, an update, a forget) records one `Version`
of the entry as that write left it: the value, metadata (tags, importance, type and
the rest), `expires_at` and `updated_at`, and the operation. A forget records a
`forget` version with no value. The backend keeps, per entry, the newest version
and the `keep` before it (`KEEP_ALL`: every one): `MemoryBackend.record_versions`
appends and trims, `MemoryBackend.history` reads them newest first.

Versions live beside the entries, in the same store, under the same scope; they
are not entries (no recall, list or count sees them), they outlive the entry's
expiry and its forget, and they go with `clear`, `erase` and `purge_history`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from axon.memory.entry import MemoryEntry

OPS: Final = ("remember", "update", "forget")
"""The operations a version records."""

KEEP_ALL: Final = -1
"""`keep` of `history: all`: no version is ever trimmed."""


@dataclasses.dataclass(frozen=True)
class Version:
    """One recorded state of an entry, as a write left it.

    `op` is `remember`, `update` or `forget` (then `value` is None and `metadata`
    empty: the entry was gone from `updated_at` on). `seq` orders the versions of a
    store: a later write has a larger one (ties of `updated_at` included). `keep` is
    the history setting of the write that recorded it (set by the store): so a writer
    that knows no declaration (`axon memory update` on a store) records its own write
    as the memory would (`recorded_keep`).
    """

    key: str
    op: str
    value: Any
    metadata: dict[str, Any]
    updated_at: float
    expires_at: float | None = None
    seq: int = 0
    keep: int = 0

    @classmethod
    def of(cls, entry: MemoryEntry, op: str) -> Version:
        """The version a `remember` or an `update` that wrote `entry` records."""
        return cls(entry.key, op, entry.value, dict(entry.metadata), entry.timestamp,
                   entry.expires_at)

    @classmethod
    def forget(cls, key: str, now: float) -> Version:
        """The version a forget of `key` at `now` records."""
        return cls(key, "forget", None, {}, now)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "op": self.op,
            "value": self.value,
            "metadata": self.metadata,
            "updated_at": self.updated_at,
            "expires_at": self.expires_at,
        }


def keep_of(history: int | str | None) -> int:
    """The `keep` of a memory's `history` field: 0 (none), a count of earlier versions,
    or `KEEP_ALL`."""
    if history is None:
        return 0
    if history == "all":
        return KEEP_ALL
    assert isinstance(history, int) and history > 0, history
    return history


def newest_first(versions: list[Version]) -> list[Version]:
    """`versions` newest first: by `seq`, the order of the writes."""
    return sorted(versions, key=lambda v: v.seq, reverse=True)


def version_from_row(
    key: str,
    op: str,
    value: Any,
    metadata: Mapping[str, Any] | None,
    updated_at: float,
    expires_at: float | None,
    seq: int,
    keep: int,
) -> Version:
    """A `Version` read back from a store's row (metadata None: a `forget`'s)."""
    return Version(key, op, value, dict(metadata or {}), float(updated_at),
                   None if expires_at is None else float(expires_at), int(seq), int(keep))


def recorded_keep(versions: list[Version]) -> int:
    """The history setting the newest of an entry's `versions` was recorded with (0:
    none recorded): what a write that knows no declaration keeps."""
    return max(versions, key=lambda v: v.seq).keep if versions else 0
