"""The backend contract, namespaces: scopes of namespaces never see each other, and
`erase(prefix)` deletes a namespace and those below it, nothing else (part of
`conformance`).

A namespace is part of the scope (`axon.memory.namespaces`): "\\x1d" then each label
followed by "\\x1f", then the memory's scope. A backend must keep such scopes apart
exactly as any two scopes (control characters and LIKE metacharacters included) and
list them by plain prefix.
"""

from __future__ import annotations

import pytest

from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.entry import NewEntry
from axon.memory.namespaces import Namespace
from axon.testing import FakeClock
from axon.testing.contract_helpers import keys

__all__ = [
    "test_erase_deletes_a_namespace_and_below_and_nothing_else",
    "test_namespaced_scopes_never_see_each_other",
]

SPACES = ("", "acme", "acme/u1", "acme/u1/deep", "acmeX", "a%_b", "a%_b/u1", "axb")
"""Namespaces a test writes in: parents, children, a sibling that shares a prefix of
characters, and labels that are LIKE metacharacters."""


def scope_in(space: str, memory: str = "Notes") -> str:
    return Namespace.of(space).scope(memory)


async def test_namespaced_scopes_never_see_each_other(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """The same key in every namespace is one entry per namespace; every read (get,
    list, count, filters, paging, each retrieval mode) of one sees only its own, and a
    paging cursor of one namespace is refused in another."""
    for space in SPACES:
        scope = scope_in(space)
        await backend.store_many(
            [
                NewEntry(
                    f"k{i}",
                    f"shared words about {space or 'root'} number {i}",
                    {"scope": scope, "tags": ["t"], "owner": space},
                )
                for i in range(3)
            ]
        )
        clock.advance(1)
    for space in SPACES:
        scope = scope_in(space)
        assert (await backend.get("k0", scope=scope)).metadata["owner"] == space  # type: ignore[union-attr]
        assert sorted(keys(await backend.list_entries(scope))) == ["k0", "k1", "k2"]
        assert await backend.count(scope) == 3
        matching = await backend.list_matching(scope, {"tags": ["t"], "owner": space})
        assert len(matching) == 3
        wrong = "acme" if space != "acme" else ""
        assert await backend.list_matching(scope, {"owner": wrong}) == []
        for mode in backend.capabilities.retrieval:
            found = await backend.retrieve("shared words number", 50, scope, mode=mode)
            assert {e.metadata.get("owner") for e in found} <= {space}, (mode, space)
        page = await backend.list_page(scope, limit=1)
        assert page.cursor is not None
        other = scope_in("acme" if space != "acme" else "acme/u1")
        with pytest.raises(AxonMemoryError):
            await backend.list_page(other, limit=1, after=page.cursor)
    expected = sorted(scope_in(space) for space in SPACES if space.startswith("acme"))
    assert await backend.scopes(Namespace.of("acme").scope_prefix[:-1]) == expected
    assert await backend.scopes(Namespace.of("acme").scope_prefix) == sorted(
        scope_in(space) for space in ("acme", "acme/u1", "acme/u1/deep")
    )


async def test_erase_deletes_a_namespace_and_below_and_nothing_else(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """`erase(prefix)` deletes every entry (expired ones too) of every scope under the
    prefix, in every memory, and returns the visible count per scope; other scopes,
    those sharing characters of a label included, keep everything."""
    for space in SPACES:
        for memory in ("Notes", "Facts"):
            scope = scope_in(space, memory)
            await backend.store("live", f"text of {space} {memory}", {"scope": scope})
            await backend.store("old", "expired text", {"scope": scope}, expires_at=clock.now + 1)
    clock.advance(5)
    erased = await backend.erase(Namespace.of("acme").scope_prefix)
    assert erased == {
        scope_in(space, memory): 1
        for space in ("acme", "acme/u1", "acme/u1/deep")
        for memory in ("Notes", "Facts")
    }
    erased = await backend.erase(Namespace.of("a%_b").scope_prefix)
    assert sorted(erased) == sorted(
        scope_in(space, memory) for space in ("a%_b", "a%_b/u1") for memory in ("Notes", "Facts")
    )
    for space in ("acme", "acme/u1", "acme/u1/deep", "a%_b", "a%_b/u1"):
        for memory in ("Notes", "Facts"):
            assert await backend.get("live", scope=scope_in(space, memory)) is None
            assert await backend.count(scope_in(space, memory)) == 0
    for space in ("", "acmeX", "axb"):
        for memory in ("Notes", "Facts"):
            found = await backend.get("live", scope=scope_in(space, memory))
            assert found is not None and found.value == f"text of {space} {memory}"
    left = await backend.scopes(Namespace.of("acme").scope_prefix)
    assert left == []
    assert await backend.erase(Namespace.of("nobody").scope_prefix) == {}
    with pytest.raises(ValueError):
        await backend.erase("")
