"""SQLite memory across processes: SIGKILL mid-stream, persistence, concurrent writers.

Each test runs real child processes (`sqlite_worker.py`) on a real file in a
temporary memory directory.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from axon.memory.backends.sqlite import SQLiteBackend

WORKER = str(Path(__file__).with_name("sqlite_worker.py"))
ROOT = Path(__file__).resolve().parents[2]
SCOPE = "Shared"


def _spawn(*args: str, stdin: int | None = None) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, WORKER, *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _check_file(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('integrity-check')")
    finally:
        conn.close()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
async def test_sigkill_loses_no_acknowledged_write(tmp_path: Path) -> None:
    rng = random.Random(4)
    acknowledged: dict[str, int] = {}
    for round_ in range(10):
        proc = _spawn("stream", str(tmp_path), f"r{round_}")
        assert proc.stdout is not None
        target = rng.randint(1, 400)
        seen = 0
        for line in proc.stdout:
            acknowledged[line.strip()] = round_
            seen += 1
            if seen >= target:
                break
        proc.send_signal(signal.SIGKILL)
        # Lines already printed before the kill were acknowledged too.
        rest, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL, err
        for line in rest.splitlines():
            acknowledged[line.strip()] = round_
        assert seen >= target, err

    _check_file(tmp_path / "memory.db")
    backend = SQLiteBackend(memory_dir=tmp_path)
    try:
        for key in acknowledged:
            entry = await backend.get(key, SCOPE)
            assert entry is not None, f"acknowledged {key} was lost"
            assert entry.value["key"] == key
        assert await backend.count(SCOPE) >= len(acknowledged)
        found = await backend.retrieve("apples", 3, SCOPE, mode="keyword")
        assert len(found) == 3
    finally:
        await backend.close()


async def test_written_in_one_process_recalled_in_another(tmp_path: Path) -> None:
    value = {"total": 3, "ratio": 0.5, "ok": True, "items": ["a", "b"], "none": None}
    proc = _spawn("write", str(tmp_path), "quarterly_report", json.dumps(value))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err

    backend = SQLiteBackend(memory_dir=tmp_path)
    try:
        entry = await backend.get("quarterly_report", SCOPE)
        assert entry is not None
        assert entry.value == value
        assert type(entry.value["total"]) is int and type(entry.value["ratio"]) is float
        await backend.store("board_minutes", "the board approved the merger", {"scope": SCOPE})
    finally:
        await backend.close()

    for mode, key in (("keyword", "board_minutes"), ("exact", "board_minutes")):
        query = "merger approved" if mode == "keyword" else "board"
        proc = _spawn("recall", str(tmp_path), query, mode)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        results = json.loads(out)
        assert [r["key"] for r in results] == [key]


async def test_four_processes_write_and_recall_at_once(tmp_path: Path) -> None:
    writes = 2000
    procs = [
        _spawn("hammer", str(tmp_path), str(w), str(writes), stdin=subprocess.PIPE)
        for w in range(4)
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    summaries = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert "locked" not in err and "Traceback" not in err, err
        assert proc.returncode == 0, out + err
        summaries.append(json.loads(out.strip().splitlines()[-1]))
    assert all(not s["errors"] for s in summaries), summaries

    _check_file(tmp_path / "memory.db")
    backend = SQLiteBackend(memory_dir=tmp_path)
    try:
        assert await backend.count(SCOPE) == 4 * writes
        assert len(await backend.list_entries(SCOPE)) == 4 * writes
        for w in range(4):
            assert await backend.get(f"w{w}-{writes - 1}", SCOPE) is not None
            assert await backend.get(f"w{w}-0", SCOPE) is not None
    finally:
        await backend.close()
