"""Link edits in, new `related` metadata out: the rules every backend's `write_links` applies.

An association between two entries is stored on both, as each one's `related`
metadata (a list of keys). A backend changes it in one write transaction
(`MemoryBackend.write_links`): it reads the entry's stored metadata, asks
`edited_metadata` for the new one and writes only that, never the value, the
timestamps or the expiry. A store that replaces an entry keeps the associations the
entry had (`kept_related`). Both check the metadata cap (`MAX_VALUE_BYTES`, as
`validate_entry` does for every write) on what would be written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from axon.errors import AxonMemoryError
from axon.memory.entry import check_metadata_size, encode_json


@attrs.frozen
class LinkChange:
    """Keys to add to (at the end, each once) and to remove from the `related`
    metadata of the entry stored under `key`."""

    key: str
    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()


@attrs.frozen
class LinkWrite:
    """What a `write_links` call did: the entry it stored (or None), whether the entry
    it was asked to delete was there (unexpired), and the keys whose `related` changed."""

    stored: Any = None
    deleted: bool = False
    changed: tuple[str, ...] = ()


class MissingLinkTarget(AxonMemoryError):
    """A link change named an entry that is not stored (or has expired); nothing was
    written. `missing` is its key, for the caller's own message."""

    def __init__(self, missing: str, *, memory: str | None = None) -> None:
        super().__init__("cannot link: no such entry", memory=memory, key=missing)
        self.missing = missing


def related_keys(metadata: Mapping[str, Any]) -> list[str]:
    """The keys an entry is associated with (its `related` metadata)."""
    related = metadata.get("related")
    if not isinstance(related, list):
        return []
    return [k for k in related if isinstance(k, str)]


def with_related(metadata: Mapping[str, Any], related: list[str]) -> dict[str, Any]:
    """`metadata` with `related` set to these keys (dropped when there are none)."""
    meta = {k: v for k, v in metadata.items() if k != "related"}
    if related:
        meta["related"] = related
    return meta


def kept_related(
    new: Mapping[str, Any], old: Mapping[str, Any] | None, *, memory: str | None, key: str
) -> dict[str, Any]:
    """The metadata a store writes when it replaces an entry whose stored metadata is
    `old` (None: no live entry): `new` with the old `related` keys first, then its own.

    Raises `AxonMemoryError` when the result would pass the metadata cap.
    """
    kept = related_keys(old) if old is not None else []
    if not kept:
        return dict(new)
    meta = with_related(new, list(dict.fromkeys([*kept, *related_keys(new)])))
    check_metadata_size(encode_json(meta), memory=memory, key=key, why="with its associations")
    return meta


def edited_metadata(
    metadata: Mapping[str, Any], change: LinkChange, *, memory: str | None
) -> tuple[dict[str, Any], str] | None:
    """The metadata of `change.key` after the change and its JSON text, or None when the
    change changes nothing (every added key is there, no removed one is).

    Raises `AxonMemoryError` naming the memory, the key and the limit when the new
    metadata would pass `MAX_VALUE_BYTES`: it is encoded once, so a link costs at most
    the cap, whatever the entry held before.
    """
    before = related_keys(metadata)
    present = set(before)
    gone = set(change.remove)
    added = [k for k in dict.fromkeys(change.add) if k not in present and k not in gone]
    if not added and not gone & present:
        return None
    meta = with_related(metadata, [k for k in before if k not in gone] + added)
    text = encode_json(meta)
    if added:
        why = f"with the link to '{added[0]}'" + (" and others" if len(added) > 1 else "")
        check_metadata_size(text, memory=memory, key=change.key, why=why)
    return meta, text


def unlink_changes(key: str, metadata: Mapping[str, Any]) -> list[LinkChange]:
    """The changes that take `key` out of the `related` of every entry its stored
    `metadata` names: what deleting the entry under `key` does to its associations."""
    return [LinkChange(other, remove=(key,)) for other in related_keys(metadata) if other != key]
