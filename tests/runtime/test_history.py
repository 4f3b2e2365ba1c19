"""`history: N | all` (docs/language.md §5.3): every write of such a memory records a
version, `handle.history(key)` reads them newest first, a forget records a last
`forget` version, and purge, clear and erasure remove them; on every backend, through
the session (statements and handles), with the checker's rules for the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import axon
from axon.errors import AxonCheckError, AxonMemoryError
from axon.runtime.session import Session
from axon.testing import FakeClock
from tests.runtime.backends import KINDS, SessionKit


@pytest.fixture(params=KINDS)
def kit(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    clock: FakeClock,
) -> SessionKit:
    return SessionKit(request.param, tmp_path, monkeypatch, clock)


def _ops(versions: list[axon.Version]) -> list[tuple[str, Any]]:
    return [(v.op, v.value) for v in versions]


def test_every_write_records_a_version_and_history_keeps_n_before_the_current(
    kit: SessionKit, clock: FakeClock
) -> None:
    with axon.Session(**kit.kwargs()) as session:
        session.execute(kit.decl("Profile", extra="history: 2 "))
        profile = session.memory("Profile")
        start = clock.now
        profile.remember("likes tea", key="drink", tags=["food"], importance="high")
        clock.advance(10)
        profile.update("drink", value="likes coffee")
        clock.advance(10)
        profile.update("drink", tags=["food", "morning"])
        versions = profile.history("drink")
        assert _ops(versions) == [
            ("update", "likes coffee"), ("update", "likes coffee"), ("remember", "likes tea")
        ]
        assert [v.updated_at for v in versions] == [start + 20, start + 10, start]
        assert versions[0].metadata["tags"] == ["food", "morning"]
        assert versions[1].metadata["tags"] == ["food"]
        assert versions[2].metadata["importance"] == 0.75
        clock.advance(10)
        profile.remember("likes water", key="drink")  # a 4th write: the oldest goes
        assert _ops(profile.history("drink")) == [
            ("remember", "likes water"), ("update", "likes coffee"), ("update", "likes coffee")
        ]
        clock.advance(10)
        assert profile.delete("drink")
        after = profile.history("drink")
        assert _ops(after) == [
            ("forget", None), ("remember", "likes water"), ("update", "likes coffee")
        ]
        assert after[0].updated_at == start + 40 and after[0].metadata == {}
        assert profile.get("drink") is None  # the entry is gone, its history stays
        assert not profile.delete("drink")  # nothing removed: no second forget recorded
        assert len(profile.history("drink")) == 3
        # What a handle returns is a copy: changing it changes nothing stored.
        after[1].metadata["tags"] = ["changed"]
        assert profile.history("drink")[1].metadata.get("tags") != ["changed"]
        assert profile.history("never-written") == []


def test_statements_and_batches_record_too_and_all_keeps_everything(kit: SessionKit) -> None:
    with axon.Session(**kit.kwargs()) as session:
        session.execute(
            kit.decl("Log", extra="history: all ")
            + '\nremember("first words") -> Log with { key: "w" }'
            + '\nremember("second words") -> Log with { key: "w" }'
        )
        log = session.memory("Log")
        log.remember_many([{"value": f"batch {n}", "key": "w"} for n in range(1)]
                          + [{"value": "other", "key": "o"}])
        for n in range(20):
            log.update("w", value=f"edit {n}")
        session.execute('forget("w") from Log')
        got = log.history("w")
        assert len(got) == 1 + 20 + 1 + 2
        assert got[0].op == "forget" and got[-1].value == "first words"
        assert _ops(got[-3:]) == [
            ("remember", "batch 0"), ("remember", "second words"), ("remember", "first words")
        ]
        assert _ops(log.history("o")) == [("remember", "other")]
        reads = [e["data"] for e in session.events
                 if e["event_type"] == "memory_read" and e["data"].get("op") == "history"]
        assert reads and reads[-1]["key"] == "o" and reads[-1]["results_count"] == 1


def test_purge_removes_history_a_filter_forget_records_and_no_history_says_so(
    kit: SessionKit,
) -> None:
    with axon.Session(**kit.kwargs()) as session:
        session.execute(kit.decl("A", extra="history: 3 ") + "\n" + kit.decl("B"))
        a, b = session.memory("A"), session.memory("B")
        a.remember("one", key="k")
        a.update("k", value="two")
        a.remember("x", key="j")
        assert a.purge_history() == 3
        assert a.history("k") == [] and a.get("k") is not None  # the entry stays
        a.update("k", value="three")
        assert _ops(a.history("k")) == [("update", "three")]
        session.execute('forget from A with { where: { source: "python" } }')
        assert [v.op for v in a.history("k")] == ["forget", "update"]
        assert [v.op for v in a.history("j")] == ["forget"]
        b.remember("plain", key="k")
        with pytest.raises(AxonMemoryError, match=r"keeps no history.*'B'"):
            b.history("k")


def test_history_lives_in_its_namespace_and_goes_with_its_erasure(kit: SessionKit) -> None:
    with axon.Session(**kit.kwargs()) as session:
        session.execute(kit.decl("P", extra="history: 5 "))
        mine = session.memory("P", namespace="acme/u1")
        theirs = session.memory("P", namespace="acme/u2")
        root = session.memory("P")
        mine.remember("mine", key="k")
        theirs.remember("theirs", key="k")
        root.remember("root", key="k")
        assert _ops(mine.history("k")) == [("remember", "mine")]
        assert _ops(theirs.history("k")) == [("remember", "theirs")]
        session.erase("acme/u1")
        assert mine.history("k") == []
        assert _ops(theirs.history("k")) == [("remember", "theirs")]
        assert _ops(root.history("k")) == [("remember", "root")]


def test_versions_outlive_the_session_on_a_persistent_store(tmp_path: Path) -> None:
    decl = "memory Notes { store: persistent history: 1 }"
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(decl)
        session.memory("Notes").remember("v1", key="k")
        session.memory("Notes").update("k", value="v2")
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(decl)
        assert _ops(session.memory("Notes").history("k")) == [("update", "v2"), ("remember", "v1")]


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("history: 0", "must be a positive number of versions or all, not 0"),
        ("history: -2", "must be a positive number of versions or all"),
        ("history: al", "did you mean 'all'"),
        ("history: 2.5", "must be a positive number of versions or all, not 2.5"),
        ("history: true", "must be a positive number of versions or all"),
        ("history: 1000001", "at most 1,000,000"),
    ],
)
def test_the_checker_refuses_a_bad_history(field: str, message: str) -> None:
    with pytest.raises(AxonCheckError, match=message) as caught:
        axon.compile(f"memory M {{ store: persistent {field} }}")
    [diagnostic] = caught.value.diagnostics
    assert diagnostic.span.line == 1 and diagnostic.span.column > 1


def test_history_on_a_tiered_memory_is_refused_with_the_reason() -> None:
    with pytest.raises(AxonCheckError, match="tiered memory keeps no history"):
        axon.compile("memory M { tiers: [session, persistent] history: 3 }")


def test_the_ir_carries_history() -> None:
    program = axon.compile(
        "memory A { store: persistent history: 4 }\nmemory B { history: all }\nmemory C {}"
    )
    assert [m.history for m in program.memories] == [4, "all", None]
    assert program.to_dict()["memories"][0]["history"] == 4


def test_session_fixture_clock_drives_version_times(session: Session, clock: FakeClock) -> None:
    session.execute("memory N { store: persistent history: all }")
    notes = session.memory("N")
    notes.remember("a", key="k", expires_in="1h")
    [version] = notes.history("k")
    assert version.updated_at == clock.now and version.expires_at == clock.now + 3600


def test_every_built_in_backend_keeps_history() -> None:
    import importlib

    from axon.memory.registry import BUILTIN_BACKENDS

    for info in BUILTIN_BACKENDS:
        module, _, name = info.target.partition(":")
        backend_class = getattr(importlib.import_module(module), name)
        assert info.resolved_capabilities().history, info.name
        assert backend_class.capabilities.history, info.name


def test_erasing_a_namespace_on_sqlite_leaves_no_byte_of_its_history(tmp_path: Path) -> None:
    """Versions are erased as entries are: none of their text in any file afterwards,
    an entry forgotten before (whose text only its versions hold) included."""
    mem = tmp_path / "mem"
    secret, kept = "Quorblax vintner Ystradgynlais", "Harbourmaster Pelletine"
    with axon.Session(memory_dir=mem) as session:
        session.execute("memory Profile { store: persistent history: all retrieval: keyword }")
        gone = session.memory("Profile", namespace="acme/u7")
        for n in range(30):
            gone.remember(f"{secret} draft {n}", key=f"k{n % 3}")
        gone.update("k0", value=f"{secret} final")
        gone.delete("k1")
        session.memory("Profile", namespace="acme/u8").remember(kept, key="k")
        words = {secret.encode(), *(w.encode() for w in secret.split())}

        def holding(needles: set[bytes]) -> list[str]:
            return [p.name for p in mem.rglob("*")
                    if p.is_file() and any(n in p.read_bytes() for n in needles)]

        assert holding(words), "the test must see the text before erasing"
        session.erase("acme/u7")
        assert holding(words) == []
        assert gone.history("k1") == [] and gone.history("k0") == []
        assert holding({kept.encode()})
        assert _ops(session.memory("Profile", namespace="acme/u8").history("k")) == [
            ("remember", kept)
        ]
