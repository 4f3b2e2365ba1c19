"""`since` / `until` on recall and list (docs/language.md §6.4): entries whose last write
(`updated_at`) is in `[since, until)`; Unix seconds, a datetime, an ISO 8601 text or a
duration before now; bad ones are clear errors naming the memory."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from axon.errors import AxonMemoryError
from axon.runtime.handle import MemoryHandle
from axon.runtime.session import Session
from axon.testing import FakeClock

NOTES = "memory N { store: persistent backend: sqlite retrieval: keyword }"
DAY = 86400.0


def _fill(session: Session, clock: FakeClock, memory: str = "N") -> float:
    """Entries a0 .. a4 written a day apart (a4 now); returns a0's time."""
    notes = session.memory(memory)
    start = clock.now
    for i in range(5):
        notes.remember(f"apple note {i}", key=f"a{i}")
        if i < 4:
            clock.advance(DAY)
    return start


def test_list_and_recall_keep_the_window(session: Session, clock: FakeClock) -> None:
    session.execute(NOTES)
    start = _fill(session, clock)
    notes = session.memory("N")
    assert [e.key for e in notes.list(since=start + DAY, until=start + 3 * DAY)] == ["a2", "a1"]
    assert [e.key for e in notes.list(since="2d")] == ["a4", "a3", "a2"]  # 2 days before now
    assert [e.key for e in notes.list(until=start + DAY)] == ["a0"]
    found = notes.recall("apple note", top_k=10, since=start + 2 * DAY)
    assert sorted(r.key for r in found) == ["a2", "a3", "a4"]
    when = datetime.datetime.fromtimestamp(start + 3 * DAY, datetime.UTC)
    assert [e.key for e in notes.list(since=when)] == ["a4", "a3"]
    assert [e.key for e in notes.list(since=when.isoformat())] == ["a4", "a3"]
    assert [e.key for e in notes.list(since=when.replace(tzinfo=None))] == ["a4", "a3"]
    notes.update("a0", value="apple note again")  # its last write is now
    assert [e.key for e in notes.list(since="1h")] == ["a0", "a4"]
    read = [e for e in session.events if e["event_type"] == "memory_read"][-1]
    assert read["data"]["filters"] == {"updated_at": {"since": {"ago": 3600.0}}}


def test_a_tiered_memory_keeps_the_window_in_every_tier(
    session: Session, clock: FakeClock
) -> None:
    session.execute(
        "memory A { tiers: [session, persistent] store: session retrieval: keyword "
        "backend: sqlite }"
    )
    notes = session.memory("A")
    notes.remember("apple old", key="old", tier="persistent")
    clock.advance(DAY)
    notes.remember("apple new", key="new")
    assert [e.key for e in notes.list(since="1h")] == ["new"]
    assert [r.key for r in notes.recall("apple", since="1h")] == ["new"]
    assert [r.key for r in notes.recall("apple", until="1h")] == ["old"]


def _walk(notes: MemoryHandle, **kwargs: Any) -> list[list[str]]:
    """The keys of each page of a walk with `kwargs` on every page, 2 entries read a page."""
    pages: list[list[str]] = []
    after: str | None = None
    while True:
        page = notes.page(limit=2, after=after, **kwargs)
        pages.append([e.key for e in page.entries])
        if page.next is None:
            return pages
        after = page.next


def _assert_pages_keep_the_window(session: Session, start: float, memory: str) -> None:
    notes = session.memory(memory)
    window = {"since": start + DAY, "until": start + 4 * DAY}
    # Each page filters the 2 entries it read (a4 a3 | a2 a1 | a0); the cursor walks on.
    assert _walk(notes, **window) == [["a3"], ["a2", "a1"], []]
    assert [e.key for e in notes.list(**window)] == ["a3", "a2", "a1"]
    assert _walk(notes, since="2d") == [["a4", "a3"], ["a2"], []]
    assert _walk(notes, until=start + DAY, where={"n": {"exists": False}}) == [[], [], ["a0"]]
    read = [e for e in session.events if e["event_type"] == "memory_read"][-1]
    assert read["data"]["op"] == "page" and read["data"]["results_count"] == 1
    assert read["data"]["filters"]["updated_at"] == {"until": start + DAY}


def test_page_keeps_the_window_and_its_cursor_walks_on(
    session: Session, clock: FakeClock
) -> None:
    session.execute(NOTES)
    _assert_pages_keep_the_window(session, _fill(session, clock), "N")


def test_a_tiered_page_keeps_the_window_in_every_tier(
    session: Session, clock: FakeClock
) -> None:
    session.execute(
        "memory A { tiers: [session, persistent] store: session retrieval: keyword "
        "backend: sqlite }"
    )
    start = _fill(session, clock, "A")
    notes = session.memory("A")
    for key in ("a1", "a3"):  # written again in the other tier, at their own times
        entry = notes.get(key)
        assert entry is not None
        clock.now = entry.updated_at
        notes.remember(entry.value, key=key, tier="persistent")
    clock.now = start + 4 * DAY
    assert {e.key: e.tier for e in notes.list()} == {
        "a0": "session", "a1": "persistent", "a2": "session", "a3": "persistent",
        "a4": "session",
    }
    _assert_pages_keep_the_window(session, start, "A")


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        ({"since": "soon"}, AxonMemoryError, "since must be an ISO 8601 date"),
        ({"until": [1]}, TypeError, "until must be Unix seconds"),
        ({"since": True}, TypeError, "not bool"),
        ({"since": float("nan")}, AxonMemoryError, "finite"),
        ({"since": 10, "until": 5}, AxonMemoryError, "since must be before until"),
    ],
)
def test_bad_bounds_are_clear_errors(
    session: Session, kwargs: dict[str, object], error: type[Exception], fragment: str
) -> None:
    session.execute(NOTES)
    notes = session.memory("N")
    with pytest.raises(error, match=fragment) as caught:
        notes.list(**kwargs)  # type: ignore[arg-type]
    assert "'N'" in str(caught.value) or getattr(caught.value, "memory", None) == "N"
    with pytest.raises(error, match=fragment):
        notes.recall("x", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(error, match=fragment) as caught:
        notes.page(**kwargs)  # type: ignore[arg-type]
    assert "N.page" in str(caught.value)
