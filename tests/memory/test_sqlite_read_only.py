"""A SQLite memory file this process cannot write: recall, get, list and count still work.

The reader runs in a child process without the right to write the file or its
directory (0444 in a 0555 directory). Root ignores permissions, so as root the child
runs as `nobody` (`runuser`) or, when `nobody` cannot run this interpreter, as root
without any capability (`setpriv`: it is then only the owner, and the owner's bits
say read-only). A probe in the child first proves it cannot open the file for
writing; the test is skipped only when no such child can be made.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.embeddings.hashing import HashingEmbedder

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import sys
import axon.memory.backends.sqlite
try:
    open(sys.argv[1], "r+b").close()
except PermissionError:
    print("read-only")
else:
    print("writable")
"""

_READER = """
import asyncio, json, sys
from axon.errors import AxonMemoryError
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.embeddings.hashing import HashingEmbedder

async def main():
    backend = SQLiteBackend(memory_dir=sys.argv[1], embedder=HashingEmbedder())
    out = {"read_only": backend.read_only, "recall": {}, "refused": []}
    for mode in ("exact", "keyword", "semantic", "hybrid"):
        found = await backend.retrieve("apples", 10, "A", mode=mode)
        out["recall"][mode] = sorted(e.key for e in found)
    entry = await backend.get("green", "A")
    out["get"] = entry.value if entry else None
    out["list"] = sorted(e.key for e in await backend.list_entries("A"))
    out["count"] = await backend.count()
    for op in (lambda: backend.store("new", "v", {"scope": "A"}),
               lambda: backend.delete("green", "A"), lambda: backend.clear("A")):
        try:
            await op()
        except AxonMemoryError as exc:
            out["refused"].append(str(exc))
    await backend.close()
    print(json.dumps(out))

asyncio.run(main())
"""

