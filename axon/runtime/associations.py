"""Associations between entries (docs/language.md §8 Memory records): link requests in,
one `write_links` call per store out, and the delete that unlinks an entry.

An association is symmetric and stored on both entries, as each one's `related`
metadata, so `get` returns an entry with its associated entries without a join
on any backend. Every change of an association goes through the backend's
`write_links`, which changes only the links, in one transaction where the backend
has them (`axon.memory.links` holds the rules); `delete_entry` is the one delete.
"""

from __future__ import annotations

from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.links import LinkChange, MissingLinkTarget
from axon.memory.links import related_keys as related_keys


async def delete_entry(backend: MemoryBackend, key: str, scope: str) -> bool:
    """Delete one entry and its associations: the entries it was associated with stop
    naming it, in the same `write_links` transaction. True when there was an entry.
    Every delete of one entry goes through here (`PlainMemory.delete`, so the handle
    and the `forget` statement, and `axon memory forget`).
    """
    done = await backend.write_links(scope, delete=key)
    return done.deleted


def back_links(key: str, given: list[str]) -> list[LinkChange]:
    """The changes that make each entry named by `given` name `key` back."""
    return [LinkChange(other, add=(key,)) for other in dict.fromkeys(given)]


def missing_related(exc: MissingLinkTarget, memory: str, key: str) -> AxonMemoryError:
    """The error of a remember whose `related` names an entry that is not stored."""
    return AxonMemoryError(
        f"related entry '{exc.missing}' is not stored in this memory", memory=memory, key=key
    )


def missing_associate(exc: MissingLinkTarget, memory: str) -> AxonMemoryError:
    """The error of an `associate` whose entry is not stored."""
    return AxonMemoryError("cannot associate: no such entry", memory=memory, key=exc.missing)
