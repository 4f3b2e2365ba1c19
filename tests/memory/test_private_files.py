"""A store's files are private to their owner: what a run creates is read back by mode.

`memory.db` and its `-wal`/`-shm` were 0644 in a 0755 directory (anyone on the machine
could read every memory) while the REPL history was 0600. A directory AXON creates for
a store is now 0700 and every file it creates there 0600, whatever the umask; exports
and traces are created 0600 too; what already exists keeps its mode (`axon.files`).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import NewEntry
from tests.conftest import require_extra
from tests.memory.conftest import FakeClock

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """\
memory Notes { store: persistent backend: sqlite retrieval: semantic }
remember("the user prefers metric units") -> Notes
remember("the deploy runs on fridays") -> Notes
recall("units") from Notes
"""


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _modes(top: Path) -> dict[str, int]:
    """The mode of `top` and of everything under it, by path relative to `top`'s parent."""
    found = {top.name: _mode(top)}
    for path in top.rglob("*"):
        found[str(path.relative_to(top.parent))] = _mode(path)
    return found


def _assert_private(top: Path) -> None:
    modes = _modes(top)
    wrong = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o700 if (top.parent / name).is_dir() else 0o600)
    }
    assert not wrong, f"not private: {wrong} (all: {sorted(modes)})"


def _axon(*args: str, umask: int, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "axon.cli", *args],
        capture_output=True, text=True, cwd=cwd, timeout=120, umask=umask,
        env={**os.environ, "PYTHONPATH": str(ROOT), "AXON_EMBEDDER": "hashing"},
    )


@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_a_run_creates_its_memory_directory_0700_and_every_file_0600(
    tmp_path: Path, umask: int
) -> None:
    program = tmp_path / "notes.axon"
    program.write_text(PROGRAM, encoding="utf-8")
    memory_dir = tmp_path / "state" / "axon-mem"  # the parent is missing too
    done = _axon("run", str(program), "--memory-dir", str(memory_dir),
                 "--trace", str(tmp_path / "trace.json"), umask=umask, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    exported = tmp_path / "out" / "notes.jsonl"
    exported.parent.mkdir()
    done = _axon("memory", "export", "-o", str(exported), "--memory-dir", str(memory_dir),
                 umask=umask, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (memory_dir / "memory.db").is_file()
    _assert_private(tmp_path / "state")
    assert _mode(exported) == 0o600 and _mode(tmp_path / "trace.json") == 0o600


async def test_the_ann_index_files_and_the_wal_are_private(tmp_path: Path) -> None:
    """With the index on (threshold lowered), the files beside the database: the WAL and
    shared memory while it is open, the saved index and its meta, a build's lock file."""
    require_extra("usearch")
    memory_dir = tmp_path / "mem"
    old = os.umask(0o022)
    try:
        backend = SQLiteBackend(
            memory_dir=memory_dir, clock=FakeClock(), embedder=HashingEmbedder(),
            ann_threshold=50,
        )
        try:
            await backend.store_many(
                [NewEntry(f"k{i}", f"note number {i} w{i % 7}", {"scope": "Notes"})
                 for i in range(120)]
            )
            await backend.retrieve("w3", 5, "Notes", mode="semantic")  # starts the build
            assert backend.ann is not None and backend.ann.wait(120)
            assert backend.ann.stats["saved"] == 1
            lock = backend.ann._lock(("Notes", "hashing:64"))  # as a build takes it
            assert lock is not None and lock >= 0
            os.close(lock)
            names = sorted(p.name for p in memory_dir.iterdir())
            assert any(n.endswith(".usearch") for n in names), names
            assert any(n.endswith(".usearch.json") for n in names), names
            assert any(n.endswith(".usearch.lock") for n in names), names
            assert {"memory.db", "memory.db-wal", "memory.db-shm"} <= set(names)
            _assert_private(memory_dir)
        finally:
            await backend.close()
    finally:
        os.umask(old)


async def test_an_existing_directory_and_file_keep_their_modes(tmp_path: Path) -> None:
    """What exists is the owner's choice: a 0755 directory and a 0644 file stay so, and
    the WAL SQLite creates for that file takes the file's mode, as SQLite does."""
    memory_dir = tmp_path / "mem"
    memory_dir.mkdir()
    memory_dir.chmod(0o755)
    db = memory_dir / "memory.db"
    db.touch()
    db.chmod(0o644)
    backend = SQLiteBackend(memory_dir=memory_dir, clock=FakeClock(), ann_threshold=-1)
    try:
        await backend.store_many([NewEntry("k", "v", {"scope": "Notes"})])
        assert _mode(memory_dir) == 0o755 and _mode(db) == 0o644
        assert _mode(memory_dir / "memory.db-wal") == 0o644
    finally:
        await backend.close()


async def test_an_embedded_chroma_directory_is_created_0700_with_a_private_lock(
    tmp_path: Path,
) -> None:
    """Chroma writes its own files inside (their modes are Chroma's); the directory
    AXON creates for it, and the lock file AXON keeps there, are private."""
    require_extra("chromadb")
    from axon.memory.backends.chroma import ChromaBackend

    location = tmp_path / "stores" / "chroma-db"
    old = os.umask(0o022)
    try:
        backend = ChromaBackend(location=str(location), embedder=HashingEmbedder())
        try:
            await backend.store_many([NewEntry("k", "v", {"scope": "Notes"})])
            assert _mode(tmp_path / "stores") == 0o700 and _mode(location) == 0o700
            locks = [p for p in location.iterdir() if "lock" in p.name]
            assert locks and all(_mode(p) == 0o600 for p in locks), locks
        finally:
            await backend.close()
    finally:
        os.umask(old)
