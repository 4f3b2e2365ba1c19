"""The backend contract, keyset paging: `list_page` walks the listing order both ways,
under concurrent writes and deletes, and refuses a foreign cursor (part of `conformance`).
"""

from __future__ import annotations

import pytest

from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.entry import NewEntry
from axon.testing import FakeClock
from axon.testing.contract_helpers import keys

# ---------------------------------------------------------------------- keyset paging (list_page)


async def _walk(
    backend: MemoryBackend, scope: str | None, limit: int, *, oldest_first: bool = False
) -> list[str]:
    found: list[str] = []
    cursor = None
    for _ in range(1000):  # a cursor that does not advance fails, rather than hangs
        page = await backend.list_page(scope, limit=limit, after=cursor, oldest_first=oldest_first)
        assert len(page.entries) <= limit
        found += keys(page.entries)
        if page.cursor is None:
            return found
        assert page.entries, "a page with a cursor has entries"
        cursor = page.cursor
    raise AssertionError(f"paging did not end: {found[:20]}...")


async def test_list_page_walks_the_listing_order_both_ways(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """Pages of every size give `list_entries`' order (newest first, ties in listing
    order) and, oldest first, the same runs of ties in the same order."""
    for batch in range(5):
        await backend.store_many(
            [NewEntry(f"b{batch}-{i}", f"text {i}", {"scope": "S"}) for i in range(7)]
        )
        await backend.store(f"solo{batch}", "alone", {"scope": "S"})
        clock.advance(1)
    await backend.store("elsewhere", "other scope", {"scope": "T"})
    await backend.store("soon", "expires", {"scope": "S"}, expires_at=clock.now + 1)
    clock.advance(2)
    listed = keys(await backend.list_entries("S"))
    assert len(listed) == 40 and "soon" not in listed
    by_time: dict[float, list[str]] = {}
    for entry in await backend.list_entries("S"):
        by_time.setdefault(entry.timestamp, []).append(entry.key)
    oldest = [key for stamp in sorted(by_time) for key in by_time[stamp]]
    for limit in (1, 3, 7, 8, 40, 100):
        assert await _walk(backend, "S", limit) == listed
        assert await _walk(backend, "S", limit, oldest_first=True) == oldest
    everything = await _walk(backend, None, 6)
    assert sorted(everything) == sorted([*listed, "elsewhere"])
    assert (await backend.list_page("nothing", limit=5)).entries == []


async def test_ties_are_first_stored_first_in_every_listing(backend: MemoryBackend) -> None:
    """At one `created_at` (a clock that returned the same value), `list_entries`,
    `list_page` both ways and a filtered `list_matching` all give the entries first
    stored first, not in key order."""
    order = ["c", "a", "b", "e", "d"]
    for key in order:
        await backend.store(key, f"text {key}", {"scope": "S", "tags": ["t"], "g": 1})
    assert keys(await backend.list_entries("S")) == order
    for limit in (1, 2, 5):
        assert await _walk(backend, "S", limit) == order
        assert await _walk(backend, "S", limit, oldest_first=True) == order
    assert keys(await backend.list_matching("S", {"tags": ["t"]})) == order
    assert keys(await backend.list_matching("S", {"g": 1}, limit=3)) == order[:3]


async def test_list_page_under_concurrent_writes_and_deletes(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """Writes and deletes between pages: no entry twice, none skipped that stayed."""
    await backend.store_many([NewEntry(f"tie{i}", i, {"scope": "S"}) for i in range(30)])
    clock.advance(1)
    for i in range(30):
        await backend.store(f"k{i}", i, {"scope": "S"})
        clock.advance(1 if i % 3 else 0)
    initial = keys(await backend.list_entries("S"))
    for oldest_first in (False, True):
        deleted: set[str] = set()
        seen: list[str] = []
        cursor = None
        step = 0
        while step < 100:  # a cursor that does not advance fails, rather than hangs
            page = await backend.list_page("S", limit=4, after=cursor, oldest_first=oldest_first)
            seen += keys(page.entries)
            if page.cursor is None:
                break
            cursor = page.cursor
            step += 1
            # Delete one already seen and one not yet seen; add new entries, some
            # with the current timestamp (ties with what is being paged).
            victims = [seen[0], initial[(step * 7) % len(initial)]]
            for victim in victims:
                if victim not in deleted and await backend.delete(victim, "S"):
                    deleted.add(victim)
            await backend.store(f"new{oldest_first}{step}", step, {"scope": "S"})
            await backend.store_many(
                [NewEntry(f"tie-new{oldest_first}{step}", step, {"scope": "S"}, None, 1.0)]
            )
            clock.advance(1)
        assert step < 100, "paging did not end"
        assert len(seen) == len(set(seen)), "an entry came twice"
        stayed = [key for key in initial if key not in deleted]
        assert set(stayed) <= set(seen), set(stayed) - set(seen)
        for key in deleted:
            await backend.store(key, "back", {"scope": "S"})
        initial = keys(await backend.list_entries("S"))


async def test_list_page_refuses_a_foreign_cursor(backend: MemoryBackend) -> None:
    for i in range(3):
        await backend.store(f"k{i}", i, {"scope": "S"})
    page = await backend.list_page("S", limit=1)
    assert page.cursor is not None
    for bad in ("not a cursor", "", "x" * 500, 17):
        with pytest.raises(AxonMemoryError, match="not a cursor of this listing"):
            await backend.list_page("S", limit=1, after=bad)  # type: ignore[arg-type]
    with pytest.raises(AxonMemoryError, match="not a cursor of this listing"):
        await backend.list_page("S", limit=1, after=page.cursor, oldest_first=True)
    with pytest.raises(AxonMemoryError, match="limit must be a positive integer"):
        await backend.list_page("S", limit=0)


__all__ = sorted(name for name in dict(globals()) if name.startswith("test_"))
