"""The backend contract, history (`record_versions`, `history`, `purge_history`): each
entry's versions are kept newest first, trimmed to what `keep` says, per scope and key,
and they go with `clear`, `erase` and `purge_history` alike on every backend (part of
`conformance`). A backend without history (`capabilities.history` false) must refuse
them with an `AxonMemoryError`.
"""

from __future__ import annotations

from typing import Any

import pytest

from axon.errors import AxonMemoryError
from axon.memory.backend import MemoryBackend
from axon.memory.versions import KEEP_ALL, Version
from axon.testing import FakeClock

__all__ = [
    "test_clear_erase_and_purge_history_remove_versions_of_their_scopes_only",
    "test_history_is_kept_or_refused_as_the_capabilities_say",
    "test_history_keeps_every_version_with_keep_all",
    "test_history_keeps_the_newest_and_keep_before_it",
    "test_versions_are_per_scope_and_key_and_survive_a_forget",
]


def _needs_history(backend: MemoryBackend) -> None:
    if not backend.capabilities.history:
        pytest.skip(f"the {backend.name} backend keeps no history")


def _v(key: str, op: str, value: Any, at: float, **meta: Any) -> Version:
    return Version(key, op, value, dict(meta), at, None)


def _shown(versions: list[Version]) -> list[tuple[str, Any]]:
    return [(v.op, v.value) for v in versions]


async def test_history_is_kept_or_refused_as_the_capabilities_say(
    backend: MemoryBackend,
) -> None:
    if backend.capabilities.history:
        await backend.record_versions("S", [_v("k", "remember", 1, 0.0)], 3)
        assert _shown(await backend.history("k", "S")) == [("remember", 1)]
        return
    with pytest.raises(AxonMemoryError, match="keeps no history"):
        await backend.record_versions("S", [_v("k", "remember", 1, 0.0)], 3)
    with pytest.raises(AxonMemoryError, match="keeps no history"):
        await backend.history("k", "S")


async def test_history_keeps_the_newest_and_keep_before_it(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    _needs_history(backend)
    assert await backend.history("k", "S") == []
    for n in range(5):
        clock.advance(1)
        op = "remember" if n == 0 else "update"
        await backend.record_versions("S", [_v("k", op, {"n": n}, clock.now, tags=["t"])], 2)
    got = await backend.history("k", "S")
    assert _shown(got) == [("update", {"n": 4}), ("update", {"n": 3}), ("update", {"n": 2})]
    assert [v.updated_at for v in got] == [clock.now, clock.now - 1, clock.now - 2]
    assert got[0].metadata == {"tags": ["t"]} and got[0].key == "k"
    assert got[0].seq > got[1].seq > got[2].seq
    assert [v.keep for v in got] == [2, 2, 2]  # the setting each was recorded with
    # Several keys in one call, each trimmed on its own; values of every JSON kind.
    odd: Any = {"text": "naïve ☕ \u2028", "list": [1, 2.5, None, True], "nested": {"a": []}}
    await backend.record_versions(
        "S", [_v("a", "remember", odd, 10.0), _v("b", "remember", "b1", 10.0)], 1
    )
    await backend.record_versions(
        "S", [_v("a", "update", "a2", 11.0), _v("a", "update", "a3", 12.0)], 1
    )
    assert _shown(await backend.history("a", "S")) == [("update", "a3"), ("update", "a2")]
    assert _shown(await backend.history("b", "S")) == [("remember", "b1")]
    await backend.record_versions("S", [_v("c", "remember", odd, 1.0)], 1)
    [kept] = await backend.history("c", "S")
    assert kept.value == odd
    expiring = Version("e", "remember", "x", {"importance": 0.5}, 3.0, 99.5)
    await backend.record_versions("S", [expiring], 1)
    [read] = await backend.history("e", "S")
    assert (read.expires_at, read.metadata, read.updated_at) == (99.5, {"importance": 0.5}, 3.0)


async def test_history_keeps_every_version_with_keep_all(backend: MemoryBackend) -> None:
    _needs_history(backend)
    for n in range(30):
        await backend.record_versions("S", [_v("k", "update", n, float(n))], KEEP_ALL)
    got = await backend.history("k", "S")
    assert [v.value for v in got] == list(range(29, -1, -1))
    assert {v.keep for v in got} == {KEEP_ALL}
    with pytest.raises(ValueError):
        await backend.record_versions("S", [_v("k", "update", 1, 1.0)], 0)


async def test_versions_are_per_scope_and_key_and_survive_a_forget(
    backend: MemoryBackend,
) -> None:
    _needs_history(backend)
    await backend.store("k", "live", {"scope": "S"})
    await backend.record_versions("S", [_v("k", "remember", "live", 1.0)], 3)
    await backend.record_versions("T", [_v("k", "remember", "other", 1.0)], 3)
    await backend.record_versions(None, [_v("k", "remember", "none", 1.0)], 3)
    assert await backend.delete("k", scope="S")
    await backend.record_versions("S", [Version.forget("k", 2.0)], 3)
    got = await backend.history("k", "S")
    assert _shown(got) == [("forget", None), ("remember", "live")]
    assert got[0].metadata == {}
    assert _shown(await backend.history("k", "T")) == [("remember", "other")]
    assert _shown(await backend.history("k", None)) == [("remember", "none")]
    assert await backend.history("K", "S") == [] and await backend.history("", "S") == []
    # Versions are not entries: nothing lists, counts or recalls them.
    assert await backend.count("S") == 0 and await backend.count("T") == 0
    assert await backend.list_entries("T") == []


async def test_clear_erase_and_purge_history_remove_versions_of_their_scopes_only(
    backend: MemoryBackend,
) -> None:
    _needs_history(backend)
    for scope in ("A", "B", "\x1dacme\x1fu1\x1fNotes", "\x1dacme\x1fu2\x1fNotes", "\x1dacmex"):
        await backend.store("k", f"value of {scope}", {"scope": scope})
        await backend.record_versions(scope, [_v("k", "remember", scope, 1.0)], 5)
        await backend.record_versions(scope, [_v("j", "remember", scope, 1.0)], 5)
    assert await backend.clear("A") == 1
    assert await backend.history("k", "A") == []
    assert _shown(await backend.history("k", "B")) == [("remember", "B")]
    assert await backend.purge_history("B") == 2
    assert await backend.history("k", "B") == [] and await backend.count("B") == 1
    await backend.erase("\x1dacme\x1f")
    assert await backend.history("k", "\x1dacme\x1fu1\x1fNotes") == []
    assert await backend.history("j", "\x1dacme\x1fu2\x1fNotes") == []
    assert _shown(await backend.history("k", "\x1dacmex")) == [("remember", "\x1dacmex")]
    # A version whose entry is gone (forgotten) goes with its scope's erasure too.
    await backend.record_versions("\x1dacme\x1fu3", [_v("gone", "forget", None, 2.0)], 5)
    await backend.erase("\x1dacme\x1f")
    assert await backend.history("gone", "\x1dacme\x1fu3") == []
    assert await backend.purge_history(None) >= 2
    assert await backend.history("k", "\x1dacmex") == []
