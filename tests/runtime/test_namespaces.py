"""Namespaces in a session: every operation stays inside its namespace; listing; erasure."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import axon
from axon.errors import AxonError
from axon.memory.namespaces import Namespace

NOTES = "memory Notes { store: persistent backend: sqlite retrieval: keyword }"
TIERED = (
    "memory T { tiers: [session, persistent] store: persistent backend: sqlite "
    "retrieval: keyword promote_after: 1 }"
)
EPHEMERAL = "memory Scratch { store: session backend: sqlite retrieval: keyword }"


def keys(results: list[object]) -> list[str]:
    return sorted(r.key for r in results)  # type: ignore[attr-defined]


def test_same_name_and_key_in_two_namespaces_are_two_entries(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    with axon.Session(memory_dir=mem, namespace="acme/u42") as session:
        assert session.namespace == Namespace(("acme", "u42"))
        session.execute(NOTES)
        session.execute('remember("the u42 dentist is on friday") -> Notes with { key: "k" }')
        other = session.memory("Notes", namespace=("acme", "u43"))
        assert other.namespace.text == "acme/u43"
        other.remember("the u43 dentist is on monday", key="k")
        parent = session.memory("Notes", namespace="acme")
        parent.remember("the acme dentist policy", key="p")
        assert session.memory("Notes").get("k").value == "the u42 dentist is on friday"
        assert other.get("k").value == "the u43 dentist is on monday"
        # nothing inherited from a parent or a child, in every read
        assert keys(session.memory("Notes").recall("dentist")) == ["k"]
        assert keys(parent.recall("dentist")) == ["p"]
        assert keys(parent.list()) == ["p"] and parent.count() == 1
        assert parent.get("k") is None
        records = session.execute('recall("dentist") from Notes')
        assert [r["results"][0]["value"] for r in records if r.get("results")] == [
            "the u42 dentist is on friday"
        ]
        assert session.namespaces() == [("acme",), ("acme", "u42"), ("acme", "u43")]
        assert session.namespaces("acme/u42") == [("acme", "u42")]
        assert session.namespaces("acmeX") == []
    # the root is today's store: a session without a namespace sees none of it
    with axon.Session(memory_dir=mem) as root:
        root.execute(NOTES)
        assert root.memory("Notes").count() == 0
        root.memory("Notes").remember("root text", key="k")
        assert root.namespaces() == [(), ("acme",), ("acme", "u42"), ("acme", "u43")]
    with axon.Session(memory_dir=mem, namespace="acme/u42") as again:
        again.execute(NOTES)
        assert again.memory("Notes").get("k").value == "the u42 dentist is on friday"


def test_a_store_written_without_namespaces_opens_unchanged_in_the_root(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    with axon.Session(memory_dir=mem) as before:
        before.execute(NOTES + '\nremember("old entry") -> Notes with { key: "old" }')
    with axon.Session(memory_dir=mem, namespace=None) as after:
        after.execute(NOTES)
        assert after.memory("Notes").get("old").value == "old entry"
        assert after.memory("Notes", namespace="acme").get("old") is None


def test_axon_namespace_names_the_session_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AXON_NAMESPACE", "acme/u7")
    with axon.Session(memory_dir=tmp_path / "mem") as session:
        assert session.namespace.labels == ("acme", "u7")
        session.execute(NOTES + '\nremember("x") -> Notes with { key: "a" }')
        assert session.namespaces() == [("acme", "u7")]
    monkeypatch.setenv("AXON_NAMESPACE", "acme//u7")
    with pytest.raises(AxonError, match="AXON_NAMESPACE 'acme//u7'"):
        axon.Session(memory_dir=tmp_path / "other")


def test_a_bad_namespace_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    with pytest.raises(AxonError, match=r"namespace 'acme/\.\.'.*may not be '\.' or '\.\.'"):
        axon.Session(memory_dir=mem, namespace="acme/..")
    assert not mem.exists()
    with axon.Session(memory_dir=mem) as session:
        session.execute(NOTES)
        with pytest.raises(AxonError, match="label 'a\\\\x00' holds a control character"):
            session.memory("Notes", namespace="a\x00")
        with pytest.raises(AxonError, match="at least one label"):
            session.erase("")
        assert session.namespaces() == []


def test_trace_events_carry_the_namespace_absent_for_the_root(tmp_path: Path) -> None:
    with axon.Session(memory_dir=tmp_path / "mem", namespace="acme") as session:
        session.execute(NOTES)
        session.execute('remember("hello") -> Notes with { key: "h" }\nrecall("hello") from Notes')
        session.memory("Notes", namespace=()).remember("root hello", key="r")
        memory_events = [e for e in session.events if e["event_type"].startswith("memory_")]
        spaces = [e["data"].get("namespace") for e in memory_events]
        assert spaces == ["acme", "acme", None]


def test_tiers_lifetimes_and_stats_per_namespace(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    with axon.Session(memory_dir=mem, namespace="a") as session:
        session.execute(TIERED + "\n" + EPHEMERAL)
        mine, theirs = session.memory("T"), session.memory("T", namespace="b")
        mine.remember("alpha tier text", key="x", tier="persistent")
        theirs.remember("beta tier text", key="x", tier="persistent")
        assert keys(mine.recall("tier")) == ["x"] and mine.recall("tier")[0].value == (
            "alpha tier text"
        )
        assert mine.stats()["persistent"]["stores"] == 1
        assert theirs.stats()["persistent"]["stores"] == 1
        assert theirs.recall("alpha") == []
        session.memory("Scratch", namespace="b").remember("owned text", key="s")
        assert session.memory("Scratch").get("s") is None
        assert session.memory("Scratch", namespace="b").get("s").value == "owned text"
    with axon.Session(memory_dir=mem, namespace="b") as later:
        later.execute(TIERED + "\n" + EPHEMERAL)
        assert later.memory("T").stats()["persistent"]["stores"] == 1  # b's own counters
        assert later.memory("Scratch").count() == 0  # the session scope ended with it
        assert later.namespaces() == [("a",), ("b",)]


def test_erase_deletes_the_namespace_and_below_only(tmp_path: Path) -> None:
    with axon.Session(memory_dir=tmp_path / "mem") as session:
        session.execute(NOTES + "\n" + TIERED)
        for space in ("acme", "acme/u1", "acme/u2", "acmeX", "other"):
            session.memory("Notes", namespace=space).remember(f"note of {space}", key="n")
            session.memory("T", namespace=space).remember(f"t of {space}", key="t")
        session.memory("Notes").remember("root note", key="n")
        assert session.erase("acme") == 6
        assert session.namespaces() == [(), ("acmeX",), ("other",)]
        assert session.memory("Notes", namespace="acme/u1").get("n") is None
        assert session.memory("T", namespace="acme").stats()["persistent"]["stores"] == 0
        assert session.memory("Notes", namespace="acmeX").get("n").value == "note of acmeX"
        assert session.memory("Notes").get("n").value == "root note"
        assert session.erase("acme") == 0


def test_async_session_namespaces(tmp_path: Path) -> None:
    async def main() -> None:
        async with axon.AsyncSession(memory_dir=tmp_path / "mem", namespace="x") as session:
            await session.execute(NOTES)
            await session.memory("Notes").remember("in x", key="k")
            await session.memory("Notes", namespace="y").remember("in y", key="k")
            assert (await session.memory("Notes").get("k")).value == "in x"
            assert await session.namespaces() == [("x",), ("y",)]
            assert await session.erase("y") == 1
            assert await session.namespaces() == [("x",)]

    asyncio.run(main())


ERASED = "Zanzibarquux plumbificated Øresundqvist ledgerwick"
KEPT = "Marmalidorn keeps the lighthouse"
SQLITE_MEMORIES = (
    "memory Notes { store: persistent backend: sqlite retrieval: hybrid link: sequence }\n"
    "memory Facts { store: persistent backend: sqlite retrieval: keyword }"
)


def _spellings(text: str) -> set[bytes]:
    """The erased text and each of its words, as the files could hold them: UTF-8, and a
    non-ASCII row's full-text tokens (`sqlite_fts.stem_token` of each word's stem)."""
    from axon.memory.backends.sqlite_fts import stem_token
    from axon.memory.retrieval.text import stem, tokenize

    found = {text.encode(), *(word.encode() for word in text.split())}
    found |= {word.lower().encode() for word in text.split()}
    found |= {stem_token(stem(token)).encode() for token in tokenize(text)}
    return found


def _files_holding(directory: Path, needles: set[bytes]) -> dict[str, list[bytes]]:
    held: dict[str, list[bytes]] = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits = [needle for needle in needles if needle in data]
        if hits:
            held[path.name] = hits
    return held


def test_erase_on_sqlite_leaves_no_byte_of_the_erased_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from axon.memory.backends.sqlite_ann import THRESHOLD_ENV
    from axon.memory.embeddings.hashing import HashingEmbedder

    monkeypatch.setenv(THRESHOLD_ENV, "1")  # an index file beside the store, per scope
    mem = tmp_path / "mem"
    needles = _spellings(ERASED) | {b"erased-key"}
    with axon.Session(memory_dir=mem, embedder=HashingEmbedder(), embed_wait="all") as session:
        session.execute(SQLITE_MEMORIES)
        for name in ("Notes", "Facts"):
            for space in ("acme/u42", "acme/u42/deep"):
                handle = session.memory(name, namespace=space)
                handle.remember(ERASED, key="erased-key", tags=["zanzibarquux"])
                handle.remember("an entry after it, read with it", key="after")
            session.memory(name, namespace="acme/u43").remember(KEPT, key="kept")
        notes = session.memory("Notes", namespace="acme/u42")
        assert notes.recall("Zanzibarquux ledgerwick", retrieval="semantic")
        assert notes.recall("Zanzibarquux ledgerwick", retrieval="keyword")
        ann = session.memories["Notes"].backend.ann  # type: ignore[attr-defined]
        assert ann is not None and ann.wait(60)
        notes.recall("Zanzibarquux ledgerwick", retrieval="semantic")
        ann.wait(60)
        assert _files_holding(mem, needles), "the test must see the text before erasing"
        assert any(p.name.endswith(".usearch") for p in mem.rglob("*"))
        assert session.erase("acme/u42") == 8
        assert _files_holding(mem, needles) == {}
        assert not [p.name for p in mem.rglob("*.usearch*") if "u42" in p.name]
        assert _files_holding(mem, {KEPT.encode()})  # the rest is still there
        kept = session.memory("Notes", namespace="acme/u43")
        assert [r.key for r in kept.recall("Marmalidorn lighthouse")] == ["kept"]
        assert session.namespaces() == [("acme", "u43")]


def test_a_dead_sessions_owned_entries_in_a_namespace_are_swept(tmp_path: Path) -> None:
    """A session killed before closing leaves its session-lifetime entries behind, in a
    namespace as in the root: the next session to bind the store clears them."""
    import socket

    from axon.memory.backends.sqlite import SQLiteBackend
    from axon.memory.lifetimes import Owner

    mem = tmp_path / "mem"
    dead = Owner(socket.gethostname(), 2**22 + 12345, "", "deadbeef")  # no such process
    left = Namespace.of("acme/u1").scope(dead.scope("session", "Scratch"))

    async def leave() -> None:
        backend = SQLiteBackend(memory_dir=mem)
        await backend.store("k", "left behind", {"scope": left})
        await backend.close()

    asyncio.run(leave())
    with axon.Session(memory_dir=mem) as session:
        session.execute(EPHEMERAL)
        sweeps = [e for e in session.events if e["event_type"] == "memory_clear"]
        assert [(e["data"]["memory"], e["data"]["count"]) for e in sweeps] == [("Scratch", 1)]
        assert sweeps[0]["data"]["namespace"] == "acme/u1"
        assert session.namespaces() == []


def test_lifetime_ends_carry_the_namespace(tmp_path: Path) -> None:
    ephemeral = "memory Tmp { store: ephemeral backend: sqlite retrieval: keyword }"
    with axon.Session(memory_dir=tmp_path / "mem", namespace="acme") as session:
        session.execute(ephemeral)
        session.memory("Tmp").remember("gone after the call", key="a")
        session.memory("Tmp", namespace=()).remember("root one", key="b")
        ends = [e["data"] for e in session.events if e["event_type"] == "memory_clear"]
        assert [(d["memory"], d["count"], d.get("namespace")) for d in ends] == [
            ("Tmp", 1, "acme"),
            ("Tmp", 1, None),
        ]


def test_expiry_events_name_the_memory_and_the_namespace(tmp_path: Path) -> None:
    from axon.runtime.sweeps import SWEEP_INTERVAL
    from tests.memory.conftest import FakeClock

    clock = FakeClock()
    short = "memory Short { store: persistent backend: sqlite retrieval: exact decay: 1h }"
    with axon.Session(memory_dir=tmp_path / "mem", clock=clock, namespace="acme/u1") as session:
        session.execute(short)
        session.memory("Short").remember("fresh fact", key="k")
        clock.advance(3600 + SWEEP_INTERVAL)
        session.memory("Short").recall("k", retrieval="exact")
        expire = [e["data"] for e in session.events if e["event_type"] == "memory_expire"]
        assert [(d["memory"], d["count"], d.get("namespace")) for d in expire] == [
            ("Short", 1, "acme/u1")
        ]
