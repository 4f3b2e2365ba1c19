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


@pytest.mark.parametrize("tiered", [False, True], ids=["plain", "tiered"])
def test_every_update_keeps_or_resets_the_duration_a_read_restarts(
    tmp_path: Path, tiered: bool
) -> None:
    clock = FakeClock()
    start = clock.now
    changes: dict[str, dict[str, object]] = {
        "value": {"value": "changed"},
        "metadata": {"metadata": {"phase": 2}},
        "tags": {"tags": ["work"]},
        "importance": {"importance": "high"},
        "type": {"type": "short_term"},
        "all": {"value": "v", "metadata": {"a": 1}, "tags": [], "importance": 0.1},
        "longer": {"expires_in": "1h", "metadata": {"phase": 3}},
        "never": {"expires_in": "never"},
        "none": {"expires_in": None},
    }
    with axon.Session(memory_dir=tmp_path, clock=clock) as session:
        where = "tiers: [session, persistent] store: persistent" if tiered else (
            "store: persistent backend: sqlite"
        )
        session.execute(
            f"memory N {{ {where} retrieval: keyword decay: 10m refresh_on_read: true }}"
        )
        notes = session.memory("N")
        for key in changes:
            notes.remember("the garden needs water", key=key, metadata={"phase": 1})
        clock.advance(MINUTE)
        for key, change in changes.items():
            notes.update(key, **change)  # type: ignore[arg-type]
        clock.advance(8 * MINUTE)
        kept = {key: notes.get(key) for key in changes}
    durations = {key: e.metadata.get("expires_in") for key, e in kept.items() if e is not None}
    expiries = {key: e.expires_at for key, e in kept.items() if e is not None}
    restarted = {key: 10 * MINUTE for key in ("value", "metadata", "tags", "importance",
                                               "type", "all")}
    assert durations == {**restarted, "longer": 3600.0, "never": None, "none": None}
    assert expiries == {
        **{key: start + 19 * MINUTE for key in restarted},  # read at 9m: 10m from then
        "longer": start + 9 * MINUTE + 3600, "never": None, "none": None,
    }
    assert kept["metadata"] is not None and kept["metadata"].metadata["phase"] == 2


def test_an_update_cannot_give_the_duration_in_metadata(tmp_path: Path) -> None:
    # A remember refuses it; an update took it and a read then restarted 5 seconds.
    with _session(tmp_path, FakeClock(), refresh=True) as session:
        notes = session.memory("N")
        notes.remember("x", key="k")
        for extra in ({}, {"expires_in": "1h"}):
            with pytest.raises(AxonMemoryError) as caught:
                notes.update("k", metadata={"expires_in": 5}, **extra)  # type: ignore[arg-type]
            assert "'expires_in' is kept by the runtime" in str(caught.value)
            assert (caught.value.memory, caught.value.key) == ("N", "k")
        assert notes.get("k").metadata["expires_in"] == 10 * MINUTE


def test_without_the_field_expires_in_is_free_metadata_to_an_update(tmp_path: Path) -> None:
    # It was kept when metadata was replaced and dropped when the expiry changed.
    with _session(tmp_path, FakeClock(), refresh=False) as session:
        notes = session.memory("N")
        notes.remember("x", key="k", metadata={"expires_in": 5, "b": 1})
        entry = notes.update("k", expires_in="1h")
        assert (entry.metadata["expires_in"], entry.metadata["b"]) == (5, 1)
        entry = notes.update("k", metadata={"c": 2})
        assert "expires_in" not in entry.metadata and entry.metadata["c"] == 2
        entry = notes.update("k", metadata={"expires_in": "free"})
        assert entry.metadata["expires_in"] == "free"
