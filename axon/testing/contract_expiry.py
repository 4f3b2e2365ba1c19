"""The backend contract, restarting expiry (`restart_expiry`, what `refresh_on_read` uses):
an entry that keeps its duration expires that long after the restart, and nothing else
of it changes, alike on every backend (part of `conformance`).
"""

from __future__ import annotations

from typing import Any

import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.entry import EXPIRY_DURATION
from axon.testing import FakeClock

__all__ = [
    "test_a_purge_after_a_restart_keeps_the_entry",
    "test_restart_expiry_moves_the_expiry_of_the_entries_that_keep_a_duration",
    "test_restart_expiry_skips_what_cannot_restart",
]


def _meta(seconds: Any = None, **more: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"scope": "S", **more}
    if seconds is not None:
        meta[EXPIRY_DURATION] = seconds
    return meta


async def test_restart_expiry_moves_the_expiry_of_the_entries_that_keep_a_duration(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    start = clock.now
    await backend.store("a", "alpha text", _meta(10, tags=["x"]), expires_at=start + 10)
    await backend.store("b", "beta text", _meta(100), expires_at=start + 100)
    await backend.store("c", "gamma text", _meta(10), expires_at=start + 10)
    await backend.store("a", "alpha in T", _meta(10) | {"scope": "T"}, expires_at=start + 10)
    before = await backend.get("a", scope="S")
    clock.advance(8)
    restarted = await backend.restart_expiry("S", ["a", "b", "a"])
    assert restarted == {"a": start + 18, "b": start + 108}
    after = await backend.get("a", scope="S")
    assert after is not None and before is not None
    assert after.expires_at == start + 18
    # Nothing else of it changed: value, metadata, time.
    assert (after.value, after.metadata, after.timestamp) == (
        before.value, before.metadata, before.timestamp
    )
    clock.advance(5)  # past the first expiry of everything written with 10 s
    assert await backend.get("a", scope="S") is not None
    assert await backend.get("c", scope="S") is None  # not restarted
    assert await backend.get("a", scope="T") is None  # another scope's entry: not restarted
    found = await backend.retrieve("alpha", top_k=5, scope="S", mode=backend.default_mode)
    assert [entry.key for entry in found] == ["a"]
    assert found[0].expires_at == start + 18
    clock.advance(5)  # 18 s after the start
    assert await backend.get("a", scope="S") is None
    assert await backend.count("S") == 1  # b


async def test_restart_expiry_skips_what_cannot_restart(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    start = clock.now
    await backend.store("never", "text", _meta(10))  # no expiry: stays without one
    await backend.store("no-duration", "text", _meta(), expires_at=start + 10)
    await backend.store("text-duration", "text", _meta("10"), expires_at=start + 10)
    await backend.store("bool-duration", "text", _meta(True), expires_at=start + 10)
    await backend.store("zero-duration", "text", _meta(0), expires_at=start + 10)
    await backend.store("expired", "text", _meta(10), expires_at=start + 1)
    clock.advance(2)
    keys = [
        "never", "no-duration", "text-duration", "bool-duration", "zero-duration",
        "expired", "missing", "",
    ]
    assert await backend.restart_expiry("S", keys) == {}
    assert await backend.restart_expiry("S", []) == {}
    assert await backend.restart_expiry("nowhere", ["never"]) == {}
    never = await backend.get("never", scope="S")
    assert never is not None and never.expires_at is None
    assert await backend.get("expired", scope="S") is None
    for key in ("no-duration", "text-duration", "bool-duration", "zero-duration"):
        entry = await backend.get(key, scope="S")
        assert entry is not None and entry.expires_at == start + 10, key


@pytest.mark.parametrize("restart", [True, False])
async def test_a_purge_after_a_restart_keeps_the_entry(
    backend: MemoryBackend, clock: FakeClock, restart: bool
) -> None:
    start = clock.now
    await backend.store("a", "text", _meta(10), expires_at=start + 10)
    clock.advance(9)
    if restart:
        await backend.restart_expiry("S", ["a"])
    clock.advance(2)
    assert await backend.purge_expired() == int(not restart)
    assert (await backend.get("a", scope="S") is not None) is restart
