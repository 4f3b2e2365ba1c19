"""The backend contract, time in the query: entries written in the window a query names
rank first with a `time` signal, alike on every backend; a query naming no time has
none (part of `conformance`).
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import MemoryEntry, NewEntry
from axon.testing import BackendEnv, FakeClock, in_memory_reference

MODES = ("keyword", "semantic", "hybrid")
"""The modes a named time lifts (`exact` keeps the seed's scores)."""


def _at(year: int, month: int, day: int, hour: int = 12) -> float:
    return datetime.datetime(year, month, day, hour, tzinfo=datetime.UTC).timestamp()


NOW = _at(2024, 3, 13, 15)
"""The clock of these tests: Wednesday, March 13, 2024, 15:00 UTC."""

ENTRIES = (
    ("march-1", "the team talked about the garden budget", _at(2024, 3, 1)),
    ("august", "the team talked about the garden budget", _at(2023, 8, 28)),
    ("last-week", "the team talked about the garden budget", _at(2024, 3, 5)),
    ("other", "the team talked about the garden budget", _at(2022, 5, 2)),
    ("yesterday", "the team talked about the garden plants", _at(2024, 3, 12)),
)
"""Equal texts written at other times: only the time a query names tells them apart."""

QUERIES = {
    "garden budget on March 1, 2024": "march-1",
    "garden budget during the last week of August 2023": "august",
    "what about the garden budget last week": "last-week",
    "the garden budget in 2022": "other",
    "garden yesterday": "yesterday",
}
"""Each query and the entry written in the window it names."""


async def _store(backend: MemoryBackend, clock: FakeClock) -> None:
    clock.now = NOW
    await backend.store_many(
        [NewEntry(key, text, {"scope": "S"}, timestamp=when) for key, text, when in ENTRIES]
    )


def _modes(backend: MemoryBackend) -> list[str]:
    modes = [mode for mode in MODES if mode in backend.capabilities.retrieval]
    if not modes:
        pytest.skip(f"{backend.name} has no keyword, semantic or hybrid retrieval")
    return modes


@pytest.mark.parametrize("linked", [False, True])
async def test_the_entry_written_in_the_named_window_comes_first(
    backend: MemoryBackend, clock: FakeClock, linked: bool
) -> None:
    """In every lifting mode, the entry written in the window the query names is first,
    its `time` signal above 0 and the others' 0; the signals add up to the score."""
    await _store(backend, clock)
    for mode in _modes(backend):
        for query, wanted in QUERIES.items():
            found = await backend.retrieve(query, 5, "S", mode=mode, linked=linked)
            where = (mode, query)
            assert found and found[0].key == wanted, (where, [e.key for e in found])
            for entry in found:
                assert entry.signals is not None and "time" in entry.signals, where
                assert sum(entry.signals.values()) == pytest.approx(entry.score, abs=1e-9)
                assert 0.0 <= entry.score <= 1.0
            assert found[0].signals is not None and found[0].signals["time"] > 0, where
            scores = [e.score for e in found]
            assert scores == sorted(scores, reverse=True), where


async def test_a_query_naming_no_time_has_no_time_signal(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """"may" and "march" as words, "second", a number: no time named, no `time` signal."""
    await _store(backend, clock)
    for mode in _modes(backend):
        for query in ("you may march on the garden budget", "the second garden budget for 12"):
            found = await backend.retrieve(query, 5, "S", mode=mode)
            assert found, (mode, query)
            assert all(e.signals is None or "time" not in e.signals for e in found), (mode, query)
            budget = {e.key for e in found if e.key != "yesterday"}
            assert budget == {"last-week", "march-1", "august", "other"}, (mode, query)


def _scored(entries: list[MemoryEntry]) -> dict[str, float]:
    """Each entry's score (under its key) and `time` signal (under "KEY time")."""
    found = {e.key: e.score for e in entries}
    found.update({f"{e.key} time": (e.signals or {}).get("time", -1.0) for e in entries})
    return found


async def test_time_scores_equal_those_of_the_in_memory_backend(
    backend: MemoryBackend, clock: FakeClock, tmp_path: Path
) -> None:
    """The same first entry, and each entry's score and `time` signal (within 1e-6), as
    the reference, relative expressions read from each backend's own clock (equal
    scores may tie in another order)."""
    embedder = backend.embedder
    assert isinstance(embedder, HashingEmbedder)
    reference_clock = FakeClock()
    reference = in_memory_reference(BackendEnv(tmp_path, reference_clock, embedder))
    try:
        await _store(backend, clock)
        await _store(reference, reference_clock)
        for mode in _modes(backend):
            for linked in (False, True):
                for query in QUERIES:
                    got = await backend.retrieve(query, 5, "S", mode=mode, linked=linked)
                    want = await reference.retrieve(query, 5, "S", mode=mode, linked=linked)
                    assert got[0].key == want[0].key, (mode, query)
                    assert _scored(got) == pytest.approx(_scored(want), abs=1e-6), (mode, query)
    finally:
        await reference.close()


__all__ = sorted(name for name in dict(globals()) if name.startswith("test_"))