_WRITER = """
import asyncio, sys
from axon.memory.backends.sqlite import SQLiteBackend

async def main():
    backend = SQLiteBackend(memory_dir=sys.argv[1])
    await backend.store("late", "late apples, only in the WAL", {"scope": "A"})
    print("stored", flush=True)
    sys.stdin.readline()
    await backend.close()

asyncio.run(main())
"""


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def _unprivileged(probe_file: Path) -> list[str]:
    """A command prefix whose child cannot write `probe_file`; skips when there is none."""
    if os.geteuid() != 0:
        candidates = [[]]
    else:
        candidates = []
        if shutil.which("runuser"):
            candidates.append(["runuser", "-u", "nobody", "--"])
        if shutil.which("setpriv"):
            candidates.append(
                ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all", "--"]
            )
    for prefix in candidates:
        probe = subprocess.run(
            [*prefix, sys.executable, "-c", _PROBE, str(probe_file)],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
        if probe.returncode == 0 and probe.stdout.strip() == "read-only":
            return prefix
    pytest.skip("no child process here is denied writing a 0444 file (it is writable anyway)")


@pytest.fixture
def memory_dir() -> Iterator[Path]:
    """A directory under /tmp that other users can reach (pytest's tmp_path is 0700)."""
    base = Path(tempfile.mkdtemp(prefix="axon-ro-", dir="/tmp"))
    base.chmod(0o755)
    directory = base / "memory"
    directory.mkdir()
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        for path in (directory, *directory.iterdir()):
            path.chmod(0o755 if path.is_dir() else 0o644)
        shutil.rmtree(base)


async def _fill(directory: Path) -> None:
    backend = SQLiteBackend(memory_dir=directory, embedder=HashingEmbedder())
    await backend.store("green", "green apples", {"scope": "A"})
    await backend.store("red", "red apples", {"scope": "A"})
    await backend.retrieve("apples", 5, "A", mode="semantic")  # their vectors are stored
    await backend.store("plain", "apples without a vector yet", {"scope": "A"})
    await backend.store("gone", "expired apples", {"scope": "A"}, expires_at=time.time() - 1)
    await backend.store("other", "apples of another scope", {"scope": "B"})
    await backend.close()


def _freeze(directory: Path) -> None:
    for path in directory.iterdir():
        path.chmod(0o444)
    directory.chmod(0o555)


def _digest(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in directory.iterdir()}


def _read(prefix: list[str], directory: Path) -> dict[str, object]:
    result = subprocess.run(
        [*prefix, sys.executable, "-c", _READER, str(directory)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    return data


def _assert_refused(out: dict[str, object], db: Path) -> None:
    refused = out["refused"]
    assert isinstance(refused, list) and len(refused) == 3
    for message in refused:
        assert f"memory file {db} is read-only" in message


async def test_a_closed_read_only_file_is_read_as_it_is(memory_dir: Path) -> None:
    """Closed cleanly, the file has no -wal/-shm and none can be created: it is still read."""
    await _fill(memory_dir)
    db = memory_dir / "memory.db"
    assert sorted(p.name for p in memory_dir.iterdir()) == ["memory.db"]
    _freeze(memory_dir)
    prefix = _unprivileged(db)
    before = _digest(memory_dir)

    out = _read(prefix, memory_dir)

    assert out["read_only"] is True
    live = ["green", "plain", "red"]
    assert out["recall"] == {mode: live for mode in ("exact", "keyword", "semantic", "hybrid")}
    assert out["get"] == "green apples"
    assert out["list"] == live
    assert out["count"] == 4  # the three of A and the one of B; the expired row is not counted
    _assert_refused(out, db)
    assert _digest(memory_dir) == before  # nothing written, nothing created, nothing purged
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    assert conn.execute("SELECT count(*) FROM entries WHERE key = 'gone'").fetchone() == (1,)
    conn.close()


async def test_a_read_only_file_being_written_shows_what_its_wal_holds(memory_dir: Path) -> None:
    """A writer with the file open: commits sit in the -wal file; the reader sees them."""
    await _fill(memory_dir)
    db = memory_dir / "memory.db"
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(memory_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "stored"
        assert (memory_dir / "memory.db-wal").stat().st_size > 0
        _freeze(memory_dir)
        prefix = _unprivileged(db)

        out = _read(prefix, memory_dir)

        assert out["read_only"] is True
        assert out["recall"]["exact"] == ["green", "late", "plain", "red"]  # type: ignore[index]
        assert out["count"] == 5
        _assert_refused(out, db)
    finally:
        if writer.stdin is not None:
            writer.stdin.write("\n")
            writer.stdin.close()
        writer.wait(timeout=60)


def test_axon_run_recalls_from_a_read_only_memory_and_refuses_to_remember(
    memory_dir: Path,
) -> None:
    """Through the CLI: recall prints its record; remember fails as a statement (exit 3),
    naming the file, with no traceback."""
    program = "memory Notes { store: persistent  backend: sqlite  retrieval: hybrid }\n"
    programs = memory_dir.parent  # readable by the child (pytest's tmp_path is not)
    fill = programs / "fill.axon"
    fill.write_text(program + 'remember("green apples") -> Notes\n')
    recall = programs / "recall.axon"
    recall.write_text(program + 'recall("apples") from Notes\n')
    remember = programs / "remember.axon"
    remember.write_text(program + 'remember("more apples") -> Notes\n')
    env = {**_env(), "AXON_EMBEDDER": "hashing"}

    def axon(prefix: list[str], file: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                *prefix,
                sys.executable,
                "-m",
                "axon.cli",
                "run",
                str(file),
                "--json",
                "--memory-dir",
                str(memory_dir),
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=memory_dir.parent,
            timeout=120,
        )

    assert axon([], fill).returncode == 0
    _freeze(memory_dir)
    prefix = _unprivileged(memory_dir / "memory.db")

    recalled = axon(prefix, recall)
    assert recalled.returncode == 0, recalled.stderr
    records = [json.loads(line) for line in recalled.stdout.splitlines()]
    assert [r["op"] for r in records] == ["recall"]
    assert [e["value"] for e in records[0]["results"]] == ["green apples"]

    refused = axon(prefix, remember)
    assert refused.returncode == 3, refused.stderr
    assert f"memory file {memory_dir / 'memory.db'} is read-only" in refused.stderr
    assert "Traceback" not in refused.stderr
