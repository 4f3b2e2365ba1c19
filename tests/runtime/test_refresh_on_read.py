"""`refresh_on_read: true`: a get or a recall that returns an entry restarts its expiry as
if written then, per tier on tiered memories; sweeps after a refresh keep the entry; a
memory without the field keeps today's expiry (docs/language.md §4.1)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import axon
from axon.errors import AxonMemoryError
from axon.testing import FakeClock

MINUTE = 60.0


def _session(tmp_path: Path, clock: FakeClock, refresh: bool, extra: str = "") -> axon.Session:
    session = axon.Session(memory_dir=tmp_path, clock=clock)
    field = "refresh_on_read: true" if refresh else ""
    session.execute(
        f"memory N {{ store: persistent backend: sqlite retrieval: keyword decay: 10m {field} "
        f"{extra} }}"
    )
    return session


def _stored(session: axon.Session, name: str = "N") -> list[str]:
    """The keys physically in the store, expired or not (read past the memory)."""
    bound = session.memories[name]
    found = asyncio.run(bound.backend._list(bound.scope, None, 0, 0.0))  # type: ignore[attr-defined]
    return sorted(entry.key for entry in found)


def test_a_get_restarts_the_expiry_and_a_sweep_after_it_keeps_the_entry(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    start = clock.now
    with _session(tmp_path, clock, refresh=True) as session:
        notes = session.memory("N")
        notes.remember("the garden needs water", key="garden")
        notes.remember("the roof needs paint", key="roof")
        assert notes.get("garden").metadata["expires_in"] == 10 * MINUTE
        clock.advance(8 * MINUTE)
        entry = notes.get("garden")
        assert entry is not None and entry.expires_at == start + 18 * MINUTE
        clock.advance(5 * MINUTE)  # past the first expiry: the sweep of the next call runs
        assert notes.count() == 1
        assert _stored(session) == ["garden"]  # swept: roof; kept: garden
        assert notes.get("garden").expires_at == start + 23 * MINUTE
        clock.advance(11 * MINUTE)
        assert notes.get("garden") is None


def test_without_the_field_a_read_leaves_the_expiry(tmp_path: Path) -> None:
    clock = FakeClock()
    start = clock.now
    with _session(tmp_path, clock, refresh=False) as session:
        notes = session.memory("N")
        notes.remember("the garden needs water", key="garden", metadata={"expires_in": 5})
        clock.advance(8 * MINUTE)
        entry = notes.get("garden")
        assert entry is not None and entry.expires_at == start + 10 * MINUTE
        assert entry.metadata["expires_in"] == 5  # free metadata as given, never read
        assert [r.key for r in notes.recall("garden water")] == ["garden"]
        clock.advance(3 * MINUTE)
        assert notes.get("garden") is None


def test_a_recall_restarts_what_it_returns_only(tmp_path: Path) -> None:
    clock = FakeClock()
    start = clock.now
    with _session(tmp_path, clock, refresh=True) as session:
        notes = session.memory("N")
        notes.remember("the garden needs water", key="garden")
        notes.remember("the garden gate is green", key="gate", expires_in="1h")
        notes.remember("the roof needs paint", key="roof")
        clock.advance(8 * MINUTE)
        assert [r.key for r in notes.recall("garden water", top_k=1)] == ["garden"]
        session.execute('recall("gate") from N')  # the statement too
        clock.advance(5 * MINUTE)
        assert sorted(e.key for e in notes.list()) == ["garden", "gate"]
        assert notes.get("gate").expires_at == start + 13 * MINUTE + 3600


def test_expires_in_in_metadata_is_the_runtimes_on_a_refreshing_memory(tmp_path: Path) -> None:
    with _session(tmp_path, FakeClock(), refresh=True) as session:
        notes = session.memory("N")
        with pytest.raises(AxonMemoryError) as caught:
            notes.remember("x", key="k", metadata={"expires_in": 5})
        assert "'expires_in' is kept by the runtime" in str(caught.value)
        assert (caught.value.memory, caught.value.key) == ("N", "k")
        assert notes.count() == 0
        notes.remember("forever", key="f", expires_in="never")
        entry = notes.get("f")
        assert entry.expires_at is None and "expires_in" not in entry.metadata


def test_a_tiered_memory_restarts_each_entry_in_its_tier(tmp_path: Path) -> None:
    clock = FakeClock()
    start = clock.now
    with axon.Session(memory_dir=tmp_path, clock=clock) as session:
        session.execute(
            "memory A { tiers: [session, persistent] store: session retrieval: keyword "
            "decay: 10m refresh_on_read: true }"
        )
        notes = session.memory("A")
        notes.remember("the garden needs water", key="garden")
        notes.remember("the garden gate is green", key="gate", tier="persistent")
        notes.remember("the roof needs paint", key="roof")
        clock.advance(8 * MINUTE)
        assert notes.get("gate").expires_at == start + 18 * MINUTE
        found = {r.key: r.tier for r in notes.recall("garden water", top_k=1)}
        assert found == {"garden": "session"}
        clock.advance(5 * MINUTE)
        assert {e.key: e.tier for e in notes.list()} == {"garden": "session", "gate": "persistent"}
        assert notes.get("garden").expires_at == start + 23 * MINUTE
