"""Owned lifetimes (docs/language.md) on real files, a real server and real processes.

A `session` or `ephemeral` memory removes exactly what its session or flow wrote:
persistent entries under the same name survive, two live processes never see each
other's session entries, and the entries of a SIGKILLed process are invisible to
the next session and removed by its sweep (rows are counted in the store itself).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import axon
from tests.helpers.stores import Store

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("session_worker.py")


@pytest.fixture(params=["sqlite", "pgvector"])
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    return Store(request.param, tmp_path, monkeypatch)


class Worker:
    """A child process with one Session (see session_worker.py)."""

    def __init__(self, store: Store) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), str(store.memory_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=store.env,
        )

    def run(self, text: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(text.replace("\n", "\\n") + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the worker died"
        reply: dict[str, Any] = json.loads(line)
        assert reply["ok"], reply
        return reply

    def recall(self, memory: str, query: str) -> list[str]:
        [record] = self.run(f'recall("{query}") from {memory} with {{ top_k: 50 }}')["records"]
        return sorted(r["value"] for r in record["results"])

    def close(self) -> None:
        self.run(".close")
        assert self.proc.wait(timeout=60) == 0

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        if worker.proc.poll() is None:
            worker.kill()


def values(records: list[dict[str, Any]]) -> list[str]:
    return sorted(r["value"] for r in records[-1]["results"])


def test_persistent_entries_survive_a_session_memory_of_the_same_name(store: Store) -> None:
    with store.session() as s:
        s.execute(store.decl("Notes", "persistent"))
        s.execute('remember("kept budget note") -> Notes with { key: "p" }')
    with store.session() as s:
        s.execute(store.decl("Notes", "session"))
        records = s.execute(
            'remember("session budget note") -> Notes with { key: "p" }\n'
            'recall("budget note") from Notes'
        )
        assert values(records) == ["session budget note"]  # the persistent one is not seen
        assert records[0]["metadata"]["scope"] == "Notes"
        assert records[-1]["results"][0]["metadata"]["scope"] == "Notes"
        assert s.describe_memories()[0]["entries"] == 1
        assert store.rows(owned=True) == 1
    assert store.rows(owned=True) == 0
    with store.session() as s:
        s.execute(store.decl("Notes", "persistent"))
        assert values(s.execute('recall("budget note") from Notes')) == ["kept budget note"]
    assert store.rows(owned=False) == 1


def test_two_live_processes_never_see_each_others_session_entries(
    store: Store, workers: list[Worker]
) -> None:
    first, second = Worker(store), Worker(store)
    workers += [first, second]
    for name, worker in (("first", first), ("second", second)):
        worker.run(store.decl("Notes", "session"))
        worker.run(f'remember("{name} shared note") -> Notes with {{ key: "k" }}')
        worker.run(f'remember("{name} other note") -> Notes with {{ key: "{name}" }}')
    assert first.recall("Notes", "note") == ["first other note", "first shared note"]
    assert second.recall("Notes", "note") == ["second other note", "second shared note"]
    assert store.rows(owned=True) == 4
    first.close()
    assert store.rows(owned=True) == 2
    assert second.recall("Notes", "note") == ["second other note", "second shared note"]
    second.close()
    assert store.rows(owned=True) == 0


def test_a_killed_sessions_entries_are_invisible_and_swept(
    store: Store, workers: list[Worker]
) -> None:
    victim = Worker(store)
    workers.append(victim)
    victim.run(store.decl("Notes", "session") + "\n" + store.decl("Scratch", "ephemeral"))
    for i in range(3):
        victim.run(f'remember("doomed note {i}") -> Notes with {{ key: "k{i}" }}')
    victim.kill()
    assert store.rows(owned=True) == 3
    with store.session() as s:
        s.execute(store.decl("Notes", "session"))
        assert store.rows(owned=True) == 0  # swept when the memory was bound
        assert values(s.execute('recall("doomed note") from Notes')) == []
        sweeps = [e for e in s.events if e["event_type"] == "memory_clear"]
        assert [(e["data"]["memory"], e["data"]["count"]) for e in sweeps] == [("Notes", 3)]


def test_a_session_left_open_is_closed_at_exit(store: Store) -> None:
    """A script that never calls close() still ends its session the documented way."""
    hybrid = store.decl("Facts", "persistent").replace("keyword", "hybrid")
    script = f"""
import axon
s = axon.Session(memory_dir={str(store.memory_dir)!r})
s.execute({store.decl("Notes", "session")!r})
s.execute({hybrid!r})
notes, facts = s.memory("Notes"), s.memory("Facts")
for i in range(200):
    notes.remember(f"session note {{i}}", key=f"n{{i}}")
    facts.remember(f"fact {{i}} about cats and dogs", key=f"f{{i}}")
print(len(facts.recall("cats", embed_wait=0)))
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**store.env, "AXON_EMBEDDER": "hashing"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "5"
    assert done.stderr == ""  # no "Task was destroyed" from the vector worker
    assert store.rows(owned=True) == 0  # the session's entries went with it
    assert store.rows(owned=False) == 200


def test_a_live_process_is_not_swept(store: Store, workers: list[Worker]) -> None:
    alive = Worker(store)
    workers.append(alive)
    alive.run(store.decl("Notes", "session"))
    alive.run('remember("still here") -> Notes with { key: "k" }')
    with store.session() as s:
        s.execute(store.decl("Notes", "session"))
        assert values(s.execute('recall("still here") from Notes')) == []
    assert store.rows(owned=True) == 1
    assert alive.recall("Notes", "still here") == ["still here"]


def test_ephemeral_entries_end_with_their_flow_and_stay_private(store: Store) -> None:
    with store.session() as writer, store.session() as other:
        decl = store.decl("Scratch", "ephemeral")
        writer.execute(decl)
        other.execute(decl)
        manager = writer.memories
        # Stop inside a flow: its lifetime opened, one ephemeral write, not yet ended.
        manager.push_lifetime()
        writer._call(manager["Scratch"].remember("k", "ephemeral scratch note", {}))
        assert store.rows(owned=True) == 1
        assert values(other.execute('recall("scratch note") from Scratch')) == []
        mine, *_ = writer._call(manager["Scratch"].recall("scratch note", 5, "keyword"))
        assert [(e.value, e.metadata["scope"]) for e in mine] == [
            ("ephemeral scratch note", "Scratch")
        ]
        assert writer._call(manager.pop_lifetime()) == 1
        assert store.rows(owned=True) == 0
        records = writer.execute(
            'flow f() { remember("flow note") -> Scratch with { key: "f" } }\n'
            'run f()\nrecall("flow note") from Scratch'
        )
        assert values(records) == []
        assert store.rows(owned=True) == 0


def test_in_memory_session_entries_show_the_memory_name(tmp_path: Path) -> None:
    with axon.Session(memory_dir=tmp_path) as s:
        s.execute("memory Notes { store: session retrieval: keyword }")
        s.execute("memory Scratch { store: ephemeral retrieval: keyword }")
        records = s.execute(
            'remember("session note") -> Notes with { key: "a" }\n'
            'remember("scratch note") -> Scratch with { key: "b" }\n'
            'recall("note") from Scratch'
        )
        assert values(records) == ["scratch note"]
        assert values(s.execute('recall("note") from Scratch')) == []  # ended with its input
        [entry] = s.recent_entries("Notes")
        assert entry.metadata["scope"] == "Notes"
        assert s.clear_memory("Notes") == 1
