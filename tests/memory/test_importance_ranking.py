"""Importance takes part in ranking (records, seed 002; `scores.IMPORTANCE_WEIGHT`), the
same way on every backend: of two equally relevant entries the more important ranks
first, and with every entry at the default importance nothing changes."""

from __future__ import annotations

import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.entry import NewEntry
from axon.memory.retrieval.scores import IMPORTANCE_WEIGHT, importance_factor, weigh_importance

TEXT = "the invoice for the cloud servers is due on friday"


async def _store(backend: MemoryBackend, importance: dict[str, float | None]) -> None:
    items = []
    for key, level in importance.items():
        meta: dict[str, object] = {"scope": "Notes"}
        if level is not None:
            meta["importance"] = level
        items.append(NewEntry(key, TEXT, meta))
    await backend.store_many(items)


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
async def test_a_high_importance_entry_outranks_an_equally_relevant_one(
    backend: MemoryBackend, mode: str
) -> None:
    # Same text; keys of one length so the key adds the same to each (exact ties).
    await _store(backend, {"note_a": None, "note_b": 0.75, "note_c": 0.5})
    plain = {"note_a", "note_c"}
    results = await backend.retrieve("invoice due friday", 3, "Notes", mode=mode)
    assert results[0].key == "note_b"
    assert {r.key for r in results[1:]} == plain
    assert results[0].score == pytest.approx(
        min(results[1].score * (1 + IMPORTANCE_WEIGHT * 0.25), 1.0), abs=1e-6
    )
    assert results[1].score == pytest.approx(results[2].score, abs=1e-6)


async def test_exact_keeps_the_seed_scores(backend: MemoryBackend) -> None:
    await _store(backend, {"note_a": None, "note_b": 1.0})
    results = await backend.retrieve("invoice", 2, "Notes", mode="exact")
    assert [r.score for r in results] == [0.4, 0.4]


def test_default_importance_changes_nothing() -> None:
    assert importance_factor({}) == 1.0
    assert importance_factor({"importance": 0.5}) == 1.0
    assert importance_factor({"importance": 1.0}) == pytest.approx(1.2)
    assert importance_factor({"importance": 0.25}) == pytest.approx(0.9)
    assert importance_factor({"importance": "high"}) == 1.0  # not a number: not weighed

    class E:
        def __init__(self, score: float) -> None:
            self.score, self.metadata, self.signals = score, {}, None

    unsorted = [E(0.2), E(0.9)]  # untouched, not even re-sorted, at the default
    assert weigh_importance(unsorted) == unsorted
